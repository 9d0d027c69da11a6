"""What a batch evaluates: each sample's configuration and the resume decision (parent process).

:func:`eval_config` is what a sample is evaluated under (stored as
``metadata.eval_config``); :func:`plan_batch` compares it with the stored records of
the same slot (mode, policy, device) and decides, per sample, whether it is done, is
evaluated again, or is kept as made with other settings (see ``kernelbench.batch``).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelbench import runs

# the keys of eval_config that are compared on resume, in the order they are reported
CONFIG_KEYS = ("mode", "policy", "device", "precision", "backend", "num_correct_trials", "num_perf_trials",
               "timing_method", "measure_performance", "allow_tf32", "kernelguard_version",
               "candidate_sha256", "reference_sha256")


@dataclass(frozen=True)
class WorkItem:
    problem_id: int
    sample_id: int
    kernel_path: str
    ref_path: str | None
    ref_code: str
    problem_name: str
    config: dict | None = field(default=None, compare=False)  # full eval_config of this sample


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def kernelguard_version() -> str:
    from kernelbench import __version__

    return __version__


def eval_config(cfg: Any) -> dict:
    """What a batch sample is evaluated under (stored as ``metadata.eval_config``).

    ``device`` is the device kind (``cpu`` or ``cuda``): which of several GPUs ran a
    sample does not change what it was evaluated under.  Keys that do not apply to a
    mode are ``None`` (the hardened path has its own timing protocol and ignores
    ``timing_method``; off mode has no policy).
    """
    hardened = cfg.reward_hardening_mode != "off"
    device = "cuda" if str(cfg.device).startswith("cuda") else str(cfg.device)
    return {
        "mode": cfg.reward_hardening_mode,
        "policy": cfg.reward_hardening_policy if hardened else None,
        "device": device,
        "precision": cfg.precision,
        "backend": cfg.backend,
        "num_correct_trials": int(cfg.num_correct_trials),
        "num_perf_trials": int(cfg.num_perf_trials),
        "timing_method": None if hardened else cfg.timing_method,
        "measure_performance": True if hardened else bool(cfg.measure_performance),
        "allow_tf32": bool(getattr(cfg, "allow_tf32", False)) if hardened else None,
        "kernelguard_version": kernelguard_version(),
    }


def stored_config(record: dict) -> dict | None:
    meta = record.get("metadata") if isinstance(record, dict) else None
    conf = meta.get("eval_config") if isinstance(meta, dict) else None
    return conf if isinstance(conf, dict) else None


def config_differences(stored: dict | None, current: dict) -> list[str]:
    """``key: old -> new`` for each key that differs (``[]`` when they match)."""
    if stored is None:
        return ["no stored configuration (written by an older version)"]
    out = []
    for key in CONFIG_KEYS:
        if stored.get(key) != current.get(key):
            if key.endswith("_sha256"):
                out.append(f"{key.replace('_sha256', '')} source changed")
            else:
                out.append(f"{key}: {stored.get(key)} -> {current.get(key)}")
    return out


def config_slot_of(config: dict) -> tuple[str, str | None, str]:
    """The results-file slot (:func:`kernelbench.runs.config_slot`) of an :func:`eval_config`."""
    return config["mode"], config.get("policy"), config["device"]


def is_unsupported(record: dict) -> bool:
    """The record's integrity status is ``UNSUPPORTED`` (no verdict to lose: it is evaluated again)."""
    rh = record.get("reward_hardening") if isinstance(record, dict) else None
    return isinstance(rh, dict) and rh.get("integrity_status") == "UNSUPPORTED"


# differences that make a stored record describe another candidate (or reference) than
# the file now holds: such a record is evaluated again even without ``overwrite``
# a record made from other sources, or by another KernelGuard version (whose checks may have
# let through what the current ones catch), is evaluated again rather than kept
_SOURCE_KEYS = ("candidate_sha256", "reference_sha256", "kernelguard_version")


