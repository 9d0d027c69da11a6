"""Small helpers shared by the scripts: files, paths, ``.env``, and KernelBench's ``utils`` names.

Importing this module is deliberately cheap and side-effect free: it does not import
torch, litellm, openai or datasets, does not read ``.env`` and never touches the
network.  The heavy pieces are imported inside the functions that need them
(:func:`query_server` imports litellm, :func:`load_env` imports python-dotenv).

This is upstream KernelBench's ``utils`` path; its names live by concern and are
re-exported here:

* :mod:`kernelbench.code_blocks` - fenced code blocks in a reply
  (``extract_first_code`` ...);
* :mod:`kernelbench.gpu_arch` - ``set_gpu_arch``, ``get_gpu_vendor``;
* :mod:`kernelbench.llm` - ``query_server``, ``SERVER_PRESETS`` and the provider
  presets;
* here: files, paths, ``.env``, and upstream's small extras (thread / process maps,
  ``rand_mix``).

Differences from upstream are described in those modules' docstrings; nothing happens
at import time here: call :func:`load_env` to read ``.env``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Iterable

from kernelbench.code_blocks import (  # noqa: F401 - re-exported (upstream path)
    extract_code_blocks,
    extract_first_code,
    extract_last_code,
    extract_python_code,
    find_code_blocks,
    remove_code_block_header,
)
from kernelbench.gpu_arch import AMD_ARCHS, NVIDIA_ARCHS, get_gpu_vendor, set_gpu_arch  # noqa: F401
from kernelbench.llm import (  # noqa: F401 - re-exported (upstream path)
    SERVER_PRESETS,
    SGLANG_KEY,
    create_inference_server_from_presets,
    missing_api_keys,
    query_server,
)

__all__ = [
    "AMD_ARCHS",
    "NVIDIA_ARCHS",
    "SERVER_PRESETS",
    "extract_code_blocks",
    "extract_first_code",
    "extract_last_code",
    "find_code_blocks",
    "load_env",
    "query_server",
    "read_file",
    "set_gpu_arch",
    # upstream-compatible extras
    "REPO_TOP_PATH",
    "SGLANG_KEY",
    "create_inference_server_from_presets",
    "extract_python_code",
    "get_gpu_vendor",
    "get_package_resource_path",
    "maybe_multiprocess_cuda",
    "maybe_multithread",
    "print_messages",
    "rand_mix",
    "rand_mix_like",
    "remove_code_block_header",
    "resolve_path",
    "sample",
]

REPO_TOP_DIR = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- files


def read_file(file_path: str | os.PathLike, strict: bool = False) -> str:
    """Return the text of ``file_path``.

    Like upstream, a missing file yields ``""`` (with a note on stderr) so callers that
    test for an empty string keep working; pass ``strict=True`` to get
    ``FileNotFoundError`` instead.
    """
    path = Path(file_path)
    if not path.is_file():
        if strict:
            raise FileNotFoundError(f"no such file: {path}")
        print(f"[read_file] file does not exist: {path}", file=sys.stderr)
        return ""
    return path.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------ env


def load_env(path: str | os.PathLike | None = None, override: bool = False) -> bool:
    """Load API keys from a ``.env`` file (python-dotenv, imported lazily).

    Without ``path``: ``.env`` in the current directory, else at the repository root.
    Existing environment variables win unless ``override``.  Returns whether a file
    was loaded; a missing python-dotenv or file is not an error.
    """
    try:
        from dotenv import load_dotenv
    except ImportError:
        return False
    if path is None:
        for candidate in (Path.cwd() / ".env", REPO_TOP_DIR / ".env"):
            if candidate.is_file():
                path = candidate
                break
        else:
            return False
    if not Path(path).is_file():
        return False
    return bool(load_dotenv(path, override=override))


# ------------------------------------------------------------- upstream-compatible extras
#
# Names upstream KernelBench's utils module exports, with the same call shapes.  torch
# and tqdm are imported inside the functions, so importing this module stays cheap.

#: Repository root as a string (upstream's name; :data:`REPO_TOP_DIR` is the Path).
REPO_TOP_PATH: str = str(REPO_TOP_DIR)


def get_package_resource_path(relative_path: str) -> str:
    """Absolute path of a file shipped inside the ``kernelbench`` package (e.g. ``"prompts/model_ex_add.py"``)."""
    from importlib.resources import as_file, files

    try:
        with as_file(files("kernelbench").joinpath(relative_path)) as path:
            if Path(path).exists():
                return str(path)
    except (TypeError, FileNotFoundError, ModuleNotFoundError):
        pass
    candidate = Path(__file__).resolve().parent / relative_path
    if candidate.exists():
        return str(candidate)
    raise FileNotFoundError(f"Could not find resource: {relative_path}")


def resolve_path(rel: str) -> str:
    """Absolute path for ``rel``: kept if absolute; ``src/kernelbench/...`` -> package resource; else repo-relative."""
    if os.path.isabs(rel):
        return rel
    prefix = "src/kernelbench/"
    if rel.startswith(prefix):
        return get_package_resource_path(rel[len(prefix):])
    candidate = REPO_TOP_DIR / rel
    if candidate.exists():
        return str(candidate)
    raise FileNotFoundError(f"Could not resolve path: {rel}")


def print_messages(messages: Iterable[dict[str, str]]) -> None:
    """Print chat messages (role, then content), separated by rules."""
    for message in messages:
        print(message["role"])
        print(message["content"])
        print("-" * 50)
        print("\n\n")


def maybe_multithread(func, instances, num_workers, time_interval: float = 0.0, *shared_args, **shared_kwargs):
    """Run ``func(instance, *shared_args, **shared_kwargs)`` over ``instances`` in threads.

    ``num_workers`` of 1 or None runs sequentially.  Submissions are spaced by
    ``time_interval`` seconds (API rate limits).  Results that are not None are returned
    (in completion order when threaded, as upstream); an exception in one instance is
    printed and that instance is skipped.
    """
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from tqdm import tqdm

    out: list[Any] = []
    instances = list(instances)
    if num_workers in (1, None):
        for instance in tqdm(instances):
            result = func(instance, *shared_args, **shared_kwargs)
            if result is not None:
                out.append(result)
        return out
    with tqdm(total=len(instances), smoothing=0) as bar, ThreadPoolExecutor(max_workers=num_workers) as pool:
        futures = []
        for instance in instances:
            futures.append(pool.submit(func, instance, *shared_args, **shared_kwargs))
            if time_interval:
                time.sleep(time_interval)
        for future in as_completed(futures):
            bar.update(1)
            try:
                result = future.result()
            except Exception as exc:  # noqa: BLE001 - upstream semantics: report and go on
                print("Got an error!", exc)
                continue
            if result is not None:
                out.append(result)
    return out


def maybe_multiprocess_cuda(func, instances, num_workers, *shared_args, **shared_kwargs):
    """As :func:`maybe_multithread` but in ``spawn`` worker processes (safe with CUDA).

    ``func`` must be importable (picklable).  Unlike upstream this does not change the
    process-wide multiprocessing start method; it uses a spawn context of its own.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from tqdm import tqdm

    out: list[Any] = []
    instances = list(instances)
    ctx = multiprocessing.get_context("spawn")
    with tqdm(total=len(instances), smoothing=0) as bar, \
            ProcessPoolExecutor(max_workers=num_workers, mp_context=ctx) as pool:
        futures = [pool.submit(func, instance, *shared_args, **shared_kwargs) for instance in instances]
        for future in as_completed(futures):
            bar.update(1)
            try:
                result = future.result()
            except Exception as exc:  # noqa: BLE001
                print("Got an error!", exc)
                continue
            if result is not None:
                out.append(result)
    return out


