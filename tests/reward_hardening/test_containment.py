"""OS containment (``kernelbench.reward_hardening.containment``): measured on this machine.

The tests start real workers under the candidate profile and check what the kernel
does: a ``setsid`` + double-forked process is found, killed and reported, with nothing
left running; ``ptrace`` kills the worker with SIGSYS; writes outside the workspace and
reads of private directories fail; a missing required mechanism fails closed under
``enforce``.  Tests that need a mechanism this machine lacks skip with the probe's reason.
"""

from __future__ import annotations

import os
import secrets
import signal
import struct
import sys
import tempfile
import time

import pytest

from kernelbench.procs import WorkerHandle, scrubbed_env
from kernelbench.reward_hardening import containment
from kernelbench.reward_hardening.containment import KILL_CALLS, NR, Mechanism, Unit

pytestmark = pytest.mark.skipif(not (sys.platform.startswith("linux") and os.uname().machine == "x86_64"),
                                reason="containment is implemented for Linux x86-64")


def _need(*names):
    caps = containment.capabilities()
    for n in names:
        if not caps[n].active:
            pytest.skip(f"{n} unavailable here: {caps[n].detail}")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def _run_sandboxed(command: str, unit: Unit, tmp_path, timeout: float = 60.0) -> tuple[dict, dict]:
    """Run ``os.system(command)`` in a candidate-profile worker; (reply, sweep report)."""
    ws = tmp_path / f"ws-{secrets.token_hex(3)}"
    ws.mkdir()
    spec = {"call": "os:system", "kwargs": {"command": command}, "workspace": str(ws), "role": "candidate",
            "env": scrubbed_env(workspace=str(ws))}
    spec["containment"] = unit.child_spec(private=[str(tmp_path)])
    handle = WorkerHandle("kernelbench.procs:_oneshot_entry", spec).start()
    unit.attach(handle.pid)
    try:
        header, _ = handle.receive(timeout)
    finally:
        handle.close()
    return header, unit.sweep(handle.process.exitcode)


def test_capabilities_name_every_mechanism_with_a_reason():
    caps = containment.capabilities()
    for name in ("cgroup_kill", "subreaper", "process_containment", "seccomp", "landlock", "capability_drop",
                 "trusted_not_dumpable", "yama_ptrace_scope"):
        assert isinstance(caps[name], Mechanism) and caps[name].detail, name
    assert caps["process_containment"].active == (caps["cgroup_kill"].active or caps["subreaper"].active)
    assert set(containment.REQUIRED) <= set(caps)


def test_filter_program_is_well_formed():
    prog = containment._bpf_program()
    assert len(prog) % 8 == 0 and len(prog) // 8 < 4096
    ins = [struct.unpack_from("<HBBI", prog, i) for i in range(0, len(prog), 8)]
    assert ins[0] == (0x20, 0, 0, 4) and ins[1][3] == 0xC000003E  # arch check first
    for k, (code, jt, jf, _) in enumerate(ins):  # every jump lands inside the program
        if code & 0x07 == 0x05:
            assert k + 1 + max(jt, jf) < len(ins)
    kills = {ins[k][3] for k in range(len(ins) - 1) if ins[k][0] == 0x15 and ins[k + 1] == (6, 0, 0, 0x80000000)}
    assert {NR[n] for n in KILL_CALLS} <= kills
    assert ins[-1] == (6, 0, 0, 0x7FFF0000)


def test_enter_fails_closed_when_a_mechanism_cannot_be_applied():
    with pytest.raises(containment.ContainmentError):
        containment.enter({"role": "candidate", "containment": {"cgroup": "/nonexistent/kernelguard"}})


