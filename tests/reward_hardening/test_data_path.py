"""The device-resident data path: shared tensors, the judge, exact outputs, bounded memory.

CPU versions of the properties the GPU path relies on: tensors are lent through
descriptors (no bytes through the parent), every timed call gets fresh values, staging
buffers never reveal the reference, the result is checked without running candidate
methods, and the parent's memory does not grow with the problem's size.
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

from kernelbench.reward_hardening.judge.worker import Judge, perturb
from kernelbench.reward_hardening.ipc.lending import SharedArena, fingerprint, import_tensor
from kernelbench.reward_hardening.ipc.wire import recv_message, send_message
from kernelbench.reward_hardening.candidate.worker import exact_outputs

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "src" / "kernelbench" / "demo_tasks"


def test_cpu_shared_tensor_travels_as_a_descriptor_and_is_shared_both_ways():
    a, b = mp.Pipe(duplex=True)
    arena = SharedArena(torch.device("cpu"))
    key, t = arena.share(torch.arange(12, dtype=torch.float32).reshape(3, 4))
    metas, fds = arena.export([key])
    send_message(a, {"tensor": metas[0]}, fds)
    header, got_fds = recv_message(b)
    assert "data" not in json.dumps(header) and len(got_fds) == 1
    other = import_tensor(header["tensor"], got_fds)
    assert torch.equal(other, t)
    other[0, 0] = 99.0  # a write through the other mapping is visible to the owner
    assert t[0, 0].item() == 99.0
    for fd in got_fds:
        os.close(fd)
    arena.release()


def test_descriptors_from_an_untrusted_peer_are_refused():
    from kernelbench.procs import FrameError

    a, b = mp.Pipe(duplex=True)
    arena = SharedArena(torch.device("cpu"))
    key, _ = arena.share(torch.ones(4))
    _, fds = arena.export([key])
    send_message(a, {"x": 1}, fds)
    with pytest.raises(FrameError):
        recv_message(b, allow_fds=False)


@pytest.mark.parametrize("n", [1000, 1 << 19])  # a small host tensor (SHA-256) and a 2 MiB one (sums)
def test_fingerprint_sees_changes_swaps_and_shifts(n, host_sums):
    x = torch.rand(n)
    fp = fingerprint(x)
    y = x.clone()
    y[3] += 1e-7 if y[3] < 0.5 else -1e-7
    assert fingerprint(y) != fp
    swapped = x.clone()
    swapped[[1, 2]] = swapped[[2, 1]]
    assert fingerprint(swapped) != fp
    if n > 1 << 18:  # the reductions: the plain sum is blind to a swap, the weighted sums are not
        assert fingerprint(swapped)[0] == fp[0]
    assert fingerprint(torch.roll(x, 7)) != fp
    assert fingerprint(x.clone()) == fp
    assert fingerprint(x.view(2, -1).t().contiguous().t()) == fp  # the bits in order, whatever the strides


def test_fingerprint_is_the_same_whatever_the_block_size(monkeypatch, host_sums):
    """The sums are accumulated on the device across blocks: a digest does not depend on the blocking."""
    from kernelbench.reward_hardening.ipc import lending

    x = torch.rand(70 * 4096 + 123)  # 70 rows and a tail (1.1 MiB: the sums, not SHA-256), one block
    one_block = fingerprint(x)
    monkeypatch.setattr(lending, "_BLOCK_ROWS", 16)
    assert fingerprint(x) == one_block
    late = x.clone()
    late[50 * 4096 + 5] += 1.0  # a change in the fourth block
    assert fingerprint(late) != one_block
    tail = x.clone()
    tail[-1] += 1.0
    assert fingerprint(tail) != one_block
    assert all(isinstance(v, int) for v in one_block)


def _judge(problem: str, tmp_path):
    a, b = mp.Pipe(duplex=True)
    src = tmp_path / "ref.py"
    src.write_text((DEMO / problem).read_text())
    judge = Judge(a, {"device": "cpu", "precision": "fp32", "source_path": str(src)})
    return judge, b


def _ask(judge, peer, header):
    getattr(judge, f"cmd_{header['cmd']}")(header)
    return recv_message(peer)


def test_every_timed_call_gets_new_values_not_a_shift_or_permutation(tmp_path):
    judge, peer = _judge("level1/1_Elementwise_add.py", tmp_path)
    _ask(judge, peer, {"cmd": "load"})
    seen = []
    for seed in (11, 12, 13):
        reply, fds = _ask(judge, peer, {"cmd": "timed_input", "seed": seed})
        inputs = [import_tensor(it["shared"], fds) for it in reply["inputs"]]
        seen.append([torch.sort(t.reshape(-1)).values.clone() for t in inputs])
        _ask(judge, peer, {"cmd": "check_inputs"})
        for fd in fds:
            os.close(fd)
    for i in range(len(seen)):
        for j in range(i):
            for a, b in zip(seen[i], seen[j]):
                assert not torch.equal(a, b)  # not the same multiset: no shift, no permutation


def test_staging_buffers_never_reveal_the_reference_and_unwritten_output_fails(tmp_path):
    judge, peer = _judge("level1/1_Elementwise_add.py", tmp_path)
    _ask(judge, peer, {"cmd": "load"})
    reply, fds = _ask(judge, peer, {"cmd": "probe", "seed": 5, "keep_first": True})
    staged = [import_tensor(m, fds) for m in reply["staging"]]
    assert all(bool(torch.isnan(s).all()) for s in staged)
    verdict, _ = _ask(judge, peer, {"cmd": "judge", "written": True})
    assert verdict["comparison"]["match"] is False and verdict["inputs_unchanged"] is True


def test_judge_accepts_the_right_output_and_sees_input_mutation(tmp_path):
    judge, peer = _judge("level1/1_Elementwise_add.py", tmp_path)
    _ask(judge, peer, {"cmd": "load"})
    reply, fds = _ask(judge, peer, {"cmd": "probe", "seed": 5, "keep_first": True})
    a, b = (import_tensor(it["shared"], fds) for it in reply["inputs"])
    for group in ("staging", "staging_after"):
        (s,) = (import_tensor(m, fds) for m in reply[group])
        s.copy_(a + b)
    verdict, _ = _ask(judge, peer, {"cmd": "judge", "written": True})
    assert verdict["comparison"]["match"] and verdict["stable"] and verdict["inputs_unchanged"]
    reply, fds = _ask(judge, peer, {"cmd": "probe", "seed": 6})
    a, b = (import_tensor(it["shared"], fds) for it in reply["inputs"])
    for group in ("staging", "staging_after"):
        (s,) = (import_tensor(m, fds) for m in reply[group])
        s.copy_(a + b)
    a.zero_()  # the candidate holds handles to its inputs
    verdict, _ = _ask(judge, peer, {"cmd": "judge", "written": True})
    assert verdict["inputs_unchanged"] is False


def test_heavy_tail_keeps_the_input_contract():
    g = torch.Generator().manual_seed(1)
    tri = torch.triu(torch.rand(16, 16) + 0.1)
    probs = torch.softmax(torch.rand(4, 8), dim=-1)
    mixed = torch.randn(64)
    out, skipped = perturb([tri, probs, mixed], "heavy_tail", g)
    assert torch.equal(out[0] == 0, tri == 0) and bool((out[0] >= 0).all())  # structure and sign kept
    assert torch.equal(out[1], probs) and "probabilities" in skipped[0]  # simplex rows left alone
    assert not torch.equal(out[2], mixed) and bool((out[2] < 0).any())


def test_exact_outputs_never_runs_a_candidate_method():
    calls = []

    class Lazy(list):
        def __iter__(self):
            calls.append("iter")
            return iter([torch.ones(2)])

        def __len__(self):
            calls.append("len")
            return 1

        def __getitem__(self, i):
            calls.append("getitem")
            return torch.ones(2)

    class Meta(type):
        def __getattribute__(cls, name):
            calls.append(name)
            return super().__getattribute__(name)

    class Odd(metaclass=Meta):
        pass

    tensors, container, problem = exact_outputs(Lazy())
    assert tensors is None and problem and calls == []
    tensors, container, problem = exact_outputs(Odd())
    assert tensors is None and calls == []
    tensors, container, problem = exact_outputs((torch.ones(2), torch.zeros(1)))
    assert problem is None and container == "tuple" and len(tensors) == 2
    assert exact_outputs([torch.ones(2), 3])[2]  # a non-tensor item is rejected


BIG_PROBLEM = '''
import torch
import torch.nn as nn

N = 8192  # two 32 KiB vectors in, a 256 MiB (8192 x 8192 float32) matrix out


class Model(nn.Module):
    def forward(self, a, b):
        return torch.outer(a, b)


def get_inputs():
    return [torch.rand(N), torch.rand(N)]


def get_init_inputs():
    return []
'''

BIG_CANDIDATE = BIG_PROBLEM.replace("class Model(", "class ModelNew(")

PEAK_SCRIPT = textwrap.dedent('''
    import json, resource, sys
    import numpy, torch  # imported (and, without .pyc files, compiled) before the peak is reset
    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened
    from kernelbench.reward_hardening import detectors  # noqa: F401
    from kernelbench.reward_hardening.parent import records, speedup  # noqa: F401
    ref, cand = open(sys.argv[1]).read(), open(sys.argv[2]).read()
    cfg = HardeningConfig(mode="enforce", policy="practical", device="cpu", timeout=240, num_correct_trials=1,
                          num_perf_trials=2, num_warmup=1, perturbations=(), precision_variants=(),
                          profile_backend=False)

    def hwm_kib():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])

    try:  # the evaluation's own peak: reset the high-water mark once the imports are done
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    rec = evaluate_hardened(ref, cand, cfg)
    print(json.dumps({"status": rec["reward_hardening"]["integrity_status"],
                      "findings": [f["code"] for f in rec["reward_hardening"]["findings"]],
                      "peak_rss_kib": hwm_kib() or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
''')


@pytest.mark.slow
def test_256_mib_output_verified_with_the_parent_under_one_gib(tmp_path):
    """Issue acceptance on the CPU: enforce verifies a 256 MiB-output problem, parent < 1 GiB RSS."""
    ref, cand, script = tmp_path / "ref.py", tmp_path / "cand.py", tmp_path / "peak.py"
    ref.write_text(BIG_PROBLEM)
    cand.write_text(BIG_CANDIDATE)
    script.write_text(PEAK_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run([sys.executable, str(script), str(ref), str(cand)], capture_output=True, text=True,
                         timeout=600, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["status"] == "PASS", result
    assert result["peak_rss_kib"] * 1024 < 1 << 30, result


@pytest.mark.parametrize("lean", [False, True])
def test_lean_plan_recomputes_kept_outputs_with_the_same_verdicts(tmp_path, lean):
    """The memory plan's lean mode: the canary and replay checks recompute from seeds."""
    judge, peer = _judge("level1/1_Elementwise_add.py", tmp_path)
    _ask(judge, peer, {"cmd": "load"})
    _ask(judge, peer, {"cmd": "configure", "lean": lean})
    first, fds = _ask(judge, peer, {"cmd": "probe", "seed": 5, "keep_first": True})
    a, b = (import_tensor(it["shared"], fds) for it in first["inputs"])
    right_first = a + b
    for group in ("staging", "staging_after"):
        (s,) = (import_tensor(m, fds) for m in first[group])
        s.copy_(right_first)
    assert _ask(judge, peer, {"cmd": "judge", "written": True})[0]["comparison"]["match"]
    assert (judge.first["outs"] is None) is lean
    # a cache replaying the first answer on another input is a replay either way
    reply, fds = _ask(judge, peer, {"cmd": "probe", "seed": 6})
    for group in ("staging", "staging_after"):
        (s,) = (import_tensor(m, fds) for m in reply[group])
        s.copy_(right_first)
    verdict, _ = _ask(judge, peer, {"cmd": "judge", "written": True})
    assert not verdict["comparison"]["match"] and verdict["replay"]
    # the repeated first input is judged against the (recomputed) first outputs
    reply, fds = _ask(judge, peer, {"cmd": "probe", "repeat_first": True})
    a, b = (import_tensor(it["shared"], fds) for it in reply["inputs"])
    for group in ("staging", "staging_after"):
        (s,) = (import_tensor(m, fds) for m in reply[group])
        s.copy_(a + b)
    assert _ask(judge, peer, {"cmd": "judge", "written": True})[0]["comparison"]["match"]


