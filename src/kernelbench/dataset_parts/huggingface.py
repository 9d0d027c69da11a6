"""The KernelBench problems from the Hugging Face dataset, or a ``save_to_disk`` copy of it (any process).

``datasets`` is imported inside the constructor (the ``hf`` extra).  A Hub that
cannot be reached raises :class:`DatasetUnavailable` at once (a two-second
connection probe, then the local cache with ``HF_HUB_OFFLINE=1``) instead of
retrying for half a minute.  Problem names are normalised to end in ``.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from kernelbench.dataset_parts.problems import IdRange, InMemoryDataset, Problem, check_level, wanted_ids

DEFAULT_HF_DATASET_NAME = "ScalingIntelligence/KernelBench"
#: Levels published as ``level_N`` splits of the Hugging Face dataset.
HF_LEVELS = (1, 2, 3, 4)


class DatasetUnavailable(OSError):
    """The Hugging Face Hub cannot be reached and no cached copy of the dataset exists."""


_OFFLINE_VALUES = {"1", "true", "yes", "on"}


def _with_py_suffix(name: str) -> str:
    name = str(name)
    return name if name.endswith(".py") else name + ".py"


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


class HuggingFaceKernelBenchDataset(InMemoryDataset):
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
        level = check_level(level)
        if level not in HF_LEVELS:
            raise ValueError(f"The Hugging Face KernelBench dataset has levels {list(HF_LEVELS)}, got {level}")
        self._level = level
        self._dataset_name = str(dataset_name)
        self._problems = {}
        wanted = wanted_ids(problem_ids, id_range)

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
