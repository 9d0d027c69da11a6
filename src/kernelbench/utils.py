"""Small helpers shared by the scripts: files, fenced code blocks, GPU arch, LLM calls.

Importing this module is deliberately cheap and side-effect free: it does not import
torch, litellm, openai or datasets, does not read ``.env`` and never touches the
network.  The heavy pieces are imported inside the functions that need them
(:func:`query_server` imports litellm, :func:`load_env` imports python-dotenv).

Differences from upstream KernelBench's ``utils.py`` (same names, same call shapes):

* ``set_gpu_arch`` accepts a bare string (``"Hopper"``) as a one-element list instead
  of walking its characters, writes numeric arch strings, knows Blackwell, and rejects
  lists that mix NVIDIA and AMD names.
* the code-block extractors skip fenced blocks whose language tag is *not* one of the
  requested languages (upstream returned them with the tag glued on), honour longer
  fences (four backticks may wrap a block that itself contains three), and treat an
  unterminated block (a reply cut off at ``max_tokens``) as no block.
* nothing happens at import time: call :func:`load_env` to read ``.env``.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

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


# ------------------------------------------------------------------ code extraction

# A fence opens with three or more backticks, optionally followed by an info string
# whose first word is the language tag.  It may start mid-line (models sometimes write
# "Here it is: ```python") but must follow whitespace, a colon or the start of the
# text, so the closing half of an inline ```x``` span never opens a block.  The body
# starts on the next line.
_OPEN_FENCE = re.compile(r"(?<![^\s:])(`{3,})[ \t]*([^\s`]*)[^\n`]*\n")

_LANGUAGE_ALIASES = {
    "py": "python",
    "python3": "python",
    "c++": "cpp",
    "cxx": "cpp",
}


def _canonical_tag(tag: str) -> str:
    tag = tag.strip().lower().lstrip("{.").rstrip("}")
    return _LANGUAGE_ALIASES.get(tag, tag)


def _wanted_tags(languages: Iterable[str] | str | None) -> set[str] | None:
    if languages is None:
        return None
    if isinstance(languages, str):
        languages = [languages]
    wanted = {_canonical_tag(lang) for lang in languages if lang and lang.strip()}
    return wanted or None


def _clean_body(body: str) -> str:
    # Drop leading blank lines and trailing whitespace; keep the first line's indent.
    body = re.sub(r"\A(?:[ \t]*\n)+", "", body)
    return body.rstrip()


def find_code_blocks(text: str | None) -> list[tuple[str, str]]:
    """All terminated fenced blocks in ``text`` as ``(tag, body)`` pairs, in order.

    ``tag`` is the lower-cased language tag (``""`` when the fence has none; common
    aliases such as ``py`` / ``c++`` are mapped to ``python`` / ``cpp``).  A closing
    fence is a line holding only backticks, at least as many as the opening fence; if
    there is none, the first later run of that many backticks closes the block.  A block
    with no closing fence at all is ignored.
    """
    if not text:
        return []
    blocks: list[tuple[str, str]] = []
    pos = 0
    while True:
        opening = _OPEN_FENCE.search(text, pos)
        if opening is None:
            break
        ticks = len(opening.group(1))
        tag = _canonical_tag(opening.group(2))
        body_start = opening.end()
        closing_line = re.compile(r"^[ \t]*`{%d,}[ \t]*$" % ticks, re.MULTILINE)
        closing = closing_line.search(text, body_start)
        if closing is not None:
            body_end, pos = closing.start(), closing.end()
        else:
            inline = text.find("`" * ticks, body_start)
            if inline < 0:
                break  # unterminated: the reply was probably cut off
            body_end, pos = inline, inline + ticks
            while pos < len(text) and text[pos] == "`":
                pos += 1
        blocks.append((tag, _clean_body(text[body_start:body_end])))
    return blocks


def _matching_blocks(text: str | None, languages: Iterable[str] | str | None) -> list[str]:
    wanted = _wanted_tags(languages)
    out = []
    for tag, body in find_code_blocks(text):
        if wanted is None or tag == "" or tag in wanted:
            out.append(body)
    return out


def extract_first_code(output_string: str | None, code_language_types: Sequence[str] | str) -> str | None:
    """Body of the first fenced block tagged with one of ``code_language_types``.

    Untagged blocks count as a match; blocks tagged with another language are skipped.
    Returns ``None`` when there is no such (terminated) block.
    """
    blocks = _matching_blocks(output_string, code_language_types)
    return blocks[0] if blocks else None


def extract_last_code(output_string: str | None, code_language_types: Sequence[str] | str) -> str | None:
    """Body of the last matching fenced block (see :func:`extract_first_code`)."""
    blocks = _matching_blocks(output_string, code_language_types)
    return blocks[-1] if blocks else None


def extract_code_blocks(text: str | None, code_language_types: Sequence[str] | str) -> str:
    """All matching fenced block bodies joined by a blank line (``""`` when none).

    Returns one string, as upstream does; use :func:`find_code_blocks` for a list.
    """
    return "\n\n".join(_matching_blocks(text, code_language_types))


# ------------------------------------------------------------------------ GPU arch

# Numeric compute capabilities written to TORCH_CUDA_ARCH_LIST.  SASS built for X.0
# runs on later minors of the same major (10.0 -> 10.3, 12.0 -> 12.1), so only the
# first minor of each family is listed, which keeps older nvcc versions happy.
NVIDIA_ARCHS: dict[str, tuple[str, ...]] = {
    "Maxwell": ("5.0", "5.2"),
    "Pascal": ("6.0", "6.1"),
    "Volta": ("7.0",),
    "Turing": ("7.5",),
    "Ampere": ("8.0", "8.6"),
    "Ada": ("8.9",),
    "Hopper": ("9.0",),
    "Blackwell": ("10.0", "12.0"),
}

# ROCm targets written to PYTORCH_ROCM_ARCH.
AMD_ARCHS: tuple[str, ...] = ("gfx942", "gfx950")


def set_gpu_arch(arch_list: Sequence[str] | str) -> str:
    """Restrict extension builds to the given architectures.

    NVIDIA family names (``Maxwell`` ... ``Blackwell``, any case) set
    ``TORCH_CUDA_ARCH_LIST`` to their numeric compute capabilities joined by ``;``;
    AMD targets (``gfx942``, ``gfx950``) set ``PYTORCH_ROCM_ARCH``.  A bare string is
    treated as a one-element list (upstream iterated over its characters).  Unknown
    names, an empty list, or a mix of vendors raise ``ValueError``.  Returns the value
    written.
    """
    if isinstance(arch_list, str):
        arch_list = [arch_list]
    names = [str(a).strip() for a in (arch_list or [])]
    names = [n for n in names if n]
    if not names:
        raise ValueError("set_gpu_arch: no architecture given")

    nvidia_by_lower = {k.lower(): k for k in NVIDIA_ARCHS}
    nvidia: list[str] = []
    amd: list[str] = []
    for name in names:
        if name.lower() in nvidia_by_lower:
            nvidia.append(nvidia_by_lower[name.lower()])
        elif name.lower() in AMD_ARCHS:
            amd.append(name.lower())
        else:
            valid = ", ".join([*NVIDIA_ARCHS, *AMD_ARCHS])
            raise ValueError(f"Invalid architecture: {name!r}; valid: {valid}")
    if nvidia and amd:
        raise ValueError(
            f"set_gpu_arch: cannot mix NVIDIA ({', '.join(nvidia)}) and AMD ({', '.join(amd)}) architectures"
        )

    def _dedupe(items: Iterable[str]) -> list[str]:
        seen: dict[str, None] = {}
        for item in items:
            seen.setdefault(item, None)
        return list(seen)

    if nvidia:
        value = ";".join(_dedupe(cc for fam in nvidia for cc in NVIDIA_ARCHS[fam]))
        os.environ["TORCH_CUDA_ARCH_LIST"] = value
    else:
        value = ";".join(_dedupe(amd))
        os.environ["PYTORCH_ROCM_ARCH"] = value
    return value


# ------------------------------------------------------------------------ LLM calls

# Defaults per provider; a script fills model_name / max_tokens / temperature from
# here for whatever the user did not set.  Model names carry litellm's provider
# prefix.  "local" is an alias of "sglang" (any OpenAI-compatible local server:
# SGLang, vLLM, Tokasaurus ...).
SERVER_PRESETS: dict[str, dict[str, Any]] = {
    # Same models, temperatures and token limits as upstream KernelBench's presets.
    "openai": {"model_name": "gpt-4o-2024-08-06", "max_tokens": 4096, "temperature": 0.0},
    "anthropic": {"model_name": "anthropic/claude-3-7-sonnet-20250219", "max_tokens": 8192, "temperature": 0.8},
    "google": {"model_name": "gemini/gemini-2.5-flash", "max_tokens": 16384, "temperature": 0.7},
    "deepseek": {"model_name": "deepseek/deepseek-coder", "max_tokens": 4096, "temperature": 1.6},
    "together": {
        "model_name": "together_ai/meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo",
        "max_tokens": 4096,
        "temperature": 0.7,
    },
    "fireworks": {"model_name": "fireworks_ai/llama-v3p1-70b-instruct", "max_tokens": 4096, "temperature": 0.7},
    # Deliberate difference: upstream's "local" preset points at one lab's host
    # (port 10210); here a local OpenAI-compatible server on this machine is assumed.
    "sglang": {"model_name": "default", "max_tokens": 8192, "temperature": 0.8,
               "server_address": "localhost", "server_port": 30000},
    "local": {"model_name": "default", "max_tokens": 8192, "temperature": 0.8,
              "server_address": "localhost", "server_port": 30000},
}

# litellm provider prefix per server type, and the env var holding its key.
_PROVIDER_PREFIX = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google": "gemini",
    "deepseek": "deepseek",
    "together": "together_ai",
    "fireworks": "fireworks_ai",
    "sglang": "openai",
    "local": "openai",
}
_LOCAL_SERVERS = ("sglang", "local")


def _litellm_model(server_type: str | None, model_name: str) -> str:
    if server_type in _LOCAL_SERVERS:
        return model_name if model_name.startswith("openai/") else f"openai/{model_name}"
    prefix = _PROVIDER_PREFIX.get(server_type or "")
    if prefix is None or model_name.startswith(prefix + "/"):
        return model_name
    return f"{prefix}/{model_name}"


def missing_api_keys(server_type: str | None, model_name: str) -> list[str]:
    """Environment variables litellm needs for this provider and does not find (empty: none missing).

    Local servers (``sglang``, ``local``) need no key.  Checked before the first
    query, so a missing key is one line instead of one failed call per sample.
    """
    if server_type in _LOCAL_SERVERS:
        return []
    from kernelbench._optional import require

    litellm = require("litellm")
    try:
        found = litellm.validate_environment(model=_litellm_model(server_type, model_name))
    except Exception:  # an unknown provider: let the call itself report it
        return []
    if found.get("keys_in_environment", True):
        return []
    return [str(k) for k in found.get("missing_keys") or []]


def _is_openai_model(model: str) -> bool:
    low = model.lower()
    return low.startswith("openai/") and not low.startswith("openai/default") or "gpt" in low


def query_server(
    prompt: str | list[dict[str, str]],
    system_prompt: str | None = "You are a helpful assistant",
    temperature: float | None = None,
    top_p: float | None = None,
    top_k: int | None = None,
    max_tokens: int | None = None,
    num_completions: int = 1,
    server_port: int = 30000,
    server_address: str = "localhost",
    server_type: str | None = None,
    model_name: str | None = None,
    is_reasoning_model: bool = False,
    budget_tokens: int = 0,
    reasoning_effort: str | None = None,
    *,
    mock_response: str | None = None,
    num_retries: int = 2,
    timeout: float | None = 600.0,
) -> str | list[str]:
    """Send ``prompt`` to an LLM through litellm and return the reply text.

    The parameters before ``*`` are upstream KernelBench's, in upstream's order (so
    positional calls written for upstream keep their meaning).  ``None`` means "from the
    ``server_type`` preset, else the provider's default"; ``top_p`` / ``top_k`` are sent
    only when given (``top_k`` never to OpenAI models, which reject it).

    ``prompt`` is a user message string or a list of chat messages; ``system_prompt`` is
    put first unless the list already starts with a system message.
    ``server_type`` selects the provider (a key of :data:`SERVER_PRESETS`); unset
    ``model_name`` / ``max_tokens`` / ``temperature`` come from its preset.  For
    ``sglang`` / ``local`` the request goes to the OpenAI-compatible server at
    ``http://{server_address}:{server_port}/v1`` with ``SGLANG_API_KEY`` (or a dummy key).

    Reasoning models: Anthropic models get extended thinking when ``budget_tokens > 0``
    (temperature is then forced to 1, as the API requires); other providers get
    ``reasoning_effort`` when ``is_reasoning_model`` is true and no temperature.

    ``mock_response`` is handed to ``litellm.completion(mock_response=...)``: no request
    is sent, which is what offline tests use.  In that case litellm is told to use its
    bundled model-cost map, so importing it does not fetch anything either.

    Returns a string, or a list of strings when ``num_completions > 1``.
    """
    preset = SERVER_PRESETS.get(server_type or "", {})
    if server_type is not None and server_type not in SERVER_PRESETS:
        raise ValueError(f"unknown server_type {server_type!r}; accepted: {', '.join(SERVER_PRESETS)}")
    model_name = model_name if model_name not in (None, "None") else preset.get("model_name")
    if not model_name:
        raise ValueError("query_server: model_name is required when server_type has no preset")
    if max_tokens is None:
        max_tokens = preset.get("max_tokens")
    if temperature is None:
        temperature = preset.get("temperature", 0.0)

    if mock_response is not None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from kernelbench._optional import require  # litellm is the [gen] extra: a one-line hint when missing

    litellm = require("litellm")  # lazy: heavy, and may read the network-backed cost map

    litellm.suppress_debug_info = True

    messages: list[dict[str, str]] = []
    if isinstance(prompt, str):
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        messages.append({"role": "user", "content": prompt})
    else:
        prompt = list(prompt)
        if system_prompt and not (prompt and prompt[0].get("role") == "system"):
            messages.append({"role": "system", "content": system_prompt})
        messages.extend(prompt)

    kwargs: dict[str, Any] = {
        "model": _litellm_model(server_type, model_name),
        "messages": messages,
        "n": num_completions,
        "drop_params": True,
    }
    if max_tokens is not None:
        kwargs["max_tokens"] = int(max_tokens)
    if timeout is not None:
        kwargs["timeout"] = timeout

    is_anthropic = server_type == "anthropic" or kwargs["model"].startswith("anthropic/")
    if is_anthropic and budget_tokens and budget_tokens > 0:
        kwargs["thinking"] = {"type": "enabled", "budget_tokens": int(budget_tokens)}
        kwargs["temperature"] = 1.0
    elif is_reasoning_model:
        if reasoning_effort:
            kwargs["reasoning_effort"] = reasoning_effort
    else:
        kwargs["temperature"] = float(temperature)
        if top_p is not None:
            kwargs["top_p"] = float(top_p)
        if top_k is not None and not _is_openai_model(kwargs["model"]):
            kwargs["top_k"] = int(top_k)

    if server_type in _LOCAL_SERVERS:
        kwargs["api_base"] = f"http://{server_address}:{server_port}/v1"
        kwargs["api_key"] = os.environ.get("SGLANG_API_KEY") or "EMPTY"

    if mock_response is not None:
        kwargs["mock_response"] = mock_response
    elif num_retries:
        kwargs["num_retries"] = int(num_retries)

    response = litellm.completion(**kwargs)
    texts = [(choice.message.content or "") for choice in response.choices]
    if num_completions == 1:
        return texts[0] if texts else ""
    return texts


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

#: Key for local OpenAI-compatible servers, read when the module is imported (as upstream).
SGLANG_KEY: str | None = os.environ.get("SGLANG_API_KEY")
#: Repository root as a string (upstream's name; :data:`REPO_TOP_DIR` is the Path).
REPO_TOP_PATH: str = str(REPO_TOP_DIR)


def create_inference_server_from_presets(
    server_type: str | None = None,
    greedy_sample: bool = False,
    verbose: bool = False,
    time_generation: bool = False,
    model_name: str | None = None,
    **kwargs: Any,
):
    """Return ``query(prompt) -> str`` bound to a :data:`SERVER_PRESETS` entry.

    The preset supplies the defaults; ``model_name`` and any keyword of
    :func:`query_server` passed here override them (``None`` or ``"None"`` values are
    ignored, as upstream).  ``greedy_sample`` forces temperature 0, top_p 1, top_k 1.
    ``verbose`` prints the request settings; ``time_generation`` prints the latency.
    """
    if server_type not in SERVER_PRESETS:
        raise ValueError(f"unknown server_type {server_type!r}; accepted: {', '.join(SERVER_PRESETS)}")
    settings = dict(SERVER_PRESETS[server_type])
    if model_name not in (None, "None"):
        settings["model_name"] = model_name
    settings.update({k: v for k, v in kwargs.items() if v is not None and v != "None"})
    if greedy_sample:
        settings.update(temperature=0.0, top_p=1.0, top_k=1)

    def _query_llm(prompt: str | list[dict[str, str]]):
        if verbose:
            print(f"[query] server_type={server_type} settings={settings}")
        start = time.perf_counter()
        reply = query_server(prompt, server_type=server_type, **settings)
        if time_generation:
            print(f"[Timing] Inference took {time.perf_counter() - start:.2f} seconds")
        return reply

    return _query_llm


def get_gpu_vendor(device: Any = None) -> str:
    """``"nvidia"``, ``"amd"`` or ``"unknown"`` (no GPU) for ``device``.

    Reads the build of torch (``torch.version.hip``) as well as the device name, so a
    ROCm device whose name lacks "AMD" is still recognised.
    """
    import torch

    if not torch.cuda.is_available():
        return "unknown"
    if device is None:
        device = torch.cuda.current_device()
    name = torch.cuda.get_device_name(device).upper()
    if getattr(torch.version, "hip", None) or "AMD" in name or "INSTINCT" in name or "RADEON" in name:
        return "amd"
    if "NVIDIA" in name or getattr(torch.version, "cuda", None):
        return "nvidia"
    return "unknown"


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


def extract_python_code(text: str | None) -> str:
    """All ```python blocks of ``text`` joined by newlines; ``""`` when there is none."""
    return "\n".join(_matching_blocks(text, ["python"]))


def remove_code_block_header(code: str, code_language_type: str) -> str:
    """Drop a leading language word (``python``, ``cpp`` ...) left on the first line of a block."""
    if code.startswith(code_language_type):
        code = code[len(code_language_type):].strip()
    return code


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
