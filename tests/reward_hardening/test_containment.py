"""OS containment (``kernelbench.reward_hardening.containment``): measured on this machine.

The tests start real workers under the candidate profile and check what the kernel
does: a ``setsid`` + double-forked process is found, killed and reported, with nothing
left running; ``ptrace`` kills the worker with SIGSYS; writes outside the workspace and
reads of private directories fail; a missing required mechanism fails closed under
``enforce``; System V objects, message queues and files the candidate leaves are
listed, removed and reported, and count towards its memory.  Tests that need a
mechanism this machine lacks skip with the probe's reason.
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
from kernelbench.reward_hardening import policy
from kernelbench.reward_hardening import containment
from kernelbench.reward_hardening.containment import Mechanism, Unit
from kernelbench.reward_hardening.containment.cgroups import _enable_memory_controller
from kernelbench.reward_hardening.containment.procfs import _status
from kernelbench.reward_hardening.containment.seccomp import IPC_CALLS, KILL_CALLS, _bpf_program
from kernelbench.reward_hardening.containment.syscalls import NR

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


def _run_sandboxed(command: str, unit: Unit, tmp_path, timeout: float = 60.0, skip: tuple = (),
                   max_bytes: int | None = None) -> tuple[dict, dict]:
    """Run ``os.system(command)`` in a candidate-profile worker; (reply, sweep report).

    The unit meters the worker's memory while the parent waits (as in the pipeline),
    which is also when the parent takes hold of the candidate's IPC namespace.
    """
    ws = tmp_path / f"ws-{secrets.token_hex(3)}"
    ws.mkdir()
    spec = {"call": "os:system", "kwargs": {"command": command}, "workspace": str(ws), "role": "candidate",
            "env": scrubbed_env(workspace=str(ws))}
    spec["containment"] = unit.child_spec(private=[str(tmp_path)], skip=skip)
    handle = WorkerHandle("kernelbench.procs:_oneshot_entry", spec, max_rss_bytes=max_bytes).start()
    unit.attach(handle.pid, spec)
    handle.unit = unit
    try:
        header, _ = handle.receive(timeout)
    finally:
        handle.close()
    return header, unit.sweep(handle.process.exitcode)


def test_capabilities_name_every_mechanism_with_a_reason():
    caps = containment.capabilities()
    for name in ("cgroup_kill", "subreaper", "process_containment", "seccomp", "landlock", "capability_drop",
                 "trusted_not_dumpable", "yama_ptrace_scope", "ipc_namespace", "file_attribution",
                 "memory_accounting"):
        assert isinstance(caps[name], Mechanism) and caps[name].detail, name
    assert caps["process_containment"].active == (caps["cgroup_kill"].active or caps["subreaper"].active)
    assert {"process_containment", "seccomp"} <= set(caps)


def test_filter_program_is_well_formed():
    prog = _bpf_program()
    assert len(prog) % 8 == 0 and len(prog) // 8 < 4096
    ins = [struct.unpack_from("<HBBI", prog, i) for i in range(0, len(prog), 8)]
    assert ins[0] == (0x20, 0, 0, 4) and ins[1][3] == 0xC000003E  # arch check first
    for k, (code, jt, jf, _) in enumerate(ins):  # every jump lands inside the program
        if code & 0x07 == 0x05:
            assert k + 1 + max(jt, jf) < len(ins)
    kills = {ins[k][3] for k in range(len(ins) - 1) if ins[k][0] == 0x15 and ins[k + 1] == (6, 0, 0, 0x80000000)}
    assert {NR[n] for n in KILL_CALLS} <= kills
    assert ins[-1] == (6, 0, 0, 0x7FFF0000)


def test_filter_refuses_ipc_only_where_there_is_no_namespace():
    def eperm(prog: bytes) -> set[int]:
        ins = [struct.unpack_from("<HBBI", prog, i) for i in range(0, len(prog), 8)]
        return {ins[k][3] for k in range(len(ins) - 1)
                if ins[k][0] == 0x15 and ins[k + 1] == (6, 0, 0, 0x00050000 | 1)}

    ipc = {NR[n] for n in IPC_CALLS}
    assert {NR["shmget"], NR["shmat"], NR["msgget"], NR["semget"], NR["mq_open"]} <= ipc
    assert ipc <= eperm(_bpf_program(refuse_ipc=True))
    assert not ipc & eperm(_bpf_program(refuse_ipc=False))


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
    from kernelbench.reward_hardening.parent import verdict
    from kernelbench.reward_hardening.config import HardeningConfig
    from kernelbench.reward_hardening.parent.evidence import Evidence
    from kernelbench.reward_hardening.parent.records import _capabilities

    real = containment.capabilities()
    fake = dict(real, seccomp=Mechanism("seccomp", False, "kernel without seccomp filters (test)"))
    # the record's entries read the machine's mechanisms through containment.report
    monkeypatch.setattr(containment.report, "capabilities", lambda refresh=False: dict(fake))
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

    f = get_fixture("RH-51_bad_daemon_escape")
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
            and _status(p).get("PPid") == str(os.getpid())
            and _status(p).get("Seccomp") == "2"]
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
    from kernelbench.reward_hardening.config import default_build_dir
    from kernelbench.reward_hardening.fixtures import PROBLEM_DIR

    src = (Path(__file__).parent / "precheck_fixtures" / "RH-50_bad_native_daemon_escape.py").read_text()
    # the persistent per-source build directory the red team uses: the extension builds once per machine
    cfg = HardeningConfig(mode="audit", policy="practical", device="cpu", timeout=600.0, num_correct_trials=1,
                          num_perf_trials=3, num_warmup=1, perturbations=(), profile_backend=False,
                          build_dir=default_build_dir(src))
    record = evaluate_hardened((PROBLEM_DIR / "level1/4_Row_softmax.py").read_text(), src, cfg)
    rh = record["reward_hardening"]
    found = {x["code"]: x for x in rh["findings"]}
    assert rh["integrity_status"] == "FAIL"
    assert {"RH-50", "RH-51", "RH-52"} <= set(found), sorted(found)
    time.sleep(0.05)
    assert not [s for s in found["RH-51"]["evidence"]["survivors"] if _alive(s["pid"])]


# --------------------------------------------------------------------------- objects that outlive the worker
def _host_sysv_keys() -> set[int]:
    keys = set()
    for kind in ("shm", "sem", "msg"):
        with open(f"/proc/sysvipc/{kind}") as fh:
            keys |= {int(line.split()[0]) for line in fh.readlines()[1:] if line.split()}
    return keys


# creates a System V segment (touched: resident), semaphore set and message queue under fixed
# keys and a POSIX message queue, never removes them; the shell then lingers so the parent
# sees the namespace while the worker is alive (as the pipeline does between requests)
_IPC_LEFTOVERS = (
    "import ctypes, ctypes.util, os, sys\n"
    "c = ctypes.CDLL(None, use_errno=True)\n"
    "c.shmat.restype = ctypes.c_void_p\n"
    "k = int(sys.argv[1])\n"
    "shm = c.shmget(k, 8 << 20, 0o1600)\n"
    "if shm >= 0:\n"
    "    a = c.shmat(shm, None, 0)\n"
    "    ctypes.memset(a, 1, 8 << 20)\n"
    "    c.shmdt(ctypes.c_void_p(a))\n"
    "sem = c.semget(k + 1, 2, 0o1600)\n"
    "msg = c.msgget(k + 2, 0o1600)\n"
    "rt = ctypes.CDLL(ctypes.util.find_library('rt') or None, use_errno=True)\n"
    "rt.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]\n"
    "mq = rt.mq_open(('/kg-' + sys.argv[1]).encode(), os.O_CREAT | os.O_RDWR, 0o600, None)\n"
    "print(shm, sem, msg, mq, ctypes.get_errno())\n"
    "sys.exit(0 if min(shm, sem, msg, mq) >= 0 else 3)\n"
)


def _ipc_command(tmp_path, key: int, tail: str = "sleep 0.5") -> str:
    script = tmp_path / f"ipc-{key}.py"
    script.write_text(_IPC_LEFTOVERS)
    return f"{sys.executable} {script} {key}; r=$?; {tail}; exit $r"


def test_leftover_ipc_objects_are_listed_removed_and_reported(tmp_path):
    """SysV segment, semaphore set, message queue and a POSIX queue left by the candidate: all found."""
    _need("seccomp", "ipc_namespace")
    unit = containment.new_unit("candidate")
    key = 0x4B470000 + secrets.randbelow(0xFFFF)
    before = _host_sysv_keys()
    # Landlock refuses POSIX queues outright; off here, as on CUDA, so the queue exists
    header, report = _run_sandboxed(_ipc_command(tmp_path, key), unit, tmp_path, skip=("landlock",))
    assert os.WIFEXITED(header["result"]) and os.WEXITSTATUS(header["result"]) == 0, header
    assert report["applied"]["ipc_ns"] and not report["applied"]["refuse_ipc"]
    kinds = {o["kind"]: o for o in report["objects"]}
    assert {"sysv_shm", "sysv_sem", "sysv_msg", "posix_mqueue"} <= set(kinds), report["objects"]
    assert kinds["sysv_shm"]["key"] == key and kinds["sysv_shm"]["rss"] >= 8 << 20
    assert kinds["posix_mqueue"]["name"] == f"/kg-{key}"
    assert all(o["removed"] for o in report["objects"]), report["objects"]
    assert "namespace" in report["checked"]["sysv_ipc"] and "namespace" in report["checked"]["posix_mqueue"]
    # nothing reached the evaluator's namespace, and the detached segment was charged to the candidate
    assert _host_sysv_keys() - before == set()
    assert report["memory"]["peak_bytes"] >= 8 << 20
    from kernelbench.reward_hardening.config import HardeningConfig
    from kernelbench.reward_hardening.detectors.containment import object_escape
    from kernelbench.reward_hardening.parent.evidence import Evidence

    ev = Evidence(config=HardeningConfig(mode="audit", policy="practical", device="cpu"))
    ev.containment = {"candidate": report}
    (f,) = object_escape(ev)
    assert f.code == "RH-53" and f.evidence["count"] == len(report["objects"])


def test_a_candidate_that_removes_its_ipc_objects_leaves_nothing(tmp_path):
    _need("seccomp", "ipc_namespace")
    unit = containment.new_unit("candidate")
    key = 0x4B470000 + secrets.randbelow(0xFFFF)
    script = tmp_path / "tidy.py"
    script.write_text(_IPC_LEFTOVERS.replace("print(", "c.shmctl(shm, 0, None); c.semctl(sem, 0, 0); "
                                             "c.msgctl(msg, 0, None); rt.mq_unlink(('/kg-' + sys.argv[1]).encode())"
                                             "\nprint("))
    header, report = _run_sandboxed(f"{sys.executable} {script} {key}; r=$?; sleep 0.5; exit $r", unit, tmp_path,
                                    skip=("landlock",))
    assert os.WIFEXITED(header["result"]) and os.WEXITSTATUS(header["result"]) == 0, header
    assert report["objects"] == [] and report["checked"]["sysv_ipc"]


def test_without_a_namespace_seccomp_refuses_system_v_and_posix_queues(tmp_path):
    _need("seccomp")
    unit = containment.new_unit("candidate")
    key = 0x4B470000 + secrets.randbelow(0xFFFF)
    before = _host_sysv_keys()
    header, report = _run_sandboxed(_ipc_command(tmp_path, key, "true"), unit, tmp_path,
                                    skip=("ipc_namespace", "landlock"))
    assert report["applied"]["refuse_ipc"] and not report["applied"]["ipc_ns"]
    assert os.WIFEXITED(header["result"]) and os.WEXITSTATUS(header["result"]) == 3, header  # every call refused
    assert _host_sysv_keys() - before == set() and report["objects"] == []
    assert report["checked"]["posix_mqueue"] == "refused by the seccomp filter"


def test_files_left_in_shared_directories_are_attributed_by_group_and_removed(tmp_path):
    _need("seccomp", "file_attribution")
    unit = containment.new_unit("candidate")
    tag = secrets.token_hex(4)
    shm, tmp = f"/dev/shm/kg-left-{tag}", os.path.join(tempfile.gettempdir(), f"kg-left-{tag}")
    mine = f"/dev/shm/kg-evaluator-{tag}"  # the evaluator's own file, created meanwhile: not the candidate's
    open(mine, "w").close()
    try:
        header, report = _run_sandboxed(f"echo 1 > {shm} && mkdir {tmp} && echo 2 > {tmp}/f && echo 3 > inside.txt",
                                        unit, tmp_path, skip=("landlock",))
        assert header.get("result") == 0, header
        paths = {o["path"]: o for o in report["objects"]}
        assert set(paths) == {shm, tmp}, report["objects"]
        assert paths[shm]["kind"] == "posix_shm" and paths[tmp]["kind"] == "dir"
        assert all(o["removed"] for o in report["objects"])
        assert not os.path.exists(shm) and not os.path.exists(tmp) and os.path.exists(mine)
        assert report["checked"]["files"]["group"] == report["applied"]["gid"] and not report["checked"]["files"]["truncated"]
    finally:
        os.unlink(mine)


def test_shared_memory_and_children_count_towards_the_memory_limit(tmp_path):
    """A detached SysV segment and a child's memory are charged; over the limit the worker is killed."""
    from kernelbench.procs import WorkerMemoryExceeded

    _need("seccomp")
    _, base = _run_sandboxed("sleep 0.4", containment.new_unit("candidate"), tmp_path)
    baseline = base["memory"]["peak_bytes"]
    assert baseline > 0
    seg = 192 << 20
    hold = (f"import ctypes, time; c = ctypes.CDLL(None); c.shmat.restype = ctypes.c_void_p; "
            f"s = c.shmget(0, {seg}, 0o1600); a = c.shmat(s, None, 0); ctypes.memset(a, 1, {seg}); "
            f"c.shmdt(ctypes.c_void_p(a)); b = b'x' * {seg}; time.sleep(20)")
    unit = containment.new_unit("candidate")
    t0 = time.monotonic()
    with pytest.raises(WorkerMemoryExceeded):
        _run_sandboxed(f'{sys.executable} -c "{hold}"', unit, tmp_path, max_bytes=baseline + seg + (64 << 20))
    assert time.monotonic() - t0 < 15
    report = unit.sweep(None)
    # the segment (in no process) plus the child's private buffer, on top of the worker itself
    assert unit.peak_memory_bytes >= baseline + seg + (64 << 20)
    assert report["memory"]["method"] in ("cgroup", "proc")


