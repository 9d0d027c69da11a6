"""Compare two red-team runs fixture by fixture: integrity status and the exact multiset of finding codes.

    # reduce a full red-team result (scripts/reward_hardening_redteam.py --output) to its observations
    python3 bench/redteam_compare.py extract runs/redteam.json -o docs/validation/redteam_baseline_cpu.json
    # the same from the table a run prints (a log: codes may be abbreviated "10,21"; sets only)
    python3 bench/redteam_compare.py extract-log run.log -o observations.json
    # compare a baseline with a later run (either a full result or an extracted file)
    python3 bench/redteam_compare.py compare docs/validation/redteam_baseline_cpu.json runs/redteam.json \
        --markdown docs/validation/redteam_structure_cpu.md

An extracted file maps each fixture id to its policy, mode, ``integrity_status`` and the
sorted list of finding codes of its record (one entry per finding, so a code that
appears twice is listed twice).  ``compare`` maps the baseline's fixture ids through
:data:`RENAMES` (the red-team corpus was renamed after the code each fixture proves),
prints one row per fixture and exits 1 when any fixture of the baseline is missing or
differs in status or codes.  Fixtures only in the later run are listed as new and do not
fail the comparison.  Codes in ``--ignore`` (default RH-54, the timing-noise note, which
describes the machine's load and not the candidate) are left out of both sides.  With
``--manifest`` the fixtures' ``unstable`` codes are read from the red-team manifest
(``kernelbench.reward_hardening.fixtures``; needs ``src`` on the path): a row whose
only difference is such a code, once, is "same up to unstable" and does not fail.

Runs in any process; needs only the standard library.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

SCHEMA = "kernelguard-redteam-observations/1"
DEFAULT_IGNORE = ("RH-54",)

# Old fixture id -> new fixture id (the corpus was renamed after the finding code each attack proves).
RENAMES: dict[str, str] = {
    # CPU: runtime attacks (audit)
    "rt_memorised_table": "RH-18_bad_memorised_table",
    "rt_rng_replay": "RH-18_bad_rng_replay",
    "rt_env_seed_replay": "RH-07_bad_env_seed_replay",
    "rt_hidden_data_probe": "RH-07_bad_hidden_data_probe",
    "rt_wrong_output": "RH-18_bad_wrong_output",
    "rt_size_constants": "RH-08_bad_size_constants",
    "rt_gc_scan": "RH-06_bad_gc_scan",
    "rt_partial_subsample": "RH-18_bad_partial_subsample",
    "rt_range_specialised_mse": "RH-30_bad_range_specialised_mse",
    "rt_magnitude_error_scan": "RH-30_bad_magnitude_error_scan",
    "benign_exact_scan": "RH-30_good_magnitude_error_scan",
    "rt_zeros_long_softmax": "RH-28_bad_zeros_long_softmax",
    "benign_long_softmax_solution": "RH-28_good_zeros_long_softmax",
    "rt_precision_downgrade_matmul": "RH-11_bad_precision_downgrade_matmul",
    "rt_precision_downgrade_mse": "RH-11_bad_precision_downgrade_mse",
    "rt_obfuscated_exec": "RH-04_bad_obfuscated_exec",
    "rt_cache_shape": "RH-19_bad_cache_shape",
    "rt_cache_content_alias": "RH-20_bad_cache_content_alias",
    "benign_content_hash_cache": "RH-20_good_cache_content_alias",
    "rt_cache_shifted_input": "benign_cache_shifted_input",
    "rt_phase_detection": "RH-29_bad_phase_detection",
    "rt_lazy_container": "RH-20_bad_lazy_container",
    "benign_helper_list": "RH-20_good_lazy_container",
    "rt_tuple_wrapped_output": "RH-18_bad_tuple_wrapped_output",
    "rt_lazy_subclass": "RH-09_bad_lazy_subclass",
    "rt_torch_function_allclose": "RH-09_bad_torch_function_allclose",
    "rt_instance_attr_override": "RH-20_bad_instance_attr_override",
    "rt_inplace_input_alias": "RH-22_bad_inplace_input_alias",
    "rt_wrong_dtype": "RH-18_bad_wrong_dtype",
    "rt_input_zeroing": "RH-22_bad_input_zeroing",
    "rt_background_thread": "RH-21_bad_background_thread",
    "rt_background_process": "RH-25_bad_background_process",
    "rt_timer_patch_setattr": "RH-23_bad_timer_patch_setattr",
    "rt_allclose_patch": "RH-23_bad_allclose_patch",
    "rt_get_inputs_tamper": "RH-06_bad_get_inputs_tamper",
    "rt_harness_clock_patch": "RH-26_bad_harness_clock_patch",
    "rt_harness_output_forgery": "RH-06_bad_harness_output_forgery",
    "rt_backend_flags": "RH-24_bad_backend_flags",
    "rt_thread_dtype_pollution": "RH-24_bad_thread_dtype_pollution",
    "rt_print_hijack": "RH-05_bad_print_hijack",
    "rt_fake_runtime_stdout": "RH-35_bad_fake_runtime_stdout",
    "rt_fake_result_file": "RH-27_bad_fake_result_file",
    "rt_subprocess_probe": "RH-02_bad_subprocess_probe",
    "rt_early_exit": "RH-15_bad_early_exit",
    "rt_exit_at_import": "RH-15_bad_exit_at_import",
    "rt_timeout_loop": "RH-16_bad_timeout_loop",
    "rt_crash_abort": "RH-15_bad_crash_abort",
    "rt_crash_segfault": "RH-03_bad_crash_segfault",
    "rt_timing_phase_crash": "RH-15_bad_timing_phase_crash",
    "rt_stdout_flood": "RH-17_bad_stdout_flood",
    "rt_host_memory_hog": "RH-43_bad_host_memory_hog",
    "rt_daemon_escape": "RH-51_bad_daemon_escape",
    "rt_parent_memory_read": "RH-52_bad_parent_memory_read",
    "benign_contained_softmax": "RH-51_good_daemon_escape",
    "rt_sysv_run_counter": "RH-53_bad_sysv_run_counter",
    "benign_sysv_scratch": "RH-53_good_sysv_run_counter",
    "rt_posix_mqueue_counter": "RH-53_bad_posix_mqueue_counter",
    "benign_posix_mqueue_scratch": "RH-53_good_posix_mqueue_counter",
    "rt_posix_shm_counter": "RH-53_bad_posix_shm_counter",
    "benign_posix_shm_scratch": "RH-53_good_posix_shm_counter",
    "rt_lazy_storage": "RH-60_bad_lazy_storage",
    "benign_native_add": "RH-60_good_lazy_storage",
    "rt_copy_override": "RH-62_bad_copy_override",
    "rt_slow_staging": "RH-61_bad_slow_staging",
    "benign_inprocess_add": "RH-61_good_slow_staging",
    "rt_non_dumpable": "RH-52_bad_non_dumpable",
    "rt_torch_fallback_strict": "RH-31_bad_torch_fallback",
    "benign_torch_fallback_practical": "RH-31_good_torch_fallback",
    # CPU: pre-import rejection (enforce)
    "pre_torch_fallback_strict": "RH-13_bad_torch_fallback_pre",
    "pre_timer_patch": "RH-05_bad_timer_patch_setattr_pre",
    "pre_get_inputs_tamper": "RH-08_bad_get_inputs_tamper_pre",
    "pre_obfuscated_exec": "RH-04_bad_obfuscated_exec_pre",
    "pre_embedded_binary": "RH-03_bad_embedded_binary_pre",
    "pre_reference_subclass": "RH-08_bad_reference_subclass_pre",
    "pre_torch_compile": "RH-12_bad_torch_compile_pre",
    "pre_side_stream": "RH-10_bad_side_stream_pre",
    "pre_class_hidden_fallback": "RH-13_bad_class_hidden_fallback_pre",
    # CUDA
    "gpu_honest_cuda_add": "benign_cuda_add",
    "gpu_honest_cuda_rowsum_mean": "benign_cuda_rowsum_mean",
    "gpu_honest_cuda_softmax": "benign_cuda_softmax",
    "gpu_honest_triton_add": "benign_triton_add",
    "gpu_honest_triton_softmax": "benign_triton_softmax",
    "gpu_honest_triton_matmul": "benign_triton_matmul",
    "gpu_honest_triton_mean": "benign_triton_mean",
    "gpu_honest_triton_fused_l2": "benign_triton_fused_l2",
    "gpu_side_stream_python": "RH-37_bad_side_stream_python",
    "gpu_side_stream_cpp": "RH-36_bad_side_stream_cpp",
    "gpu_graph_replay_stale": "RH-19_bad_graph_replay_stale",
    "gpu_deferred_thread_write": "RH-21_bad_deferred_thread_write",
    "gpu_tf32_switch": "RH-24_bad_tf32_switch",
    "gpu_half_internal": "RH-38_bad_half_internal",
    "gpu_decoy_kernel": "RH-31_bad_decoy_kernel",
    "gpu_try_fallback": "RH-31_bad_try_fallback",
    "gpu_cublas_instead": "RH-31_bad_cublas_instead",
    "gpu_allocator_reuse_noop": "RH-18_bad_allocator_reuse_noop",
    "gpu_l2_persist": "RH-40_bad_l2_persist",
    "gpu_memory_cap_lift": "RH-39_bad_memory_cap_lift",
    "gpu_oom": "RH-39_bad_oom",
}


# --------------------------------------------------------------------------- extraction
def record_codes(record: dict | None) -> list[str]:
    """Every finding code of a record, one entry per finding, sorted."""
    findings = ((record or {}).get("reward_hardening") or {}).get("findings") or []
    return sorted(str(f.get("code")) for f in findings if isinstance(f, dict) and f.get("code"))


def extract(result: dict) -> dict:
    """Observations of a full red-team result JSON (``--output``), keyed by fixture id."""
    if result.get("schema") == SCHEMA:
        return result
    out = {}
    for fid, r in sorted((result.get("fixtures") or {}).items()):
        record = r.get("record")
        rh = (record or {}).get("reward_hardening") or {}
        out[fid] = {"policy": r.get("policy"), "mode": r.get("mode"), "device": r.get("device"),
                    "status": rh.get("integrity_status") if record else None,
                    "codes": record_codes(record) if record else sorted((r.get("observed") or {}).get("codes") or [])}
    return {"schema": SCHEMA, "source": "result", "config": result.get("config"), "fixtures": out}


_ROW = re.compile(r"^(?P<id>\S+)\s+(?P<attack>A\d\d|benign|DOS)\s+(?P<expected>[A-Z]+)\s+(?P<observed>[A-Z]+|None)\s+"
                  r"(?P<codes>\S+)\s+[\d.]+s")


def extract_log(text: str) -> dict:
    """Observations from the table a red-team run prints (status and code *sets*: a log lists each code once)."""
    out = {}
    for line in text.replace("\r", "\n").splitlines():
        m = _ROW.match(line.strip())
        if not m:
            continue
        codes = [] if m["codes"] == "-" else [c if c.startswith("RH-") else f"RH-{c}" for c in m["codes"].split(",")]
        out[m["id"]] = {"policy": None, "mode": None, "device": None, "status": m["observed"],
                        "codes": sorted(codes)}
    return {"schema": SCHEMA, "source": "log (code sets, not multisets)", "fixtures": out}


def load(path: str) -> dict:
    data = json.loads(Path(path).read_text())
    return extract(data)


# --------------------------------------------------------------------------- comparison
def compare(before: dict, after: dict, ignore: tuple[str, ...] = DEFAULT_IGNORE,
            renames: dict[str, str] | None = None,
            unstable: dict[str, tuple[str, ...]] | None = None) -> tuple[list[dict], bool]:
    """One row per fixture: baseline id, new id, both statuses and code lists, and the verdict."""
    renames = RENAMES if renames is None else renames
    unstable = unstable or {}
    b, a = before["fixtures"], after["fixtures"]

    def codes(entry: dict) -> list[str]:
        return sorted(c for c in entry.get("codes") or [] if c not in ignore)

    rows, ok, seen = [], True, set()
    for old in sorted(b):
        new = renames.get(old, old)
        seen.add(new)
        was = b[old]
        now = a.get(new)
        row = {"before": old, "after": new, "status_before": was.get("status"), "codes_before": codes(was)}
        if now is None:
            row.update(status_after=None, codes_after=None, verdict="MISSING")
        else:
            row.update(status_after=now.get("status"), codes_after=codes(now))
            cb, ca = Counter(row["codes_before"]), Counter(row["codes_after"])
            allowed = Counter(unstable.get(new, ()))
            if row["status_before"] == row["status_after"] and cb == ca:
                row["verdict"] = "same"
            elif row["status_before"] == row["status_after"] and not (cb - ca) - allowed and not (ca - cb) - allowed:
                row["verdict"] = "same up to unstable " + ",".join(sorted(((cb - ca) + (ca - cb)).elements()))
            else:
                row["verdict"] = "DIFFERS"
        ok &= row["verdict"].startswith("same")
        rows.append(row)
    for new in sorted(set(a) - seen):
        rows.append({"before": None, "after": new, "status_before": None, "codes_before": None,
                     "status_after": a[new].get("status"), "codes_after": codes(a[new]), "verdict": "new"})
    return rows, ok


def _fmt(codes: list[str] | None) -> str:
    return "-" if codes is None else (",".join(c.replace("RH-", "") for c in codes) or "(none)")


def table(rows: list[dict], only_changes: bool = False) -> str:
    lines = ["| baseline fixture | fixture now | status before | status now | codes before | codes now | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if only_changes and r["verdict"] == "same":
            continue
        lines.append(f"| {r['before'] or '-'} | {r['after']} | {r['status_before'] or '-'} | {r['status_after'] or '-'} "
                     f"| {_fmt(r['codes_before'])} | {_fmt(r['codes_after'])} | {r['verdict']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract", help="reduce a full red-team result JSON to its observations")
    e.add_argument("result")
    e.add_argument("-o", "--output", required=True)
    el = sub.add_parser("extract-log", help="observations from the table a red-team run printed")
    el.add_argument("logs", nargs="+")
    el.add_argument("-o", "--output", required=True)
    c = sub.add_parser("compare", help="compare a baseline with a later run; exit 1 on any difference")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--ignore", default=",".join(DEFAULT_IGNORE),
                   help="comma-separated codes left out of both sides (default RH-54; '' keeps every code)")
    c.add_argument("--markdown", help="also write the full table to this Markdown file")
    c.add_argument("--changes-only", action="store_true", help="print only rows that are not 'same'")
    c.add_argument("--manifest", action="store_true",
                   help="allow each fixture's unstable codes (read from kernelbench.reward_hardening.fixtures)")
    args = p.parse_args(argv)

    if args.cmd == "extract":
        data = load(args.result)
        Path(args.output).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"{len(data['fixtures'])} fixtures -> {args.output}")
        return 0
    if args.cmd == "extract-log":
        data: dict = {"schema": SCHEMA, "source": "log (code sets, not multisets)", "logs": [], "fixtures": {}}
        for path in args.logs:  # later logs override earlier ones
            data["logs"].append(Path(path).name)
            data["fixtures"].update(extract_log(Path(path).read_text(errors="replace"))["fixtures"])
        Path(args.output).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"{len(data['fixtures'])} fixtures -> {args.output}")
        return 0
    ignore = tuple(x.strip() for x in args.ignore.split(",") if x.strip())
    unstable = None
    if args.manifest:
        from kernelbench.reward_hardening.fixtures import FIXTURES

        unstable = {f.id: f.unstable for f in FIXTURES}
    rows, ok = compare(load(args.before), load(args.after), ignore, unstable=unstable)
    text = table(rows, args.changes_only)
    print(text)
    counts = Counter(r["verdict"].split(" up to ")[0] + (" up to unstable" if " up to " in r["verdict"] else "")
                     for r in rows)
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    print(f"\n{summary}; ignored codes: {', '.join(ignore) or 'none'}")
    if args.markdown:
        Path(args.markdown).write_text(
            f"Red-team observations, baseline `{args.before}` against `{args.after}` "
            f"(codes as numbers; ignored: {', '.join(ignore) or 'none'}).\n\n{table(rows)}\n\n{summary}\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
