"""Prompts that ask a model to rewrite a KernelBench reference ``Model`` as ``ModelNew``.

One entry point, :func:`build_prompt`, covers every backend (``cuda``, ``triton``,
``cute``, ``tilelang``, ``thunderkittens``, ``hip``), precision (``fp32``, ``fp16``,
``bf16``) and prompt option:

* ``zero_shot``: task description, backend and precision guidance, the reference.
* ``one_shot``: the same plus one worked example (a reference and its rewrite).
* ``few_shot``: every worked example available for the backend.

Worked examples are read at call time from ``kernelbench/prompts/``: a reference
``model_ex_<name>.py`` paired with ``model_new_ex_<name>.py`` (a CUDA rewrite) or
``model_new_ex_<name>_<backend>.py`` (a rewrite for another backend).  When no example
exists for the requested backend the prompt silently degrades to zero-shot, so a CUDA
example is never shown to a model asked for, say, Triton.

The wording is KernelGuard's own; upstream's TOML templates are not used, so
``custom_prompt_key`` is not supported.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BACKENDS",
    "PRECISIONS",
    "PROMPT_OPTIONS",
    "PROMPTS_DIR",
    "ExamplePair",
    "build_prompt",
    "find_example_pairs",
    "get_prompt_for_backend",
]

BACKENDS = ("cuda", "triton", "cute", "tilelang", "thunderkittens", "hip")
PRECISIONS = ("fp32", "fp16", "bf16")
PROMPT_OPTIONS = ("zero_shot", "one_shot", "few_shot")

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"

# The example used for one-shot prompts when it exists for the backend.
ONE_SHOT_EXAMPLE = "add"

_BACKEND_TITLES = {
    "cuda": "CUDA",
    "triton": "Triton",
    "cute": "CuTe (CUTLASS Python DSL)",
    "tilelang": "TileLang",
    "thunderkittens": "ThunderKittens",
    "hip": "HIP",
}

_BACKEND_GUIDANCE = {
    "cuda": (
        "Write the hot paths as CUDA C++ `__global__` kernels kept in Python strings and "
        "compile them at import time with `torch.utils.cpp_extension.load_inline`. "
        "`ModelNew.forward` must call those kernels for the real work."
    ),
    "triton": (
        "Write the hot paths as Triton kernels (`@triton.jit` functions using `triton.language as tl`) "
        "and launch them from `ModelNew.forward` with an explicit grid."
    ),
    "cute": (
        "Write the hot paths with the CUTLASS CuTe Python DSL (`import cutlass`, `import cutlass.cute as cute`): "
        "define `@cute.kernel` / `@cute.jit` functions and call them from `ModelNew.forward`."
    ),
    "tilelang": (
        "Write the hot paths in TileLang (`import tilelang`, `import tilelang.language as T`) as "
        "`@T.prim_func` programs compiled with tilelang and called from `ModelNew.forward`."
    ),
    "thunderkittens": (
        "Write the hot paths as CUDA C++ kernels using ThunderKittens tiles and warp/warpgroup operations "
        "(`#include \"kittens.cuh\"`, `using namespace kittens;`, register tiles `rt_*` and shared tiles `st_*`). "
        "Compile them with `torch.utils.cpp_extension.load_inline`, adding the include directory "
        "`os.environ['THUNDERKITTENS_ROOT'] + '/include'` and C++20 / sm_90a flags."
    ),
    "hip": (
        "Write the hot paths as HIP C++ `__global__` kernels for AMD GPUs kept in Python strings. "
        "Set `os.environ['CXX'] = 'hipcc'` before compiling them with "
        "`torch.utils.cpp_extension.load_inline`, and call them from `ModelNew.forward`."
    ),
}

_PRECISION_NOTES = {
    "fp32": (
        "Precision: the inputs and parameters are float32 and the output is compared with the float32 "
        "reference under a tight tolerance. Compute in float32; do not convert to half precision or bfloat16."
    ),
    "fp16": (
        "Precision: the evaluator casts the inputs and parameters to float16 (torch.half). Your kernels must "
        "accept float16 tensors; accumulate in float32 where it matters for accuracy."
    ),
    "bf16": (
        "Precision: the evaluator casts the inputs and parameters to bfloat16. Your kernels must accept "
        "bfloat16 tensors; accumulate in float32 where it matters for accuracy."
    ),
}

# Architecture facts for a few common GPUs; anything else just gets its name.
_GPU_FACTS = {
    "h100": "NVIDIA Hopper, compute capability 9.0 (sm_90): TMA, warpgroup MMA (wgmma), thread-block clusters",
    "h200": "NVIDIA Hopper, compute capability 9.0 (sm_90): TMA, warpgroup MMA (wgmma), thread-block clusters",
    "h20": "NVIDIA Hopper, compute capability 9.0 (sm_90)",
    "gh200": "NVIDIA Hopper, compute capability 9.0 (sm_90)",
    "b200": "NVIDIA Blackwell, compute capability 10.0 (sm_100): tensor memory, 5th-generation tensor cores",
    "b300": "NVIDIA Blackwell, compute capability 10.3 (sm_103)",
    "a100": "NVIDIA Ampere, compute capability 8.0 (sm_80): async copies (cp.async), TF32/BF16 tensor cores",
    "a10g": "NVIDIA Ampere, compute capability 8.6 (sm_86)",
    "a10": "NVIDIA Ampere, compute capability 8.6 (sm_86)",
    "l40s": "NVIDIA Ada Lovelace, compute capability 8.9 (sm_89)",
    "l4": "NVIDIA Ada Lovelace, compute capability 8.9 (sm_89)",
    "4090": "NVIDIA Ada Lovelace, compute capability 8.9 (sm_89)",
    "t4": "NVIDIA Turing, compute capability 7.5 (sm_75)",
    "v100": "NVIDIA Volta, compute capability 7.0 (sm_70)",
    "mi300x": "AMD CDNA 3 (gfx942): 64-wide wavefronts, MFMA matrix instructions",
    "mi325x": "AMD CDNA 3 (gfx942): 64-wide wavefronts, MFMA matrix instructions",
    "mi350x": "AMD CDNA 4 (gfx950): 64-wide wavefronts, MFMA matrix instructions",
    "mi355x": "AMD CDNA 4 (gfx950): 64-wide wavefronts, MFMA matrix instructions",
}


@dataclass(frozen=True)
class ExamplePair:
    """A worked example: a reference architecture and its rewrite for ``backend``."""

    name: str
    backend: str
    reference: str
    solution: str


def _check(value: str, accepted: tuple[str, ...], what: str) -> str:
    text = str(value).strip().lower()
    if text not in accepted:
        raise ValueError(f"unknown {what} {value!r}; accepted: {', '.join(accepted)}")
    return text


def _split_solution_stem(stem: str) -> tuple[str, str]:
    """``model_new_ex_add_triton`` -> (``add``, ``triton``); no suffix means cuda."""
    name = stem[len("model_new_ex_"):]
    for backend in BACKENDS:
        if backend != "cuda" and name.endswith("_" + backend):
            return name[: -len(backend) - 1], backend
    if name.endswith("_cuda"):
        return name[: -len("_cuda")], "cuda"
    return name, "cuda"


def find_example_pairs(backend: str = "cuda", prompts_dir: str | Path | None = None) -> list[ExamplePair]:
    """Worked examples for ``backend`` found in ``prompts_dir`` (default: the package's).

    The ``add`` example (used for one-shot prompts) comes first; the rest follow in
    name order.  Unreadable or incomplete pairs are skipped.
    """
    backend = _check(backend, BACKENDS, "backend")
    root = Path(prompts_dir) if prompts_dir is not None else PROMPTS_DIR
    if not root.is_dir():
        return []
    pairs: list[ExamplePair] = []
    for solution_path in sorted(root.glob("model_new_ex_*.py")):
        name, file_backend = _split_solution_stem(solution_path.stem)
        if file_backend != backend or not name:
            continue
        reference_path = root / f"model_ex_{name}.py"
        try:
            reference = reference_path.read_text(encoding="utf-8")
            solution = solution_path.read_text(encoding="utf-8")
        except OSError:
            continue
        if reference.strip() and solution.strip():
            pairs.append(ExamplePair(name, backend, reference.rstrip(), solution.rstrip()))
    pairs.sort(key=lambda p: (p.name != ONE_SHOT_EXAMPLE, p.name))
    return pairs


def _hardware_section(gpu_name: str) -> str:
    key = gpu_name.lower()
    facts = None
    for marker in sorted(_GPU_FACTS, key=len, reverse=True):
        if marker in key.replace(" ", "").replace("-", ""):
            facts = _GPU_FACTS[marker]
            break
    line = f"Target hardware: {gpu_name}"
    if facts:
        line += f" ({facts})"
    return (
        line + ". Choose block sizes, memory layouts and instructions that suit this GPU: coalesce global "
        "memory accesses, reuse data through shared memory or registers, and keep enough work in flight "
        "to fill every multiprocessor."
    )


def build_prompt(
    ref_arch_src: str,
    backend: str = "cuda",
    prompt_option: str = "one_shot",
    precision: str = "fp32",
    include_hardware_info: bool = False,
    hardware_gpu_name: str | None = None,
    prompts_dir: str | Path | None = None,
) -> str:
    """The full prompt for rewriting ``ref_arch_src`` with ``backend`` kernels.

    ``include_hardware_info`` adds a note about ``hardware_gpu_name`` (ignored when no
    name is given).  ``prompts_dir`` overrides where worked examples are looked up.
    Unknown backend / precision / option names raise ``ValueError``.
    """
    backend = _check(backend, BACKENDS, "backend")
    precision = _check(precision, PRECISIONS, "precision")
    prompt_option = _check(prompt_option, PROMPT_OPTIONS, "prompt option")
    title = _BACKEND_TITLES[backend]

    examples: list[ExamplePair] = []
    if prompt_option != "zero_shot":
        examples = find_example_pairs(backend, prompts_dir)
        if prompt_option == "one_shot":
            examples = examples[:1]

    parts: list[str] = [
        f"You are an expert GPU performance engineer. Your job is to make a PyTorch model faster by "
        f"replacing its operators with custom {title} kernels.",
        "You are given a reference architecture: a module-level `class Model(nn.Module)` plus the helpers "
        "`get_inputs()` and `get_init_inputs()`. Write a drop-in replacement class named `ModelNew` whose "
        "constructor takes the same arguments as `Model` and whose `forward` takes the same inputs and returns "
        "the same outputs (same shapes, dtypes and values, up to floating-point tolerance). You may replace a "
        "single operator, fuse several operators into one kernel, or change the algorithm (for example an "
        "online softmax), as long as the results stay the same for every valid input.",
        _BACKEND_GUIDANCE[backend],
        _PRECISION_NOTES[precision],
        "Rules: the new kernels must do the computation themselves - do not simply call the PyTorch "
        "operators you are replacing, cache or precompute outputs, return inputs or constants, skip work, "
        "run work on side streams or threads that the caller does not wait for, or tamper with timing, "
        "synchronisation or the evaluation harness. Do not wrap the kernels in try/except blocks or fall "
        "back to the reference implementation. Create parameters in the same order as `Model` so that "
        "seeded initialisation gives identical weights.",
    ]
    if include_hardware_info and hardware_gpu_name:
        parts.append(_hardware_section(str(hardware_gpu_name)))

    if examples:
        intro = (
            "Here is a worked example of the expected transformation."
            if len(examples) == 1
            else f"Here are {len(examples)} worked examples of the expected transformation."
        )
        parts.append(intro)
        for number, example in enumerate(examples, start=1):
            label = f"Example {number}" if len(examples) > 1 else "Example"
            parts.append(
                f"{label} - reference architecture:\n\n```python\n{example.reference}\n```\n\n"
                f"{label} - optimized architecture with {title} kernels:\n\n```python\n{example.solution}\n```"
            )

    parts.append(
        "Now optimize the following reference architecture:\n\n"
        f"```python\n{ref_arch_src.rstrip()}\n```"
    )
    parts.append(
        "Answer with the complete new source file - imports, kernel sources, any compilation code and "
        "`class ModelNew` - in a single ```python code block. Do not put any other code block before it, "
        "do not include testing code, and keep any explanation short."
    )
    return "\n\n".join(parts) + "\n"


def get_prompt_for_backend(
    ref_arch_src: str,
    backend: str = "cuda",
    option: str = "one_shot",
    precision: str = "fp32",
    include_hardware: bool = False,
    gpu_name: str | None = None,
) -> str:
    """Upstream-style spelling of :func:`build_prompt`."""
    return build_prompt(
        ref_arch_src,
        backend=backend,
        prompt_option=option,
        precision=precision,
        include_hardware_info=include_hardware,
        hardware_gpu_name=gpu_name,
    )
