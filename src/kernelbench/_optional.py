"""Optional dependencies, imported lazily with a one-line install hint.

Evaluation needs only the base dependencies.  Generation (``litellm``,
``python-dotenv``, ``tenacity``) is the ``gen`` extra, the Hugging Face dataset
source (``datasets``) the ``hf`` extra, plotting (``matplotlib``) the ``plot`` extra,
the Ray executor (``ray``) the ``ray`` extra.
:func:`require` imports one of them or raises :class:`MissingExtra`, an
``ImportError`` whose message says which extra to install, as lm-evaluation-harness
does for its optional back ends.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["DISTRIBUTION", "EXTRAS", "MissingExtra", "install_hint", "require"]

DISTRIBUTION = "kernelbench-guard"

# import name -> (extra, what it is needed for)
EXTRAS: dict[str, tuple[str, str]] = {
    "litellm": ("gen", "generating candidates with an LLM"),
    "dotenv": ("gen", "reading API keys from .env"),
    "tenacity": ("gen", "litellm's retries"),
    "datasets": ("hf", "dataset_src=huggingface"),
    "matplotlib": ("plot", "plotting"),
    "ray": ("ray", "executor=ray and the reward API's Ray pool"),
}


class MissingExtra(ImportError):
    """An optional dependency is not installed; the message is the install hint."""


def install_hint(module: str) -> str:
    extra, purpose = EXTRAS[module]
    return (f"{module} is needed for {purpose} but is not installed: install the '{extra}' extra "
            f"(uv sync --extra {extra}, or pip install '{DISTRIBUTION}[{extra}]')")


def require(module: str) -> ModuleType:
    """Import ``module`` (a key of :data:`EXTRAS`) or raise :class:`MissingExtra` with the hint.

    Only the absence of ``module`` itself becomes the hint; an import error inside an
    installed package propagates unchanged, so a broken install is not mistaken for a
    missing one.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = getattr(exc, "name", None)
        if missing is not None and missing != module and not module.startswith(f"{missing}."):
            raise
        raise MissingExtra(install_hint(module)) from None