@dataclass
class Plan:
    """What a batch will do: pending items, re-evaluated records and kept records."""

    pending: list[WorkItem]
    missing: list[tuple[int, int]]  # (problem, sample) pairs without a kernel file
    done: int  # samples whose stored record matches the current configuration
    stale: Counter  # reason -> number of stored records evaluated again (and replaced)
    kept: Counter = field(default_factory=Counter)  # reason -> stored records of this slot left as they are
    other_slots: Counter = field(default_factory=Counter)  # slot label -> records of other configurations

    def stale_lines(self) -> list[str]:
        lines = []
        for reason, n in self.stale.most_common():
            what = "sample" if n == 1 else "samples"
            lines.append(f"[eval] re-evaluating {n} {what}: stored record differs ({reason})")
        return lines

    def kept_lines(self) -> list[str]:
        lines = []
        for reason, n in self.kept.most_common():
            what = "record" if n == 1 else "records"
            lines.append(f"[eval] kept {n} {what} made with other settings ({reason}); they count as done: "
                         "pass overwrite=true to re-evaluate and replace them, or use another run_name")
        if self.other_slots:
            parts = ", ".join(f"{label} ({n})" for label, n in sorted(self.other_slots.items()))
            lines.append(f"[eval] kept the records of other configurations in the same file: {parts}")
        return lines


def plan_batch(dataset: Any, level: int, run_dir: Path, num_samples: int, results: dict[str, list[dict]],
               config: dict | None = None, overwrite: bool = False) -> Plan:
    """The work list, in problem order with the samples of a problem consecutive.

    With ``config`` (from :func:`eval_config`), only stored records of the same slot
    (mode, policy, device) are considered; records of other slots are kept and
    counted in ``other_slots``.  A stored record of this slot counts as done when its
    ``metadata.eval_config`` equals ``config`` plus the current sha256 of the kernel
    and reference sources.  It is evaluated again (and replaced) when it is
    ``UNSUPPORTED`` (no verdict to lose) or its candidate or reference source
    changed; a record made with other settings (trial counts, precision, an older
    KernelGuard...) is kept and counts as done unless ``overwrite`` is true.
    Without ``config``, any stored record counts (upstream behaviour).
    """
    pending, missing, done, stale, kept, others = [], [], 0, Counter(), Counter(), Counter()
    slot = config_slot_of(config) if config is not None else None
    for pid in dataset.get_problem_ids():
        problem = dataset.get_problem_by_id(pid)
        ref_sha = sha256_text(problem.code)
        for sid in range(num_samples):
            path = run_dir / runs.kernel_file_name(level, pid, sid)
            old = runs.find_record(results, pid, sid, slot)
            if slot is not None:
                for r in results.get(str(pid), []):
                    if isinstance(r, dict) and r.get("sample_id") == sid and runs.config_slot(r) != slot:
                        others[runs.slot_label(runs.config_slot(r))] += 1
            if not path.exists():
                if old is None:
                    missing.append((pid, sid))
                continue
            full = None
            if config is not None:
                try:
                    cand_sha = sha256_text(path.read_text(errors="surrogateescape"))
                except OSError:
                    missing.append((pid, sid))
                    continue
                full = dict(config, candidate_sha256=cand_sha, reference_sha256=ref_sha)
            if old is not None:
                if full is None:
                    done += 1
                    continue
                stored = stored_config(old)
                diffs = config_differences(stored, full)
                if is_unsupported(old):
                    # no verdict to lose, and the machine may have what was missing now (a GPU)
                    stale["stored record is UNSUPPORTED"] += 1
                    pending.append(WorkItem(pid, sid, str(path), problem.path, problem.code, problem.name, full))
                    continue
                if not diffs:
                    done += 1
                    continue
                source_changed = stored is not None and any(stored.get(k) != full.get(k) for k in _SOURCE_KEYS)
                if source_changed or overwrite:
                    stale["; ".join(diffs)] += 1
                else:
                    kept["; ".join(diffs)] += 1
                    done += 1
                    continue
            pending.append(WorkItem(pid, sid, str(path), problem.path, problem.code, problem.name, full))
    return Plan(pending, missing, done, stale, kept, others)


def work_list(dataset: Any, level: int, run_dir: Path, num_samples: int, results: dict[str, list[dict]],
              config: dict | None = None) -> tuple[list[WorkItem], list[tuple[int, int]]]:
    """Pending items and the (problem, sample) pairs whose kernel file is missing."""
    plan = plan_batch(dataset, level, run_dir, num_samples, results, config)
    return plan.pending, plan.missing
