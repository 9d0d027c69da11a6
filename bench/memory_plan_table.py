"""Which upstream problems fit a device, computed from the memory plan (not measured).

    python3 bench/memory_plan_table.py --dataset-path KernelBench --levels 1 2 3 --device-gib 79.6 139.8 \
        --out docs/memory-plan

For every problem the inputs' and outputs' bytes come from the meta device (nothing is
allocated; ``bench/upstream_sweep.py``'s ``meta_sizes``), the parameters from the
reference model built on the meta device, and the forward's workspace is assumed to
be the larger of input and output (the judge measures it on a real device).  The
plan is :func:`kernelbench.reward_hardening.parent.memplan.plan_memory`.  Prints a summary
table and writes ``<out>.json`` and ``<out>.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

GIB = 1 << 30


def param_bytes(source: str) -> int | None:
    import torch

    ns: dict = {"__name__": "kernelbench_meta_problem"}
    try:
        exec(compile(source, "<problem>", "exec"), ns)
        with torch.device("meta"):
            model = ns["Model"](*ns["get_init_inputs"]())
        return sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
    except Exception:
        return None


def main(argv: list[str] | None = None) -> int:
    from tabulate import tabulate

    from kernelbench.reward_hardening.parent.memplan import plan_memory
    from upstream_sweep import load_problems, meta_sizes

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset-path", default=str(REPO / "KernelBench"))
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--device-gib", type=float, nargs="+", default=[79.6, 139.8],
                    help="device memory as torch reports it (an 80 GB card: 79.6 GiB; H200: 139.8 GiB)")
    ap.add_argument("--out", default=None, help="path stem for .json and .md")
    args = ap.parse_args(argv)
    rows = []
    for level in args.levels:
        for p in load_problems(args.dataset_path, level, None):
            z = meta_sizes(p.code, p.path or p.name)
            params = param_bytes(p.code)
            row = {"level": level, "id": p.problem_id, "name": p.name, "input_bytes": z["input_bytes"],
                   "output_bytes": z["output_bytes"], "param_bytes": params, "plans": {}}
            if z["input_bytes"] is None or z["output_bytes"] is None or params is None:
                row["error"] = z.get("error") or "parameters unknown on the meta device"
            else:
                for gib in args.device_gib:
                    plan = plan_memory(int(gib * GIB), z["input_bytes"], z["output_bytes"], params, None, "meta")
                    row["plans"][str(gib)] = {"fits": plan.fits, "lean": plan.lean,
                                              "candidate_gib": round(plan.candidate_bytes / GIB, 1),
                                              "judge_gib": round(plan.judge_bytes / GIB, 1)}
            rows.append(row)
    summary = []
    for level in args.levels:
        lv = [r for r in rows if r["level"] == level]
        line = [level, len(lv)]
        for gib in args.device_gib:
            ok = [r for r in lv if r["plans"].get(str(gib), {}).get("fits")]
            lean = [r for r in ok if r["plans"][str(gib)]["lean"]]
            line += [len(ok), len(lean)]
        line.append(sum(1 for r in lv if "error" in r))
        summary.append(line)
    headers = ["level", "problems"]
    for gib in args.device_gib:
        headers += [f"fit {gib:g} GiB", f"lean {gib:g} GiB"]
    headers.append("sizes unknown")
    print(tabulate(summary, headers=headers))
    misfits = {str(g): [f"L{r['level']}/{r['id']}" for r in rows if r["plans"].get(str(g), {}).get("fits") is False]
               for g in args.device_gib}
    for g, ids in misfits.items():
        print(f"does not fit {g} GiB: {', '.join(ids) or 'none'}")
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps({"device_gib": args.device_gib, "rows": rows}, indent=1) + "\n")
        detail = [[f"L{r['level']}/{r['id']}", r["name"][:48],
                   "?" if r["input_bytes"] is None else f"{r['input_bytes'] / GIB:.2f}",
                   "?" if r["output_bytes"] is None else f"{r['output_bytes'] / GIB:.2f}",
                   "?" if r["param_bytes"] is None else f"{r['param_bytes'] / GIB:.2f}"]
                  + [("lean" if r["plans"][str(g)]["lean"] else "yes") if r["plans"].get(str(g), {}).get("fits")
                     else ("no" if str(g) in r["plans"] else "?") for g in args.device_gib]
                  for r in rows if any(not p.get("fits") or p.get("lean") for p in r["plans"].values())
                  or "error" in r or (r["input_bytes"] or 0) + (r["output_bytes"] or 0) > 2 * GIB]
        md = ["# Memory plan: which upstream problems fit a device", "",
              "Computed by `python3 bench/memory_plan_table.py` from the memory plan "
              "(`kernelbench.reward_hardening.parent.memplan`), not measured: sizes from the meta device, the forward's "
              "workspace assumed to be the larger of input and output (the judge measures it on the device and "
              "the plan is redone with that number). `lean`: the problem fits only when the judge recomputes "
              "the kept reference outputs from their seeds. The assumed workspace is pessimistic: the TF32 "
              "variant's outputs and workspace are counted together, so a problem whose measured workspace "
              "is small may fit at run time where this table says no (L1/38 and L1/39, 0.44 GiB measured, "
              "fit a 79.2 GiB card by the plan).", "",
              tabulate(summary, headers=headers, tablefmt="github"), "",
              *[f"- does not fit {g} GiB: {', '.join(ids) or 'none'}" for g, ids in misfits.items()], "",
              "Problems with more than 2 GiB of data, or that need the lean plan or do not fit somewhere:", "",
              tabulate(detail, headers=["problem", "name", "input GiB", "output GiB", "params GiB"]
                       + [f"{g:g} GiB" for g in args.device_gib], tablefmt="github"), ""]
        out.with_suffix(".md").write_text("\n".join(md))
        print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
