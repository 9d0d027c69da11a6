"""One KernelBench problem and the dataset base classes (any process; standard library only).

:class:`Problem` (with its whitespace- and comment-insensitive code hash),
:class:`BaseDataset` (one level addressed by 1-based problem id: subsets, seeded
samples, the representative subset) and :class:`InMemoryDataset`, the shared
implementation of the local and Hugging Face datasets.
"""

from __future__ import annotations

import copy
import hashlib
import operator
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kernelbench.dataset_parts.subsets import REPRESENTATIVE_IDS

IdRange = tuple[int, int]

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


def check_level(level: Any) -> int:
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


def wanted_ids(problem_ids: Iterable[int] | None, id_range: Sequence[int] | None) -> set[int] | None:
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


class InMemoryDataset(BaseDataset):
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
        wanted = wanted_ids(problem_ids, id_range)
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
