"""KernelGuard: a KernelBench-compatible evaluator with a fail-closed integrity path.

Importing the package is cheap: torch, litellm and datasets are only imported by the
submodules that need them (``from kernelbench import eval as kb_eval``,
``from kernelbench import timing``).
"""

__version__ = "0.4.0"
