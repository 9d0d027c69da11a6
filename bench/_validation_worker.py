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


def profiler_probe() -> dict:
    """What the profiler records on this machine: device events, their times and streams.

    A marker kernel (``torch.cuda._sleep``) runs on the current stream, a matmul and an add
    follow, and one multiply runs on a side stream.  Three sessions in this order: the
    autograd profiler with Kineto (what the worker uses), the autograd profiler without
    it (its default), and the torch.profiler front end; the first one going first also
    shows whether the first session of a process records device activity.
    """
    import collections

    import torch

    out: dict = {"kineto_available": bool(torch.autograd.kineto_available())}
    try:
        out["supported_activities"] = [str(a) for a in torch.profiler.supported_activities()]
    except Exception as exc:
        out["supported_activities"] = f"{type(exc).__name__}: {exc}"
    x = torch.randn(512, 512, device="cuda")
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    for front in ("autograd_kineto", "autograd_default", "torch.profiler"):
        try:
            if front.startswith("autograd"):
                from torch.autograd import profiler as ap

                ctx = ap.profile(use_device="cuda", use_kineto=front == "autograd_kineto")
            else:
                from torch.profiler import ProfilerActivity, profile

                ctx = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            with ctx as prof:
                torch.cuda._sleep(1000)
                y = x @ x
                z = y + x
                with torch.cuda.stream(side):
                    w = x * 2
                torch.cuda.synchronize()
            events = prof.function_events if front.startswith("autograd") else prof.events()
            rows = []
            for e in events:
                row = {"name": str(e.name)[:90], "device_type": str(getattr(e, "device_type", "")),
                       "is_async": bool(getattr(e, "is_async", False)),
                       "resource": getattr(e, "device_resource_id", None)}
                try:
                    row["elapsed_us"] = float(e.time_range.elapsed_us())
                except Exception as exc:
                    row["elapsed_us"] = f"{type(exc).__name__}"
                for attr in ("device_time", "device_time_total", "self_device_time_total"):
                    try:
                        row[attr] = float(getattr(e, attr) or 0.0)
                    except Exception as exc:
                        row[attr] = f"{type(exc).__name__}"
                rows.append(row)
            out[front] = {"events": len(rows),
                          "by_device_type": dict(collections.Counter(r["device_type"] for r in rows)),
                          "device_rows": [r for r in rows if not r["device_type"].endswith("CPU")][:20],
                          "cpu_names": sorted({r["name"] for r in rows if r["device_type"].endswith("CPU")})[:60]}
            del y, z, w
        except Exception as exc:
            out[front] = {"error": f"{type(exc).__name__}: {exc}"}
    return out