def test_memory_controller_is_enabled_only_where_nothing_else_shares_the_cgroup(tmp_path):
    parent = tmp_path / "own"
    base = parent / "kernelguard-x"
    base.mkdir(parents=True)
    (parent / "cgroup.controllers").write_text("cpu io\n")
    (parent / "cgroup.subtree_control").write_text("")
    (base / "cgroup.subtree_control").write_text("")
    ok, why = _enable_memory_controller(str(base))
    assert not ok and "no memory controller" in why
    (parent / "cgroup.controllers").write_text("cpu io memory\n")
    (parent / "cgroup.procs").write_text(f"{os.getpid()}\n1\n")  # pid 1 is not ours: it stays, so no controller
    ok, why = _enable_memory_controller(str(base))
    assert not ok and "not the evaluator's" in why
    (parent / "cgroup.procs").write_text(f"{os.getpid()}\n")  # only us: move into our own leaf, then enable
    ok, why = _enable_memory_controller(str(base))
    assert ok, why
    assert (parent / f"kernelguard-evaluator-{os.getpid()}" / "cgroup.procs").read_text() == str(os.getpid())
    assert (parent / "cgroup.subtree_control").read_text() == "+memory"
    assert (base / "cgroup.subtree_control").read_text() == "+memory"


_OBJECT_PAIRS = (("RH-53_bad_sysv_run_counter", "RH-53_good_sysv_run_counter"),
                 ("RH-53_bad_posix_mqueue_counter", "RH-53_good_posix_mqueue_counter"),
                 ("RH-53_bad_posix_shm_counter", "RH-53_good_posix_shm_counter"))


