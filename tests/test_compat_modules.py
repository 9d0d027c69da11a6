"""Upstream-compatible module surface: timing, eval extras, compile, profile.

Upstream documents ``get_timing_function(method="cuda_event")`` with an
``nsight_python_time`` method, ``graceful_eval_cleanup(curr_context, device,
tempfile=None)``, ``build_compile_cache_with_capturing`` returning ``(returncode,
stdout, stderr)``, a ``compile`` module with ``batch_compile`` / ``compile_single_sample``
and a ``profile`` module for Nsight Compute.  CPU-only checks of our own.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import torch

from kernelbench import eval as kb_eval
from kernelbench import timing

CPU_KERNEL = '''
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return x + 1
'''


def test_get_timing_function_defaults_to_cuda_event():
    assert timing.get_timing_function() is timing.time_execution_with_cuda_event
    for name in ("cuda_event", "do_bench", "do_bench_impl", "host_time", "nsight_python_time"):
        assert callable(timing.get_timing_function(name))
    with pytest.raises(ValueError):
        timing.get_timing_function("stopwatch")


def test_nsight_timing_refuses_the_cpu_with_a_clear_error():
    fn = timing.get_timing_function("nsight_python_time")
    with pytest.raises((ValueError, RuntimeError), match="CUDA|NVIDIA|nsight"):
        fn(lambda: None, [], device="cpu")
    with pytest.raises((ValueError, RuntimeError)):
        timing.clear_l2_cache_triton(device="cpu")


def test_graceful_eval_cleanup_takes_upstreams_tempfile_keyword():
    tmp = tempfile.NamedTemporaryFile(mode="w", suffix=".py", delete=False)
    tmp.write("x = 1\n")
    tmp.flush()
    ctx = {"a": 1}
    kb_eval.graceful_eval_cleanup(ctx, "cpu", tempfile=tmp)
    assert not os.path.exists(tmp.name) and ctx == {}
    other = tempfile.NamedTemporaryFile(mode="w", suffix=".py", delete=False)
    kb_eval.graceful_eval_cleanup(None, "cpu", tempfile_handle=other)  # the older keyword still works
    assert not os.path.exists(other.name)


def test_tempfile_loader_round_trip():
    model_new, tmp = kb_eval.load_custom_model_with_tempfile(CPU_KERNEL)
    assert model_new()(torch.zeros(2)).tolist() == [1.0, 1.0]
    kb_eval.graceful_eval_cleanup({}, torch.device("cpu"), tmp)
    assert not os.path.exists(tmp.name)


def test_eval_upstream_names():
    assert kb_eval.KERNEL_BENCH_PATH.endswith("KernelBench")
    assert os.path.isdir(kb_eval.REPO_TOP_PATH)
    ok, _out, err = kb_eval.build_compile_cache_legacy(CPU_KERNEL)
    assert ok and err is None
    meta = kb_eval.check_metadata_serializable({"e": ValueError("x"), "n": 1, "l": [torch.float32]})
    assert meta == {"e": "x", "n": 1, "l": ["torch.float32"]}


def test_build_compile_cache_with_capturing_reports_child_output(tmp_path):
    rc, out, err = kb_eval.build_compile_cache_with_capturing("print('built')\n", build_dir=str(tmp_path / "b"))
    assert rc == 0 and "built" in out
    assert (tmp_path / "b").is_dir()
    rc, out, err = kb_eval.build_compile_cache_with_capturing("import sys\nsys.stderr.write('nvcc: boom')\n"
                                                              "raise SystemExit(3)\n")
    assert rc == 3 and "nvcc: boom" in err
    rc, _out, err = kb_eval.build_compile_cache_with_capturing("import time\ntime.sleep(30)\n", timeout=1)
    assert rc == -9 and "timed out" in err


# --------------------------------------------------------------------------- compile


def _config(tmp_path: Path, **kw) -> dict:
    cfg = {"run_name": "r", "runs_dir": str(tmp_path / "runs"), "level": 1,
           "kernel_eval_build_dir": str(tmp_path / "cache"), "num_cpu_workers": 3, "timeout": 60,
           "verbose": False, "max_retries": 0}
    cfg.update(kw)
    (tmp_path / "runs" / "r").mkdir(parents=True, exist_ok=True)
    return cfg


def _write(cfg: dict, pid: int, sid: int, src: str) -> None:
    Path(cfg["runs_dir"], cfg["run_name"], f"level_1_problem_{pid}_sample_{sid}_kernel.py").write_text(src)


def test_compile_single_sample(tmp_path):
    from kernelbench.compile import WorkArgs, compile_single_sample, remove_cache_dir

    cfg = _config(tmp_path)
    _write(cfg, 1, 0, CPU_KERNEL)
    ok, _out, err = compile_single_sample(WorkArgs(1, 0), cfg)
    assert ok is True and err is None
    missing = compile_single_sample(WorkArgs(2, 0), cfg)
    assert missing[0] is False and "not found" in missing[2]
    build = Path(cfg["kernel_eval_build_dir"], "r", "1", "0")
    build.mkdir(parents=True, exist_ok=True)
    remove_cache_dir(cfg, 1, 0)
    assert not build.exists() and Path(cfg["kernel_eval_build_dir"], "r").is_dir()  # never the root


@pytest.mark.slow
def test_batch_compile_reports_each_sample_and_bounds_timeouts(tmp_path):
    """A failing build and a hanging one (the good path is covered in-process above)."""
    from kernelbench.compile import batch_compile

    cfg = _config(tmp_path, timeout=4, num_cpu_workers=2)
    _write(cfg, 2, 0, "raise RuntimeError('nvcc failed')\n")
    _write(cfg, 3, 0, "import time\ntime.sleep(600)\n")
    broken_dir = Path(cfg["kernel_eval_build_dir"], "r", "2", "0")
    broken_dir.mkdir(parents=True)
    results = batch_compile([(2, 0), (3, 0)], cfg)
    assert results == [(0, False), (1, None)]
    assert not broken_dir.exists()
    with pytest.raises(ValueError):
        batch_compile([], {"run_name": "r"})


# --------------------------------------------------------------------------- profile


def test_profile_module_surface():
    from kernelbench import profile

    assert isinstance(profile.NSIGHT_AVAILABLE, bool)
    assert isinstance(profile.check_ncu_available(), bool)
    if not profile.NSIGHT_AVAILABLE:
        with pytest.raises(RuntimeError, match="nsight-python"):
            profile.profile_with_nsight(lambda: None, "gpu__time_duration.sum")
        with pytest.raises(RuntimeError, match="nsight-python"):
            profile.profile_kernelbench_model_with_nsight(CPU_KERNEL)
