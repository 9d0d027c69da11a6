"""Reference timing run inside a disposable worker (used by generate_baseline_time)."""

from __future__ import annotations


def time_one(ref_name: str, ref_src: str, device: str, precision: str, num_trials: int, num_warmup: int,
             timing_method: str, compile_mode: str | None) -> dict | None:
    """Runs inside a worker: explicit fp32 configuration (TF32 off), then time."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    from kernelbench.timing import measure_ref_program_time

    return measure_ref_program_time(ref_name, ref_src, num_warmup=num_warmup, num_trials=num_trials,
                                    timing_method=timing_method, use_torch_compile=compile_mode is not None,
                                    torch_compile_options=compile_mode or "default", device=device,
                                    precision=precision)
