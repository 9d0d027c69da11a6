"""Time the reference programs (eager and torch.compile) and write baseline JSON files.

    uv run python scripts/generate_baseline_time.py hardware=H200 dataset_path=demo level=1
    uv run python scripts/generate_baseline_time.py        # no keys: every default below

With no keys (as upstream's script is run): ``device`` is cuda when available, else
cpu; ``hardware`` is named after the device (``NVIDIA_H200``, ``CPU_x86_64``); levels
1-3 of the local ``KernelBench/`` tree are timed, or the bundled demo problems when that
tree is absent (a note says how to point at the real set).

Writes ``results/timing/<hardware>/baseline_time_torch.json`` and, for each entry of
``compile_modes``, ``baseline_time_torch_compile_inductor_<mode>.json`` in upstream's
shape (``level{N}`` -> problem file name -> stats in ms), merging into existing files,
plus ``environment.json`` (GPU, driver, torch/CUDA versions, precision, TF32 flags,
demo scale).  Upstream bugs fixed: the hardware name and precision are keys (no
hard-coded name, no interactive prompt, fp32 by default for both passes), every
problem is timed in its own disposable worker, and a failed problem is left out
instead of being written as ``null``.
"""

from __future__ import annotations

import _bootstrap  # noqa: F401

import json
import os
import platform
import sys
import tempfile
from pathlib import Path

from kernelbench.cli import ConfigError, KBConfig, cli_main

REPO_ROOT = Path(__file__).resolve().parents[1]


class BaselineConfig(KBConfig):
    BOOL_KEYS = ("eager", "verbose")
    INT_KEYS = ("num_trials", "num_warmup")
    FLOAT_KEYS = ("timeout",)
    CHOICES = {
        "dataset_src": ("local", "huggingface"),
        "precision": ("fp32", "fp16", "bf16"),
        "timing_method": ("cuda_event", "do_bench", "do_bench_impl", "host_time"),
    }

    def __init__(self):
        self.hardware = None  # None: named after the device (GPU name, or CPU_<machine>)
        self.level = None  # None = every level present in the dataset (1-3)
        self.problem_ids = None
        self.dataset_src = "local"
        self.dataset_name = "ScalingIntelligence/KernelBench"
        self.dataset_path = None
        self.precision = "fp32"
        self.device = None  # None: cuda when available, else cpu (with a note)
        self.num_trials = 100
        self.num_warmup = 5
        self.timing_method = "cuda_event"
        self.eager = True
        self.compile_modes = ["default"]
        self.output_dir = str(REPO_ROOT / "results" / "timing")
        self.timeout = 600
        self.verbose = False

    def validate(self):
        if self.device is None or str(self.device).strip().lower() in ("", "none", "auto"):
            self.device = None
        if self.hardware is None or str(self.hardware).strip().lower() in ("", "none"):
            self.hardware = None
        elif not str(self.hardware).strip() or "/" in str(self.hardware):
            raise ConfigError("hardware", "must be a plain directory name such as H200")
        if isinstance(self.compile_modes, str):
            self.compile_modes = [self.compile_modes]
        allowed = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
        for m in self.compile_modes or []:
            if m not in allowed:
                raise ConfigError("compile_modes", f"got {m!r}; accepted values: {', '.join(allowed)}")


def _auto_device(requested: str | None) -> str:
    import torch

    if requested is not None:
        return requested
    if torch.cuda.is_available():
        return "cuda"
    print("[baseline] no CUDA device: timing on the CPU (pass device=cuda on a GPU host)", file=sys.stderr)
    return "cpu"


def hardware_name(device: str) -> str:
    """A directory name for the machine: the GPU's name (``NVIDIA_H200``) or ``CPU_<arch>``."""
    import re

    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        name = torch.cuda.get_device_name(device)
    else:
        name = f"CPU_{platform.machine() or 'unknown'}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "unknown"


def _auto_dataset(cfg) -> None:
    """No ``KernelBench/`` tree and no ``dataset_path``: time the bundled demo problems instead."""
    from kernelbench.dataset import DEFAULT_DATASET_PATH

    if cfg.dataset_src == "local" and cfg.dataset_path is None and not DEFAULT_DATASET_PATH.is_dir():
        print(f"[baseline] no KernelBench/ problem tree at {DEFAULT_DATASET_PATH}: timing the bundled demo "
              "problems (pass dataset_path=/path/to/KernelBench, or dataset_src=huggingface, for the real set)",
              file=sys.stderr)
        cfg.dataset_path = "demo"