@pytest.mark.parametrize("method", ["cgroup", "subreaper"])
def test_detached_double_forked_process_is_killed_and_reported(method, tmp_path):
    _need("seccomp")
    if method == "cgroup":
        _need("cgroup_kill")
        unit = containment.new_unit("candidate")
    else:
        _need("subreaper")
        containment.begin_evaluation()
        unit = Unit("candidate", None)  # as on a machine without cgroups
    marker = f"{secrets.randbelow(10**6) + 4000}.{os.getpid()}"
    # setsid + background + exit: the sleeper leaves the worker's process group and tree
    header, report = _run_sandboxed(f"setsid sh -c 'sleep {marker} & exit 0' </dev/null >/dev/null 2>&1",
                                    unit, tmp_path)
    assert header.get("ok"), header
    assert report["method"] == method
    names = [s["cmdline"] for s in report["survivors"]]
    assert any(marker in c for c in names), report
    for s in report["survivors"]:
        assert not _alive(s["pid"]), s
    assert report["left_running"] == []
    time.sleep(0.05)
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _alive(int(p))
                and marker.encode() in open(f"/proc/{p}/cmdline", "rb").read()]


def test_ptrace_kills_the_candidate_with_sigsys(tmp_path):
    _need("seccomp")
    unit = containment.new_unit("candidate")
    code = "import ctypes, os; ctypes.CDLL(None).syscall(101, 16, os.getppid(), 0, 0)"  # PTRACE_ATTACH
    header, report = _run_sandboxed(f"exec {sys.executable} -c '{code}'", unit, tmp_path)
    status = header.get("result")
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS, header
    assert report["survivors"] == [] and not report["sigsys"]  # the worker itself only ran the shell


def test_candidate_cannot_write_outside_or_read_private_dirs(tmp_path):
    _need("landlock")
    unit = containment.new_unit("candidate")
    secret = tmp_path / "other-evaluation" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("hidden")
    outside = tempfile.gettempdir() + f"/kg-escape-{secrets.token_hex(4)}"
    cmd = (f"cat {secret} > out.txt; r1=$?; echo x > {outside}; r2=$?; cat /proc/{os.getpid()}/environ >/dev/null;"
           f" r3=$?; echo ok > inside.txt; r4=$?; exit $(( (r1 != 0) + 2 * (r2 != 0) + 4 * (r3 != 0) + 8 * r4 ))")
    header, _ = _run_sandboxed(cmd, unit, tmp_path)
    assert os.WIFEXITED(header["result"]) and os.WEXITSTATUS(header["result"]) == 7, header
    assert not os.path.exists(outside)


def test_enforce_fails_closed_when_a_required_mechanism_is_missing(monkeypatch):
    from kernelbench.reward_hardening import verdict
    from kernelbench.reward_hardening.config import HardeningConfig
    from kernelbench.reward_hardening.evidence import Evidence
    from kernelbench.reward_hardening.records import _capabilities

    real = containment.capabilities()
    fake = dict(real, seccomp=Mechanism("seccomp", False, "kernel without seccomp filters (test)"))
    monkeypatch.setattr(containment, "capabilities", lambda refresh=False: dict(fake))
    report = {"method": "cgroup", "survivors": [], "left_running": [], "sigsys": False, "exitcode": 0,
              "applied": {"cgroup_ns": True, "seccomp": False}, "verified": {"seccomp_mode": "0"}}
    for mode, expected in (("enforce", "UNSUPPORTED"), ("audit", None)):
        cfg = HardeningConfig(mode=mode, policy="practical", device="cpu")
        ev = Evidence(config=cfg)
        ev.reference_ok, ev.loaded = True, False
        ev.containment = {"candidate": report}
        caps = _capabilities(cfg, ev, "cpu", False)
        assert caps["containment_seccomp"].status == "UNSUPPORTED"
        assert caps["containment_seccomp"].required is (mode == "enforce")
        if expected:
            assert verdict.decide([], caps) == expected


