"""OS-level containment of worker processes (Linux, x86-64), measured at run time.

The candidate runs arbitrary code, native code included, usually as the evaluator's
own user (root in CI and on the GPU machines).  Lists of forbidden names cannot stop
``syscall(SYS_...)``; this package uses the kernel's own mechanisms instead, each one
probed on the machine and recorded in every record (``docs/security-audit.md``):

``cgroup_kill``
    every worker runs in its own cgroup-v2 leaf (``<own cgroup>/kernelguard-<pid>-<hex>/<role>-<n>``);
    after the worker ends, any process still in the leaf survived it: it is listed
    (RH-51) and the whole leaf is killed at once with ``cgroup.kill`` (atomic, no race
    with a fork loop).  The candidate also enters a new cgroup namespace, so even as
    root it cannot migrate itself out of its leaf (the kernel refuses moves outside the
    namespace root).
``subreaper``
    the evaluator parent is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a process
    that double-forks and calls ``setsid`` is re-parented to the evaluator, never to
    init, so it can always be found.  Without cgroups the sweep finds survivors as the
    parent's children that carry a seccomp filter (only sandboxed workers have one)
    plus the worker's remaining descendants, kills them in a loop and reaps them.
``seccomp``
    the candidate runs under a seccomp-BPF filter (``PR_SET_NO_NEW_PRIVS`` +
    ``seccomp(SECCOMP_SET_MODE_FILTER)``): ``ptrace``, ``process_vm_readv/writev``,
    ``kcmp``, ``pidfd_getfd``, ``process_madvise`` and ``prctl(PR_SET_DUMPABLE)`` (which
    would refuse the evaluator's trusted read of its outputs) kill the process (RH-52 from
    its ``SIGSYS`` exit status); namespace, mount, module, keyring, BPF, perf, io_uring
    (which would bypass the filter) and clock-setting calls fail with ``EPERM``;
    ``clone`` with namespace flags fails, ``clone3`` reports ``ENOSYS`` so libc falls
    back to the inspectable ``clone``; non-x86-64 ABIs are killed.
``landlock``
    the candidate's file system view (Landlock, ABI probed): read and execute
    everywhere except the temporary roots and the evaluation directory's parent (other
    evaluations' files), read-write only in its workspace, build and spill directories,
    its own ``/proc/self`` (the CUDA driver writes there) and a few device nodes; TCP
    bind/connect denied (ABI >= 4); signals and abstract unix sockets scoped to its own
    domain (ABI >= 6).  Landlock also forbids ptrace
    (and so ``/proc/<pid>/mem``) of any process outside the candidate's domain.
``capability_drop``
    the candidate drops every capability (bounding, ambient, effective, permitted,
    inheritable): a root candidate keeps uid 0 but loses ``CAP_SYS_PTRACE``,
    ``CAP_SYS_ADMIN``, ``CAP_DAC_OVERRIDE``, ``CAP_KILL``...
``trusted_not_dumpable``
    the evaluator parent, the forkserver and trusted workers set ``PR_SET_DUMPABLE`` 0:
    a same-uid process without ``CAP_SYS_PTRACE`` can then neither attach to them nor
    open their ``/proc/<pid>/mem`` even where no Yama policy exists.

Interface (what the pipeline calls)::

    containment.begin_evaluation()                # parent, once per evaluation (idempotent)
    unit = containment.new_unit("candidate")      # parent, before starting a worker
    spec["containment"] = unit.child_spec(private=[os.path.dirname(root)])
    ...                                           # child: worker_child.bootstrap calls enter(spec)
    unit.attach(handle.pid)                       # parent, right after the worker started
    ...                                           # the worker runs and is closed
    report = unit.sweep(exitcode)                 # parent: kill what is left, say what it was
    containment.capabilities()                    # {name: Mechanism}: active on this machine, and why

``report`` is a plain dict (``survivors``, ``sigsys``, ``applied``, ``left_running``,
...) that the runtime detectors RH-51 / RH-52 and ``records._capabilities`` read from
``Evidence.containment[role]``.  Every mechanism fails closed in the child: a mechanism
the spec asks for that cannot be applied aborts the worker before any candidate code.

Modules (the parent runs all but ``child``; the worker runs ``child`` and what it uses)::

    syscalls    the libc handle, system-call numbers, raw syscall/prctl, ContainmentError
    seccomp     the candidate's BPF filter          landlock    the candidate's Landlock rules
    privileges  capability drop, non-dumpable       procfs      /proc readers, process-tree walk
    cgroups     leaves, cgroup.kill, memory         objects     IPC objects and files left behind
    probe       capabilities(), begin_evaluation    unit        Unit, new_unit: spec, memory, sweep
    child       enter(): applied in the worker      report      the record's capability entries
    trusted_read  the parent's read of a worker's output memory
"""

from kernelbench.reward_hardening.containment.child import enter
from kernelbench.reward_hardening.containment.privileges import protect_trusted_process
from kernelbench.reward_hardening.containment.probe import Mechanism, begin_evaluation, capabilities
from kernelbench.reward_hardening.containment.report import limitation, record_capabilities, record_detail
from kernelbench.reward_hardening.containment.syscalls import ContainmentError
from kernelbench.reward_hardening.containment.unit import Unit, new_unit

__all__ = ["ContainmentError", "Mechanism", "Unit", "begin_evaluation", "capabilities", "enter", "new_unit",
           "protect_trusted_process", "limitation", "record_capabilities", "record_detail"]
