"""What the record says about containment: capability entries, ``metadata.containment``, the limitation.

Parent side: reads the units' sweep reports and the machine's probed mechanisms.
"""

from __future__ import annotations

from typing import Any

from kernelbench.reward_hardening.containment.probe import capabilities

_ZERO_CAPS = "0" * 16


def record_capabilities(reports: dict, rejected: bool) -> dict[str, Any]:
    """Capability entries for the record: what protected *this* candidate, as measured.

    Returns ``{name: (status, detail)}``; ``records._capabilities`` asks the policy
    (:func:`kernelbench.reward_hardening.policy.requires`) which of them are required and
    wraps them in :class:`~kernelbench.reward_hardening.findings.Capability`.
    """
    machine = capabilities()
    out: dict[str, Any] = {}
    rep = reports.get("candidate") or {}
    ver = rep.get("verified") or {}
    applied = rep.get("applied") or {}
    names = ("process_containment", "seccomp", "landlock", "capability_drop", "trusted_not_dumpable",
             "ipc_namespace", "memory_accounting")
    if rejected or not rep:
        for name in names:
            m = machine[name]
            out[name] = ("SKIPPED", f"no candidate worker ran; on this machine: "
                                           f"{'active' if m.active else 'unavailable'} ({m.detail})")
        out["object_sweep"] = ("SKIPPED", "no candidate worker ran")
        return out

    def entry(name: str, ok: bool, expected: bool, detail: str) -> tuple:
        if not machine[name].active:
            return ("UNSUPPORTED", machine[name].detail)
        if not expected:
            return ("ERROR", f"{name} active on this machine but not applied to the candidate")
        return ("AVAILABLE" if ok else "ERROR", detail if ok else f"{name} not verified: {ver or rep}")

    left = rep.get("left_running") or []
    out["process_containment"] = entry(
        "process_containment", rep.get("method") in ("cgroup", "subreaper") and not left, True,
        f"{rep.get('method')} sweep after the worker; {len(rep.get('survivors') or [])} survivor(s) killed"
        + ("; candidate in its own cgroup namespace" if applied.get("cgroup_ns") else ""))
    out["seccomp"] = entry("seccomp", ver.get("seccomp_mode") == "2" and ver.get("no_new_privs") == "1",
                           bool(applied.get("seccomp")), "seccomp-BPF filter verified in /proc/<pid>/status")
    ll = int(applied.get("landlock") or 0)
    if applied.get("landlock_off_reason"):
        out["landlock"] = ("UNSUPPORTED", applied["landlock_off_reason"])
    else:
        out["landlock"] = entry("landlock", ll > 0 and bool(ver), ll > 0,
                                f"Landlock ABI {ll}: reads outside temp/evaluation roots, writes only in the "
                                f"workspace, build and spill directories" + (", no TCP" if ll >= 4 else "")
                                + (", signals scoped" if ll >= 6 else ""))
    out["capability_drop"] = entry("capability_drop", ver.get("cap_eff") == _ZERO_CAPS
                                   and ver.get("cap_bnd") == _ZERO_CAPS, bool(applied.get("drop_caps")),
                                   "CapEff and CapBnd of the candidate are empty")
    out["trusted_not_dumpable"] = entry("trusted_not_dumpable", True, True, machine["trusted_not_dumpable"].detail)
    if applied.get("ipc_ns"):
        out["ipc_namespace"] = entry("ipc_namespace", ver.get("own_ipc_ns") is True, True,
                                     "candidate in an IPC namespace of its own (verified from /proc/<pid>/ns/ipc)")
    elif applied.get("refuse_ipc") and applied.get("seccomp"):
        out["ipc_namespace"] = ("AVAILABLE", "no IPC namespace on this machine: System V IPC and POSIX "
                                                    "message queues refused by the candidate's seccomp filter")
    else:
        m = machine["ipc_namespace"]
        out["ipc_namespace"] = ("UNSUPPORTED" if not m.active else "ERROR",
                                m.detail if not m.active else "IPC namespace available but not applied to the "
                                "candidate, and System V IPC not refused")
    mem = rep.get("memory") or {}
    out["memory_accounting"] = ("AVAILABLE", (
        "cgroup memory controller (anon + shmem of the candidate's leaf)" if mem.get("method") == "cgroup" else
        "RssAnon + RssShmem of every process in the candidate's unit, detached System V segments and /dev/shm "
        "files of its group") + f"; peak {int(mem.get('peak_bytes') or 0) / 2**30:.2f} GiB")
    checked = rep.get("checked") or {}
    objs = rep.get("objects") or []
    files = checked.get("files")
    if not checked or checked.get("error"):
        out["object_sweep"] = ("ERROR", f"the object sweep did not complete: {checked.get('error')}")
    elif isinstance(files, dict) and files.get("truncated"):  # fail closed: a leftover file may be unseen
        out["object_sweep"] = ("ERROR", "the file search stopped at its entry budget before covering "
                                                 f"{', '.join(files.get('roots') or [])}")
    else:
        out["object_sweep"] = ("AVAILABLE", (
            f"checked {', '.join(sorted(checked))}; "
            + (f"{len(objs)} object(s) left by the candidate, removed (RH-53)" if objs else "nothing left behind")
            + ("" if isinstance(files, dict) else "; files not attributable (no group of its own)")))
    return out


def record_detail(reports: dict) -> dict[str, Any]:
    """The record's ``metadata.containment``: the machine's mechanisms and each worker's report."""
    return {"machine": {k: v.as_dict() for k, v in capabilities().items()},
            "workers": {role: dict(rep) for role, rep in (reports or {}).items()}}


def limitation(reports: dict) -> str:
    """The record's sentence on what the sandbox did and did not cover for this candidate."""
    rep = (reports or {}).get("candidate") or {}
    applied = rep.get("applied") or {}
    on = [n for n, ok in (("cgroup leaf + cgroup namespace", applied.get("cgroup_ns")),
                          ("own IPC namespace", applied.get("ipc_ns")),
                          ("System V and POSIX queues refused", applied.get("refuse_ipc") and applied.get("seccomp")),
                          ("own group id", applied.get("gid") is not None),
                          ("subreaper sweep", rep.get("method") == "subreaper"),
                          ("seccomp", applied.get("seccomp")), ("Landlock", applied.get("landlock")),
                          ("no capabilities", applied.get("drop_caps"))) if ok]
    if not rep:
        return "No candidate worker ran, so no OS containment applied to it (see capabilities for this machine)."
    if not on:
        return ("Worker isolation was process-level only: no OS containment mechanism was available for the "
                "candidate; it ran as the evaluator's user and could read files that user can read.")
    missing = [n for n, ok in (("Landlock", applied.get("landlock")), ("seccomp", applied.get("seccomp")))
               if not ok]
    text = (f"The candidate ran contained ({', '.join(on)}) but under the evaluator's uid; hidden data is also "
            "kept out of its process, environment and workspace.")
    if missing:
        text += f" Not active on this machine: {', '.join(missing)}."
    return text
