"""RH-03 foreign_code: prebuilt binaries, ctypes/cffi, shared objects, binary payloads.

What it catches
    Python: ``ctypes`` / ``cffi``, ``torch.ops.load_library``,
    ``torch.classes.load_library``, ``importlib.machinery.ExtensionFileLoader``,
    ``torch.jit.load``, ``sys.setdlopenflags``, ``mmap``, CUDA driver module loaders
    (``cuModuleLoad*`` / ``cuLibraryLoad*`` through cuda-python or pycuda),
    ``torch.utils.cpp_extension.load`` (its sources or objects live outside the
    candidate), ``extra_ldflags`` / ``extra_objects`` that link a non-standard library,
    payload decoders (``base64``, ``binascii``, ``bytes.fromhex``, ``zlib`` / ``lzma`` /
    ``bz2`` / ``gzip`` decompression, ``codecs.decode``) and binary literals over 512
    bytes (``bytes`` literals, base64- or hex-looking strings, strings of control
    characters, lists of more than 512 byte values).  Embedded C/C++: ``dlopen`` /
    ``dlsym``, ``LoadLibrary`` / ``GetProcAddress``, ``cuModuleLoad*``,
    ``cuLibraryLoad*``, ``cuGetProcAddress``, ``cudaGetDriverEntryPoint``, ``<dlfcn.h>``
    and initialisers of more than 512 integer byte literals.

Why it matters
    Code that arrives as a binary cannot be reviewed or attributed, and native code
    loaded this way can patch the CUDA runtime, the timer or the comparison from below
    Python (A10, A11, A26).

Example
    ``lib = ctypes.CDLL("/tmp/fast.so"); lib.run(ptr)``; obfuscated:
    ``_c = __import__("ct" + "ypes"); _c.CDLL(path)``; or a 4 KiB base64 string decoded
    and written to disk.

Known limits
    Large constant lookup tables written as float literals are not treated as payloads.
    Binary content split over many small literals and joined at run time is missed.
"""

from __future__ import annotations

import ast
import re

from ._context import Context, Hit, Rule, hit

PY_PREFIXES = (
    "ctypes", "_ctypes", "cffi", "_cffi_backend", "torch.ops.load_library", "torch.classes.load_library",
    "importlib.machinery.ExtensionFileLoader", "torch.jit.load", "sys.setdlopenflags", "mmap",
    "os.add_dll_directory", "pycuda.driver.module_from_file", "pycuda.driver.module_from_buffer",
    "base64", "binascii", "builtins.bytes.fromhex", "builtins.bytearray.fromhex", "zlib.decompress",
    "lzma.decompress", "bz2.decompress", "gzip.decompress", "codecs.decode", "zipimport",
)
CXX_CALLS = {"dlopen", "dlmopen", "dlsym", "dlvsym", "LoadLibrary", "LoadLibraryA", "LoadLibraryW", "LoadLibraryExA",
             "LoadLibraryExW", "GetProcAddress", "cuGetProcAddress", "cuGetProcAddress_v2",
             "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion"}
CXX_PREFIXES = ("cuModuleLoad", "cuLibraryLoad", "cudaLibraryLoad")
STD_LIBS = {"cublas", "cublasLt", "cudart", "cuda", "curand", "cusparse", "cusolver", "cufft", "cudnn", "nvrtc",
            "c10", "c10_cuda", "torch", "torch_cpu", "torch_cuda", "torch_python", "stdc++", "m", "gomp", "omp",
            "nvToolsExt", "cupti", "rt"}
_B64 = re.compile(r"[A-Za-z0-9+/=_\-\s]+")
_HEX = re.compile(r"(?:0x)?[0-9a-fA-F\s,\\x]+")
LIMIT = 512


def _payload_string(text: str) -> str | None:
    stripped = "".join(text.split())
    if len(stripped) * 3 // 4 > LIMIT and _B64.fullmatch(text) and any(c.isdigit() for c in stripped) \
            and any(c.isalpha() for c in stripped):
        return f"base64-like string literal ({len(stripped)} chars)"
    if len(stripped) // 2 > LIMIT and _HEX.fullmatch(text):
        return f"hex-like string literal ({len(stripped)} chars)"
    binary = sum(1 for c in text if (ord(c) < 32 and c not in "\n\r\t") or 0x7f <= ord(c) <= 0xff)
    if binary > LIMIT:
        return f"binary string literal ({binary} non-printable chars)"
    return None


def _ldflag_hits(ctx: Context) -> list[Hit]:
    out = []
    for m in ctx.ext_modules:
        for kw in ("extra_ldflags", "extra_objects"):
            node = ctx.call_arg(m.node, kw, None)
            if node is None:
                continue
            items = ctx.fold_list(node, partial=True) or []
            flags = ["".join(s.text for s in it) for it in items]
            if kw == "extra_objects":
                out.append(hit(m.line, f"{m.kind}(extra_objects=...) links prebuilt objects"))
                continue
            for f in flags:
                for part in f.split():
                    lib = part[2:] if part.startswith("-l") else None
                    if part.endswith((".so", ".a", ".o")) or ".so." in part \
                            or (lib is not None and lib not in STD_LIBS) or part.startswith("-Wl,--whole-archive"):
                        out.append(hit(m.line, f"{m.kind} extra_ldflags links {part!r}"))
    return out


def _cxx_byte_arrays(ctx: Context) -> list[Hit]:
    out = []
    for u in ctx.units:
        run, start_line = 0, 0
        toks = u.tokens
        for t in toks:
            if t.kind == "number" and "." not in t.text and (t.text.lower().startswith("0x") or t.text.isdigit()):
                if run == 0:
                    start_line = t.line
                run += 1
            elif t.text == "," and run:
                continue
            else:
                if run > LIMIT:
                    out.append(hit(start_line, f"C++: byte array initialiser ({run} integer literals)"))
                run = 0
        if run > LIMIT:
            out.append(hit(start_line, f"C++: byte array initialiser ({run} integer literals)"))
    return out


def check(ctx: Context) -> list[Hit]:
    hits = ctx.ref_hits(PY_PREFIXES)
    for r in ctx.refs:
        last = r.qname.split(".")[-1]
        if r.rooted and last.startswith(CXX_PREFIXES):
            hits.append(hit(r.line, r.qname))
    for m in ctx.ext_modules:
        if m.kind == "load":
            hits.append(hit(m.line, "torch.utils.cpp_extension.load (sources or binaries outside the candidate)"))
    hits += _ldflag_hits(ctx)
    for line, text, _node in ctx.python_strings():
        what = _payload_string(text)
        if what:
            hits.append(hit(line, what))
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, bytes) and len(node.value) > LIMIT:
            hits.append(hit(node.lineno, f"bytes literal ({len(node.value)} bytes)"))
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)) and len(node.elts) > LIMIT and all(
                isinstance(e, ast.Constant) and type(e.value) is int and 0 <= e.value <= 255 for e in node.elts):
            hits.append(hit(node.lineno, f"byte-value list literal ({len(node.elts)} items)"))
    hits += ctx.cxx_hits(CXX_CALLS, call_only=False)
    hits += [hit(ci.line, f"C++: {ci.text}") for ci in ctx.cxx_idents
             if ci.text.startswith(CXX_PREFIXES) and ci.prev not in (".", "->")]
    hits += [hit(line, f"C++: #include <{h}>") for line, h in ctx.cxx_headers if h == "dlfcn.h"]
    hits += _cxx_byte_arrays(ctx)
    return hits


RULE = Rule("RH-03", "foreign_code", check, __doc__ or "")
