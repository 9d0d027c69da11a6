"""RH-10 stream_graph: side streams, CUDA graphs, host callbacks and persisting L2.

What it catches
    Python: ``torch.cuda.Stream`` / ``ExternalStream`` / ``stream()`` /
    ``set_stream`` / ``StreamContext``, ``torch.Stream``, ``torch.cuda.CUDAGraph`` /
    ``graph`` / ``graphs`` / ``make_graphed_callables`` / ``graph_pool_handle``, cupy
    streams and graphs, and the methods ``wait_stream``, ``record_stream``,
    ``wait_event``, ``capture_begin`` / ``capture_end``.  Embedded C/C++/CUDA:
    ``cudaStreamCreate*``, ``cuStreamCreate*``, ``cudaStreamBeginCapture`` /
    ``EndCapture``, every ``cudaGraph*`` / ``cuGraph*`` API, ``CUDAGraph``,
    ``cudaStreamWaitEvent``, ``cublasSetStream`` / ``cudnnSetStream`` /
    ``cusparseSetStream`` / ``cufftSetStream``, ``getStreamFromPool``,
    ``getStreamFromExternal``, ``setCurrentCUDAStream``, ``cudaStreamPerThread``,
    host callbacks (``cudaLaunchHostFunc``, ``cudaStreamAddCallback``) and persisting-L2
    controls (``cudaLimitPersistingL2CacheSize``, ``cudaStreamSetAttribute``,
    ``accessPolicyWindow``, ``cudaAccessPropertyPersisting``).  Launching on
    ``at::cuda::getCurrentCUDAStream()`` is the legitimate pattern and is not flagged.

Why it matters
    Work on a side stream escapes events recorded on the current stream (A01); a
    replayed graph can serve stale buffers (A18); a persisting-L2 window keeps data
    hot across the harness's cache flush (A40).

Example
    ``s = torch.cuda.Stream(); with torch.cuda.stream(s): ...``; aliased:
    ``from torch.cuda import Stream as S``; in CUDA ``cudaStreamCreateWithFlags(&s,
    cudaStreamNonBlocking); cublasSetStream(h, s);``.

Known limits
    A stream created by foreign code (RH-03) or reached through the driver API by a
    runtime-resolved symbol is not seen here; RH-36/RH-37 measure it at run time.
    Graph capture as a pure launch-overhead optimisation is also reported (it is a
    warning under the ``practical`` policy).
"""

from __future__ import annotations

from ._context import Context, Hit, Rule, hit

PY_PREFIXES = (
    "torch.cuda.Stream", "torch.cuda.ExternalStream", "torch.cuda.stream", "torch.cuda.set_stream",
    "torch.cuda.StreamContext", "torch.cuda.streams", "torch.Stream", "torch.cuda.CUDAGraph", "torch.cuda.graph",
    "torch.cuda.graphs", "torch.cuda.make_graphed_callables", "torch.cuda.graph_pool_handle",
    "cupy.cuda.Stream", "cupy.cuda.ExternalStream", "cupy.cuda.Graph", "torch.cuda.streams.Stream",
)
PY_METHODS = {"wait_stream", "record_stream", "wait_event", "capture_begin", "capture_end"}
CXX_NAMES = {
    "cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "cuStreamCreate",
    "cuStreamCreateWithPriority", "cudaStreamBeginCapture", "cudaStreamBeginCaptureToGraph", "cudaStreamEndCapture",
    "cuStreamBeginCapture", "cuStreamEndCapture", "CUDAGraph", "cudaStreamWaitEvent", "cuStreamWaitEvent",
    "cublasSetStream", "cublasSetStream_v2", "cublasLtSetStream", "cudnnSetStream", "cusparseSetStream",
    "cufftSetStream", "cusolverDnSetStream", "curandSetStream", "getStreamFromPool", "getStreamFromExternal",
    "setCurrentCUDAStream", "cudaStreamPerThread", "cudaLaunchHostFunc", "cudaStreamAddCallback",
    "cuLaunchHostFunc", "hipStreamCreate", "hipStreamCreateWithFlags",
}
L2_NAMES = {"cudaLimitPersistingL2CacheSize", "cudaStreamSetAttribute", "cuStreamSetAttribute", "accessPolicyWindow",
            "cudaAccessPropertyPersisting", "CU_ACCESS_PROPERTY_PERSISTING", "cudaStreamAttributeAccessPolicyWindow",
            "CU_LIMIT_PERSISTING_L2_CACHE_SIZE", "cudaLaunchAttributeAccessPolicyWindow"}


def check(ctx: Context) -> list[Hit]:
    hits = ctx.ref_hits(PY_PREFIXES)
    hits += [hit(c.line, f".{c.method}()") for c in ctx.calls if c.method in PY_METHODS]
    hits += ctx.cxx_hits(CXX_NAMES)
    hits += [hit(ci.line, f"C++: {ci.text}") for ci in ctx.cxx_idents
             if ci.text.startswith(("cudaGraph", "cuGraph", "hipGraph")) and ci.prev not in (".", "->")]
    hits += [hit(h.line, h.what.replace("C++: ", "C++ persisting-L2: "))
             for h in ctx.cxx_hits(L2_NAMES, free_only=False)]
    return hits


RULE = Rule("RH-10", "stream_graph", check, __doc__ or "")
