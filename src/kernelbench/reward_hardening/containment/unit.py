"""One worker's containment unit (parent side): its cgroup leaf, the spec the child applies, the sweep.

``new_unit`` makes one per worker; the unit measures the worker's memory while it runs,
verifies from ``/proc`` what the kernel applied, and after it ended kills and reaps what
is left and removes the objects the candidate left (the report RH-51/52/53 read).
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from kernelbench.reward_hardening.containment.cgroups import _cgroup_procs, _kill_cgroup, _memcg_bytes, _rmdir_quiet
from kernelbench.reward_hardening.containment.landlock import _under, landlock_abi
from kernelbench.reward_hardening.containment.objects import (
    _MNT_DETACH, _SYSV, _in_namespace, _mqueues_in, _parse_sysvipc, _read_fd, _remove_path, _scan_files,
    _scan_roots, _sysv_remove, remove_ipc_counters)
from kernelbench.reward_hardening.containment.privileges import _can_ptrace_any
from kernelbench.reward_hardening.containment.probe import (
    _GID_BASE, _GID_SPAN, _LOCK, _STATE, begin_evaluation, capabilities)
from kernelbench.reward_hardening.containment.procfs import (
    _children_map, _descendants, _mountpoints, _proc_info, _proc_memory, _reap, _status)
from kernelbench.reward_hardening.containment.syscalls import ContainmentError, _lib

# the kernelbench package directory (containment/ -> reward_hardening/ -> kernelbench/)
_KERNELBENCH_DIR = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


@dataclass
class Unit:
    """One worker's containment unit (parent side)."""

    role: str
    cgroup: str | None = None
    pid: int | None = None
    report: dict = field(default_factory=dict)
    _spec: dict = field(default_factory=dict)
    gid: int | None = None  # the candidate's own group id (file_attribution)
    skip_paths: list = field(default_factory=list)  # the candidate's own writable directories
    peak_memory_bytes: int = 0
    _ipc_fd: int | None = None  # the candidate's IPC namespace, held open until the sweep
    _shm_fd: int | None = None  # /proc/sysvipc/shm as seen from inside that namespace
    _mounts: set = field(default_factory=set)

    def child_spec(self, private: list[str] | None = None, extra_rw: list[str] | None = None,
                   device: str | None = None, skip: Any = ()) -> dict:
        """The ``spec["containment"]`` entry that ``containment.enter`` applies in the child.

        ``private``: directories the candidate must not read (the evaluation root's
        parent, where other evaluations live); the temporary roots are always private.
        ``skip``: mechanisms left off (``HardeningConfig.sandbox_skip``, tests only); the
        record then shows them as not applied.
        The worker's workspace, build and spill directories (from the worker spec) are
        its only writable places, plus ``extra_rw``.
        """
        import tempfile

        skip_cfg = set(skip or ())
        caps = capabilities()
        strict = self.role == "candidate"
        tmp_roots = {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"}
        # the interpreter, its libraries and this package (kernelbench/) stay readable even below a private root
        ro = {sys.prefix, sys.base_prefix, sys.exec_prefix, _KERNELBENCH_DIR}
        ro |= {p for p in sys.path if p and os.path.isdir(p)}
        private_dirs = tmp_roots | {p for p in (private or []) if p}
        # never re-grant a private directory or an ancestor of one (a script run from /tmp puts /tmp on sys.path)
        ro = {p for p in ro if not any(_under(os.path.realpath(q), os.path.realpath(p)) for q in private_dirs)}
        # Operator-side diagnostics only (the evaluator's environment, never the candidate's):
        # KERNELGUARD_SANDBOX_SKIP=landlock,seccomp,... leaves those mechanisms off for the
        # candidate; the record then shows them as not applied (ERROR, UNSUPPORTED if required).
        skip = {x.strip() for x in os.environ.get("KERNELGUARD_SANDBOX_SKIP", "").split(",") if x.strip()}
        skip |= set(skip_cfg)
        if self.gid is None:
            self.gid = _GID_BASE + secrets.randbelow(_GID_SPAN)
        seccomp = strict and caps["seccomp"].active and "seccomp" not in skip
        ipc_ns = strict and caps["ipc_namespace"].active and "ipc_namespace" not in skip
        self._spec = {
            "cgroup": self.cgroup,
            "cgroup_ns": strict and self.cgroup is not None and "cgroup_ns" not in skip,
            "protect": "trusted_not_dumpable" not in skip,
            "landlock_off_reason": None,
            "seccomp": seccomp,
            "ipc_ns": ipc_ns,
            # no namespace of its own: System V IPC and POSIX message queues are refused instead
            "refuse_ipc": seccomp and not ipc_ns,
            "gid": self.gid if strict and caps["file_attribution"].active and "file_attribution" not in skip
            else None,
            "memory": "cgroup" if self.cgroup and _memcg_bytes(self.cgroup) is not None else "proc",
            "landlock": min(landlock_abi(), int(os.environ.get("KERNELGUARD_LANDLOCK_MAX_ABI", "99")))
            if strict and caps["landlock"].active and "landlock" not in skip else 0,
            "drop_caps": strict and caps["capability_drop"].active and "capability_drop" not in skip,
            # the candidate inherits the forkserver's non-dumpable flag; an evaluator without
            # CAP_SYS_PTRACE could then not read its outputs, so it is made dumpable again
            # (core dumps off) before the filter forbids any further change
            "dumpable": strict and not _can_ptrace_any(),
            "rw": sorted(p for p in (extra_rw or []) if p),
            "ro": sorted(ro),
            "private": sorted(private_dirs),
        }
        if strict and device and str(device).startswith("cuda") and self._spec["landlock"]:
            # Measured on the H200: under Landlock (every ABI from 3 to 7) the candidate's
            # cudaIpcOpenMemHandle of the judge's lent inputs fails ("mapping of buffer object
            # failed"), while seccomp, the capability drop, the cgroup namespace and the
            # non-dumpable judge leave it working.  Landlock is not required; on CUDA it is
            # left off and the record says why.
            self._spec["landlock"] = 0
            self._spec["landlock_off_reason"] = ("not applied on CUDA: Landlock breaks the candidate's CUDA IPC "
                                                 "import of the judge's lent tensors (measured on the H200)")
        return dict(self._spec)

    def attach(self, pid: int | None, spec: dict | None = None) -> None:
        """Right after the worker started: remember it (and ``spec``'s writable directories)."""
        self.pid = pid
        if self.role == "candidate" and pid:
            with _LOCK:
                _STATE["live"].add(pid)
            self._mounts = _mountpoints()
            if spec:
                self.skip_paths = [spec.get("workspace"), spec.get("build_dir"), spec.get("spill_dir"),
                                   *(self._spec.get("rw") or [])]

    def __del__(self) -> None:  # a unit dropped without a sweep must not keep the namespace alive
        for fd in (self._shm_fd, self._ipc_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _grab_namespace(self, pids: list[int]) -> None:
        """Hold the candidate's IPC namespace open (so its objects can be listed after it ended)."""
        if self._ipc_fd is not None or not self._spec.get("ipc_ns"):
            return
        try:
            host = os.stat("/proc/self/ns/ipc").st_ino
        except OSError:
            return
        for p in pids:
            try:
                fd = os.open(f"/proc/{p}/ns/ipc", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            if os.fstat(fd).st_ino == host:  # not entered yet (or not the candidate's)
                os.close(fd)
                continue
            self._ipc_fd = fd
            try:
                self._shm_fd = _in_namespace(fd, lambda: os.open("/proc/sysvipc/shm", os.O_RDONLY | os.O_CLOEXEC))
            except OSError:
                self._shm_fd = None
            return

    def _leaf_pids(self) -> list[int]:
        if self.cgroup:
            return _cgroup_procs(self.cgroup)
        if self.pid:
            return [self.pid, *_descendants(self.pid, _children_map())]
        return []

    def memory_bytes(self) -> int | None:
        """Resident memory charged to this worker (``None`` where it cannot be read).

        Trusted workers: their private (anonymous) resident memory.  The candidate: the
        cgroup memory controller's anon + shmem of its leaf where available (children,
        shared memory and tmpfs files included); otherwise RssAnon + RssShmem of every
        process in its unit, plus System V segments no process has attached and
        /dev/shm files that carry its group.
        """
        if not self.pid:
            return None
        if self.role != "candidate":
            st = _status(self.pid)
            try:
                return int(st["RssAnon"].split()[0]) * 1024
            except (KeyError, ValueError, IndexError):
                return None
        pids = self._leaf_pids()
        self._grab_namespace([self.pid])  # while it runs: a live child of ours, never a reused pid
        total = _memcg_bytes(self.cgroup) if self._spec.get("memory") == "cgroup" and self.cgroup else None
        if total is None:
            if not os.path.exists(f"/proc/{self.pid}"):
                return None
            total = sum(_proc_memory(p) for p in pids)
            total += sum(o.get("rss", 0) for o in self._sysv_objects() if o["kind"] == "sysv_shm"
                         and not o.get("nattch"))
            if self.gid is not None and os.path.isdir("/dev/shm"):
                try:
                    for e in os.scandir("/dev/shm"):
                        st = e.stat(follow_symlinks=False)
                        if st.st_gid == self.gid:
                            total += st.st_blocks * 512
                except OSError:
                    pass
        self.peak_memory_bytes = max(self.peak_memory_bytes, total)
        return total

    def _sysv_objects(self) -> list[dict]:
        """System V objects of the candidate: everything in its namespace, else those of its group."""
        if self._ipc_fd is not None:
            rows: list[dict] = []
            if self._shm_fd is not None:
                rows += _parse_sysvipc("shm", _read_fd(self._shm_fd))
            return rows
        if self.gid is None:
            return []
        rows = []
        for kind in _SYSV:
            try:
                with open(f"/proc/sysvipc/{kind}") as fh:
                    rows += [r for r in _parse_sysvipc(kind, fh.read()) if r.get("cgid") == self.gid]
            except OSError:
                pass
        return rows

    def _objects(self) -> tuple[list[dict], dict]:
        """Every object the candidate left (listed, then removed) and what was checked."""
        objs: list[dict] = []
        checked: dict[str, Any] = {}
        ns = self._ipc_fd
        try:
            if ns is not None:
                def sysv() -> list[dict]:
                    rows = []
                    for kind in _SYSV:
                        with open(f"/proc/sysvipc/{kind}") as fh:
                            rows += _parse_sysvipc(kind, fh.read())
                    for r in rows:
                        r["removed"] = _sysv_remove(r)
                    return rows

                objs += _in_namespace(ns, sysv)
                checked["sysv_ipc"] = "every object in the candidate's IPC namespace (/proc/sysvipc)"
                import tempfile

                scratch = tempfile.mkdtemp(prefix="kernelguard-mq-")
                try:
                    objs += _in_namespace(ns, lambda: _mqueues_in(scratch, remove=True))
                    checked["posix_mqueue"] = "every queue in the candidate's IPC namespace (mqueue file system)"
                except OSError as exc:
                    checked["posix_mqueue"] = f"not listed ({exc}); the queues end with the namespace"
                finally:
                    _rmdir_quiet(scratch)
            elif self._spec.get("ipc_ns"):
                checked["sysv_ipc"] = checked["posix_mqueue"] = (
                    "the candidate's IPC namespace ended with its last process, and every object in it")
            else:
                rows = self._sysv_objects()
                for r in rows:
                    r["removed"] = _sysv_remove(r)
                objs += rows
                checked["sysv_ipc"] = ("host namespace: objects whose creator group is the candidate's"
                                       if self.gid is not None else "not attributable (no group of its own)")
                checked["posix_mqueue"] = ("refused by the seccomp filter" if self._spec.get("refuse_ipc")
                                           else "host /dev/mqueue searched by group" if self.gid is not None
                                           else "not checked")
        finally:
            if ns is not None:
                for fd in (self._shm_fd, ns):
                    if fd is not None:
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                self._ipc_fd = self._shm_fd = None
        if self.gid is not None:
            files, truncated = _scan_files(self.gid, self.skip_paths)
            for f in files:
                f["removed"] = _remove_path(f["path"])
            objs += files
            checked["files"] = {"roots": [r for r, _ in _scan_roots()], "group": self.gid, "truncated": truncated,
                                "not_searched": "the candidate's workspace, build and spill directories (its own)"}
        else:
            checked["files"] = "not attributable (the candidate has no group of its own)"
        if self._mounts:
            new = sorted(_mountpoints() - self._mounts)
            for m in new:
                gone = _lib().umount2(m.encode(), _MNT_DETACH) == 0
                objs.append({"kind": "mount", "path": m, "removed": gone})
            checked["mounts"] = "evaluator's mount table before and after the candidate"
        return objs, checked

    def verify(self) -> dict:
        """What the kernel says the worker runs under (read from /proc, not from the worker)."""
        if not self.pid:
            return {}
        st = _status(self.pid)
        out = {"seccomp_mode": st.get("Seccomp"), "no_new_privs": st.get("NoNewPrivs"),
               "cap_eff": st.get("CapEff"), "cap_bnd": st.get("CapBnd")}
        if self.cgroup:
            out["in_cgroup"] = self.pid in _cgroup_procs(self.cgroup)
        if self.role == "candidate":
            try:
                out["own_ipc_ns"] = os.stat(f"/proc/{self.pid}/ns/ipc").st_ino != os.stat("/proc/self/ns/ipc").st_ino
            except OSError:
                out["own_ipc_ns"] = None
            gids = st.get("Gid", "").split()
            out["gid"] = int(gids[0]) if gids and all(g == gids[0] for g in gids) else st.get("Gid")
            out["groups"] = st.get("Groups", "")
            self._grab_namespace([self.pid])
        self.report["verified"] = out
        return out

    def sweep(self, exitcode: int | None = None) -> dict:
        """After the worker ended: find, kill and reap every process left from it; return the report."""
        survivors: list[dict] = []
        method = "cgroup" if self.cgroup else "subreaper"
        me = os.getpid()
        if self.role == "candidate":  # before anything is killed: the namespace lives while a process does
            self._grab_namespace(self._leaf_pids())
        if self.cgroup:
            pids = [p for p in _cgroup_procs(self.cgroup) if p != self.pid]
            survivors = [_proc_info(p) for p in pids]
            _kill_cgroup(self.cgroup)
            deadline = time.monotonic() + 5
            while _cgroup_procs(self.cgroup) and time.monotonic() < deadline:
                time.sleep(0.01)
            left = _cgroup_procs(self.cgroup)
            _reap(pids)
            if not left:
                _rmdir_quiet(self.cgroup)
        else:
            seen: dict[int, dict] = {}
            left = []
            for _ in range(100):
                kids = _children_map()
                found = []
                if self.pid:
                    found += [p for p in _descendants(self.pid, kids)]
                if self.role == "candidate":
                    for p in kids.get(me, []):  # orphans re-parented to the subreaper
                        if _status(p).get("Seccomp", "0") == "2":
                            found += [p] + _descendants(p, kids)
                found = [p for p in found if p != self.pid]
                if not found:
                    break
                for p in found:
                    if p not in seen:
                        seen[p] = _proc_info(p)
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
                time.sleep(0.005)
                _reap(found)
                left = found
            survivors = list(seen.values())
            left = [p for p in left if os.path.exists(f"/proc/{p}")]
        if self.pid:
            with _LOCK:
                _STATE["live"].discard(self.pid)
            if self.role != "candidate":  # the candidate's files are listed and removed below (RH-53)
                self.report["ipc_counters_removed"] = remove_ipc_counters(self.pid)
        sigsys = exitcode == -signal.SIGSYS
        self.report.update({"role": self.role, "method": method, "survivors": survivors,
                            "left_running": left, "sigsys": sigsys, "exitcode": exitcode,
                            "applied": {k: v for k, v in self._spec.items() if k not in ("rw", "ro", "private")}})
        if self.role == "candidate":
            try:
                objects, checked = self._objects()
            except Exception as exc:  # noqa: BLE001 - fail closed: an unchecked sweep is reported as such
                objects, checked = [], {"error": f"{type(exc).__name__}: {exc}"}
            checked["processes"] = method
            self.report.update({"objects": objects, "checked": checked,
                                "memory": {"method": self._spec.get("memory"), "peak_bytes": self.peak_memory_bytes}})
        return dict(self.report)


def new_unit(role: str) -> Unit:
    """A containment unit for one worker (its own cgroup leaf where cgroups are available)."""
    begin_evaluation()
    base = _STATE.get("base")
    path = None
    if base:
        with _LOCK:
            _STATE["n"] += 1
            n = _STATE["n"]
        path = os.path.join(base, f"{role}-{n}")
        try:
            os.mkdir(path)
        except OSError as exc:
            raise ContainmentError(f"cannot create the worker cgroup {path}: {exc}") from None
    return Unit(role, path)