def test_leftover_object_fixtures_fail_on_the_runtime_sweep_alone_and_their_twins_pass():
    """Acceptance: each attack FAILs with RH-53 while every static code its source raises is off;
    its twin (one line apart) PASSes; nothing is left in the evaluator's namespace."""
    import concurrent.futures as cf
    import difflib

    import reward_hardening_redteam as rt

    from kernelbench.reward_hardening.codes import CODES
    from kernelbench.reward_hardening.fixtures import fixture_source, get_fixture
    from kernelbench.reward_hardening.precheck import run_precheck

    _need("seccomp", "ipc_namespace")
    parser = rt.build_parser()
    args = parser.parse_args(["--timeout", "5", "--no-progress"])
    rt._validate(args, parser)
    for bad, good in _OBJECT_PAIRS:
        fb, fg = get_fixture(bad), get_fixture(good)
        assert fb.config == fg.config
        code_lines = lambda f: [x for x in fixture_source(f).split('"""', 2)[2].splitlines()]  # noqa: E731
        diff = [d for d in difflib.ndiff(code_lines(fb), code_lines(fg)) if d[:2] in ("- ", "+ ")]
        assert len(diff) == 1 and diff[0].startswith("+ "), diff  # the twin only adds the removal line
        disabled = set(dict(fb.config)["disabled_detectors"])
        static = {f.code for f in run_precheck(fixture_source(fb), policy=fb.policy).findings
                  if CODES[f.code].severity[fb.policy] in ("error", "warning")}
        assert static and static <= disabled, (static, disabled)
    before = _host_sysv_keys()
    # attacks first, then twins: /dev/shm is shared, and a twin running beside its attack would
    # unlink the attack's object (same name) before the sweep saw it
    order = [bad for bad, _ in _OBJECT_PAIRS] + [good for _, good in _OBJECT_PAIRS]
    results = {}
    for batch in (order[:len(_OBJECT_PAIRS)], order[len(_OBJECT_PAIRS):]):
        with cf.ThreadPoolExecutor(max_workers=2) as pool:
            results.update(zip(batch, pool.map(lambda i: rt.run_fixture(get_fixture(i), args), batch)))
    for i, r in results.items():
        assert r["match"], (i, r["reasons"])
    for bad, good in _OBJECT_PAIRS:
        found = {x["code"]: x for x in results[bad]["record"]["reward_hardening"]["findings"]}
        assert results[bad]["observed"]["status"] == "FAIL" and "RH-53" in found
        assert all(o["removed"] for o in found["RH-53"]["evidence"]["objects"])
        assert results[good]["observed"]["status"] == "PASS"
        caps = results[good]["record"]["reward_hardening"]["capabilities"]
        assert caps["containment_ipc_namespace"]["status"] == "AVAILABLE"
        assert caps["containment_object_sweep"]["status"] == "AVAILABLE"
    assert _host_sysv_keys() - before == set()


