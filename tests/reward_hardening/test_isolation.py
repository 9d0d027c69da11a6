"""A candidate cannot recover hidden seeds or reference outputs.

The spy candidate below looks everywhere the threat model names (environment, argv,
/proc of its parent, files around its workspace, torch's RNG state, a gc scan) and
dumps what it saw.  The test records the hidden seeds the parent drew and recomputes
the reference outputs itself, then asserts none of it reached the candidate, and that
the spy stays unverified.
"""

import json
from pathlib import Path

import torch

from kernelbench.reward_hardening import HardeningConfig, containment, evaluate_hardened
from kernelbench.reward_hardening.parent import pipeline

REPO = Path(__file__).resolve().parents[2]
PROBLEM = REPO / "src" / "kernelbench" / "demo_tasks" / "level1" / "2_GELU_activation.py"

SPY = r'''
import gc, json, os, sys
import torch
import torch.nn as nn

OUT = {out!r}


def _read(path, limit=200000):
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode(errors="replace")
    except OSError as exc:
        return f"<{{type(exc).__name__}}>"


def _tree(root, depth=2):
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath.count(os.sep) - root.count(os.sep) >= depth:
            dirnames[:] = []
        for f in filenames:
            p = os.path.join(dirpath, f)
            found.append([p, _read(p, 20000)])
    return found


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 1:
            ppid = os.getppid()
            seen = {{
                "env": dict(os.environ), "argv": sys.argv,
                "parent_cmdline": _read(f"/proc/{{ppid}}/cmdline"), "parent_environ": _read(f"/proc/{{ppid}}/environ"),
                "grandparent_cmdline": _read(f"/proc/{{os.getppid()}}/cmdline"),
                "cwd_tree": _tree(os.getcwd(), 3), "parent_dir_tree": _tree(os.path.dirname(os.getcwd()), 2),
                "initial_seed": torch.initial_seed(),
                "gc_tensor_sums": [float(o.double().sum()) for o in gc.get_objects()
                                   if isinstance(o, torch.Tensor) and o.shape == x.shape and o is not x],
                "fds": sorted(os.listdir("/proc/self/fd")),
            }}
            with open(OUT, "w") as fh:
                json.dump(seen, fh, default=str)
        return torch.zeros_like(x)
'''


