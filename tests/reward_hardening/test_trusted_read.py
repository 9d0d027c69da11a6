"""The trusted read on real processes: freeze, memory-map check, process_vm_readv, SigCgt, seccomp.

A helper child maps memory with known bytes (readable, or without access) and
reports the addresses; the test reads them the way the evaluator parent reads a
candidate's outputs.  These need Linux on x86-64; the freezer tests also need a
writable cgroup v2 hierarchy.
"""

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from kernelbench.reward_hardening import containment
from kernelbench.reward_hardening.containment import trusted_read
from kernelbench.reward_hardening.containment.seccomp import _install_seccomp
from kernelbench.reward_hardening.codes import CODES
from kernelbench.reward_hardening.ipc.lending import SharedArena

pytestmark = pytest.mark.skipif(not trusted_read.available()[0], reason="no process_vm_readv here")

_CHILD = r"""
import ctypes, json, mmap, signal, sys
n = int(sys.argv[1])
rw = mmap.mmap(-1, n)
rw.write(bytes((i * 7) % 251 for i in range(n)))
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
none = libc.mmap(None, n, 0, 0x22, -1, 0)  # PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS
if sys.argv[2] == "handler":
    signal.signal(signal.SIGSEGV, lambda *a: None)
print(json.dumps({"rw": ctypes.addressof(ctypes.c_char.from_buffer(rw)), "none": none}), flush=True)
sys.stdin.read()
"""


