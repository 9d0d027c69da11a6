"""The text tier of :mod:`kernelbench.kernel_static_checker`: upstream's pattern constants (any process).

Upstream's checks are functions of the source text, ``check_<name>(code) ->
(flagged, message)`` (``check_precision_downgrade(code, precision="fp32")``), driven
by module-level regular expressions.  Here each ``check_<name>`` answers from the
AST/token analysis (:mod:`kernelbench.kernel_static_checks`).  The pattern constants
below keep upstream's names; they are this project's own textual patterns and serve as
the *text tier*: a direct ``check_<name>(code)`` call on a fragment that is neither
parseable Python nor recognisable C/C++ (so no analysis can be built) is answered by
them, best effort (:func:`text_tier`).  ``validate_kernel_static`` never uses the text
tier: a candidate that does not parse is the error ``syntax_error`` (fail closed).
"""

from __future__ import annotations

import re

from kernelbench.kernel_static_checks import NN_ALLOWED, PRECISION_LABEL, fmt_hits, verdict
from kernelbench.reward_hardening.precheck._context import Hit

TRY_EXCEPT_PATTERNS = [r"\btry\s*:", r"\bexcept\b"]
PASS_PATTERN = r"\bdef\s+forward\s*\([^)]*\)\s*(?:->[^:]*)?:\s*(?:#[^\n]*)?\n?\s*pass\b"
PYTORCH_DISALLOWED_NN_PATTERN = (r"\b(?:torch\.)?nn\.(?!(?:" + "|".join(sorted(NN_ALLOWED)) + r")\b)\w+")
TORCH_COMPUTATION_OPS = [
    "mm", "bmm", "matmul", "einsum", "addmm", "baddbmm", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "relu", "hardtanh", "elu", "selu", "leaky_relu",
    "gelu", "softsign", "softplus", "softmax", "log_softmax", "tanh", "sigmoid", "hardsigmoid", "silu", "mish",
    "batch_norm", "group_norm", "layer_norm", "instance_norm", "rms_norm", "normalize", "linear", "cross_entropy",
    "kl_div", "mse_loss", "huber_loss", "triplet_margin_loss", "cosine_similarity", "logsumexp", "clamp", "dropout",
]
TORCH_FUNCTIONAL_PATTERNS = [
    r"\btorch\.(?:" + "|".join(TORCH_COMPUTATION_OPS) + r")\s*\(",
    r"\b(?:torch\.)?nn\.functional\.\w+\s*\(",
    r"\bF\.(?:" + "|".join(TORCH_COMPUTATION_OPS) + r")\s*\(",
]
CUDA_COMPILE_PATTERNS = ["load_inline", "cpp_extension"]
HIP_COMPILE_PATTERNS = ["load_inline", "cpp_extension"]
TRITON_JIT_PATTERN = r"@triton\.(?:jit|autotune)\b"
TRITON_OPS_PATTERN = r"\btl\.(?:load|store|atomic_\w+|make_block_ptr)\s*\("
TK_WARP_PATTERNS = [r"\bkittens::", r"\b(?:warp|warpgroup)::"]
TK_TILE_PATTERN = r"\b(?:kittens::)?(?:st|rt)_\w+\s*<[^>]+>"
CUTE_PATTERNS = [r"\bcute::", r"\bcutlass::", r"\bfrom\s+cutlass\b", r"\bimport\s+cutlass\b"]
TILELANG_PATTERNS = [r"@T\.prim_func\b", r"@tilelang\.jit\b"]
STREAM_PATTERNS = [r"\b(?:torch\.)?cuda\.Stream\s*\(", r"\bwith\s+torch\.cuda\.stream\b", r"\.wait_stream\s*\(",
                   r"\.record_stream\s*\(", r"\bcudaStreamCreate\w*\s*\(", r"\bgetStreamFromPool\s*\(",
                   r"\bcublasSetStream\w*\s*\(", r"\bcudaGraph\w*\s*\("]
THREAD_PATTERNS = [r"\bthreading\.Thread\s*\(", r"\bimport\s+threading\b", r"\bfrom\s+threading\s+import\b",
                   r"\bmultiprocessing\.(?:Process|Pool|Manager|Queue|Pipe)\s*\(", r"\bimport\s+multiprocessing\b",
                   r"\bconcurrent\.futures\b", r"\b(?:Thread|Process)PoolExecutor\b", r"\bstd::thread\b",
                   r"\bpthread_create\s*\("]