def test_signed_heavy_tail_is_judged_by_the_norm_relative_error(tmp_path):
    judge, peer = _judge("level1/9_Cumulative_sum.py", tmp_path)
    _ask(judge, peer, {"cmd": "load"})
    reply, fds = _ask(judge, peer, {"cmd": "probe", "seed": 3, "perturb": "heavy_tail", "rel_limit": 1e-3})
    assert reply["perturbation"] == "heavy_tail_signed" and reply["judged_by"] == "relative"
    (x,) = (import_tensor(it["shared"], fds) for it in reply["inputs"])
    assert bool((x < 0).any())  # the demo's U[0, 1) input got random signs
    for group in ("staging", "staging_after"):
        (s,) = (import_tensor(m, fds) for m in reply[group])
        s.copy_(torch.cumsum(x, 1) + 9e-5 * torch.cumsum(x.abs(), 1))  # error grows with the magnitudes
    verdict, _ = _ask(judge, peer, {"cmd": "judge", "written": True})
    assert not verdict["comparison"]["match"] and "norm-relative" in verdict["comparison"]["reason"]


@pytest.mark.parametrize("kind", ["heavy_tail", "heavy_tail_signed", "scale_up", "shift", "negate"])
def test_perturbation_is_chunked_deterministic_and_keeps_the_contract(monkeypatch, kind):
    import kernelbench.reward_hardening.judge.values as values

    monkeypatch.setattr(values, "_CHUNK", 100)  # many chunks, a ragged last one
    base = torch.rand(37, 29)
    base[base < 0.2] = 0.0
    signed = base - 0.5 * (base > 0.6)

    def run(x):
        return values.perturb([x], kind, torch.Generator().manual_seed(9))[0][0]

    for x in (base, signed):
        a, b = run(x), run(x)
        assert a.shape == x.shape and torch.equal(a, b)  # one seed, one result, whatever the chunking
        assert torch.equal(a == 0, x == 0) if kind != "shift" else torch.equal(a[x == 0], x[x == 0])
        if kind == "heavy_tail" and bool((x >= 0).all()):
            assert bool((a >= 0).all())  # a non-negative input stays non-negative
    assert not torch.equal(run(base), base)
    if kind == "heavy_tail_signed":
        assert bool((run(base) < 0).any())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_perturbation_temporaries_stay_bounded_on_the_device():
    """A 1 GiB input perturbed needs its result plus chunk-sized temporaries, never a multiple of it."""
    from kernelbench.reward_hardening.judge import values

    x = torch.rand(1 << 28, device="cuda")
    torch.cuda.synchronize()
    for kind in ("heavy_tail_signed", "heavy_tail", "scale_up", "shift"):
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        out, _ = values.perturb([x], kind, torch.Generator(device="cuda").manual_seed(1))
        extra = torch.cuda.max_memory_allocated() - base - out[0].numel() * 4
        assert extra <= 8 * values._CHUNK * 4 + (64 << 20), (kind, extra)
        del out


