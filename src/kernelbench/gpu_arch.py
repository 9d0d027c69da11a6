"""GPU architectures for extension builds and the GPU vendor (any process).

:func:`set_gpu_arch` writes ``TORCH_CUDA_ARCH_LIST`` / ``PYTORCH_ROCM_ARCH``; unlike
upstream it accepts a bare string (``"Hopper"``) as a one-element list instead of
walking its characters, writes numeric arch strings, knows Blackwell, and rejects
lists that mix NVIDIA and AMD names.  :func:`get_gpu_vendor` imports torch when
called.  Both are re-exported by ``kernelbench.utils`` (their upstream path).
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Sequence

__all__ = ["AMD_ARCHS", "NVIDIA_ARCHS", "get_gpu_vendor", "set_gpu_arch"]

# Numeric compute capabilities written to TORCH_CUDA_ARCH_LIST.  SASS built for X.0
# runs on later minors of the same major (10.0 -> 10.3, 12.0 -> 12.1), so only the
# first minor of each family is listed, which keeps older nvcc versions happy.
NVIDIA_ARCHS: dict[str, tuple[str, ...]] = {
    "Maxwell": ("5.0", "5.2"),
    "Pascal": ("6.0", "6.1"),
    "Volta": ("7.0",),
    "Turing": ("7.5",),
    "Ampere": ("8.0", "8.6"),
    "Ada": ("8.9",),
    "Hopper": ("9.0",),
    "Blackwell": ("10.0", "12.0"),
}

# ROCm targets written to PYTORCH_ROCM_ARCH.
AMD_ARCHS: tuple[str, ...] = ("gfx942", "gfx950")


def set_gpu_arch(arch_list: Sequence[str] | str) -> str:
    """Restrict extension builds to the given architectures.

    NVIDIA family names (``Maxwell`` ... ``Blackwell``, any case) set
    ``TORCH_CUDA_ARCH_LIST`` to their numeric compute capabilities joined by ``;``;
    AMD targets (``gfx942``, ``gfx950``) set ``PYTORCH_ROCM_ARCH``.  A bare string is
    treated as a one-element list (upstream iterated over its characters).  Unknown
    names, an empty list, or a mix of vendors raise ``ValueError``.  Returns the value
    written.
    """
    if isinstance(arch_list, str):
        arch_list = [arch_list]
    names = [str(a).strip() for a in (arch_list or [])]
    names = [n for n in names if n]
    if not names:
        raise ValueError("set_gpu_arch: no architecture given")

    nvidia_by_lower = {k.lower(): k for k in NVIDIA_ARCHS}
    nvidia: list[str] = []
    amd: list[str] = []
    for name in names:
        if name.lower() in nvidia_by_lower:
            nvidia.append(nvidia_by_lower[name.lower()])
        elif name.lower() in AMD_ARCHS:
            amd.append(name.lower())
        else:
            valid = ", ".join([*NVIDIA_ARCHS, *AMD_ARCHS])
            raise ValueError(f"Invalid architecture: {name!r}; valid: {valid}")
    if nvidia and amd:
        raise ValueError(
            f"set_gpu_arch: cannot mix NVIDIA ({', '.join(nvidia)}) and AMD ({', '.join(amd)}) architectures"
        )

    def _dedupe(items: Iterable[str]) -> list[str]:
        seen: dict[str, None] = {}
        for item in items:
            seen.setdefault(item, None)
        return list(seen)

    if nvidia:
        value = ";".join(_dedupe(cc for fam in nvidia for cc in NVIDIA_ARCHS[fam]))
        os.environ["TORCH_CUDA_ARCH_LIST"] = value
    else:
        value = ";".join(_dedupe(amd))
        os.environ["PYTORCH_ROCM_ARCH"] = value
    return value


def get_gpu_vendor(device: Any = None) -> str:
    """``"nvidia"``, ``"amd"`` or ``"unknown"`` (no GPU) for ``device``.

    Reads the build of torch (``torch.version.hip``) as well as the device name, so a
    ROCm device whose name lacks "AMD" is still recognised.
    """
    import torch

    if not torch.cuda.is_available():
        return "unknown"
    if device is None:
        device = torch.cuda.current_device()
    name = torch.cuda.get_device_name(device).upper()
    if getattr(torch.version, "hip", None) or "AMD" in name or "INSTINCT" in name or "RADEON" in name:
        return "amd"
    if "NVIDIA" in name or getattr(torch.version, "cuda", None):
        return "nvidia"
    return "unknown"
