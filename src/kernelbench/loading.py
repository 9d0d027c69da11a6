"""Loading the reference and candidate programs and preparing their inputs (any process that evaluates).

The upstream-compatible pieces of the original evaluator that the timing methods and
the profiler need too, kept below them so none imports ``kernelbench.eval``:

* seeding (:func:`set_seed`), precision names (:func:`get_torch_dtype_from_string`)
  and their tolerances;
* input preparation (:func:`process_inputs`: only floating-point tensors are cast);
* loading a reference (:func:`load_original_model_and_inputs`, which raises
  :class:`ReferenceLoadError`) and a candidate into its own module
  (:func:`load_custom_model`, :func:`load_custom_model_with_tempfile`).

``kernelbench.eval`` re-exports every name here (its upstream path).
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import os
import sys
import tempfile
import types
from typing import Any

import torch

__all__ = [
    "ReferenceLoadError",
    "TEMPFILE_BACKENDS",
    "get_tolerance_for_precision",
    "get_torch_dtype_from_string",
    "load_custom_model",
    "load_custom_model_with_tempfile",
    "load_original_model_and_inputs",
    "process_inputs",
    "set_seed",
]

#: Backends whose candidates upstream loads through a real temporary file (inspect needs one).
TEMPFILE_BACKENDS = frozenset({"triton", "tilelang", "cute"})

_module_counter = itertools.count()


class ReferenceLoadError(RuntimeError):
    """The reference program could not be compiled or executed."""

    # records name it by its upstream module (metadata.reference_error_name is
    # "kernelbench.eval.ReferenceLoadError"), which re-exports it
    __module__ = "kernelbench.eval"


def set_seed(seed: int) -> None:
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)


_DTYPES = {"fp32": torch.float32, "float32": torch.float32, "fp16": torch.float16,
           "float16": torch.float16, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16}


def get_torch_dtype_from_string(precision: str | torch.dtype) -> torch.dtype:
    if isinstance(precision, torch.dtype):
        return precision
    try:
        return _DTYPES[str(precision).lower()]
    except KeyError:
        raise ValueError(f"Invalid precision {precision!r}; accepted: fp32, fp16, bf16") from None


def get_tolerance_for_precision(precision: str | torch.dtype) -> float:
    dtype = get_torch_dtype_from_string(precision)
    return 1e-4 if dtype == torch.float32 else 1e-2


def _process_input_tensor(value: Any, device: Any, backend: str = "cuda", precision: torch.dtype = torch.float32) -> Any:
    """Move a tensor to ``device``; cast only floating-point tensors (upstream #151 fixed)."""
    if not isinstance(value, torch.Tensor):
        return value
    if value.is_floating_point():
        return value.to(device=device, dtype=precision)
    return value.to(device=device)


def process_inputs(values: list, device: Any, precision: torch.dtype = torch.float32, backend: str = "cuda") -> list:
    return [_process_input_tensor(v, device, backend, precision) for v in values]


def _new_module(name_hint: str) -> types.ModuleType:
    name = f"kernelbench_{name_hint}_{os.getpid()}_{next(_module_counter)}"
    return types.ModuleType(name)


def _import_source_as_module(src: str, name_hint: str, directory: str | None) -> types.ModuleType:
    """Write ``src`` to a file and import it as a fresh module (inspect/triton need a file)."""
    digest = hashlib.sha256(src.encode()).hexdigest()[:16]
    directory = directory or tempfile.mkdtemp(prefix="kb_src_")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{name_hint}_{digest}.py")
    with open(path, "w") as fh:
        fh.write(src)
    mod_name = f"kernelbench_{name_hint}_{digest}_{os.getpid()}_{next(_module_counter)}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
    return module


def load_original_model_and_inputs(model_original_src: str, context: dict | None = None):
    """Execute the reference source; return ``(Model, get_init_inputs, get_inputs)``.

    Unlike upstream (which printed and returned ``None``), failures raise
    :class:`ReferenceLoadError`.  ``context`` receives the module globals when given.
    """
    module = _new_module("ref")
    try:
        code = compile(model_original_src, "<reference>", "exec")
        exec(code, module.__dict__)
    except Exception as exc:
        raise ReferenceLoadError(f"reference failed to load: {type(exc).__name__}: {exc}") from exc
    if context is not None:
        context.update(module.__dict__)
    try:
        return module.Model, module.get_init_inputs, module.get_inputs
    except AttributeError as exc:
        raise ReferenceLoadError(f"reference lacks Model/get_inputs/get_init_inputs: {exc}") from exc


def load_custom_model(model_custom_src: str, context: dict | None = None, build_directory: str | None = None):
    """Load the candidate into its own module and return ``ModelNew`` (None if absent).

    ``context`` is accepted for signature compatibility and receives the candidate's
    globals, but the candidate never executes inside the reference's namespace.
    """
    if build_directory:
        os.makedirs(build_directory, exist_ok=True)
        os.environ["TORCH_EXTENSIONS_DIR"] = str(build_directory)
    module = _import_source_as_module(model_custom_src, "candidate", build_directory)
    if context is not None:
        context.update(module.__dict__)
        context["BUILD_DIRECTORY"] = build_directory
    return getattr(module, "ModelNew", None)


def load_custom_model_with_tempfile(model_custom_src: str, entry_point: str = "ModelNew"):
    """Upstream's tempfile loader: returns ``(entry_point_object, tempfile_handle)``."""
    tmp = tempfile.NamedTemporaryFile(mode="w", suffix=".py", delete=False)
    tmp.write(model_custom_src)
    tmp.flush()
    tmp.close()
    mod_name = f"kernelbench_tmp_{os.getpid()}_{next(_module_counter)}"
    spec = importlib.util.spec_from_file_location(mod_name, tmp.name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    return getattr(module, entry_point, None), tmp
