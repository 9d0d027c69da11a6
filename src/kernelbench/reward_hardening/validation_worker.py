"""Independent timing of a candidate with ``triton.testing.do_bench`` (validation only).

Used by ``bench/gpu_validation.py`` to check that the hardened path's verified runtime
agrees with a measurement that shares none of its code.
"""

from __future__ import annotations

import os


def do_bench_candidate(candidate_src: str, reference_src: str, build_dir: str) -> dict:
    import torch
    from triton.testing import do_bench

    from kernelbench.eval import load_custom_model, load_original_model_and_inputs

    os.environ["TORCH_EXTENSIONS_DIR"] = build_dir
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    _, get_init_inputs, get_inputs = load_original_model_and_inputs(reference_src)
    torch.manual_seed(42)
    init = get_init_inputs()
    cls = load_custom_model(candidate_src, None, build_dir)
    with torch.no_grad():
        torch.manual_seed(42)
        model = cls(*init).cuda()
        torch.manual_seed(1234)
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in get_inputs()]
        ms = do_bench(lambda: model(*inputs), warmup=25, rep=200, return_mode="median")
    return {"median_ms": float(ms)}
