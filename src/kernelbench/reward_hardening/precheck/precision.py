"""RH-11 precision: reduced precision in an fp32 problem.

Runs only when the problem's precision is fp32.

What it catches
    Python: autocast (``torch.autocast``, ``torch.amp``, ``torch.cuda.amp``,
    ``torch.cpu.amp``, ``torch.set_autocast_*``), ``.half()`` / ``.bfloat16()``,
    passing ``torch.float16`` / ``half`` / ``bfloat16`` / fp8 dtypes or ``HalfTensor``
    types as any call argument (``.to(torch.half)``, ``dtype=torch.bfloat16``,
    ``.type(torch.cuda.HalfTensor)``, aliases such as ``dt = torch.half``), TF32 and
    reduced-precision switches (``torch.backends.cuda.matmul.allow_tf32``,
    ``torch.backends.cudnn.allow_tf32``, ``allow_fp16/bf16_reduced_precision_reduction``,
    ``fp32_precision`` set to anything but ``"ieee"``, ``cudnn.flags(allow_tf32=True)``),
    ``torch.set_float32_matmul_precision`` with anything but ``"highest"``.
    Triton: ``tl.float16`` / ``tl.bfloat16`` / fp8 types, ``tl.dot`` with
    ``allow_tf32=True`` or an ``input_precision`` other than ``"ieee"`` /
    ``"tf32x3"``, and **``tl.dot`` on fp32 without ``input_precision="ieee"`` or
    ``allow_tf32=False``** (Triton's default for fp32 inputs is TF32; the hit reads
    ``tl.dot default tf32``), plus ``tl.dot_scaled``.  Embedded C++/CUDA: ``__half``,
    ``half`` used as a type, ``half2``, ``__nv_bfloat16`` and friends, fp8 types,
    ``__float2half*`` / ``__float2bfloat16*`` conversions, ``at::Half`` /
    ``c10::BFloat16`` / ``torch::kHalf``, CUTLASS ``half_t`` / ``bfloat16_t`` /
    ``tfloat32_t``, any identifier containing ``tf32``, cuBLAS 16-bit and fast-TF32
    compute types (``CUDA_R_16F``, ``CUBLAS_COMPUTE_32F_FAST_TF32``,
    ``CUBLAS_TENSOR_OP_MATH``), and PTX strings using ``.f16`` / ``.bf16`` / ``.tf32`` /
    fp8 types (``mma.sync ... .f16``).

Why it matters
    Tolerance checks accept many reduced-precision kernels, which then "win" by doing
    less arithmetic work than the fp32 reference (A37); global TF32 switches also
    change the reference (A38).

Example
    ``with torch.autocast("cuda", dtype=torch.float16): y = kernel(x)``; aliased:
    ``from torch import float16 as F16; x.to(F16)``; in Triton ``acc += tl.dot(a, b)``.

Known limits
    Precision chosen by an opaque library call (cuBLAS default math mode) is not
    visible; RH-38 checks the error profile at run time.  ``half`` is reported only in
    type-like positions (``half x``, ``(half)``, ``<half>``) so that a variable named
    ``half`` is not flagged.
"""

from __future__ import annotations

import ast
import re

from ._context import Context, Hit, Rule, hit, match_prefix

LOWP_DTYPES = {"torch.float16", "torch.half", "torch.bfloat16", "torch.HalfTensor", "torch.BFloat16Tensor",
               "torch.cuda.HalfTensor", "torch.cuda.BFloat16Tensor", "numpy.float16", "numpy.half"}
LOWP_DTYPE_PREFIXES = ("torch.float8", "torch.float4")
AUTOCAST = ("torch.autocast", "torch.amp", "torch.cuda.amp", "torch.cpu.amp", "torch.set_autocast_enabled",
            "torch.set_autocast_gpu_dtype", "torch.set_autocast_dtype", "torch.set_autocast_cpu_dtype")
TRITON_LOWP = {"float16", "bfloat16", "float8e4nv", "float8e5", "float8e4b15", "float8e4b8", "float8e5b16",
               "float8_e4m3fn", "float8_e5m2", "fp8e4nv", "fp8e5"}
CXX_LOWP = {"__half", "__half2", "half2", "__nv_bfloat16", "__nv_bfloat162", "nv_bfloat16", "nv_bfloat162",
            "__nv_fp8_e4m3", "__nv_fp8_e5m2", "__nv_fp8x2_e4m3", "__nv_fp8x4_e4m3", "__float2half", "__float2half_rn",
            "__float2half_rz", "__float2half_rd", "__float2half_ru", "__float2half2_rn", "__floats2half2_rn",
            "__half2float", "__float2bfloat16", "__float2bfloat16_rn", "__float2bfloat16_rz", "__floats2bfloat162_rn",
            "__bfloat162float", "half_t", "bfloat16_t", "tfloat32_t", "float_e4m3_t", "float_e5m2_t", "Half",
            "BFloat16", "kHalf", "kFloat16", "kBFloat16", "CUDA_R_16F", "CUDA_R_16BF", "CUDA_R_8F_E4M3",
            "CUBLAS_COMPUTE_16F", "CUBLAS_TENSOR_OP_MATH", "CUBLAS_COMPUTE_32F_FAST_16F",
            "CUBLAS_COMPUTE_32F_FAST_16BF", "__hmul", "__hadd", "__hfma", "__hmul2", "__hfma2"}
_PTX_LOWP = re.compile(r"\.(f16|f16x2|bf16|bf16x2|tf32|e4m3|e5m2)\b")
_TF32_IDENT = re.compile(r"tf32", re.I)