def test_a_judge_that_keeps_lent_memory_is_retired_not_reused():
    from kernelbench.reward_hardening.config import HardeningConfig
    from kernelbench.reward_hardening.parent.session import RETAIN_LIMIT_BYTES, ReferenceSession

    s = ReferenceSession("x = 1\n", HardeningConfig(device="cpu"), "cpu")
    try:
        replies = iter([{"ok": True, "retained_bytes": 1 << 20}, {"ok": True, "retained_bytes": RETAIN_LIMIT_BYTES + 1}])
        s.request = lambda phase, header: (next(replies), [])  # type: ignore[method-assign]
        assert s.release() == {"retained_bytes": 1 << 20, "retired": False} and s.alive
        assert s.release()["retired"] and not s.alive  # the batch starts a fresh judge for the next sample
    finally:
        s.close()


def test_staging_is_lent_again_on_request(tmp_path):
    """CPU: staging travels with the probe (memfd); ``lend`` exports it again (CUDA's only way)."""
    judge, peer = _judge("level1/1_Elementwise_add.py", tmp_path)
    _ask(judge, peer, {"cmd": "load"})
    reply, fds = _ask(judge, peer, {"cmd": "probe", "seed": 5})
    assert all(m["kind"] == "cpu" for m in reply["staging"] + reply["staging_after"])
    lent, lfds = _ask(judge, peer, {"cmd": "lend", "which": "probe"})
    assert [m["id"] for m in lent["staging"]] == [m["id"] for m in reply["staging"]] and lfds
    timed, tfds = _ask(judge, peer, {"cmd": "timed_input", "seed": 3, "stage": True})
    lent_t, ltfds = _ask(judge, peer, {"cmd": "lend", "which": "timed"})
    assert [m["id"] for m in lent_t["staging"]] == [m["id"] for m in timed["staging"]]
    for fd in fds + lfds + tfds + ltfds:
        os.close(fd)
    cuda_judge = Judge.__new__(Judge)
    cuda_judge.device = torch.device("cuda")
    assert judge._export_staging and not cuda_judge._export_staging  # CUDA: only lent staging is exported


