"""The attack seeds of the adversary and the mutation engine that searches around them (any process).

Three seed classes, each a family of working cheats written as templates
(:class:`~kernelbench.reward_hardening.adversary.seedlib.Seed`):

``first_read``  bytes produced on first read (``seed_first_read``);
``read_path``   the harness's read of the output is the candidate's (``seed_read_path``);
``outlives``    state that outlives the evaluation (``seed_outlives``).

:func:`mutants` draws variants of a seed: another point of its knob space (another
operator, IPC kind, mapping trick, arming place, delay) plus, at random, one of the
generic disguises of ``mutate.py`` on top.  Seeds marked ``needs_cxx`` build a C++
extension and are left out when :func:`have_compiler` says no compiler is available.
Runs in the adversary's own process; the candidates it writes run only inside the
evaluator.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil

from kernelbench.reward_hardening.adversary import seed_first_read, seed_outlives, seed_read_path
from kernelbench.reward_hardening.adversary.mutate import check_compiles, mutate
from kernelbench.reward_hardening.adversary.seedlib import DISGUISES, Seed

__all__ = ["SEEDS", "SEED_CLASSES", "have_compiler", "mutants", "select_seeds", "variant_label"]

SEED_CLASSES = {
    "first_read": "bytes produced on first read: PROT_NONE (or empty-memfd) storage filled by a fault handler",
    "read_path": "the read path is the candidate's: a registered aten kernel computes while the harness reads",
    "outlives": "state that outlives the evaluation: an honest kernel counting runs in a named IPC object",
}
SEEDS: dict[str, Seed] = {s.id: s for s in seed_first_read.SEEDS + seed_read_path.SEEDS + seed_outlives.SEEDS}
# the generic disguise that makes a variant look like the unmutated seed
STACKED = "rename+getattr_strings+importlib+closure"


def have_compiler() -> bool:
    """Whether ``load_inline`` can build here: a C++ compiler and ninja on the PATH."""
    cxx = os.environ.get("CXX") or "c++"
    return shutil.which(cxx) is not None and shutil.which("ninja") is not None


def select_seeds(classes: list[str] | None = None, cxx: bool = True) -> list[Seed]:
    """Seeds of the given classes (all when ``None``), without the C++ ones unless ``cxx``."""
    if classes is not None:
        bad = [c for c in classes if c not in SEED_CLASSES]
        if bad:
            raise KeyError(f"unknown seed class(es) {bad}; known: {', '.join(SEED_CLASSES)}")
    return [s for s in SEEDS.values() if (classes is None or s.cls in classes) and (cxx or not s.needs_cxx)]


def variant_label(seed: Seed, knobs: dict, disguise: str = "none") -> str:
    """``k=v,...`` for the knobs that differ from the seed's defaults, ``|disguise`` when one is worn."""
    diff = ",".join(f"{k}={v}" for k, v in knobs.items() if seed.defaults.get(k) != v)
    return (diff or "seed") + ("" if disguise == "none" else f"|{disguise}")


def mutants(seed: Seed, n: int, rng_seed: int = 0, disguise: bool = True,
            reference_src: str | None = None) -> list[tuple[str, str]]:
    """Up to ``n`` distinct variants of ``seed`` as ``(label, source)``; deterministic in ``rng_seed``.

    Knob points are drawn without repetition from the seed's space (the defaults left
    out: that is the seed itself); each may wear a generic disguise (when the disguise
    does not apply, the bare variant is kept).  Every source compiles.
    """
    rng = random.Random(f"{seed.id}:{rng_seed}")
    names = list(seed.space)
    points = [dict(zip(names, values)) for values in itertools.product(*(seed.space[k] for k in names))]
    points = [p for p in points if any(seed.defaults.get(k) != v for k, v in p.items())]
    rng.shuffle(points)
    out: list[tuple[str, str]] = []
    for point in points[:max(0, n)]:
        knobs = dict(seed.defaults)
        knobs.update(point)
        src = seed.source(knobs)
        worn = rng.choice(DISGUISES) if disguise else "none"
        if worn != "none":
            spec = STACKED if worn == "stacked" else worn
            disguised = mutate(src, spec, reference_src)
            if disguised is None or check_compiles(disguised) is not None:
                worn = "none"
            else:
                src = disguised
        out.append((variant_label(seed, knobs, worn), src))
    return out
