"""Read ipc_probe.json; print the KERNELGUARD_SANDBOX_SKIP value that lets CUDA IPC through."""
import json
import sys

rows = json.load(open(sys.argv[1]))
ok = lambda r: bool((r.get("pool") or {}).get("ok"))
skip = [m for m in ("cgroup_ns", "seccomp", "landlock", "capability_drop")
        if not ok(rows.get({"cgroup_ns": "cgroup"}.get(m, m), {}))]
if not ok(rows.get("none+judge_not_dumpable", {})):
    skip.append("trusted_not_dumpable")
print(",".join(skip))