def test_device_read_refuses_spans_outside_the_mapped_allocation():
    from kernelbench.reward_hardening.judge.device_read import ReadRefused, checked_span

    target = torch.empty(4, 8)  # 128 bytes
    fact = {"ptr": 1000 + 64, "ipc": {"base": 1000}, "shape": [4, 8], "stride": [8, 1], "element_size": 4,
            "dtype": "float32"}
    assert checked_span(fact, target, 192) == (64, 128)
    assert checked_span({**fact, "stride": [1, 4]}, target, 192) == (64, 128)  # a transposed, dense layout
    for bad, kind in (({**fact, "ptr": 990}, "unreadable"),  # before the allocation
                      ({**fact, "stride": [16, 1]}, "unreadable"),  # its last rows past the mapping's end
                      ({**fact, "shape": [8, 4]}, "structure"), ({**fact, "dtype": "float16"}, "structure"),
                      ({**fact, "stride": [-8, 1]}, "facts"), ({**fact, "ptr": 1066}, "unreadable"),
                      ({k: v for k, v in fact.items() if k != "ipc"}, "facts")):
        with pytest.raises(ReadRefused) as exc:
            checked_span(bad, target, 192)
        assert exc.value.kind == kind, bad


def test_device_read_refuses_before_mapping_anything():
    from kernelbench.reward_hardening.judge.device_read import ReadRefused, read_outputs

    target = torch.empty(2)
    ok = {"ptr": 1024, "shape": [2], "stride": [1], "element_size": 4, "dtype": "float32", "device": "cuda:0"}
    for facts, kind in (([{**ok, "ipc_error": "CUDA_ERROR_INVALID_VALUE"}], "refused"), ([ok], "facts"),
                        ([{"ptr": 1}], "facts"), ([], "structure"), (None, "structure"), (["x"], "facts")):
        with pytest.raises(ReadRefused) as exc:
            read_outputs(facts, [target], torch.device("cpu"))
        assert exc.value.kind == kind


