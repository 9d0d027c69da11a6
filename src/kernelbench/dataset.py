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
"""

from __future__ import annotations

import copy
import hashlib
import operator
import os
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

DEFAULT_HF_DATASET_NAME = "ScalingIntelligence/KernelBench"
#: Levels published as ``level_N`` splits of the Hugging Face dataset.
HF_LEVELS = (1, 2, 3, 4)

_DEMO_ALIAS = "demo"

IdRange = tuple[int, int]


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


# --------------------------------------------------------------------------- hashing

_TRIPLE_QUOTED = re.compile(r'"""[\s\S]*?"""' + "|" + r"'''[\s\S]*?'''")
_COMMENT_OR_SPACE = re.compile(r"#[^\n]*|\s+")


def get_code_hash(code: str) -> str:
    """MD5 (hex) of ``code`` with triple-quoted strings, ``#`` comments and all
    whitespace removed, so formatting/comment-only edits keep the same hash.

    The normalisation is the same as upstream's, so hashes are comparable with
    those computed by upstream KernelBench.
    """
    stripped = _TRIPLE_QUOTED.sub("", code)
    stripped = _COMMENT_OR_SPACE.sub("", stripped)
    return hashlib.md5(stripped.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- problem


@dataclass
class Problem:
    """One KernelBench problem.

    ``name`` is the file name including ``.py`` (e.g. ``"1_Elementwise_add.py"``);
    ``path`` is the file on disk for local datasets and ``None`` otherwise.
    """

    problem_id: int
    name: str
    code: str
    level: int
    path: str | None = None
    metadata: dict | None = None

    @property
    def hash(self) -> str:
        """Whitespace/comment-insensitive code hash (see :func:`get_code_hash`)."""
        return get_code_hash(self.code)


# --------------------------------------------------------------------------- representative subsets

LEVEL1_REPRESENTATIVE_IDS = [1, 3, 6, 18, 23, 26, 33, 36, 40, 42, 48, 54, 57, 65, 77, 82, 86, 87]
LEVEL2_REPRESENTATIVE_IDS = [1, 2, 8, 18, 23, 28, 33, 43]
LEVEL3_REPRESENTATIVE_IDS = [1, 5, 8, 11, 20, 21, 33, 38, 43]

LEVEL1_REPRESENTATIVE_SUBSET = [
    "1_Square_matrix_multiplication_.py",
    "3_Batched_matrix_multiplication.py",
    "6_Matmul_with_large_K_dimension_.py",
    "18_Matmul_with_transposed_both.py",
    "23_Softmax.py",
    "26_GELU_.py",
    "33_BatchNorm.py",
    "36_RMSNorm_.py",
    "40_LayerNorm.py",
    "42_Max_Pooling_2D.py",
    "48_Mean_reduction_over_a_dimension.py",
    "54_conv_standard_3D__square_input__square_kernel.py",
    "57_conv_transposed_2D__square_input__square_kernel.py",
    "65_conv_transposed_2D__square_input__asymmetric_kernel.py",
    "77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__.py",
    "82_conv_depthwise_2D_square_input_square_kernel.py",
    "86_conv_depthwise_separable_2D.py",
    "87_conv_pointwise_2D.py",
]
LEVEL2_REPRESENTATIVE_SUBSET = [
    "1_Conv2D_ReLU_BiasAdd.py",
    "2_ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide.py",
    "8_Conv3d_Divide_Max_GlobalAvgPool_BiasAdd_Sum.py",
    "18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp.py",
    "23_Conv3d_GroupNorm_Mean.py",
    "28_BMM_InstanceNorm_Sum_ResidualAdd_Multiply.py",
    "33_Gemm_Scale_BatchNorm.py",
    "43_Conv3d_Max_LogSumExp_ReLU.py",
]
LEVEL3_REPRESENTATIVE_SUBSET = [
    "1_MLP.py",
    "5_AlexNet.py",
    "8_ResNetBasicBlock.py",
    "11_VGG16.py",
    "20_MobileNetV2.py",
    "21_EfficientNetMBConv.py",
    "33_VanillaRNN.py",
    "38_LTSMBidirectional.py",
    "43_MinGPTCausalAttention.py",
]

REPRESENTATIVE_IDS: dict[int, list[int]] = {
    1: LEVEL1_REPRESENTATIVE_IDS,
    2: LEVEL2_REPRESENTATIVE_IDS,
    3: LEVEL3_REPRESENTATIVE_IDS,
}


# --------------------------------------------------------------------------- helpers


def _check_level(level: Any) -> int:
    """Validate a level: an integer (or a string of digits) >= 1."""
    if isinstance(level, bool):
        raise ValueError(f"level must be a positive integer, got {level!r}")
    try:
        value = operator.index(level)
    except TypeError:
        if isinstance(level, str) and level.strip().lstrip("-").isdigit():
            value = int(level.strip())
        else:
            raise ValueError(f"level must be a positive integer, got {level!r}") from None
    if value < 1:
        raise ValueError(f"level must be >= 1, got {value}")
    return value


def _wanted_ids(problem_ids: Iterable[int] | None, id_range: Sequence[int] | None) -> set[int] | None:
    """The id filter: ``None`` keeps everything, otherwise the union of the
    explicit ids and the inclusive ``id_range`` (upstream semantics)."""
    if problem_ids is None and id_range is None:
        return None
    wanted: set[int] = set()
    if problem_ids is not None:
        wanted.update(int(pid) for pid in problem_ids)
    if id_range is not None:
        if len(id_range) != 2:
            raise ValueError(f"id_range must be (start, end), got {id_range!r}")
        start, end = int(id_range[0]), int(id_range[1])
        if start > end:
            raise ValueError(f"id_range start {start} is greater than end {end}")
        wanted.update(range(start, end + 1))
    return wanted


def _leading_int(file_name: str) -> int | None:
    head = file_name.split("_", 1)[0]
    if not head.isdigit():
        return None
    return int(head)


def _with_py_suffix(name: str) -> str:
    name = str(name)
    return name if name.endswith(".py") else name + ".py"


# --------------------------------------------------------------------------- base class


class BaseDataset(ABC):
    """Abstract KernelBench dataset of one level, addressed by 1-based problem id."""

    @property
    @abstractmethod
    def level(self) -> int:
        """The KernelBench level."""

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def __iter__(self) -> Iterator[Problem]:
        """Problems in ascending id order."""

    @abstractmethod
    def get_problem_by_id(self, problem_id: int) -> Problem:
        """The problem with this id; ``ValueError`` if it is not in the dataset."""

    @abstractmethod
    def get_problem_ids(self) -> list[int]:
        """All ids, ascending."""

    # -- concrete helpers -------------------------------------------------

    def __getitem__(self, index: int) -> Problem:
        """Problem at 0-based position ``index`` in id order."""
        ids = self.get_problem_ids()
        if not 0 <= index < len(ids):
            raise IndexError(f"Index {index} out of range for dataset of {len(ids)} problems")
        return self.get_problem_by_id(ids[index])

    def __contains__(self, problem_id: object) -> bool:
        return problem_id in set(self.get_problem_ids())

    def subset(
        self,
        problem_ids: Iterable[int] | None = None,
        id_range: IdRange | None = None,
    ) -> BaseDataset:
        """A dataset of the same kind keeping only ``problem_ids`` and/or the
        inclusive ``id_range`` (union of both). Ids not present are ignored."""
        raise NotImplementedError(f"{type(self).__name__} does not implement subset()")

    def sample(self, n: int, seed: int = 42) -> BaseDataset:
        """``n`` problems drawn without replacement with ``random.Random(seed)``
        (the same draw as upstream's ``random.seed(seed); random.sample``, but
        without touching the global RNG)."""
        ids = self.get_problem_ids()
        n = max(0, min(int(n), len(ids)))
        chosen = random.Random(seed).sample(ids, n)
        return self.subset(problem_ids=sorted(chosen))

    def get_representative_subset(self) -> BaseDataset:
        """Upstream's curated representative ids for this level, restricted to
        the ids present. ``ValueError`` for levels without such a list."""
        if self.level not in REPRESENTATIVE_IDS:
            raise ValueError(f"No representative subset for level {self.level}")
        present = set(self.get_problem_ids())
        return self.subset(problem_ids=[pid for pid in REPRESENTATIVE_IDS[self.level] if pid in present])


class _InMemoryDataset(BaseDataset):
    """Shared implementation: problems held in a dict keyed by id."""

    _level: int
    _problems: dict[int, Problem]

    @property
    def level(self) -> int:
        return self._level

    def __len__(self) -> int:
        return len(self._problems)

    def __iter__(self) -> Iterator[Problem]:
        for pid in sorted(self._problems):
            yield self._problems[pid]

    def get_problem_by_id(self, problem_id: int) -> Problem:
        try:
            return self._problems[problem_id]
        except (KeyError, TypeError):
            ids = sorted(self._problems)
            have = f"ids {_id_ranges(ids)}" if ids else "no problems"
            raise ValueError(f"Problem ID {problem_id} not found in dataset: level {self._level} has {have}") \
                from None

    def get_problem_ids(self) -> list[int]:
        return sorted(self._problems)

    def subset(
        self,
        problem_ids: Iterable[int] | None = None,
        id_range: IdRange | None = None,
    ):
        wanted = _wanted_ids(problem_ids, id_range)
        clone = copy.copy(self)
        clone._problems = {pid: prob for pid, prob in self._problems.items() if wanted is None or pid in wanted}
        return clone

    def _add(self, problem: Problem, origin: str) -> None:
        if problem.problem_id in self._problems:
            other = self._problems[problem.problem_id]
            raise ValueError(
                f"Duplicate problem id {problem.problem_id} at level {self._level} in {origin}: "
                f"{other.name!r} and {problem.name!r}"
            )
        self._problems[problem.problem_id] = problem

    def __repr__(self) -> str:
        return f"{type(self).__name__}(level={self._level}, problems={len(self)})"


# --------------------------------------------------------------------------- local


class LocalKernelBenchDataset(_InMemoryDataset):
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
        self._level = _check_level(level)
        self._base_path = resolve_dataset_path(base_path)
        self._problems = {}
        wanted = _wanted_ids(problem_ids, id_range)
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


# --------------------------------------------------------------------------- hugging face


class DatasetUnavailable(OSError):
    """The Hugging Face Hub cannot be reached and no cached copy of the dataset exists."""


_OFFLINE_VALUES = {"1", "true", "yes", "on"}


def _hub_endpoint() -> tuple[str, int]:
    from urllib.parse import urlsplit

    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    return url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)


def _hub_reachable(timeout: float = 2.0) -> bool:
    """Whether a TCP connection to the Hub opens within ``timeout`` (False when offline is requested)."""
    import socket

    if str(os.environ.get("HF_HUB_OFFLINE", "")).strip().lower() in _OFFLINE_VALUES:
        return False
    try:
        socket.create_connection(_hub_endpoint(), timeout=timeout).close()
        return True
    except OSError:
        return False


def _go_offline() -> None:
    """Make ``datasets`` read its cache without network retries (also when it is already imported)."""
    import sys

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    for module, attr in (("huggingface_hub.constants", "HF_HUB_OFFLINE"), ("datasets.config", "HF_HUB_OFFLINE"),
                         ("datasets.config", "HF_DATASETS_OFFLINE")):
        mod = sys.modules.get(module)
        if mod is not None and hasattr(mod, attr):
            setattr(mod, attr, True)


def _unavailable_message(dataset_name: str, level: int) -> str:
    host, _ = _hub_endpoint()
    return (f"cannot reach the Hugging Face Hub ({host}) and no cached copy of {dataset_name} level_{level} was "
            "found: use the bundled demo set (dataset_src=local dataset_path=demo) or a local KernelBench "
            "checkout (dataset_src=local dataset_path=PATH), or run once with network access; HF_HUB_OFFLINE=1 "
            "then reads the cached copy")


class HuggingFaceKernelBenchDataset(_InMemoryDataset):
    """Problems from the Hugging Face dataset (split ``level_{N}``, columns
    ``code``, ``level``, ``name``, ``problem_id``).

    Levels 1-4 are accepted. Names are normalised to end in ``.py``. If
    ``dataset_name`` is an existing local directory it is read with
    ``datasets.load_from_disk``: either a ``DatasetDict`` with ``level_N`` splits
    or a single ``Dataset`` that is filtered on its ``level`` column.
    """

    def __init__(
        self,
        level: int,
        dataset_name: str = DEFAULT_HF_DATASET_NAME,
        problem_ids: Iterable[int] | None = None,
        id_range: IdRange | None = None,
    ):
        level = _check_level(level)
        if level not in HF_LEVELS:
            raise ValueError(f"The Hugging Face KernelBench dataset has levels {list(HF_LEVELS)}, got {level}")
        self._level = level
        self._dataset_name = str(dataset_name)
        self._problems = {}
        wanted = _wanted_ids(problem_ids, id_range)

        hub = not Path(self._dataset_name).expanduser().is_dir()
        offline = hub and not _hub_reachable()
        if offline:
            _go_offline()  # the cache or nothing: no half minute of retries
        try:
            import datasets as hf_datasets  # imported lazily: heavy dependency
        except ImportError as exc:  # datasets is the optional [hf] extra
            from kernelbench._optional import MissingExtra, install_hint  # the [hf] extra

            raise MissingExtra(install_hint("datasets")) from exc

        try:
            rows = self._rows(hf_datasets)
        except Exception as exc:
            if offline or (hub and _is_network_error(exc)):
                raise DatasetUnavailable(_unavailable_message(self._dataset_name, level)) from None
            raise
        for row in rows:
            pid = int(row["problem_id"])
            if wanted is not None and pid not in wanted:
                continue
            name = _with_py_suffix(row["name"])
            self._add(
                Problem(
                    problem_id=pid,
                    name=name,
                    code=row["code"],
                    level=self._level,
                    path=None,
                    metadata={"source": "huggingface", "dataset_name": self._dataset_name},
                ),
                self._dataset_name,
            )

    @property
    def dataset_name(self) -> str:
        return self._dataset_name

    def _rows(self, hf_datasets):
        split = f"level_{self._level}"
        local = Path(self._dataset_name).expanduser()
        if local.is_dir():
            loaded = hf_datasets.load_from_disk(str(local))
            if isinstance(loaded, hf_datasets.DatasetDict):
                if split not in loaded:
                    raise ValueError(
                        f"Saved dataset at {local} has no split {split!r} (splits: {sorted(loaded.keys())})"
                    )
                return loaded[split]
            if "level" not in loaded.column_names:
                raise ValueError(
                    f"Saved dataset at {local} is a single split without a 'level' column; "
                    "save a DatasetDict with level_N splits instead"
                )
            return [row for row in loaded if int(row["level"]) == self._level]
        return hf_datasets.load_dataset(self._dataset_name, split=split)


# --------------------------------------------------------------------------- factory and helpers


def _is_network_error(exc: BaseException) -> bool:
    """A connection failure anywhere in the exception chain (requests, httpx, socket)."""
    seen = 0
    while exc is not None and seen < 10:
        name = type(exc).__name__
        if isinstance(exc, (ConnectionError, TimeoutError)) or "Connect" in name or "Timeout" in name \
                or "offline" in str(exc).lower():
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def _id_ranges(ids: list[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``1-3, 7``."""
    out, start, prev = [], None, None
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}-{prev}" if prev != start else str(start))
            start = prev = i
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else str(start))
    return ", ".join(out)


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