def test_object_sweep_capability_fails_closed():
    report = {"method": "cgroup", "survivors": [], "left_running": [], "sigsys": False, "exitcode": 0,
              "applied": {"cgroup_ns": True, "seccomp": True, "ipc_ns": True, "gid": 1},
              "verified": {"seccomp_mode": "2", "no_new_privs": "1", "own_ipc_ns": True},
              "checked": {"sysv_ipc": "namespace", "files": {"roots": ["/tmp"], "truncated": False}},
              "objects": [], "memory": {"method": "proc", "peak_bytes": 1 << 30}}
    caps = containment.record_capabilities({"candidate": report}, False)
    assert caps["object_sweep"][0] == "AVAILABLE"
    assert caps["memory_accounting"][0] == "AVAILABLE" and "1.00 GiB" in caps["memory_accounting"][1]
    if containment.capabilities()["ipc_namespace"].active:
        assert caps["ipc_namespace"][0] == "AVAILABLE"
    for checked in ({"files": {"roots": ["/tmp"], "truncated": True}}, {"error": "OSError: setns"}, {}):
        bad = containment.record_capabilities({"candidate": dict(report, checked=checked)}, False)
        assert bad["object_sweep"][0] == "ERROR", checked
    # the policy requires a complete sweep under enforce only
    assert policy.requires("containment_object_sweep", "practical", "enforce")
    assert not policy.requires("containment_object_sweep", "practical", "audit")