@pytest.fixture()
def child():
    procs = []

    def start(n=40000, mode="plain"):
        p = subprocess.Popen([sys.executable, "-c", _CHILD, str(n), mode], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        procs.append(p)
        info = json.loads(p.stdout.readline())
        return p, info["rw"], info["none"]

    yield start
    for p in procs:
        p.kill()
        p.wait()


def _expected(n):
    return bytes((i * 7) % 251 for i in range(n))


def _staging(n, dtype=torch.uint8, shape=None):
    arena = SharedArena(torch.device("cpu"))
    key, t = arena.empty(shape or [n], dtype)
    t.fill_(0)
    metas, fds = arena.export([key])
    return arena, t, metas, fds


def _facts(ptr, shape, stride, dtype="uint8", es=1):
    return {"ptr": ptr, "shape": shape, "stride": stride, "dtype": dtype, "element_size": es}


def test_reads_another_process_memory_into_the_staging_memfd_in_chunks(child, monkeypatch):
    n = 40000
    p, rw, _ = child(n)
    monkeypatch.setattr(trusted_read, "CHUNK", 8192)  # several windows, the last one partial
    arena, t, metas, fds = _staging(n)
    reads = trusted_read.read_outputs(p.pid, [_facts(rw, [n], [1])], metas, fds)
    assert bytes(t.numpy().tobytes()) == _expected(n)
    assert reads[0].nbytes == n and reads[0].contiguous


def test_time_the_reader_waited_for_a_cpu_is_left_out_of_the_read(child, monkeypatch):
    """A reader kept off the CPUs by other jobs is not reading: its run-queue wait is not read time (RH-61)."""
    n = 40000
    p, rw, _ = child(n)
    arena, t, metas, fds = _staging(n)
    (read,) = trusted_read.read_outputs(p.pid, [_facts(rw, [n], [1])], metas, fds)
    assert bytes(t.numpy().tobytes()) == _expected(n) and read.read_ms >= 0 and read.queued_ms >= 0
    assert trusted_read.queued_ns() is not None  # Linux keeps the statistic for the calling thread
    # 130 ms of wall clock around a copy, 120 of them spent waiting, runnable, for a CPU
    monkeypatch.setattr(trusted_read, "queued_ns", lambda: 125_000_000)
    t0 = time.monotonic_ns() - 130_000_000
    read_ms, queued_ms = trusted_read._timed(t0, 5_000_000)
    assert queued_ms == 120.0 and 10.0 <= read_ms < 60.0
    assert trusted_read._timed(t0, None)[1] == 0.0  # no statistic: the wall clock, as before
    monkeypatch.setattr(trusted_read, "queued_ns", lambda: 10**12)
    assert trusted_read._timed(t0, 0)[0] == 0.0  # never more waiting than wall clock


def test_rh61_judges_trusted_reads_without_the_run_queue_wait():
    from types import SimpleNamespace

    from kernelbench.reward_hardening.config import HardeningConfig
    from kernelbench.reward_hardening.detectors.reads import slow_read

    ev = SimpleNamespace(config=HardeningConfig(device="cpu"), copy_bytes_per_s=10 * (1 << 30), requests=[],
                         reads=[{"phase": "timing:1", "bytes": 4 << 20, "ms": 8.0, "queued_ms": 114.0}])
    assert slow_read(ev) == []  # 122 ms of wall clock, 114 of them waiting for a CPU
    ev.reads[0]["ms"] = 122.0  # the same wall clock spent reading (a candidate serving pages lazily)
    (finding,) = slow_read(ev)
    assert finding.code == "RH-61" and finding.evidence["slow"][0]["queued_ms"] == 114.0


def test_storage_without_read_access_is_refused_before_any_read(child):
    n = 40000
    p, _, none = child(n)
    assert none is not None
    assert "without read access" in trusted_read.readable_problem(p.pid, none, n)
    arena, t, metas, fds = _staging(n)
    with pytest.raises(trusted_read.ReadFailed) as exc:
        trusted_read.read_outputs(p.pid, [_facts(none, [n], [1])], metas, fds)
    assert exc.value.kind == "unreadable"
    assert not t.any()  # nothing was written


def test_a_faulting_read_fails_loudly(child):
    n = 40000
    p, _, none = child(n)
    arena, t, metas, fds = _staging(n)
    with pytest.raises(trusted_read.ReadFailed) as exc:  # the map check bypassed: EFAULT itself
        trusted_read._copy_span(p.pid, none, fds[0], n)
    assert exc.value.kind == "unreadable" and "process_vm_readv" in exc.value.detail


def test_unmapped_and_null_spans_are_refused(child):
    p, rw, _ = child(4096)
    assert trusted_read.readable_problem(p.pid, 0, 16) == "null storage pointer"
    assert "not mapped" in trusted_read.readable_problem(p.pid, 8, 16)
    assert trusted_read.readable_problem(p.pid, rw, 4096) is None


def test_a_permuted_output_is_read_as_its_span_and_restored_by_its_strides(child):
    rows, cols = 100, 40  # the child's bytes seen as a (cols, rows) view of a (rows, cols) buffer
    p, rw, _ = child(rows * cols)
    arena, t, metas, fds = _staging(rows * cols, shape=[cols, rows])
    reads = trusted_read.read_outputs(p.pid, [_facts(rw, [cols, rows], [1, cols])], metas, fds)
    assert not reads[0].contiguous
    got = torch.as_strided(t, t.shape, reads[0].stride, 0).contiguous()
    want = torch.frombuffer(bytearray(_expected(rows * cols)), dtype=torch.uint8).view(rows, cols).t()
    assert torch.equal(got, want)


def test_a_view_with_gaps_is_gathered_row_by_row(child):
    """An honest crop (``out[:, :100]`` of a wider buffer) is read as its rows, packed."""
    p, rw, _ = child(8000)
    arena, t, metas, fds = _staging(1000, shape=[10, 100])
    reads = trusted_read.read_outputs(p.pid, [_facts(rw + 3, [10, 100], [800, 1])], metas, fds)
    assert reads[0].contiguous and reads[0].stride == [100, 1]
    want = torch.frombuffer(bytearray(_expected(8000)), dtype=torch.uint8).view(10, 800)[:, 3:103]
    assert torch.equal(t, want)


def test_a_layout_with_gaps_in_every_dimension_or_a_wrong_shape_is_refused_clearly(child):
    p, rw, _ = child(8000)
    arena, t, metas, fds = _staging(1000, shape=[10, 100])
    with pytest.raises(trusted_read.ReadFailed) as exc:  # no two elements adjacent: refused
        trusted_read.read_outputs(p.pid, [_facts(rw, [10, 100], [1, 20])], metas, fds)
    assert exc.value.kind == "layout" and "contiguous" in exc.value.detail
    with pytest.raises(trusted_read.ReadFailed) as exc:
        trusted_read.read_outputs(p.pid, [_facts(rw, [10, 10], [10, 1])], metas, fds)
    assert exc.value.kind == "structure"
    with pytest.raises(trusted_read.ReadFailed) as exc:
        trusted_read.read_outputs(p.pid, [{"ptr": "x"}], metas, fds)
    assert exc.value.kind == "facts"


def test_sigcgt_shows_a_new_fault_handler(child):
    p_plain, _, _ = child(4096)
    p_handler, _, _ = child(4096, "handler")
    base = trusted_read.caught_signals(p_plain.pid)
    assert base is not None and not base & (1 << (signal.SIGSEGV - 1))
    assert trusted_read.new_fault_handlers(base, trusted_read.caught_signals(p_handler.pid)) == ["SIGSEGV"]
    assert trusted_read.new_fault_handlers(base, base) == []
    assert trusted_read.new_fault_handlers(None, base) is None
    assert trusted_read.caught_signals(2 ** 22 + 12345) is None  # no such process: unreadable, not "no handler"


def test_freezing_the_cgroup_stops_the_process_and_thawing_resumes_it(child):
    caps = containment.capabilities()
    if not caps["cgroup_kill"].active:
        pytest.skip("no writable cgroup v2 hierarchy")
    unit = containment.new_unit("probe")
    if not trusted_read.can_freeze(unit.cgroup):
        pytest.skip("no cgroup freezer")
    p = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.001)"])
    try:
        with open(os.path.join(unit.cgroup, "cgroup.procs"), "w") as fh:
            fh.write(str(p.pid))
        ms = trusted_read.freeze(unit.cgroup)
        assert ms >= 0
        with open(f"/proc/{p.pid}/stat") as fh:
            assert fh.read().rsplit(")", 1)[1].split()[0] in ("S", "D", "T", "t")
        events = trusted_read._events(unit.cgroup)
        assert events["frozen"] == "1"
        trusted_read.thaw(unit.cgroup)
        assert trusted_read._events(unit.cgroup)["frozen"] == "0"
    finally:
        trusted_read.thaw(unit.cgroup)
        p.kill()
        p.wait()
        unit.sweep(None)
    with pytest.raises(trusted_read.ReadFailed) as exc:  # the leaf is gone: a failed freeze is loud
        trusted_read.freeze(unit.cgroup)
    assert exc.value.kind == "freeze"


