"""Generation must work on a fresh install: declared dependencies and litellm's real retry path.

``query_server`` passes ``num_retries`` to litellm; after a failed request litellm
retries through ``completion_with_retries``, which imports ``tenacity`` (a package
litellm itself does not declare).  The tests below run that path against a fake
OpenAI-compatible endpoint on the loopback interface, so no request leaves the machine.
"""

from __future__ import annotations

import ast
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    tomllib = None

REPO = Path(__file__).resolve().parents[1]

# import name -> distribution name, where they differ
_DIST_OF = {"yaml": "pyyaml", "dotenv": "python-dotenv", "pydra": "pydra-config"}
# the package itself and the scripts' own modules (scripts/ is on sys.path when one runs)
_NOT_DISTRIBUTIONS = {"kernelbench"} | {p.stem for p in (Path(__file__).resolve().parents[1] / "scripts").glob("*.py")}
# optional tools imported only after checking they are installed, documented as not being
# dependencies: nsight-python (kernelbench.profile, Nsight Compute profiling)
_OPTIONAL_UNDECLARED = {"nsight"}


def _declared() -> set[str]:
    text = (REPO / "pyproject.toml").read_text()
    if tomllib is not None:
        data = tomllib.loads(text)
        project = data["project"]
        specs = list(project.get("dependencies", []))
        for extra in project.get("optional-dependencies", {}).values():
            specs += extra
    else:  # pragma: no cover - crude fallback for 3.10
        import re

        specs = re.findall(r'^\s*"([A-Za-z0-9_.\-\[\]]+)[^"]*",?\s*$', text, re.M)
    names = set()
    for spec in specs:
        name = spec.split(";")[0].strip()
        for stop in "<>=![ ~":
            name = name.split(stop)[0]
        names.add(name.strip().lower().replace("_", "-"))
    return names


def _third_party_imports() -> dict[str, str]:
    found: dict[str, str] = {}
    std = set(sys.stdlib_module_names)
    for folder in ("src", "scripts"):
        for path in (REPO / folder).rglob("*.py"):
            if "fixtures" in path.parts or "precheck_fixtures" in path.parts:
                continue  # candidate kernels (test data), not the project's own code
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    mods = [node.module]
                else:
                    continue
                for mod in mods:
                    top = mod.split(".")[0]
                    if top not in std and top not in _NOT_DISTRIBUTIONS and top not in _OPTIONAL_UNDECLARED:
                        found.setdefault(top, str(path.relative_to(REPO)))
    return found


def test_every_imported_distribution_is_declared():
    declared = _declared()
    missing = {}
    for mod, where in _third_party_imports().items():
        dist = _DIST_OF.get(mod, mod).lower().replace("_", "-")
        if dist not in declared:
            missing[mod] = where
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_litellm_retry_dependency_is_declared():
    assert "tenacity" in _declared(), "litellm's retry path imports tenacity; declare it"


# --------------------------------------------------------------------------- fake endpoint


class _FlakyOpenAI(BaseHTTPRequestHandler):
    """``/v1/chat/completions``: the first request fails with HTTP 500, later ones answer.

    The failure carries ``x-should-retry: false``, which the OpenAI SDK honours, so the
    HTTP client does not retry by itself: a second request can only come from litellm's
    retry wrapper (``completion_with_retries``, built on tenacity).
    """

    calls: list[str] = []
    lock = threading.Lock()

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_POST(self):  # noqa: N802 - http.server API
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with self.lock:
            self.calls.append(self.path)
            first = len(self.calls) == 1
        if first:
            payload, status = {"error": {"message": "try again", "type": "server_error"}}, 500
        else:
            payload, status = {
                "id": "cmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "default"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "```python\nprint('ok')\n```"}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }, 200
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if status != 200:
            self.send_header("x-should-retry", "false")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def flaky_server():
    _FlakyOpenAI.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FlakyOpenAI)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_query_server_retries_through_litellm_after_a_server_error(flaky_server, monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("SGLANG_API_KEY", "test-key")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    from kernelbench.utils import query_server

    port = flaky_server.server_address[1]
    reply = query_server(
        "write a kernel",
        server_type="local",
        model_name="default",
        max_tokens=16,
        temperature=0.0,
        server_address="127.0.0.1",
        server_port=port,
        num_retries=2,
        timeout=20,
    )
    assert reply == "```python\nprint('ok')\n```"
    assert len(_FlakyOpenAI.calls) == 2, _FlakyOpenAI.calls
    assert all(p.endswith("/chat/completions") for p in _FlakyOpenAI.calls)
    assert "tenacity" in sys.modules


def test_without_retries_the_server_error_surfaces(flaky_server, monkeypatch):
    """The control: with retries off, the same endpoint's first answer (500) is an error."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    from kernelbench.utils import query_server

    with pytest.raises(Exception):
        query_server("write a kernel", server_type="local", model_name="default", max_tokens=16,
                     server_address="127.0.0.1", server_port=flaky_server.server_address[1],
                     num_retries=0, timeout=20)
    assert len(_FlakyOpenAI.calls) == 1