def environment(device: str, precision: str) -> dict:
    import torch

    env = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "precision": precision, "device": device,
           "demo_scale": os.environ.get("KERNELBENCH_DEMO_SCALE", "1"),
           "matmul_allow_tf32": False, "cudnn_allow_tf32": False, "platform": platform.platform()}
    if device.startswith("cuda") and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(device)
        env.update({"gpu": props.name, "sm_count": props.multi_processor_count,
                    "memory_gib": round(props.total_memory / 2**30, 1),
                    "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0),
                    "cudnn": torch.backends.cudnn.version()})
        try:
            import subprocess

            env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception:
            pass
    return env


def _merge(path: Path, level: int, entries: dict) -> None:
    from kernelbench.runs import atomic_write_json

    data = json.loads(path.read_text()) if path.exists() else {}
    section = data.setdefault(f"level{level}", {})
    section.update(entries)
    data[f"level{level}"] = dict(sorted(section.items(), key=lambda kv: int(kv[0].split("_", 1)[0])))
    atomic_write_json(path, dict(sorted(data.items())))


def main(cfg: BaselineConfig) -> int:
    from tqdm import tqdm

    from kernelbench.dataset import construct_kernelbench_dataset
    from kernelbench.procs import run_oneshot
    from kernelbench.runs import atomic_write_json

    requested = cfg.device = _auto_device(cfg.device)
    device = "cuda:0" if requested == "cuda" else requested
    if cfg.hardware is None:
        cfg.hardware = hardware_name(device)
    _auto_dataset(cfg)
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            print("error: CUDA is not available; pass device=cpu to time on the CPU", file=sys.stderr)
            return 2
    timing_method = cfg.timing_method if device.startswith("cuda") else "host_time"
    out_dir = Path(cfg.output_dir) / cfg.hardware
    out_dir.mkdir(parents=True, exist_ok=True)
    levels = [int(cfg.level)] if cfg.level is not None else [1, 2, 3]
    variants = ([("baseline_time_torch", None)] if cfg.eager else []) + [
        (f"baseline_time_torch_compile_inductor_{m}", m) for m in cfg.compile_modes or []]
    failures = []
    for level in levels:
        try:
            ds = construct_kernelbench_dataset(level, source=cfg.dataset_src, dataset_name=cfg.dataset_name,
                                               base_path=cfg.dataset_path)
        except (FileNotFoundError, ValueError) as exc:
            if cfg.level is not None:
                raise
            print(f"[baseline] level {level} skipped: {exc}")
            continue
        if cfg.problem_ids:
            ids = cfg.problem_ids if isinstance(cfg.problem_ids, (list, tuple)) else [cfg.problem_ids]
            ds = ds.subset(problem_ids=[int(i) for i in ids])
        for file_stem, mode in variants:
            entries = {}
            for pid in tqdm(ds.get_problem_ids(), desc=f"level{level} {file_stem}", unit="problem"):
                problem = ds.get_problem_by_id(pid)
                name = problem.name if problem.name.endswith(".py") else f"{problem.name}.py"
                res = run_oneshot("kernelbench.baseline_worker:time_one",
                                  dict(ref_name=name, ref_src=problem.code, device=device, precision=cfg.precision,
                                       num_trials=cfg.num_trials, num_warmup=cfg.num_warmup,
                                       timing_method=timing_method, compile_mode=mode),
                                  timeout=cfg.timeout, workspace=tempfile.mkdtemp(prefix="kb_baseline_"))
                if res["ok"] and res["result"]:
                    entries[name] = res["result"]
                    _merge(out_dir / f"{file_stem}.json", level, {name: res["result"]})  # crash-safe progress
                else:
                    failures.append((level, name, file_stem, res.get("error")))
    atomic_write_json(out_dir / "environment.json", {**environment(device, cfg.precision),
                                                     "timing_method": timing_method})
    for level, name, stem, err in failures:
        print(f"[baseline] FAILED level{level} {name} ({stem}): {err}")
    print(f"[baseline] wrote {out_dir}")
    return 1 if failures else 0


entry = cli_main(BaselineConfig)(main)

if __name__ == "__main__":
    sys.exit(entry() or 0)