def test_trusted_roles_are_not_dumpable_and_unsandboxed(tmp_path):
    unit = containment.new_unit("reference")
    ws = tmp_path / "ref"
    ws.mkdir()
    spec = {"call": "os:system", "kwargs": {"command": "grep -E '^(Seccomp|CapEff):' /proc/self/status"},
            "workspace": str(ws), "role": "reference", "env": scrubbed_env(workspace=str(ws)),
            "log_path": str(tmp_path / "ref.log")}
    spec["containment"] = unit.child_spec()
    assert not spec["containment"]["seccomp"] and not spec["containment"]["landlock"]
    handle = WorkerHandle("kernelbench.procs:_oneshot_entry", spec).start()
    unit.attach(handle.pid)
    try:
        header, _ = handle.receive(60)
    finally:
        handle.close()
    unit.sweep(handle.process.exitcode)
    assert header.get("ok") and header["result"] == 0
    assert "Seccomp:\t0" in (tmp_path / "ref.log").read_text()


def test_evaluation_kills_and_reports_a_daemon_and_leaves_nothing_running():
    """Acceptance: a candidate daemonises (setsid + double fork); the record says so, nothing survives."""
    _need("seccomp")
    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened
    from kernelbench.reward_hardening.fixtures import fixture_source, get_fixture, problem_source

    f = get_fixture("rt_daemon_escape")
    cfg = HardeningConfig(mode="audit", policy="practical", device="cpu", timeout=30.0, num_correct_trials=1,
                          num_perf_trials=3, num_warmup=1, perturbations=(), profile_backend=False)
    record = evaluate_hardened(problem_source(f), fixture_source(f), cfg)
    rh = record["reward_hardening"]
    found = {x["code"]: x for x in rh["findings"]}
    assert rh["integrity_status"] == "FAIL" and "RH-51" in found, found
    assert "RH-18" not in found  # the kernel itself was right: only containment catches it
    survivors = found["RH-51"]["evidence"]["survivors"]
    assert survivors and all(s["sid"] != s["pid"] or s["seccomp"] == "2" for s in survivors)
    time.sleep(0.05)
    assert not [s for s in survivors if _alive(s["pid"])]
    # nothing sandboxed is left anywhere among this process's children
    kids = [p for p in os.listdir("/proc") if p.isdigit() and _alive(int(p))
            and containment._status(p).get("PPid") == str(os.getpid())
            and containment._status(p).get("Seccomp") == "2"]
    assert kids == []
    caps = rh["capabilities"]
    assert caps["containment_process"]["status"] == "AVAILABLE"
    assert caps["containment_seccomp"]["status"] == "AVAILABLE"
    assert record["metadata"]["containment"]["workers"]["candidate"]["survivors"]


@pytest.mark.slow
def test_native_raw_syscall_daemon_and_memory_read_end_to_end():
    """A load_inline extension forks, setsids and reads its parent through raw syscalls only."""
    import shutil
    from pathlib import Path

    _need("seccomp")
    if not shutil.which("g++") and not shutil.which("c++"):
        pytest.skip("no C++ compiler")
    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened
    from kernelbench.reward_hardening.fixtures import PROBLEM_DIR

    src = (Path(__file__).parent / "precheck_fixtures" / "RH-50_bad_native_daemon_escape.py").read_text()
    cfg = HardeningConfig(mode="audit", policy="practical", device="cpu", timeout=600.0, num_correct_trials=1,
                          num_perf_trials=3, num_warmup=1, perturbations=(), profile_backend=False)
    record = evaluate_hardened((PROBLEM_DIR / "level1/4_Row_softmax.py").read_text(), src, cfg)
    rh = record["reward_hardening"]
    found = {x["code"]: x for x in rh["findings"]}
    assert rh["integrity_status"] == "FAIL"
    assert {"RH-50", "RH-51", "RH-52"} <= set(found), sorted(found)
    time.sleep(0.05)
    assert not [s for s in found["RH-51"]["evidence"]["survivors"] if _alive(s["pid"])]