def test_cuda_ipc_handles_survive_zero_bytes_both_ways(monkeypatch):
    """A handle is 64 raw bytes: zeros inside it must reach the driver unchanged (a fake driver here)."""
    import ctypes

    from kernelbench.reward_hardening.ipc import cuda_ipc

    handle = bytes([7, 0, 0, 9] + list(range(60)))
    seen = {}

    def get(ph, base):
        ctypes.memmove(ctypes.addressof(ph._obj), handle, 64)  # as the driver writes the handle
        return 0

    def rng(pbase, psize, ptr):
        pbase._obj.value, psize._obj.value = 4096, 1 << 20
        return 0

    def open_(pdptr, h, flags):
        seen["handle"] = bytes(h)
        pdptr._obj.value = 4096
        return 0

    monkeypatch.setitem(cuda_ipc._LIB, "lib", {"range": rng, "get": get, "open": open_, "close": lambda p: 0})
    exported = cuda_ipc.export_allocation(5000)
    assert bytes.fromhex(exported["handle"]) == handle and exported["base"] == 4096
    assert cuda_ipc.open_allocation(exported["handle"]) == (4096, 1 << 20) and seen["handle"] == handle


def test_device_read_judges_structure_first_and_blames_the_right_side(monkeypatch):
    from kernelbench.reward_hardening.ipc import cuda_ipc
    from kernelbench.reward_hardening.judge.device_read import ReaderFault, ReadRefused, read_outputs

    target = torch.empty(2, 3)
    fact = {"ptr": 4096, "shape": [2, 3], "stride": [3, 1], "element_size": 4, "dtype": "float32",
            "device": "cuda:0", "ipc": {"handle": "00" * 64, "base": 4096}}
    for bad, kind in (({**fact, "device": "cpu", "ipc": None}, "structure"),  # a CPU tensor is a wrong answer
                      ({**fact, "shape": [3, 2], "ipc_error": "x"}, "structure"),  # structure before export
                      ({**fact, "ipc": {"handle": "zz", "base": 4096}}, "facts")):
        with pytest.raises(ReadRefused) as exc:
            read_outputs([bad], [target], torch.device("cpu"))
        assert exc.value.kind == kind, bad

    def failing(code):
        def open_(handle):
            raise cuda_ipc.DriverError("cuIpcOpenMemHandle", code)
        return open_

    monkeypatch.setattr(cuda_ipc, "open_allocation", failing(400))  # a handle naming nothing: the candidate's
    with pytest.raises(ReadRefused) as exc:
        read_outputs([fact], [target], torch.device("cpu"))
    assert exc.value.kind == "refused"
    monkeypatch.setattr(cuda_ipc, "open_allocation", failing(2))  # out of memory in the judge: the evaluator's
    with pytest.raises(ReaderFault):
        read_outputs([fact], [target], torch.device("cpu"))


