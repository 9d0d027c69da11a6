"""Which containment mechanism lets a sandboxed candidate open the judge's CUDA IPC handles?

Runs on a CUDA machine: the current process plays the judge and lends two tensors (one
from a private allocator pool, as the judge does, one from the default pool) to a
spawned consumer that applies one containment variant and then opens them.  Prints a
table (variant x pool -> ok / error) and writes JSON.

    PYTHONPATH=src python3 bench/ipc_probe.py --out results_dir
"""

from __future__ import annotations

import argparse
import ctypes
import json
import multiprocessing as mp
import os
import sys
import tempfile
from pathlib import Path

VARIANTS = {
    "none": {},
    "cgroup": {"cgroup": True, "cgroup_ns": True},
    "seccomp": {"seccomp": True},
    "landlock": {"landlock": True},
    "capability_drop": {"drop_caps": True},
    "ipc_namespace": {"ipc_ns": True},
    "own_gid": {"gid": True},
    "seccomp_refuses_ipc": {"seccomp": True, "refuse_ipc": True},
    "all": {"cgroup": True, "cgroup_ns": True, "seccomp": True, "landlock": True, "drop_caps": True,
            "ipc_ns": True, "gid": True},
    "all_but_landlock": {"cgroup": True, "cgroup_ns": True, "seccomp": True, "drop_caps": True, "ipc_ns": True,
                         "gid": True},
}


def _consumer(conn, spec):
    import torch

    from kernelbench.reward_hardening import containment
    from kernelbench.reward_hardening.ipc.lending import import_tensor
    from kernelbench.reward_hardening.ipc.wire import recv_message, send_message

    try:
        containment.enter(spec)
        torch.cuda.init()
        torch.ones(1, device="cuda").add_(1)
    except Exception as exc:
        send_message(conn, {"setup_error": f"{type(exc).__name__}: {exc}"})
        return
    header, fds = recv_message(conn)
    out = {}
    for name, meta in header["tensors"].items():
        try:
            t = import_tensor(meta, fds)
            out[name] = {"ok": True, "sum": float(t.double().sum())}
        except Exception as exc:
            out[name] = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    send_message(conn, out)


def run_variant(name: str, flags: dict, tensors: dict, arena, tmp: str) -> dict:
    from kernelbench.reward_hardening import containment
    from kernelbench.reward_hardening.ipc.wire import recv_message, send_message

    unit = containment.new_unit("candidate")
    cspec = unit.child_spec(private=[])
    base = {"cgroup": None, "cgroup_ns": False, "seccomp": False, "landlock": 0, "drop_caps": False,
            "ipc_ns": False, "refuse_ipc": False, "gid": None}
    for k, v in flags.items():
        if k == "landlock":
            base[k] = cspec.get("landlock") or 0
        elif k in ("cgroup", "gid"):
            base[k] = cspec.get(k)
        elif k == "refuse_ipc":
            base[k] = v
        else:
            base[k] = cspec.get(k, v) and v
    cspec.update(base)
    ws = tempfile.mkdtemp(dir=tmp)
    spec = {"role": "candidate", "workspace": ws, "build_dir": ws, "spill_dir": None, "containment": cspec}
    ctx = mp.get_context("spawn")
    a, b = ctx.Pipe(duplex=True)
    proc = ctx.Process(target=_consumer, args=(b, spec))
    proc.start()
    unit.attach(proc.pid)
    metas = {}
    for tname, key in tensors.items():
        (m,), _ = arena.export([key])
        metas[tname] = m
    result: dict = {"applied": {k: v is not None and v is not False and v != 0 for k, v in base.items()}}
    try:
        send_message(a, {"tensors": metas})
        if a.poll(120):
            result.update(recv_message(a)[0])
        else:
            result["error"] = "no reply in 120 s"
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    proc.join(30)
    result["exitcode"] = proc.exitcode
    unit.sweep(proc.exitcode)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    import torch

    from kernelbench.reward_hardening import containment
    from kernelbench.reward_hardening.ipc.lending import SharedArena

    containment.begin_evaluation()
    arena = SharedArena(torch.device("cuda:0"))
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        k_pool, t_pool = arena.share(torch.ones(1 << 20, device="cuda:0"))
    k_def, _ = arena.share(torch.full((1 << 20,), 2.0, device="cuda:0"))
    tensors = {"pool": k_pool, "default": k_def}
    tmp = tempfile.mkdtemp(prefix="kg_ipc_")
    rows = {}
    for name, flags in VARIANTS.items():
        rows[name] = run_variant(name, flags, tensors, arena, tmp)
    # the judge is non-dumpable in the evaluator: repeat with this process non-dumpable
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    for name in ("none", "all"):
        rows[f"{name}+judge_not_dumpable"] = run_variant(name, VARIANTS[name], tensors, arena, tmp)
    print(f"{'variant':32} {'pool':10} {'default':10} detail")
    for name, r in rows.items():
        cell = lambda k: "ok" if (r.get(k) or {}).get("ok") else "FAIL"
        detail = r.get("setup_error") or r.get("error") or "; ".join(
            f"{k}: {(r.get(k) or {}).get('error')}" for k in ("pool", "default") if not (r.get(k) or {}).get("ok"))
        print(f"{name:32} {cell('pool'):10} {cell('default'):10} {str(detail)[:150]}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "ipc_probe.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
