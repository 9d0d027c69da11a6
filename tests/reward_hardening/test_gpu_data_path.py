"""The device-resident data path on a real CUDA device (skipped without one; run on the H200).

Lending a CUDA tensor to another process through its IPC handle, writes visible both
ways, device fingerprints, and a whole hardened evaluation of a 1 GiB-output problem
with the parent's memory bounded.
"""

import json
import multiprocessing as mp
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]


CONSUMER = textwrap.dedent("""
    import json, sys
    import torch
    from kernelbench.reward_hardening.ipc.lending import import_tensor

    meta = json.loads(sys.stdin.readline())
    t = import_tensor(meta, [])
    total = float(t.double().sum())
    t.mul_(2)  # write through the lent handle
    torch.cuda.synchronize()
    print(json.dumps({"sum": total, "device": str(t.device)}), flush=True)
""")


def test_cuda_tensor_is_lent_by_ipc_handle_and_shared_both_ways():
    from kernelbench.reward_hardening.ipc.lending import SharedArena

    arena = SharedArena(torch.device("cuda:0"))
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        key, t = arena.share(torch.arange(1 << 20, dtype=torch.float32, device="cuda:0"))
    metas, fds = arena.export([key])
    assert metas[0]["kind"] == "cuda" and fds == []
    # a separate interpreter, as a candidate worker is: its stderr is kept for the failure message
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", CONSUMER], input=json.dumps(metas[0]) + "\n", env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reply = json.loads(proc.stdout.strip().splitlines()[-1])
    assert reply["sum"] == float(t.double().sum()) / 2 and reply["device"].startswith("cuda")
    assert torch.equal(t, torch.arange(1 << 20, dtype=torch.float32, device="cuda:0") * 2)


def test_fingerprint_on_the_device_matches_the_cpu(host_sums):  # the host's reductions, not its SHA-256
    from kernelbench.reward_hardening.ipc.lending import fingerprint

    x = torch.rand(3 << 20)
    assert fingerprint(x) == fingerprint(x.cuda())
    for dtype in (torch.float16, torch.float64, torch.uint8):  # every integer width the bits are read in
        v = (x * 200).to(dtype)
        assert fingerprint(v) == fingerprint(v.cuda()), dtype
    y = x.cuda()
    y[5] += 1
    assert fingerprint(y) != fingerprint(x)


def test_fingerprint_of_more_than_two_to_the_31_elements_matches_the_cpu(host_sums):
    """8 GiB of float32 (just over 2**31 elements: 65 blocks and a tail): the same digest on both sides."""
    from kernelbench.reward_hardening.ipc.lending import fingerprint

    n = (1 << 31) + 4096 + 77  # whole rows past 2**31 elements, and a tail
    if torch.cuda.mem_get_info()[0] < 3 * 4 * n:
        pytest.skip("needs about 24 GiB of free device memory")
    x = torch.rand(n, device="cuda")
    on_device = fingerprint(x)
    host = x.cpu()
    del x
    torch.cuda.empty_cache()
    assert on_device == fingerprint(host)