def test_a_judge_reporting_its_own_fault_fails_as_the_evaluator():
    from kernelbench.reward_hardening.config import HardeningConfig
    from kernelbench.reward_hardening.parent.session import ReferenceSession
    from kernelbench.reward_hardening.parent.workers import JudgeFailed

    s = ReferenceSession("x = 1\n", HardeningConfig(device="cpu"), "cpu")

    class Drv:
        def request(self, phase, header):
            return {"ok": False, "evaluator_fault": True, "error": "device read: cuIpcCloseMemHandle failed"}, []

    s.drv = Drv()
    with pytest.raises(JudgeFailed) as exc:
        s.request("device_read", {"cmd": "device_read"})
    assert exc.value.evaluator and not exc.value.oom and not s.alive  # RH-32 in the record, a fresh judge next


def test_host_fingerprint_hashes_large_tensors_on_few_threads(monkeypatch):
    """With few reduction threads a host tensor of any size gets SHA-256 words: swaps and single bits show."""
    import hashlib

    from kernelbench.reward_hardening.ipc import lending

    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    x = torch.rand(3 << 19)  # 6 MiB, above the size limit of the hash
    digest = hashlib.sha256(x.view(torch.uint8).numpy()).digest()
    assert fingerprint(x) == tuple(int.from_bytes(digest[i:i + 8], "little") for i in (0, 8, 16))
    swapped = x.clone()
    swapped[[1, 2]] = swapped[[2, 1]]
    assert fingerprint(swapped) != fingerprint(x)
    monkeypatch.setattr(torch, "get_num_threads", lambda: lending._HASH_MAX_THREADS + 1)
    assert fingerprint(x) != tuple(int.from_bytes(digest[i:i + 8], "little") for i in (0, 8, 16))  # the sums