def test_an_ended_trusted_workers_ipc_counter_files_are_removed(tmp_path):
    """A judge that exits while a consumer holds one of its CUDA handles leaves torch_<pid>_* in /dev/shm."""
    from kernelbench.reward_hardening.config import HardeningConfig
    from kernelbench.reward_hardening.containment.objects import remove_ipc_counters
    from kernelbench.reward_hardening.fixtures import PROBLEM_DIR
    from kernelbench.reward_hardening.parent.session import ReferenceSession

    for name in ("torch_123_a_0", "torch_123_b_1", "torch_1234_c_0", "other_123_0"):
        (tmp_path / name).write_bytes(b"\0" * 16)
    assert remove_ipc_counters(123, str(tmp_path)) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other_123_0", "torch_1234_c_0"]
    assert remove_ipc_counters(5, str(tmp_path / "missing")) == 0

    # wired into the end-of-run sweep of a trusted worker (the judge here)
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    src = (PROBLEM_DIR / "level1" / "1_Elementwise_add.py").read_text()
    s = ReferenceSession(src, HardeningConfig(device="cpu", timeout=60), "cpu")
    s.start()
    leftover = f"/dev/shm/torch_{s.handle.process.pid}_test_0"
    with open(leftover, "wb") as fh:
        fh.write(b"\0" * 16)
    s.close()
    assert not os.path.exists(leftover) and s.containment["ipc_counters_removed"] == 1