def _tl_dot(ctx: Context, c) -> Hit | None:
    args = c.node.args
    kw = {k.arg: k.value for k in c.node.keywords if k.arg}
    prec = kw.get("input_precision", args[3] if len(args) > 3 else None)
    tf32 = kw.get("allow_tf32", args[4] if len(args) > 4 else None)
    if tf32 is not None:
        if isinstance(tf32, ast.Constant) and tf32.value is False and prec is None:
            return None
        if not (isinstance(tf32, ast.Constant) and tf32.value is False):
            return hit(c.line, "tl.dot allow_tf32 not False")
    if prec is not None:
        if isinstance(prec, ast.Constant) and prec.value is None:
            return hit(c.line, "tl.dot default tf32")
        val = ctx.fold_str(prec)
        if val is None:
            return hit(c.line, "tl.dot input_precision is not a literal")
        if val.lower() in ("ieee", "tf32x3"):
            return None
        return hit(c.line, f"tl.dot input_precision={val!r}")
    return hit(c.line, "tl.dot default tf32")


def _half_type_like(ci) -> bool:
    if ci.text != "half" or ci.prev in (".", "->"):
        return False
    if ci.next.isidentifier() and ci.next not in ("and", "or", "not"):
        return True  # half x;  const half* -> 'half' followed by identifier or *
    if ci.prev == "(" and ci.next == ")":
        toks = ci.unit.tokens
        before = toks[ci.index - 2] if ci.index >= 2 else None
        # (half) x  is a cast;  while (half)  /  f(half)  are not
        return before is None or (before.kind != "ident" and before.text not in (")", "]"))
    if ci.prev in ("<", ",") and ci.next in (">", ",", ">>"):
        return True  # static_cast<half>, fragment<..., half, ...>
    if ci.next in ("*", "&") and ci.prev in ("", "(", ",", "{", ";", "}", "<", "const", "__restrict__"):
        return True  # half* p
    return False


def check(ctx: Context) -> list[Hit]:
    if not ctx.is_fp32:
        return []
    hits = ctx.ref_hits(AUTOCAST)
    for c in ctx.calls:
        q = c.qname or ""
        if c.method in ("half", "bfloat16") and not c.node.args and not c.rooted:
            hits.append(hit(c.line, f".{c.method}()"))
        for a in list(c.node.args) + [k.value for k in c.node.keywords]:
            aq = ctx.resolve_rooted(a)
            if aq and (aq in LOWP_DTYPES or aq.startswith(LOWP_DTYPE_PREFIXES)):
                hits.append(hit(c.line, f"{aq} passed to {q or c.method or 'call'}"))
            elif aq and aq.startswith("triton.language.") and aq.split(".")[-1] in TRITON_LOWP:
                hits.append(hit(c.line, f"tl.{aq.split('.')[-1]}"))
            elif isinstance(a, ast.Constant) and isinstance(a.value, str) and c.method in ("to", "type") \
                    and re.search(r"half|float16|bfloat16", a.value, re.I):
                hits.append(hit(c.line, f".{c.method}({a.value!r})"))
        if q == "torch.set_float32_matmul_precision":
            val = ctx.fold_str(c.node.args[0]) if c.node.args else None
            if val != "highest":
                hits.append(hit(c.line, f"set_float32_matmul_precision({val!r})"))
        if q in ("torch.backends.cudnn.flags", "torch.backends.cuda.sdp_kernel"):
            for k in c.node.keywords:
                if k.arg == "allow_tf32" and not (isinstance(k.value, ast.Constant) and k.value.value is False):
                    hits.append(hit(c.line, f"{q}(allow_tf32=...)"))
        if q in ("triton.language.dot", "triton.language.core.dot"):
            h = _tl_dot(ctx, c)
            if h:
                hits.append(h)
        if q in ("triton.language.dot_scaled",):
            hits.append(hit(c.line, "tl.dot_scaled"))
    for r in ctx.refs:  # tl.float16 anywhere (casts, constexpr dtypes)
        if r.rooted and r.qname.startswith("triton.language.") and r.qname.split(".")[-1] in TRITON_LOWP:
            hits.append(hit(r.line, f"tl.{r.qname.split('.')[-1]}"))
    for s in ctx.stores:
        if not s.rooted or not s.qname or not match_prefix(s.qname, ("torch.backends",)):
            continue
        attr = s.qname.split(".")[-1]
        val = s.value
        is_false = isinstance(val, ast.Constant) and val.value is False
        if attr in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction",
                    "allow_fp16_accumulation") and not is_false:
            hits.append(hit(s.line, f"{s.qname} = ..."))
        elif attr == "fp32_precision":
            v = ctx.fold_str(val) if val is not None else None
            if v not in ("ieee", "none"):
                hits.append(hit(s.line, f"{s.qname} = {v!r}"))
    hits += ctx.cxx_hits(CXX_LOWP, free_only=False)
    hits += [hit(ci.line, "C++: half (type)") for ci in ctx.cxx_idents if _half_type_like(ci)]
    hits += [hit(ci.line, f"C++: {ci.text}") for ci in ctx.cxx_idents
             if _TF32_IDENT.search(ci.text) and ci.text not in CXX_LOWP]
    for line, text in ctx.cxx_strings:
        m = _PTX_LOWP.search(text)
        if m:
            hits.append(hit(line, f"C++: PTX .{m.group(1)}"))
    return hits


RULE = Rule("RH-11", "precision", check, __doc__ or "")