def _digest_by_hand(x: torch.Tensor) -> tuple[int, int, int]:
    """The fingerprint's exact sums written out in Python integers, for small tensors."""
    from kernelbench.reward_hardening.ipc import lending

    bits = x.reshape(-1).view(lending._INT_VIEW[x.element_size()]).tolist()
    row = lending._ROW
    n_rows = len(bits) // row
    rows = [sum(bits[r * row:(r + 1) * row]) for r in range(n_rows)]
    cols = [sum(bits[c::row][:n_rows]) for c in range(row)] if n_rows else []
    tail = bits[n_rows * row:]
    weighted = sum(v * (k + 1) for k, v in enumerate(tail))
    words = (sum(rows) + sum(tail), sum(v * (r + 1) for r, v in enumerate(rows)) + 7919 * weighted,
             sum(v * (c + 1) for c, v in enumerate(cols)) + weighted)
    return tuple(((w + (1 << 63)) % (1 << 64)) - (1 << 63) for w in words)  # int64, wrapping


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.uint8, torch.int32])
def test_fingerprint_is_the_exact_sums_whatever_the_width(dtype, host_sums):
    """Rows and columns of the bits summed exactly (int64): the digest the docstring defines."""
    torch.manual_seed(0)
    n = (1 << 21) // torch.empty((), dtype=dtype).element_size() + 123  # above the hash's 1 MiB, and a tail
    if dtype.is_floating_point:
        x = ((torch.rand(n, dtype=torch.float64) - 0.5) * 1e4).to(dtype)  # negative bit patterns too
    else:
        x = torch.randint(0, 250 if dtype == torch.uint8 else 1 << 30, (n,), dtype=dtype)
    assert fingerprint(x) == _digest_by_hand(x)


@pytest.mark.parametrize("change", ["negate_all", "double_all", "negate_four_corners", "negate_two_columns",
                                    "add_one_to_every_byte"])
def test_fingerprint_sees_whole_tensor_and_structured_changes(change, host_sums):
    """Changes a digest taken modulo the bits' width missed (the carry out of the top bit is lost there):
    an in-place negation or doubling of the whole tensor, sign flips at a rectangle's corners or
    in two whole columns, a constant added to every byte."""
    torch.manual_seed(1)
    x = torch.rand(512, 4096) + 0.5 if change != "add_one_to_every_byte" else torch.randint(0, 200, (512, 4096),
                                                                                            dtype=torch.uint8)
    y = x.clone()
    if change == "negate_all":
        y.neg_()
    elif change == "double_all":
        y.mul_(2)
    elif change == "negate_four_corners":
        y[[3, 3, 10, 10], [5, 9, 5, 9]] *= -1
    elif change == "negate_two_columns":
        y[:, :2].neg_()
    else:
        y.add_(1)
    assert fingerprint(y) != fingerprint(x)


def test_fingerprint_temporaries_are_bounded_by_the_block(monkeypatch, host_sums):
    """The int64 copy is one block's, whatever the tensor's size."""
    from torch.profiler import ProfilerActivity, profile

    from kernelbench.reward_hardening.ipc import lending

    monkeypatch.setattr(lending, "_BLOCK_ROWS", 16)
    x = torch.rand(1 << 22)  # 16 MiB: 1024 rows, 64 blocks
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fingerprint(x)
    largest = max(e.cpu_memory_usage for e in prof.events())  # one operation's allocation
    assert 16 * lending._ROW * 8 <= largest <= 2 * 16 * lending._ROW * 8, largest