#: Distributions of :func:`sample` / :func:`rand_mix` ("random" picks one per call).
RAND_MIX_DISTRIBUTIONS: tuple[str, ...] = ("normal", "uniform", "laplace", "exponential", "lognormal")


def sample(shape, mode: str = "random"):
    """A float tensor of ``shape`` from one distribution.

    ``mode`` is a name of :data:`RAND_MIX_DISTRIBUTIONS` (normal(0,1), uniform(-1,1),
    laplace(0,1), exponential(1), lognormal(0,1)) or ``"random"``: one of them, chosen
    with torch's global generator (so ``torch.manual_seed`` makes it reproducible).
    """
    import torch
    from torch import distributions as D

    if mode == "random":
        mode = RAND_MIX_DISTRIBUTIONS[int(torch.randint(len(RAND_MIX_DISTRIBUTIONS), ()).item())]
    makers = {
        "normal": lambda: D.Normal(0.0, 1.0),
        "uniform": lambda: D.Uniform(-1.0, 1.0),
        "laplace": lambda: D.Laplace(0.0, 1.0),
        "exponential": lambda: D.Exponential(1.0),
        "lognormal": lambda: D.LogNormal(0.0, 1.0),
    }
    if mode not in makers:
        raise ValueError(f"Unknown distribution {mode!r}; accepted: random, {', '.join(RAND_MIX_DISTRIBUTIONS)}")
    return makers[mode]().sample(torch.Size(shape))


def rand_mix(*size, dist: str = "random", device=None, dtype=None, requires_grad: bool = False):
    """Like ``torch.randn(*size)`` but drawn from :func:`sample`'s distribution ``dist``.

    Upstream also attaches this function to the ``torch`` module on import; here that
    global side effect is left out (import it from ``kernelbench.utils``).
    """
    # torch.Size is a tuple, so rand_mix((2, 3)), rand_mix(torch.Size([2, 3])) and rand_mix(2, 3) agree
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    t = sample(shape, mode=dist)
    if dtype is not None:
        t = t.to(dtype)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def rand_mix_like(tensor, dist: str = "random", **kwargs):
    """:func:`rand_mix` with the shape of ``tensor``."""
    return rand_mix(*tensor.shape, dist=dist, **kwargs)
