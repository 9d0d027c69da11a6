"""LLM calls through litellm: provider presets, API-key checks, :func:`query_server` (parent process).

litellm is imported inside the functions that call it (it is heavy and the ``gen``
extra), so importing this module is cheap and never touches the network.  The names
are upstream KernelBench's (``SERVER_PRESETS``, ``query_server``,
``create_inference_server_from_presets``, ``SGLANG_KEY``), re-exported by
``kernelbench.utils``.
"""

from __future__ import annotations

import os
import time
from typing import Any

__all__ = ["SERVER_PRESETS", "SGLANG_KEY", "create_inference_server_from_presets", "missing_api_keys",
           "query_server"]

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

#: Key for local OpenAI-compatible servers, read when the module is imported (as upstream).
SGLANG_KEY: str | None = os.environ.get("SGLANG_API_KEY")


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
