"""Upstream-compatible names and call shapes of ``kernelbench.utils``.

Upstream's ``query_server`` takes ``(prompt, system_prompt, temperature, top_p, top_k,
max_tokens, num_completions, server_port, server_address, server_type, model_name,
is_reasoning_model, budget_tokens, reasoning_effort)`` in that order;
``create_inference_server_from_presets`` returns a one-argument query function; the
presets name fixed models.  All requests here are intercepted before litellm sends them.
"""

from __future__ import annotations

import math
import os
import sys
import types

import pytest

from kernelbench import utils


class _Recorder:
    """Stands in for ``litellm.completion``: records the request, answers with a fixed text."""

    def __init__(self, text: str = "reply"):
        self.calls: list[dict] = []
        self.text = text

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        n = kwargs.get("n", 1)
        choice = types.SimpleNamespace(message=types.SimpleNamespace(content=self.text), finish_reason="stop")
        return types.SimpleNamespace(choices=[choice] * n)


@pytest.fixture
def recorder(monkeypatch):
    # A stand-in litellm module: query_server imports litellm lazily, so this is what it
    # gets; the request shape is checked without importing (or calling) the real one.
    rec = _Recorder()
    fake = types.ModuleType("litellm")
    fake.completion = rec
    fake.suppress_debug_info = False
    monkeypatch.setitem(sys.modules, "litellm", fake)
    return rec


# --------------------------------------------------------------------------- query_server


