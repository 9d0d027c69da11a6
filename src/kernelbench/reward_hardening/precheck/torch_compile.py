"""RH-12 torch_compile: compiler-generated kernels instead of a custom kernel.

What it catches
    ``torch.compile``, ``torch.jit.script`` / ``trace`` / ``trace_module`` /
    ``script_method`` / ``script_if_tracing`` / ``freeze`` /
    ``optimize_for_inference`` / ``fork``, ``torch._dynamo``, ``torch._inductor``,
    ``torch.export``, ``torch.compiler`` (except ``disable`` / ``is_compiling``),
    ``torch._functorch.aot_autograd`` / ``functorch.compile``, ``torch._lazy``,
    ``torch_tensorrt`` / ``tensorrt``, ``thunder`` and ``hidet`` — as calls, decorators,
    imports or aliases.

Why it matters
    The compiler's output is the baseline a custom kernel is compared against, not
    the candidate's own work (A19).  Under ``source_strict`` it is an error; under
    ``practical`` it is recorded for information only.

Example
    ``self.fn = torch.compile(self._forward, mode="max-autotune")``; aliased:
    ``from torch import compile as c; fast = c(model)``; or ``@torch.jit.script``.

Known limits
    Triton kernels written by hand are fine; Inductor-generated Triton code pasted
    into the source looks hand-written and is not recognised here.
"""

from __future__ import annotations

from ._context import Context, Hit, Rule

PY_PREFIXES = (
    "torch.compile", "torch.jit.script", "torch.jit.trace", "torch.jit.trace_module", "torch.jit.script_method",
    "torch.jit.script_if_tracing", "torch.jit.freeze", "torch.jit.optimize_for_inference", "torch.jit.fork",
    "torch._dynamo", "torch._inductor", "torch.export", "torch.compiler", "torch._functorch.aot_autograd",
    "functorch.compile", "torch._lazy", "torch_tensorrt", "tensorrt", "thunder", "hidet",
)
EXCLUDE = ("torch.compiler.disable", "torch.compiler.is_compiling", "torch.compiler.is_dynamo_compiling")


def check(ctx: Context) -> list[Hit]:
    return ctx.ref_hits(PY_PREFIXES, exclude=EXCLUDE)


RULE = Rule("RH-12", "torch_compile", check, __doc__ or "")
