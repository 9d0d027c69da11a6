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
    "openai": {"model_name": "openai/gpt-4o-2024-08-06", "max_tokens": 4096, "temperature": 0.0},
    "anthropic": {"model_name": "anthropic/claude-3-5-sonnet-20241022", "max_tokens": 8192, "temperature": 0.8},
    "google": {"model_name": "gemini/gemini-2.5-flash", "max_tokens": 16384, "temperature": 0.7},
    "deepseek": {"model_name": "deepseek/deepseek-chat", "max_tokens": 8192, "temperature": 1.0},
    "together": {
        "model_name": "together_ai/Qwen/Qwen2.5-Coder-32B-Instruct",
        "max_tokens": 4096,
        "temperature": 0.7,
    },
    "fireworks": {
        "model_name": "fireworks_ai/accounts/fireworks/models/deepseek-v3",
        "max_tokens": 4096,
        "temperature": 0.7,
    },
    "sglang": {"model_name": "default", "max_tokens": 8192, "temperature": 0.8},
    "local": {"model_name": "default", "max_tokens": 8192, "temperature": 0.8},
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


def query_server(
    prompt: str | list[dict[str, str]],
    server_type: str | None = None,
    model_name: str | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    is_reasoning_model: bool = False,
    reasoning_effort: str | None = None,
    budget_tokens: int = 0,
    mock_response: str | None = None,
    *,
    system_prompt: str | None = "You are a helpful assistant",
    num_completions: int = 1,
    server_address: str = "localhost",
    server_port: int = 30000,
    num_retries: int = 2,
    timeout: float | None = 600.0,
) -> str | list[str]:
    """Send ``prompt`` to an LLM through litellm and return the reply text.

    ``prompt`` is a user message string or a ready list of chat messages.
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

    if isinstance(prompt, str):
        messages: list[dict[str, str]] = []
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        messages.append({"role": "user", "content": prompt})
    else:
        messages = list(prompt)

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