def test_sampled_input_check_on_the_device_sees_whole_writes_and_costs_a_fraction():
    """The timed calls' input check on 2 GiB: unchanged bits pass under every key, a whole-input write
    is seen under every key, a single row under about 1 key in 16, and a check costs well under a digest."""
    import time

    from kernelbench.reward_hardening.ipc.lending import _ROW, InputCheck, fingerprint

    x = torch.rand(1 << 29, device="cuda")
    i = (1 << 29) - _ROW * 3 + 11  # one element of one row
    value = x[i].clone()
    seen = 0
    for k in range(256):
        check = InputCheck(x, k)
        assert check.unchanged(x)
        x[i] = value + 1.0
        seen += not check.unchanged(x)
        x[i] = value
    assert 4 <= seen <= 40, seen  # 16 expected
    checks = [InputCheck(x, k) for k in range(8)]
    x.mul_(0.5)
    assert not any(c.unchanged(x) for c in checks)
    del checks

    def ms(fn):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(5):
            fn()
        return (time.perf_counter() - t0) / 5 * 1e3

    full, check = ms(lambda: fingerprint(x)), ms(lambda: InputCheck(x, 3).unchanged(x))
    assert check < 0.25 * full, (check, full)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_comparison_on_the_device_agrees_with_float64_and_isclose(dtype):
    """The judge's comparison on 1.5 GiB of float32 (and its half): float64 sums within 1e-5, and
    the mismatch count isclose's, both where every error is within tolerance and where some are not.
    The error is taken in the outputs' dtype, as ``allclose`` takes it (a half subtraction rounds:
    1 + 2**-11 is 1.0 in float16), then summed in float64."""
    from kernelbench.reward_hardening.judge.compare import compare_tensor

    torch.manual_seed(0)
    n = 3 * (1 << 27) + 4099  # several first-pass chunks and a tail row
    ref = torch.randn(n, device="cuda").to(dtype)
    out = (ref.float() + 1e-5 * torch.randn(n, device="cuda")).to(dtype)
    tol = 1e-4 if dtype == torch.float32 else 1e-2
    for bad in ([], [5, n // 2, n - 1]):
        out[bad] += 1.0
        ok, max_abs, num, den, counts = compare_tensor(out, ref, tol)
        d = (out - ref).abs().double()
        assert max_abs == pytest.approx(float(d.max()), rel=1e-6)
        assert num == pytest.approx(float((d * d).sum()), rel=1e-5)
        assert den == pytest.approx(float((ref.double() ** 2).sum()), rel=1e-5)
        assert counts["abs_sum"] == pytest.approx(float(d.sum()), rel=1e-5)
        assert counts["mismatched"] == int((~torch.isclose(out, ref, rtol=tol, atol=tol)).sum()) == len(bad)
        assert ok is (not bad)


# the problem (column 0) and the script around it are kept apart: one dedent cannot serve both
PEAK_REFERENCE = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, a, b):
        return torch.outer(a, b)
def get_inputs():
    return [torch.rand(16384), torch.rand(16384)]
def get_init_inputs():
    return []
"""

PEAK = textwrap.dedent('''
    import json, resource, sys
    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened
    ref = open(sys.argv[1]).read()
    cand = ref.replace("class Model(", "class ModelNew(")
    cfg = HardeningConfig(mode="enforce", policy="practical", device="cuda", timeout=300, num_correct_trials=3,
                          num_perf_trials=20)
    rec = evaluate_hardened(ref, cand, cfg)
    # VmHWM, not ru_maxrss: Linux carries the forking process's high-water mark across exec
    # into ru_maxrss, so a pytest process that held 8 GiB earlier would be counted here
    hwm = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")]
    print(json.dumps({"status": rec["reward_hardening"]["integrity_status"],
                      "findings": [f["code"] for f in rec["reward_hardening"]["findings"]],
                      "peak_rss_kib": hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
''')


def test_1_gib_output_verified_on_cuda_with_the_parent_under_2_gib(tmp_path):
    script, problem = tmp_path / "peak.py", tmp_path / "outer.py"
    script.write_text(PEAK)
    problem.write_text(PEAK_REFERENCE)
    # the checkout's src first, then whatever the environment already puts on the path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH"))
                                                       if p)}
    out = subprocess.run([sys.executable, str(script), str(problem)], capture_output=True, text=True, timeout=900,
                         env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["status"] == "PASS", result
    assert result["peak_rss_kib"] * 1024 < 2 << 30, result


def _exporter(conn):
    from kernelbench.reward_hardening.candidate.outputs import output_facts
    from kernelbench.reward_hardening.ipc.cuda_ipc import export_allocation

    x = torch.arange(1 << 20, dtype=torch.float32, device="cuda:0").reshape(1024, 1024)
    view = x.t()[3:]  # a transposed crop: strided, inside a larger allocation
    torch.cuda.synchronize()
    fact = output_facts(view)
    fact["ipc"] = export_allocation(fact["ptr"])
    conn.send(fact)
    conn.recv()  # keep the allocation alive until the judge has read it


def test_judge_reads_a_workers_output_through_the_drivers_ipc_handle():
    from kernelbench.reward_hardening.judge.device_read import ReadRefused, read_outputs

    ctx = mp.get_context("spawn")
    a, b = ctx.Pipe(duplex=True)
    proc = ctx.Process(target=_exporter, args=(b,))
    proc.start()
    b.close()
    try:
        if not a.poll(120):
            pytest.fail(f"the exporter did not answer within 120 s (exit code {proc.exitcode})")
        fact = a.recv()
        target = torch.empty(1021, 1024, device="cuda:0")
        reads = read_outputs([fact], [target], torch.device("cuda:0"))
        want = torch.arange(1 << 20, dtype=torch.float32, device="cuda:0").reshape(1024, 1024).t()[3:]
        assert torch.equal(target, want) and reads[0]["nbytes"] > 0
        with pytest.raises(ReadRefused):  # a span past the allocation is refused, nothing read
            read_outputs([{**fact, "ptr": fact["ipc"]["base"] + fact["ipc"]["size"] - 4}], [target],
                         torch.device("cuda:0"))
        a.send("done")
    finally:
        proc.join(30)
        if proc.is_alive():
            proc.kill()
