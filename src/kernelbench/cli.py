"""Command-line plumbing shared by the scripts.

KernelBench's scripts use pydra-config: ``key=value`` arguments are parsed with
``ast.literal_eval`` and stored without any casting, so ``verbose=false`` stays the
(truthy) string ``"false"``.  KernelGuard keeps pydra and upstream's key names, but
every config derives from :class:`KBConfig`, whose ``finalize`` hook casts the
declared keys with a pydantic model (booleans ``true``/``false``/``1``/``0``/``yes``/
``no``/``on``/``off`` in any case, integers, floats, and enumerated keys against their
accepted values).  Mistakes end in a one-line message naming the key and the accepted
values, never in a traceback.  The evaluation keys the evaluating commands share live
in one place, :class:`EvalKeysConfig`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Optional, TypeVar

import pydra
from pydantic import BaseModel, BeforeValidator, Field, ValidationError, create_model

from kernelbench.reward_hardening.config import MODES, POLICIES, SOURCE_STRICT

__all__ = ["ConfigError", "EvalKeysConfig", "KBConfig", "cast_keys", "cli_main", "parse_bool", "project_root"]

# Accepted values shared by the scripts' configs.
TIMING_METHODS = ("cuda_event", "do_bench", "do_bench_impl", "host_time")
BACKENDS = ("cuda", "triton", "cute", "tilelang", "thunderkittens", "hip")
PRECISIONS = ("fp32", "fp16", "bf16")
DATASET_SOURCES = ("local", "huggingface")
HARDENING_MODES = ("off", *MODES)
HARDENING_POLICIES = POLICIES
EVAL_MODES = ("local", "modal")
EXECUTORS = ("local", "ray")  # where a batch's samples run: this machine, or a Ray cluster


def project_root() -> Path:
    """The source checkout this package runs from (``<root>/src/kernelbench``), else the working directory.

    Default locations (``runs/``, ``results/timing/``) and relative paths given to the
    commands are taken from here, as the upstream scripts took them from the checkout.
    """
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "src" / "kernelbench").is_dir() else Path.cwd()


class ConfigError(ValueError):
    """A configuration value is missing or not one of the accepted values."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):  # pydantic would take True as 1
        raise ValueError("a boolean is not a number")
    return value


_KIND_MESSAGE = {
    "bool": "expected a boolean (true/false)",
    "int": "expected an integer",
    "optional_int": "expected an integer or None",
    "float": "expected a number",
}
_KIND_TYPE: dict[str, Any] = {
    "bool": bool,
    "int": Annotated[int, BeforeValidator(_no_bool)],
    "optional_int": Optional[Annotated[int, BeforeValidator(_no_bool)]],
    "float": Annotated[float, BeforeValidator(_no_bool)],
}


def _field_kinds(cls: type) -> dict[str, Any]:
    """key -> "bool" / "int" / "optional_int" / "float" / tuple of accepted values."""
    kinds: dict[str, Any] = {}
    for kind, keys in (("bool", cls.BOOL_KEYS), ("int", cls.INT_KEYS), ("optional_int", cls.OPTIONAL_INT_KEYS),
                       ("float", cls.FLOAT_KEYS)):
        kinds.update({k: kind for k in keys})
    kinds.update({k: tuple(v) for k, v in cls.CHOICES.items()})
    return kinds


_MODELS: dict[tuple[type, frozenset], type[BaseModel]] = {}


def _model_for(cls: type, keys: frozenset) -> type[BaseModel]:
    """The pydantic model that casts ``keys`` of ``cls``'s declared keys (built once per class and key set)."""
    if (cls, keys) not in _MODELS:
        kinds = _field_kinds(cls)
        # fields are named k0, k1, ... with the config key as alias: keys such as ``json`` would shadow
        # BaseModel's own attributes
        fields = {f"k{i}": ((Literal[kind] if isinstance(kind, tuple) else _KIND_TYPE[kind]),  # type: ignore
                            Field(..., alias=key))
                  for i, (key, kind) in enumerate(kinds.items()) if key in keys}
        _MODELS[(cls, keys)] = create_model(f"{cls.__name__}Keys", **fields)
    return _MODELS[(cls, keys)]


def _prepare(kind: Any, value: Any) -> Any:
    """What a shell user means: ``none`` is None, strings are stripped, choices ignore case."""
    if isinstance(value, str):
        value = value.strip()
        if kind == "optional_int" and value.lower() in ("none", ""):
            return None
        if isinstance(kind, tuple):
            for option in kind:
                if isinstance(option, str) and option.lower() == value.lower():
                    return option
        if kind == "bool":
            return value.lower()
    return value


