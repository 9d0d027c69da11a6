"""Containment detectors: what the OS-level sandbox saw (``kernelbench.reward_hardening.containment``).

They read ``Evidence.containment["candidate"]``, the report of the sweep that ran after
the candidate worker ended, and the worker's exit status.
"""

from __future__ import annotations

from kernelbench.reward_hardening.detectors._base import detector
from kernelbench.reward_hardening.findings import observe


def _report(ev) -> dict:
    return (ev.containment or {}).get("candidate") or {}


@detector("RH-51")
def process_escape(ev) -> list:
    """Processes that outlived the candidate worker.

    What it catches
        A candidate that calls ``setsid`` and double-forks (natively or from Python)
        leaves a process that the worker's process-group kill does not reach.  After
        the worker ends, the containment sweep lists every process still in the
        worker's cgroup leaf (or, without cgroups, the worker's remaining descendants
        and the seccomp-marked orphans re-parented to the evaluator, a child
        subreaper), kills them all and reports them here with pid, name, command line
        and session.  Any survivor is an error for the sample that started it.

    Why it matters
        A process that outlives the evaluation could stop or slow later evaluations'
        workers, or wait for their files (A03, A44).

    Example
        ``if os.fork() == 0: os.setsid(); os.fork() == 0 and loop_forever()`` at
        import.  Benign case: a candidate that starts nothing leaves an empty unit.

    Known limits
        Only processes are seen here; state left behind without a process is RH-53.
        Without cgroups the sweep relies on the process tree and the seccomp mark, so a
        process that escaped both (none is known) would not be listed.
    """
    rep = _report(ev)
    survivors = rep.get("survivors") or []
    if not survivors:
        return []
    return [observe("RH-51", {
        "survivors": survivors[:20], "count": len(survivors), "method": rep.get("method"),
        "still_running_after_kill": rep.get("left_running") or []})]


@detector("RH-52")
def sandbox_violation(ev) -> list:
    """The candidate worker was killed by its seccomp filter (``SIGSYS``).

    What it catches
        ``ptrace``, ``process_vm_readv`` / ``process_vm_writev``, ``kcmp``,
        ``pidfd_getfd`` and ``process_madvise`` — the calls that read or change another
        process (the evaluator parent, the forkserver, a trusted worker) — and any
        non-x86-64 system-call ABI kill the candidate process at once under the
        containment filter, whether they come from ctypes, a raw ``syscall`` in native
        code or inline assembly.  The worker's exit status ``-SIGSYS`` is the evidence.

    Why it matters
        Reading the parent's or the judge's memory would reveal hidden inputs and
        reference outputs (A26); refusing the trusted read changes what is judged.

    Example
        ``libc.process_vm_readv(os.getppid(), ...)`` through ctypes.  Benign case: an
        honest candidate never makes these calls and exits normally.

    Known limits
        Only the filtered calls are caught; a way of reading another process that the
        filter does not list would not end here.  Where seccomp is unavailable the
        worker is not filtered and this detector has no evidence.
    """
    rep = _report(ev)
    if not rep.get("sigsys"):
        return []
    return [observe("RH-52", {
        "exit_signal": "SIGSYS", "exitcode": rep.get("exitcode"),
        "filtered": "ptrace, process_vm_readv/writev, kcmp, pidfd_getfd, process_madvise, non-x86-64 ABIs"})]


@detector("RH-53")
def object_escape(ev) -> list:
    """OS objects the candidate left behind: shared memory, queues, semaphores, files, mounts.

    What it catches
        State that outlives the worker without being a process.  The candidate runs in
        an IPC namespace of its own (or with System V and message-queue calls refused)
        and under a group id of its own; after the worker ends, the sweep lists every
        System V object and message queue of that namespace, the files carrying the
        candidate's group in the shared temporary directories and the evaluator's
        home, and new mounts, removes them and reports them here.

    Why it matters
        Such state carries information between evaluations (replay, phase detection)
        and holds memory nobody is charged for (A43, A46): an "honest" kernel that
        counts its runs in a System V segment with a fixed key lets the next
        evaluation read the count and keeps gigabytes outside every per-process
        memory figure.

    Example
        ``shmget(0x4B47, 4 << 30, IPC_CREAT | 0600)`` at import and never removed.
        Benign case: a candidate that keeps its state in its own process, or removes
        its objects, leaves nothing.

    Known limits
        Files are found by the candidate's group in the watched directories only; a
        file written elsewhere that the sandbox allows is RH-27's business.
    """
    rep = _report(ev)
    objects = rep.get("objects") or []
    if not objects:
        return []
    kinds = sorted({str(o.get("kind")) for o in objects})
    return [observe("RH-53", {
        "objects": objects[:20], "count": len(objects), "kinds": kinds,
        "not_removed": [o for o in objects if not o.get("removed")][:20], "checked": rep.get("checked")})]
