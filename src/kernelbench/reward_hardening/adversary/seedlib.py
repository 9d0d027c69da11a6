"""What an attack seed is, and the source snippets the seed classes share (any process; adversary only).

A :class:`Seed` is one cheating candidate written as a template: ``render(knobs)`` turns
a choice of knobs (which IPC kind, which operator, which mapping trick, where the trick
is armed, after how many honest calls it starts) into a complete candidate source.  The
seed itself is its ``defaults``; the mutation engine (``seeds.mutants``) searches the
``space`` around it and may add one of the generic disguises of ``mutate.py`` on top.

``arm`` (shared by every class) says where the trick is set up: ``import`` at module
level, ``forward`` on the first call, ``thread`` from a background thread started at
import (forward waits for it).  ``delay`` is a number of honest forward calls before the
trick starts (a candidate that behaves while the evaluator is warming up).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ARM", "DISGUISES", "Seed", "arm_snippet", "dedent"]

ARM = ("import", "forward", "thread")
# the generic transforms a mutant may wear on top of its knobs ("none": the bare variant)
DISGUISES = ("none", "rename", "getattr_strings", "getattr_opaque", "method_getattr", "importlib", "closure",
             "decorator", "split_cxx", "stacked")


@dataclass(frozen=True)
class Seed:
    id: str
    cls: str  # first_read | read_path | outlives
    problem: str  # a bundled demo problem, relative to kernelbench/demo_tasks
    needs_cxx: bool  # builds a C++ extension (skipped when no compiler is available)
    summary: str
    render: Callable[[dict[str, Any]], str]
    defaults: dict[str, Any] = field(default_factory=dict)
    space: dict[str, tuple] = field(default_factory=dict)  # knob -> the values the mutation engine tries

    def source(self, knobs: dict[str, Any] | None = None) -> str:
        k = dict(self.defaults)
        k.update(knobs or {})
        return self.render(k)


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def arm_snippet(arm: str, setup: str, indent: int = 8) -> tuple[str, str]:
    """(module-level code, lines for the top of forward) arming ``setup()`` where ``arm`` says.

    ``setup`` names a module-level function taking no argument; the forward lines (already
    indented by ``indent`` spaces, the first one not) make sure it has run before the trick
    is used.
    """
    if arm == "import":
        return f"{setup}()\n_ARMED = [True]\n", "pass"
    if arm == "thread":
        module = (f"import threading as _threading\n_ARMER = _threading.Thread(target={setup}, daemon=True)\n"
                  f"_ARMER.start()\n_ARMED = [False]\n")
        lines = ["if not _ARMED[0]:", "    _ARMER.join()", "    _ARMED[0] = True"]
    elif arm == "forward":
        module = "_ARMED = [False]\n"
        lines = ["if not _ARMED[0]:", f"    {setup}()", "    _ARMED[0] = True"]
    else:
        raise ValueError(f"unknown arm {arm!r}")
    return module, ("\n" + " " * indent).join(lines)