def test_the_candidate_filter_kills_a_worker_that_makes_itself_non_dumpable():
    if not containment.capabilities()["seccomp"].active:
        pytest.skip("no seccomp here")
    results = {}
    for option, value in (("dumpable0", 0), ("dumpable1", 1), ("name", None)):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            try:
                _install_seccomp()
                libc = ctypes.CDLL(None, use_errno=True)
                if value is None:
                    libc.prctl(15, ctypes.c_char_p(b"kg"), 0, 0, 0)  # PR_SET_NAME: allowed
                else:
                    libc.prctl(4, value, 0, 0, 0)  # PR_SET_DUMPABLE
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        results[option] = status
    assert os.WIFSIGNALED(results["dumpable0"]) and os.WTERMSIG(results["dumpable0"]) == signal.SIGSYS
    assert os.WIFSIGNALED(results["dumpable1"]) and os.WTERMSIG(results["dumpable1"]) == signal.SIGSYS
    assert os.WIFEXITED(results["name"]) and os.WEXITSTATUS(results["name"]) == 0


def test_the_harness_reports_a_kernel_registered_for_copy_():
    code = ("import torch\n"
            "from kernelbench.reward_hardening.candidate import worker\n"
            "before = worker.dispatch_changes()\n"
            "lib = torch.library.Library('aten', 'IMPL')\n"
            "lib.impl('copy_', lambda d, s, nb=False: d, 'CPU')\n"
            "print(before, worker.dispatch_changes())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[] ['aten::copy_']"


# --------------------------------------------------------------------------- end to end, run time alone
READ_ATTACKS = ("RH-60_bad_lazy_storage", "RH-62_bad_copy_override", "RH-61_bad_slow_staging", "RH-52_bad_non_dumpable")
STATIC_CODES = sorted(c for c, info in CODES.items() if info.stage == "static")


@pytest.mark.slow
@pytest.mark.parametrize("fid", READ_ATTACKS)
def test_read_attacks_fail_with_every_static_code_switched_off(fid):
    """The run-time defences alone refuse each attack on the read path (the static rules are off)."""
    import reward_hardening_redteam as rt

    from kernelbench.reward_hardening.fixtures import get_fixture

    parser = rt.build_parser()
    argv = [x for code in STATIC_CODES for x in ("--disable-detector", code)] + ["--timeout", "5", "--no-progress"]
    args = parser.parse_args(argv)
    rt._validate(args, parser)
    fixture = get_fixture(fid)
    r = rt.run_fixture(fixture, args)
    observed = set(r["observed"]["codes"])
    assert r["observed"]["status"] == "FAIL", r["reasons"]
    runtime_codes = set(fixture.must_raise) - set(STATIC_CODES)
    assert runtime_codes and runtime_codes <= observed, (fid, sorted(observed))
    assert not observed & set(STATIC_CODES), sorted(observed)