LAZY_TENSOR_PATTERNS = [r"\b_make_subclass\s*\(", r"\bclass\s+\w+\s*\(\s*(?:torch\.)?Tensor\s*\)",
                        r"\btorch\.Tensor\.__new__\b", r"\b__torch_(?:function|dispatch)__\b", r"\.as_subclass\s*\("]
TIMING_EVENT_PATCH_PATTERNS = [
    r"\btorch\.cuda\.Event\.(?:record|elapsed_time|synchronize)\s*=",
    r"\btorch\.cuda\.(?:synchronize|Event|elapsed_time)\s*=",
    r"\btime\.(?:perf_counter|perf_counter_ns|time|monotonic)\s*=",
    r"\bsetattr\s*\(\s*(?:torch\.cuda(?:\.Event)?|time)\s*,",
]
FP32_TO_FP16_PATTERNS = [
    r"\.half\s*\(\s*\)", r"\.float16\s*\(\s*\)", r"\.to\s*\(\s*(?:dtype\s*=\s*)?torch\.(?:float16|half)\b",
    r"\bdtype\s*=\s*torch\.(?:float16|half)\b", r"\b__float2half\w*\s*\(", r"\(\s*(?:__)?half\s*\)",
    r"\bstatic_cast\s*<\s*(?:__)?half\s*>", r"\btl\.float16\b", r"\bNumericConverter\s*<\s*(?:cutlass::)?half_t\b",
    r"\bLinearCombination\s*<\s*(?:cutlass::)?half_t\b", r"\btype_convert\s*<\s*(?:cutlass::)?half_t\s*>",
    r"\btk::half\s*\(", r"\bhalf_t\b", r"\b__half2?\b",
]

# check name -> the text-tier patterns that answer it (backend checks need all groups)
_TEXT_TIER: dict[str, list[str]] = {
    "code_bypass": TRY_EXCEPT_PATTERNS + [PASS_PATTERN],
    "timing_event_patch": TIMING_EVENT_PATCH_PATTERNS,
    "thread_injection": THREAD_PATTERNS,
    "lazy_eval": LAZY_TENSOR_PATTERNS,
    "pytorch_wrap": [PYTORCH_DISALLOWED_NN_PATTERN],
    "torch_computation_ops": TORCH_FUNCTIONAL_PATTERNS,
    "stream_injection": STREAM_PATTERNS,
    "precision_downgrade": FP32_TO_FP16_PATTERNS,
}
_TEXT_TIER_BACKEND: dict[str, list[list[str]]] = {
    "cuda_impl": [[r"\b__global__\b"], CUDA_COMPILE_PATTERNS],
    "hip_impl": [[r"\b__global__\b"], HIP_COMPILE_PATTERNS, [r"\bhipcc\b", r"\bhip\w+\s*\("]],
    "triton_impl": [[TRITON_JIT_PATTERN], [TRITON_OPS_PATTERN]],
    "tk_impl": [TK_WARP_PATTERNS, [TK_TILE_PATTERN]],
    "cute_impl": [CUTE_PATTERNS],
    "tilelang_impl": [TILELANG_PATTERNS],
}
_LINE_COMMENT = re.compile(r"(?m)(?:^|(?<=\s))(?:#(?!include|define|pragma|if|endif|else)|//)[^\n]*")


def text_tier(name: str, code: str) -> tuple[bool, str]:
    """Check ``name`` on ``code`` by its patterns alone (comments stripped), in upstream's result shape."""
    text = _LINE_COMMENT.sub("", code)
    if name in _TEXT_TIER:
        found = []
        for pat in _TEXT_TIER[name]:
            for m in re.finditer(pat, text):
                found.append(Hit(text.count("\n", 0, m.start()) + 1, m.group(0).strip()))
        if name == "precision_downgrade" and found:
            return True, f"{PRECISION_LABEL} FP16 ({fmt_hits(found)}; text match, the source did not parse)"
        return verdict(found, f"{name}: text match, the source did not parse")
    groups = _TEXT_TIER_BACKEND.get(name)
    if groups is None:
        return False, ""
    missing = [g for g in groups if not any(re.search(p, text) for p in g)]
    if missing:
        return True, f"{name}: missing {' / '.join(missing[0])} (text match, the source did not parse)"
    return False, ""
