"""kernelbench.utils: code-block extraction, set_gpu_arch, cheap import, offline LLM call."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.utils import (
    SERVER_PRESETS,
    extract_code_blocks,
    extract_first_code,
    extract_last_code,
    find_code_blocks,
    read_file,
    set_gpu_arch,
)

REPO = Path(__file__).resolve().parents[1]
LANGS = ["python", "cpp"]


# ----------------------------------------------------------------------- extraction


def test_first_python_block_without_tag():
    text = "Sure, here you go:\n```python\nimport torch\n\nclass ModelNew:\n    x = 1\n```\nDone."
    assert extract_first_code(text, LANGS) == "import torch\n\nclass ModelNew:\n    x = 1"


def test_untagged_block_counts():
    assert extract_first_code("```\nx = 1\n```", LANGS) == "x = 1"


def test_cpp_tag_is_stripped():
    assert extract_first_code("```cpp\nint x = 0;\n```", LANGS) == "int x = 0;"


def test_tag_case_and_aliases():
    assert extract_first_code("```Python\na = 1\n```", LANGS) == "a = 1"
    assert extract_first_code("```py\nb = 2\n```", LANGS) == "b = 2"
    assert extract_first_code("```c++\nint c;\n```", LANGS) == "int c;"


def test_other_languages_are_skipped():
    text = "```bash\npip install torch\n```\nthen\n```python\nprint('ok')\n```"
    assert extract_first_code(text, LANGS) == "print('ok')"
    assert extract_first_code("```bash\nls\n```", LANGS) is None


def test_first_and_last_and_all():
    text = "```python\nfirst = 1\n```\ntext\n```cpp\nint second;\n```\n```python\nthird = 3\n```"
    assert extract_first_code(text, LANGS) == "first = 1"
    assert extract_last_code(text, LANGS) == "third = 3"
    assert extract_code_blocks(text, LANGS) == "first = 1\n\nint second;\n\nthird = 3"
    assert extract_code_blocks(text, ["cpp"]) == "int second;"
    assert [tag for tag, _ in find_code_blocks(text)] == ["python", "cpp", "python"]


def test_no_block():
    assert extract_first_code("no code here", LANGS) is None
    assert extract_last_code("", LANGS) is None
    assert extract_first_code(None, LANGS) is None
    assert extract_code_blocks("plain text", LANGS) == ""


def test_unterminated_block_is_ignored():
    # A reply cut off at max_tokens must not yield half a file.
    assert extract_first_code("```python\nimport torch\nclass ModelNew(", LANGS) is None
    text = "```python\ncomplete = True\n```\n```python\ncut off"
    assert extract_last_code(text, LANGS) == "complete = True"


def test_fence_after_text_on_same_line_and_info_string():
    assert extract_first_code("Here it is: ```python\nx = 2\n```", LANGS) == "x = 2"
    assert extract_first_code("```python title=model_new.py\ny = 3\n```", LANGS) == "y = 3"


def test_longer_fence_wraps_inner_backticks():
    text = "````python\ndoc = '''\n```\nnot a fence\n```\n'''\n````"
    assert extract_first_code(text, LANGS) == "doc = '''\n```\nnot a fence\n```\n'''"


def test_inline_triple_backticks_do_not_open_a_block():
    text = "Use ```x``` inline.\n```python\nreal = 1\n```"
    assert extract_first_code(text, LANGS) == "real = 1"


def test_closing_fence_glued_to_code():
    assert extract_first_code("```python\nz = 4```", LANGS) == "z = 4"


def test_indentation_of_first_line_kept_and_blank_lines_trimmed():
    assert extract_first_code("```python\n\n    indented = 1\n\n```", LANGS) == "    indented = 1"


def test_crlf_line_endings():
    assert extract_first_code("```python\r\nw = 5\r\n```\r\n", LANGS) == "w = 5"


def test_language_list_as_string():
    assert extract_first_code("```python\nq = 1\n```", "python") == "q = 1"


# ------------------------------------------------------------------------ read_file


def test_read_file(tmp_path, capsys):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    assert read_file(path) == "x = 1\n"
    assert read_file(tmp_path / "missing.py") == ""
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError):
        read_file(tmp_path / "missing.py", strict=True)


# ---------------------------------------------------------------------- set_gpu_arch


@pytest.fixture
def clean_arch_env(monkeypatch):
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    monkeypatch.delenv("PYTORCH_ROCM_ARCH", raising=False)
    return monkeypatch


def test_set_gpu_arch_nvidia_numeric(clean_arch_env):
    assert set_gpu_arch(["Hopper"]) == "9.0"
    assert os.environ["TORCH_CUDA_ARCH_LIST"] == "9.0"
    set_gpu_arch(["Ampere", "Ada"])
    assert os.environ["TORCH_CUDA_ARCH_LIST"] == "8.0;8.6;8.9"
    assert "PYTORCH_ROCM_ARCH" not in os.environ


@pytest.mark.parametrize(
    "name, expected",
    [
        ("Maxwell", "5.0;5.2"),
        ("Pascal", "6.0;6.1"),
        ("Volta", "7.0"),
        ("Turing", "7.5"),
        ("Ampere", "8.0;8.6"),
        ("Ada", "8.9"),
        ("Hopper", "9.0"),
        ("Blackwell", "10.0;12.0"),
    ],
)
def test_set_gpu_arch_each_family(clean_arch_env, name, expected):
    set_gpu_arch([name])
    assert os.environ["TORCH_CUDA_ARCH_LIST"] == expected


def test_set_gpu_arch_bare_string_is_one_element(clean_arch_env):
    # Upstream walked the characters of "Hopper" and failed on "H".
    set_gpu_arch("Hopper")
    assert os.environ["TORCH_CUDA_ARCH_LIST"] == "9.0"


def test_set_gpu_arch_case_insensitive_and_deduplicated(clean_arch_env):
    set_gpu_arch(["hopper", "HOPPER", "Ada"])
    assert os.environ["TORCH_CUDA_ARCH_LIST"] == "9.0;8.9"


def test_set_gpu_arch_amd(clean_arch_env):
    set_gpu_arch(["gfx942", "gfx950"])
    assert os.environ["PYTORCH_ROCM_ARCH"] == "gfx942;gfx950"
    assert "TORCH_CUDA_ARCH_LIST" not in os.environ
    set_gpu_arch("gfx942")
    assert os.environ["PYTORCH_ROCM_ARCH"] == "gfx942"


@pytest.mark.parametrize("bad", [["Hopper", "gfx942"], ["Kepler"], ["H"], [], "", ["9.0"]])
def test_set_gpu_arch_rejects(clean_arch_env, bad):
    with pytest.raises(ValueError):
        set_gpu_arch(bad)
    assert "TORCH_CUDA_ARCH_LIST" not in os.environ
    assert "PYTORCH_ROCM_ARCH" not in os.environ


# --------------------------------------------------------------------------- presets


def test_server_presets_shape():
    for key in ("openai", "anthropic", "google", "deepseek", "together", "fireworks", "sglang", "local"):
        preset = SERVER_PRESETS[key]
        assert set(preset) >= {"model_name", "max_tokens", "temperature"}
        assert isinstance(preset["max_tokens"], int) and preset["max_tokens"] > 0
        assert isinstance(preset["temperature"], float)


# ---------------------------------------------------------------------- cheap import


def test_import_does_not_pull_heavy_modules():
    code = (
        "import sys\n"
        "import kernelbench.utils, kernelbench.prompt_constructor\n"
        "heavy = [m for m in ('litellm', 'openai', 'datasets', 'torch', 'dotenv') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


# ------------------------------------------------------------------------ query_server


def test_query_server_mock_response_is_offline(monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from kernelbench.utils import query_server

    reply = "```python\nprint('hi')\n```"
    out = query_server("hello", server_type="openai", model_name="openai/gpt-4o-mini", max_tokens=64,
                       temperature=0.0, mock_response=reply)
    assert out == reply
    # preset fills the model; reasoning and thinking paths build valid requests too
    assert query_server("hello", server_type="anthropic", budget_tokens=1024, mock_response="a") == "a"
    assert query_server("hello", server_type="sglang", mock_response="b") == "b"
    assert (
        query_server("hello", server_type="openai", model_name="o3-mini", is_reasoning_model=True,
                     reasoning_effort="low", mock_response="c")
        == "c"
    )
    with pytest.raises(ValueError):
        query_server("hello", server_type="nonexistent", model_name="m", max_tokens=1, temperature=0.0,
                     mock_response="x")