def test_spy_learns_nothing_hidden(tmp_path, monkeypatch):
    seeds = []
    real = pipeline.secrets.randbits

    def recording_randbits(k):
        value = real(k)
        if k <= 64:  # the evaluator's seeds; a library's first import may draw more (numpy.random: 128)
            seeds.append(value)
        return value

    monkeypatch.setattr(pipeline.secrets, "randbits", recording_randbits)
    monkeypatch.setenv("KG_TEST_SECRET", "do-not-leak")
    # the OS containment (Landlock) lets the candidate write only its own directories: grant the
    # spy one extra directory for its report
    out_dir = tmp_path / "spy"
    out_dir.mkdir()
    out = out_dir / "seen.json"
    real_spec = containment.Unit.child_spec
    monkeypatch.setattr(containment.Unit, "child_spec",
                        lambda self, private=None, extra_rw=None, **kw: real_spec(self, private, [str(out_dir)], **kw))
    cfg = HardeningConfig(mode="audit", policy="practical", device="cpu", timeout=20, num_correct_trials=2,
                          num_perf_trials=4)
    record = evaluate_hardened(PROBLEM.read_text(), SPY.format(out=str(out)), cfg)
    rh = record["reward_hardening"]
    assert rh["integrity_status"] == "FAIL" and rh["verified_runtime"] is None
    codes = {f["code"] for f in rh["findings"]}
    assert {"RH-06", "RH-07", "RH-18"} <= codes

    seen_text = out.read_text()
    seen = json.loads(seen_text)
    hidden = [s for s in seeds if s > 1_000_000]
    assert hidden, "the parent drew hidden seeds"
    for s in hidden:  # no hidden seed, in decimal or hex, anywhere the spy could look
        assert str(s) not in seen_text and format(s, "x") not in seen_text
    # the generator was seeded for this call with the judge's forward seed: a keyed hash of the
    # hidden seed (checked above not to appear anywhere), never the hidden seed itself
    assert seen["initial_seed"] not in hidden and 0 <= seen["initial_seed"] < 1 << 62
    assert set(seen["env"]) <= {"XDG_CACHE_HOME", "TORCHINDUCTOR_CACHE_DIR", "CUDA_CACHE_PATH", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PATH", "HOME", "TMPDIR", "TORCH_EXTENSIONS_DIR", "LANG", "LC_ALL", "LC_CTYPE",
                                "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "CC", "CXX",
                                "TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "NVIDIA_VISIBLE_DEVICES",
                                "KERNELBENCH_DEMO_SCALE", "TRITON_CACHE_DIR", "TRITON_PTXAS_PATH",
                                "PYTHONHASHSEED", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                "NVSHMEM_DISABLE_NVLS"}
    # the forkserver the worker was forked from was started with the same scrubbed environment
    from kernelbench.procs import ENV_ALLOWLIST

    parent_env = {kv.split("=", 1)[0] for kv in seen["parent_environ"].split("\x00") if "=" in kv}
    # (pytest's terminal size variables are harmless and may be inherited from the runner)
    assert parent_env <= set(ENV_ALLOWLIST) | {"COLUMNS", "LINES"}, parent_env - set(ENV_ALLOWLIST)
    assert "KG_TEST_SECRET" not in seen_text
    # the reference outputs for every hidden seed, recomputed here, are not among the spy's tensors
    ns: dict = {}
    exec(compile(PROBLEM.read_text(), str(PROBLEM), "exec"), ns)
    model = ns["Model"](*ns["get_init_inputs"]())
    ref_sums = []
    for s in hidden:
        torch.manual_seed(s)
        inputs = ns["get_inputs"]()
        with torch.no_grad():
            ref_sums.append(float(model(*inputs).double().sum()))
    for total in seen["gc_tensor_sums"]:
        if total != total:  # the judge's staging buffers: NaN until the candidate writes them
            continue
        assert all(abs(total - r) > 1e-6 * max(1.0, abs(r)) for r in ref_sums)
    # nothing around the workspace holds reference data or the reference program's outputs
    for _path, content in seen["cwd_tree"] + seen["parent_dir_tree"]:
        for s in hidden:
            assert str(s) not in content


def test_oneshot_worker_gets_the_environment_of_the_call_not_of_the_forkserver(tmp_path, monkeypatch):
    from kernelbench.procs import run_oneshot

    run_oneshot("os:getpid", {}, timeout=120, workspace=str(tmp_path / "a"))  # forkserver is up now
    monkeypatch.setenv("KERNELBENCH_DEMO_SCALE", "7")
    monkeypatch.setenv("KG_SECRET_NOT_ALLOWED", "x")
    out = run_oneshot("os:getenv", {"key": "KERNELBENCH_DEMO_SCALE"}, timeout=120, workspace=str(tmp_path / "b"))
    assert out == {"ok": True, "result": "7"}
    out = run_oneshot("os:getenv", {"key": "KG_SECRET_NOT_ALLOWED"}, timeout=120, workspace=str(tmp_path / "c"))
    assert out == {"ok": True, "result": None}
    out = run_oneshot("os:getenv", {"key": "HOME"}, timeout=120, workspace=str(tmp_path / "d"))
    assert out["result"] == str(tmp_path / "d")


def test_worker_path_starts_with_the_interpreters_own_bin_directory(monkeypatch):
    """Builds find the ninja installed beside torch whether or not the caller's PATH has it (one build cache)."""
    import os
    import sys

    from kernelbench.procs import scrubbed_env

    bindir = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/bin", bindir, "/bin"]))
    assert scrubbed_env()["PATH"].split(os.pathsep) == [bindir, "/usr/bin", "/bin"]
    monkeypatch.setenv("PATH", "/usr/bin")
    assert scrubbed_env()["PATH"].split(os.pathsep) == [bindir, "/usr/bin"]
