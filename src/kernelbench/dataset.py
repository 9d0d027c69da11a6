"""KernelBench problem datasets (local directory tree or Hugging Face).

The public surface matches upstream KernelBench's ``kernelbench.dataset``:
:class:`Problem`, :class:`BaseDataset`, :class:`LocalKernelBenchDataset`,
:class:`HuggingFaceKernelBenchDataset`, :func:`construct_kernelbench_dataset`,
:func:`fetch_ref_arch_from_dataset`, :func:`get_kernelbench_subset`,
:func:`get_representative_dataset` and the ``LEVEL{1,2,3}_REPRESENTATIVE_*``
constants.

Deliberate differences from upstream:

* Hugging Face problem names are normalised to end in ``.py`` so they equal the
  local file names (upstream's HF names lack the suffix, which makes baseline
  lookups keyed by file name miss).
* The Hugging Face loader accepts level 4 (the ``level_4`` split exists).
* ``dataset_name`` may be a local directory written by ``save_to_disk`` (a
  ``DatasetDict`` with ``level_N`` splits, or one ``Dataset`` with a ``level``
  column), which makes offline use and testing possible.
* ``base_path`` / ``dataset_path`` may be the string ``"demo"``: the small,
  bundled, *non-official* demo problem set in ``kernelbench/demo_tasks``.
* A missing local dataset directory gives a message that says where to put an
  upstream checkout; a missing level names the levels that exist, an unknown
  problem id the ids of its level.
* A Hugging Face Hub that cannot be reached raises :class:`DatasetUnavailable`
  at once (a two-second connection probe, then the local cache with
  ``HF_HUB_OFFLINE=1``) instead of retrying for half a minute.

Only the standard library is imported at module import time; ``datasets`` is
imported inside the Hugging Face constructor.

This module holds the paths, the local dataset and the factory functions; the problem
record and base classes (:mod:`kernelbench.dataset_parts.problems`), the Hugging Face
loader (:mod:`kernelbench.dataset_parts.huggingface`) and the representative lists
(:mod:`kernelbench.dataset_parts.subsets`) are re-exported from there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from kernelbench.dataset_parts.huggingface import (
    DEFAULT_HF_DATASET_NAME,
    HF_LEVELS,
    DatasetUnavailable,
    HuggingFaceKernelBenchDataset,
)
from kernelbench.dataset_parts.problems import (
    BaseDataset,
    IdRange,
    InMemoryDataset,
    Problem,
    check_level,
    get_code_hash,
    wanted_ids,
)
from kernelbench.dataset_parts.subsets import (
    LEVEL1_REPRESENTATIVE_IDS,
    LEVEL1_REPRESENTATIVE_SUBSET,
    LEVEL2_REPRESENTATIVE_IDS,
    LEVEL2_REPRESENTATIVE_SUBSET,
    LEVEL3_REPRESENTATIVE_IDS,
    LEVEL3_REPRESENTATIVE_SUBSET,
    REPRESENTATIVE_IDS,
)

__all__ = [
    "REPO_TOP_PATH",
    "DEFAULT_DATASET_PATH",
    "KERNEL_BENCH_PATH",
    "DEMO_DATASET_PATH",
    "DEFAULT_HF_DATASET_NAME",
    "HF_LEVELS",
    "Problem",
    "BaseDataset",
    "LocalKernelBenchDataset",
    "HuggingFaceKernelBenchDataset",
    "construct_kernelbench_dataset",
    "DatasetUnavailable",
    "resolve_dataset_path",
    "fetch_ref_arch_from_dataset",
    "get_code_hash",
    "get_kernelbench_subset",
    "get_representative_dataset",
    "REPRESENTATIVE_IDS",
    "LEVEL1_REPRESENTATIVE_IDS",
    "LEVEL2_REPRESENTATIVE_IDS",
    "LEVEL3_REPRESENTATIVE_IDS",
    "LEVEL1_REPRESENTATIVE_SUBSET",
    "LEVEL2_REPRESENTATIVE_SUBSET",
    "LEVEL3_REPRESENTATIVE_SUBSET",
]

# --------------------------------------------------------------------------- paths

#: Repository root (``<root>/src/kernelbench/dataset.py`` -> ``<root>``).
REPO_TOP_PATH: Path = Path(__file__).resolve().parents[2]
#: Where an upstream ``KernelBench/`` problem tree is expected by default.
DEFAULT_DATASET_PATH: Path = REPO_TOP_PATH / "KernelBench"
#: Upstream's name for the same location.
KERNEL_BENCH_PATH: Path = DEFAULT_DATASET_PATH
#: The bundled demo problems (original, NOT the official KernelBench problems).
DEMO_DATASET_PATH: Path = Path(__file__).parent / "demo_tasks"

_DEMO_ALIAS = "demo"


def resolve_dataset_path(dataset_path: str | os.PathLike | None) -> Path:
    """Map a user-facing dataset path setting to a directory.

    ``None`` or ``""`` -> :data:`DEFAULT_DATASET_PATH` (``<repo>/KernelBench``);
    ``"demo"`` -> :data:`DEMO_DATASET_PATH`; anything else -> that path
    (``~`` expanded). Existence is not checked here.
    """
    if dataset_path is None:
        return DEFAULT_DATASET_PATH
    if isinstance(dataset_path, str):
        text = dataset_path.strip()
        if text == "":
            return DEFAULT_DATASET_PATH
        if text.lower() == _DEMO_ALIAS:
            return DEMO_DATASET_PATH
        return Path(text).expanduser()
    return Path(dataset_path).expanduser()


# --------------------------------------------------------------------------- local


def _leading_int(file_name: str) -> int | None:
    head = file_name.split("_", 1)[0]
    if not head.isdigit():
        return None
    return int(head)


class LocalKernelBenchDataset(InMemoryDataset):
    """Problems read eagerly from ``<base_path>/level{N}/{id}_{Name}.py``.

    Any level >= 1 is accepted (custom levels are just more directories). Files
    whose name does not start with an integer followed by ``_`` are skipped.
    ``base_path`` may be ``None`` (default tree) or ``"demo"`` (bundled demo set).
    """

    def __init__(
        self,
        level: int,
        base_path: str | os.PathLike | None = DEFAULT_DATASET_PATH,
        problem_ids: Iterable[int] | None = None,
        id_range: IdRange | None = None,
    ):
        self._level = check_level(level)
        self._base_path = resolve_dataset_path(base_path)
        self._problems = {}
        wanted = wanted_ids(problem_ids, id_range)
        self._load(wanted)

    @property
    def base_path(self) -> Path:
        return self._base_path

    def _load(self, wanted: set[int] | None) -> None:
        level_dir = self._base_path / f"level{self._level}"
        if not level_dir.is_dir():
            hint = (
                "Put a checkout of the upstream KernelBench problem tree there "
                "(git clone https://github.com/ScalingIntelligence/KernelBench and copy or "
                f"symlink its KernelBench/ directory to {DEFAULT_DATASET_PATH}), pass "
                "dataset_path=/path/to/KernelBench, use the Hugging Face dataset "
                "(dataset_src=huggingface), or use the bundled demo problems with dataset_path=demo."
            )
            if not self._base_path.is_dir():
                raise FileNotFoundError(f"KernelBench dataset directory not found: {self._base_path}. {hint}")
            levels = sorted(int(d.name[5:]) for d in self._base_path.iterdir()
                            if d.is_dir() and re.fullmatch(r"level\d+", d.name))
            have = f"levels {', '.join(map(str, levels))}" if levels else "no level<N> directories"
            raise FileNotFoundError(f"Problem directory for level {self._level} not found: {level_dir} "
                                    f"({self._base_path} has {have})")
        for entry in sorted(level_dir.iterdir(), key=lambda p: p.name):
            if not entry.name.endswith(".py") or not entry.is_file():
                continue
            pid = _leading_int(entry.name)
            if pid is None:
                continue
            if wanted is not None and pid not in wanted:
                continue
            code = entry.read_text(encoding="utf-8")
            self._add(
                Problem(problem_id=pid, name=entry.name, code=code, level=self._level, path=str(entry)),
                str(level_dir),
            )


# --------------------------------------------------------------------------- factory and helpers


def construct_kernelbench_dataset(
    level: int,
    source: str = "local",
    dataset_name: str = DEFAULT_HF_DATASET_NAME,
    base_path: str | os.PathLike | None = None,
    problem_ids: Iterable[int] | None = None,
    id_range: IdRange | None = None,
) -> BaseDataset:
    """Build the dataset for one level.

    ``source="local"`` reads ``base_path`` (``None`` -> ``<repo>/KernelBench``,
    ``"demo"`` -> the bundled demo set); ``source="huggingface"`` reads
    ``dataset_name`` (a hub id or a ``save_to_disk`` directory). Any other source
    raises ``ValueError``.
    """
    src = str(source).strip().lower() if source is not None else ""
    if src == "local":
        return LocalKernelBenchDataset(level, base_path, problem_ids, id_range)
    if src in ("huggingface", "hf"):
        return HuggingFaceKernelBenchDataset(level, dataset_name, problem_ids, id_range)
    raise ValueError(f"Unknown dataset source {source!r}: must be 'local' or 'huggingface'")


def fetch_ref_arch_from_dataset(dataset: BaseDataset, problem_id: int) -> tuple[str | None, str, str]:
    """``(path, name, code)`` of one problem; ``path`` is ``None`` for Hugging Face."""
    problem = dataset.get_problem_by_id(problem_id)
    return problem.path, problem.name, problem.code


def get_kernelbench_subset(
    level: int,
    num_subset_problems: int = 10,
    random_seed: int = 42,
    source: str = "local",
    dataset_name: str = DEFAULT_HF_DATASET_NAME,
    base_path: str | os.PathLike | None = None,
) -> tuple[BaseDataset, list[int]]:
    """A seeded random subset of one level: ``(dataset, sorted_ids)``."""
    full = construct_kernelbench_dataset(level, source=source, dataset_name=dataset_name, base_path=base_path)
    subset = full.sample(num_subset_problems, seed=random_seed)
    return subset, subset.get_problem_ids()


def get_representative_dataset(
    level: int,
    source: str = "local",
    dataset_name: str = DEFAULT_HF_DATASET_NAME,
    base_path: str | os.PathLike | None = None,
) -> BaseDataset:
    """The representative problems of level 1, 2 or 3 (those present)."""
    if level not in REPRESENTATIVE_IDS:
        raise ValueError(f"No representative subset for level {level}")
    return construct_kernelbench_dataset(
        level,
        source=source,
        dataset_name=dataset_name,
        base_path=base_path,
        problem_ids=REPRESENTATIVE_IDS[level],
    )
