"""Command-line plumbing shared by the scripts.

KernelBench's scripts use pydra-config: ``key=value`` arguments are parsed with
``ast.literal_eval`` and stored without any casting, so ``verbose=false`` stays the
(truthy) string ``"false"``.  KernelGuard keeps pydra and upstream's key names, but
every config derives from :class:`KBConfig`, whose ``finalize`` hook normalises
booleans (``true``/``false``/``1``/``0``/``yes``/``no`` in any case), integers and
floats, and checks enumerated keys against their accepted values.  Mistakes end in a
one-line message naming the key and the accepted values, never in a traceback.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, TypeVar

import pydra

__all__ = ["ConfigError", "KBConfig", "cli_main", "parse_bool", "project_root"]

# Accepted values shared by the scripts' configs.
TIMING_METHODS = ("cuda_event", "do_bench", "do_bench_impl", "host_time")
BACKENDS = ("cuda", "triton", "cute", "tilelang", "thunderkittens", "hip")
PRECISIONS = ("fp32", "fp16", "bf16")
DATASET_SOURCES = ("local", "huggingface")
HARDENING_MODES = ("off", "audit", "enforce")
HARDENING_POLICIES = ("source_strict", "practical")
EVAL_MODES = ("local", "modal")

_TRUE = {"true", "t", "1", "yes", "y", "on"}
_FALSE = {"false", "f", "0", "no", "n", "off"}


def project_root() -> "Path":
    """The source checkout this package runs from (``<root>/src/kernelbench``), else the working directory.

    Default locations (``runs/``, ``results/timing/``) and relative paths given to the
    commands are taken from here, as the upstream scripts took them from the checkout.
    """
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "src" / "kernelbench").is_dir() else Path.cwd()


class ConfigError(ValueError):
    """A configuration value is missing or not one of the accepted values."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key


def parse_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigError(key, f"expected a boolean (true/false), got {value!r}")


def _parse_int(key: str, value: Any, allow_none: bool) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        if allow_none:
            return None
        raise ConfigError(key, "expected an integer, got None")
    if isinstance(value, bool):
        raise ConfigError(key, f"expected an integer, got {value!r}")
    try:
        as_float = float(value)
    except (TypeError, ValueError):
        raise ConfigError(key, f"expected an integer, got {value!r}") from None
    if not as_float.is_integer():
        raise ConfigError(key, f"expected an integer, got {value!r}")
    return int(as_float)


def _parse_float(key: str, value: Any) -> float:
    if isinstance(value, bool):
        raise ConfigError(key, f"expected a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(key, f"expected a number, got {value!r}") from None


class KBConfig(pydra.Config):
    """pydra config with typed normalisation.

    Subclasses set attributes in ``__init__`` exactly like upstream KernelBench and
    declare ``BOOL_KEYS``, ``INT_KEYS`` (``OPTIONAL_INT_KEYS`` allow None),
    ``FLOAT_KEYS`` and ``CHOICES`` (key -> accepted values).
    """

    # Plain (unannotated) class attributes: pydra turns annotated ones into config keys.
    BOOL_KEYS = ()
    INT_KEYS = ()
    OPTIONAL_INT_KEYS = ()
    FLOAT_KEYS = ()
    CHOICES = {}

    def finalize(self) -> None:  # called by pydra after overrides
        for key in self.BOOL_KEYS:
            setattr(self, key, parse_bool(key, getattr(self, key)))
        for key in self.INT_KEYS:
            setattr(self, key, _parse_int(key, getattr(self, key), allow_none=False))
        for key in self.OPTIONAL_INT_KEYS:
            setattr(self, key, _parse_int(key, getattr(self, key), allow_none=True))
        for key in self.FLOAT_KEYS:
            setattr(self, key, _parse_float(key, getattr(self, key)))
        for key, accepted in self.CHOICES.items():
            value = getattr(self, key)
            if isinstance(value, str):
                value = value.strip()
                lowered = value.lower()
                for option in accepted:
                    if isinstance(option, str) and option.lower() == lowered:
                        value = option
                        break
                setattr(self, key, value)
            if value not in accepted:
                shown = ", ".join(str(a) for a in accepted)
                raise ConfigError(key, f"got {value!r}; accepted values: {shown}")
        self.validate()

    def validate(self) -> None:
        """Cross-key checks; raise :class:`ConfigError`."""


C = TypeVar("C", bound=KBConfig)


def cli_main(config_cls: type[C]) -> Callable[[Callable[[C], Any]], Callable[..., Any]]:
    """Like ``pydra.main`` but turns configuration mistakes into one-line errors."""

    def decorator(fn: Callable[[C], Any]) -> Callable[..., Any]:
        pydra_entry = pydra.main(config_cls)(fn)

        def entry(args: list[str] | None = None) -> Any:
            argv = sys.argv[1:] if args is None else list(args)
            config = config_cls()
            try:
                show = pydra.apply_overrides(config, argv, finalize=True)
            except ConfigError as exc:
                _die(f"invalid value for {exc}")
            except AttributeError as exc:
                known = ", ".join(sorted(k for k in vars(config) if not k.startswith("_")))
                _die(f"unknown config key ({exc}); known keys: {known}")
            except (ValueError, SyntaxError, TypeError) as exc:
                _die(f"could not parse arguments: {exc}")
            if show:
                import yaml

                print(yaml.dump(config.to_dict(), sort_keys=True))
                return None
            from kernelbench._optional import MissingExtra

            try:
                return fn(config)
            except MissingExtra as exc:  # an optional extra ([gen], [hf], [plot]) is not installed
                _die(str(exc))
            except KeyboardInterrupt:  # Ctrl-C outside a batch loop: one line, no traceback
                print("interrupted", file=sys.stderr)
                raise SystemExit(130) from None

        entry.pydra_entry = pydra_entry  # type: ignore[attr-defined]
        return entry

    return decorator


def validate_eval_keys(cfg: Any) -> None:
    """Checks shared by run_and_check and eval_from_generations (device, eval_mode, backend)."""
    device = str(cfg.device).strip().lower()
    if device not in ("cuda", "cpu") and not device.startswith("cuda:"):
        raise ConfigError("device", f"got {cfg.device!r}; accepted values: cuda, cpu")
    cfg.device = device
    if cfg.reward_hardening_mode != "off" and cfg.eval_mode != "local":
        raise ConfigError("eval_mode", "reward_hardening_mode=audit|enforce requires eval_mode=local")
    if cfg.eval_mode == "modal":
        raise ConfigError("eval_mode", "modal execution is not available in KernelGuard; use eval_mode=local")
    if cfg.backend == "thunderkittens":
        cfg.precision = "bf16"


def _die(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)