def cast_keys(cls: type, values: dict[str, Any]) -> dict[str, Any]:
    """Cast ``values`` of ``cls``'s declared keys with pydantic; :class:`ConfigError` names the first bad key."""
    kinds = _field_kinds(cls)
    prepared = {k: _prepare(kinds[k], values[k]) for k in kinds if k in values}
    model = _model_for(cls, frozenset(prepared))
    try:
        return model.model_validate(prepared).model_dump(by_alias=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err.get("loc") else "?"
        kind = kinds.get(key)
        if isinstance(kind, tuple):
            raise ConfigError(key, f"got {values.get(key)!r}; accepted values: {', '.join(map(str, kind))}") \
                from None
        raise ConfigError(key, f"{_KIND_MESSAGE.get(kind, 'invalid value')}, got {values.get(key)!r}") from None


def parse_bool(key: str, value: Any) -> bool:
    """One boolean key (``true``/``false``/``1``/``0``/``yes``/``no``/``on``/``off``, any case)."""

    class _One(KBConfig):
        BOOL_KEYS = ("value",)

    try:
        return cast_keys(_One, {"value": value})["value"]
    except ConfigError as exc:
        raise ConfigError(key, str(exc).split(": ", 1)[1]) from None


class KBConfig(pydra.Config):
    """pydra config whose declared keys are cast by pydantic.

    Subclasses set attributes in ``__init__`` exactly like upstream KernelBench and
    declare ``BOOL_KEYS``, ``INT_KEYS`` (``OPTIONAL_INT_KEYS`` allow None),
    ``FLOAT_KEYS`` and ``CHOICES`` (key -> accepted values); :meth:`finalize` builds a
    pydantic model from them (:func:`cast_keys`) and sets the cast values.
    """

    # Plain (unannotated) class attributes: pydra turns annotated ones into config keys.
    BOOL_KEYS = ()
    INT_KEYS = ()
    OPTIONAL_INT_KEYS = ()
    FLOAT_KEYS = ()
    CHOICES = {}

    def finalize(self) -> None:  # called by pydra after overrides
        kinds = _field_kinds(type(self))
        cast = cast_keys(type(self), {k: getattr(self, k) for k in kinds})
        for key, value in cast.items():
            setattr(self, key, value)
        self.validate()

    def validate(self) -> None:
        """Cross-key checks; raise :class:`ConfigError`."""


class EvalKeysConfig(KBConfig):
    """The evaluation keys every evaluating command shares, with one set of defaults.

    ``run_and_check``, ``eval_from_generations`` and ``generate_and_eval_single_sample``
    (and their ``kernelguard`` subcommands) derive from it; their own keys come on top
    (``BOOL_KEYS = EvalKeysConfig.BOOL_KEYS + (...)`` and so on).
    """

    BOOL_KEYS = ("verbose", "allow_tf32")
    INT_KEYS = ("num_correct_trials", "num_perf_trials")
    CHOICES = {
        "eval_mode": EVAL_MODES,
        "timing_method": TIMING_METHODS,
        "backend": BACKENDS,
        "precision": PRECISIONS,
        "reward_hardening_mode": HARDENING_MODES,
        "reward_hardening_policy": HARDENING_POLICIES,
    }
    DEFAULTS = {
        "eval_mode": "local",
        "device": "cuda",
        "precision": "fp32",
        "backend": "cuda",
        "timing_method": "cuda_event",
        "num_correct_trials": 5,
        "num_perf_trials": 100,
        "verbose": False,
        "allow_tf32": False,
        "reward_hardening_mode": "off",
        "reward_hardening_policy": SOURCE_STRICT,
    }

    def set_eval_defaults(self) -> None:
        for key, value in self.DEFAULTS.items():
            setattr(self, key, value)


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
                text = str(exc)
                if text.startswith("Missing required config value:"):
                    key = text.split(":", 1)[1].strip()
                    _die(f"missing required key {key} (pass {key}=...)")
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
            finally:
                _keep_bytecode()

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


def _keep_bytecode() -> None:
    """Where PYTHONDONTWRITEBYTECODE is set, write the .pyc of the torch/numpy modules this run imported.

    Only missing files are written (a stat per module afterwards), so the first run in
    such an environment pays one more compilation and every later process imports
    torch from bytecode (see :mod:`kernelbench._bytecode`).
    """
    if not sys.flags.dont_write_bytecode or "torch" not in sys.modules:
        return
    try:
        from kernelbench._bytecode import write_imported_bytecode

        write_imported_bytecode(("torch", "numpy"))
    except Exception:  # never let a cache write change a command's outcome
        pass


def _die(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)