def test_query_server_positional_order_is_upstreams(recorder):
    out = utils.query_server("write it", "be brief", 0.3, 0.9, 40, 77, 1, 30000, "localhost", "anthropic",
                             "anthropic/claude-x")
    assert out == "reply"
    req = recorder.calls[-1]
    assert req["model"] == "anthropic/claude-x"
    assert req["temperature"] == 0.3 and req["top_p"] == 0.9 and req["top_k"] == 40
    assert req["max_tokens"] == 77 and req["n"] == 1
    assert req["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "write it"}]


def test_query_server_sampling_defaults_and_openai_top_k(recorder):
    utils.query_server("p", server_type="openai")
    req = recorder.calls[-1]
    preset = utils.SERVER_PRESETS["openai"]
    assert req["temperature"] == preset["temperature"] and req["max_tokens"] == preset["max_tokens"]
    assert "top_p" not in req and "top_k" not in req  # provider defaults unless set
    utils.query_server("p", server_type="openai", top_p=0.5, top_k=5)
    req = recorder.calls[-1]
    assert req["top_p"] == 0.5 and "top_k" not in req  # OpenAI models reject top_k


def test_query_server_chat_prompt_gets_system_prompt_once(recorder):
    chat = [{"role": "user", "content": "hi"}]
    utils.query_server(chat, server_type="openai")
    assert recorder.calls[-1]["messages"][0] == {"role": "system", "content": "You are a helpful assistant"}
    own = [{"role": "system", "content": "mine"}, {"role": "user", "content": "hi"}]
    utils.query_server(own, server_type="openai")
    assert recorder.calls[-1]["messages"] == own


def test_query_server_multiple_completions(recorder):
    out = utils.query_server("p", server_type="google", num_completions=3)
    assert out == ["reply"] * 3 and recorder.calls[-1]["n"] == 3


# ----------------------------------------------------------- create_inference_server_from_presets


def test_create_inference_server_from_presets_applies_preset_and_overrides(recorder):
    query = utils.create_inference_server_from_presets(server_type="deepseek", model_name="deepseek/other",
                                                       max_tokens=123, temperature=None)
    assert callable(query)
    assert query("hello") == "reply"
    req = recorder.calls[-1]
    assert req["model"] == "deepseek/other"
    assert req["max_tokens"] == 123
    assert req["temperature"] == utils.SERVER_PRESETS["deepseek"]["temperature"]  # None kwargs are ignored


def test_create_inference_server_greedy_and_timing(recorder, capsys):
    query = utils.create_inference_server_from_presets(server_type="anthropic", greedy_sample=True,
                                                       time_generation=True, verbose=True, model_name="None")
    query([{"role": "user", "content": "x"}])
    req = recorder.calls[-1]
    assert req["temperature"] == 0.0 and req["top_p"] == 1.0 and req["top_k"] == 1
    assert req["model"] == utils.SERVER_PRESETS["anthropic"]["model_name"]
    printed = capsys.readouterr().out
    assert "Inference took" in printed and "anthropic" in printed


def test_create_inference_server_rejects_unknown_server_type():
    with pytest.raises(ValueError):
        utils.create_inference_server_from_presets(server_type="nope")


@pytest.mark.parametrize("key,model,temperature,max_tokens", [
    ("openai", "gpt-4o-2024-08-06", 0.0, 4096),
    ("anthropic", "anthropic/claude-3-7-sonnet-20250219", 0.8, 8192),
    ("google", "gemini/gemini-2.5-flash", 0.7, 16384),
    ("deepseek", "deepseek/deepseek-coder", 1.6, 4096),
    ("together", "together_ai/meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", 0.7, 4096),
    ("fireworks", "fireworks_ai/llama-v3p1-70b-instruct", 0.7, 4096),
])
def test_presets_name_upstreams_models(key, model, temperature, max_tokens):
    preset = utils.SERVER_PRESETS[key]
    assert (preset["model_name"], preset["temperature"], preset["max_tokens"]) == (model, temperature, max_tokens)


def test_local_preset_is_this_machine():
    preset = utils.SERVER_PRESETS["local"]
    assert preset["temperature"] == 0.8 and preset["max_tokens"] == 8192
    assert preset["server_address"] == "localhost"


# --------------------------------------------------------------------------- other names


def test_upstream_names_exist():
    for name in ("SGLANG_KEY", "REPO_TOP_PATH", "NVIDIA_ARCHS", "AMD_ARCHS", "get_gpu_vendor", "set_gpu_arch",
                 "get_package_resource_path", "resolve_path", "print_messages", "extract_python_code",
                 "remove_code_block_header", "extract_first_code", "extract_last_code", "extract_code_blocks",
                 "maybe_multithread", "maybe_multiprocess_cuda", "sample", "rand_mix", "rand_mix_like",
                 "read_file", "query_server", "create_inference_server_from_presets", "SERVER_PRESETS"):
        assert hasattr(utils, name), name
    assert os.path.isdir(utils.REPO_TOP_PATH)
    assert "Hopper" in utils.NVIDIA_ARCHS and "gfx942" in utils.AMD_ARCHS


def test_get_gpu_vendor_without_a_gpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert utils.get_gpu_vendor() == "unknown"


def test_package_resources_and_paths():
    path = utils.get_package_resource_path("prompts/model_ex_add.py")
    assert os.path.isfile(path)
    assert utils.resolve_path("src/kernelbench/prompts/model_ex_add.py") == path
    assert utils.resolve_path("/abs/anything") == "/abs/anything"
    with pytest.raises(FileNotFoundError):
        utils.get_package_resource_path("prompts/no_such_file.py")
    with pytest.raises(FileNotFoundError):
        utils.resolve_path("no/such/path.txt")


def test_text_helpers(capsys):
    text = "a\n```python\nx = 1\n```\nb\n```cpp\nint y;\n```\n```python\nz = 2\n```\n"
    assert utils.extract_python_code(text) == "x = 1\nz = 2"
    assert utils.extract_python_code("no code") == ""
    assert utils.remove_code_block_header("python\nx = 1", "python") == "x = 1"
    assert utils.remove_code_block_header("x = 1", "cpp") == "x = 1"
    utils.print_messages([{"role": "user", "content": "hello"}])
    out = capsys.readouterr().out
    assert "user" in out and "hello" in out


def _square_or_fail(x, offset=0):
    if x == 3:
        raise RuntimeError("boom")
    if x == 4:
        return None
    return x * x + offset


def test_maybe_multithread_sequential_and_threaded():
    assert utils.maybe_multithread(_square_or_fail, [1, 2, 4], 1) == [1, 4]
    assert utils.maybe_multithread(_square_or_fail, [1, 2, 5], None, 0.0, 10) == [11, 14, 35]
    got = utils.maybe_multithread(_square_or_fail, [1, 2, 3, 4, 5], 3, 0.001, offset=1)
    assert sorted(got) == [2, 5, 26]  # the failure and the None are skipped


def test_maybe_multiprocess_cuda_uses_spawn_workers_without_changing_the_global_method():
    import multiprocessing

    before = multiprocessing.get_start_method(allow_none=True)
    got = utils.maybe_multiprocess_cuda(math.sqrt, [1.0, 4.0, 9.0], 2)
    assert sorted(got) == [1.0, 2.0, 3.0]
    assert multiprocessing.get_start_method(allow_none=True) == before


def test_sample_and_rand_mix():
    import torch

    for dist in utils.RAND_MIX_DISTRIBUTIONS:
        t = utils.rand_mix(4, 5, dist=dist)
        assert t.shape == (4, 5) and t.dtype == torch.float32
    assert (utils.sample((1000,), "exponential") > 0).all()
    u = utils.sample((1000,), "uniform")
    assert u.min() >= -1 and u.max() <= 1
    torch.manual_seed(3)
    a = utils.rand_mix((3, 2))
    torch.manual_seed(3)
    b = utils.rand_mix(torch.Size([3, 2]))
    assert torch.equal(a, b)
    like = utils.rand_mix_like(torch.zeros(2, 7), dist="normal", dtype=torch.float64, requires_grad=True)
    assert like.shape == (2, 7) and like.dtype == torch.float64 and like.requires_grad
    with pytest.raises(ValueError):
        utils.sample((2,), "cauchy")
    assert not hasattr(torch, "rand_mix")  # no global side effect on torch


def test_importing_utils_stays_light():
    assert "kernelbench.utils" in sys.modules
    src = utils.__file__
    assert "import torch" not in open(src).read().split("def ")[0]
