"""Functions, ``__global__`` kernels, launches and bindings in lexed C/C++/CUDA (trusted parent).

:func:`analyse_module` reads the token stream of one extension (see :mod:`._cxx` for
the lexer): the function definitions with the identifiers their bodies use, the
``__global__`` kernels, where kernels are referenced and launched (``<<<...>>>``, the
launch APIs, or a macro wrapping either), and the Python-visible names that
``PYBIND11_MODULE`` / ``TORCH_LIBRARY`` bind to C++ functions.  :func:`launched_kernels`
answers which kernels a set of entry functions can launch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._cxx import CTok, parse_macros, split_args

__all__ = ["CFunc", "LAUNCH_APIS", "ModuleAnalysis", "analyse_module", "launched_kernels"]


_NOT_FUNCS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "static_assert",
              "__launch_bounds__", "__attribute__", "alignas", "__align__", "defined", "noexcept", "throw", "new",
              "delete", "operator", "typeid", "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"}
_TRAILING_OK = {"const", "noexcept", "override", "final", "mutable", "volatile", "&", "&&", "->", "::", "<", ">",
                "*", ",", "throw", "(", ")"}
LAUNCH_APIS = {"cudaLaunchKernel", "cudaLaunchKernelEx", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
               "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "hipLaunchKernelGGL",
               "hipLaunchKernel", "cudaLaunch"}


@dataclass
class CFunc:
    name: str
    line: int
    body_start: int
    body_end: int
    idents: set[str]
    launches: bool  # body contains <<< , a launch API, or a macro that does


@dataclass
class ModuleAnalysis:
    functions: dict[str, list[CFunc]]
    kernels: dict[str, int]  # __global__ name -> line
    kernel_refs: dict[str, list[int]]  # kernel name -> token indices of references (outside own definition)
    launch_sites_outside: set[str]  # kernels launched outside any recognised function body
    pybind: dict[str, str]  # python-visible name -> C++ function name


def _match_back(toks: list[CTok], close_idx: int) -> int:
    depth = 0
    for k in range(close_idx, -1, -1):
        if toks[k].text == ")":
            depth += 1
        elif toks[k].text == "(":
            depth -= 1
            if depth == 0:
                return k
    return -1


def _function_name_before_brace(toks: list[CTok], brace: int) -> tuple[str, int] | None:
    k = brace - 1
    while k >= 0 and toks[k].text != ")":
        t = toks[k]
        if t.kind == "ident" or t.kind == "number" or t.text in _TRAILING_OK:
            k -= 1
            continue
        if t.text == ":":  # constructor initialiser list   Foo() : a(1) {
            k -= 1
            continue
        return None
    if k < 0:
        return None
    # skip trailing initialiser-list groups:  X() : a(b), c(d) {   -> go to the parameter list
    op = _match_back(toks, k)
    while op > 0 and toks[op - 1].kind == "ident" and op >= 2 and toks[op - 2].text in (":", ","):
        k2 = op - 3
        while k2 >= 0 and toks[k2].text != ")":
            k2 -= 1
        if k2 < 0:
            break
        op = _match_back(toks, k2)
    if op <= 0:
        return None
    name = toks[op - 1]
    if name.kind != "ident" or name.text in _NOT_FUNCS:
        return None
    if op >= 2 and toks[op - 2].text in (".", "->", "="):
        return None
    return name.text, op - 1


def analyse_module(toks: list[CTok]) -> ModuleAnalysis:
    code = [t for t in toks if not t.directive]
    macros = parse_macros(toks)
    launch_macros = {m.name for m in macros.values()
                     if any(b.text == "<<<" or b.text in LAUNCH_APIS for b in m.body)}

    functions: dict[str, list[CFunc]] = {}
    n = len(code)
    i = 0
    while i < n:
        if code[i].text == "{":
            found = _function_name_before_brace(code, i)
            if found is not None:
                depth = 0
                j = i
                while j < n:
                    if code[j].text == "{":
                        depth += 1
                    elif code[j].text == "}":
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                body = code[i + 1:j]
                idents = {t.text for t in body if t.kind == "ident"}
                launches = any(t.text == "<<<" for t in body) or bool(idents & LAUNCH_APIS) \
                    or bool(idents & launch_macros)
                name, name_idx = found
                functions.setdefault(name, []).append(
                    CFunc(name, code[name_idx].line, i + 1, j, idents, launches))
                i = j + 1
                continue
        i += 1

    kernels: dict[str, int] = {}
    for k, t in enumerate(code):
        if t.text != "__global__":
            continue
        m = k + 1
        while m < n and code[m].text not in (";", "{"):
            if code[m].kind == "ident" and m + 1 < n and code[m + 1].text == "(" \
                    and code[m].text not in _NOT_FUNCS:
                kernels.setdefault(code[m].text, code[m].line)
                break
            if code[m].text == "(":  # skip __launch_bounds__(...) groups
                depth = 0
                while m < n:
                    if code[m].text == "(":
                        depth += 1
                    elif code[m].text == ")":
                        depth -= 1
                        if depth == 0:
                            break
                    m += 1
            m += 1

    kernel_refs: dict[str, list[int]] = {}
    outside: set[str] = set()
    inside = bytearray(n + 1)
    for fs in functions.values():
        for f in fs:
            inside[f.body_start:f.body_end] = b"\x01" * max(0, f.body_end - f.body_start)
    for k, t in enumerate(code):
        if t.kind == "ident" and t.text in kernels:
            kernel_refs.setdefault(t.text, []).append(k)
            nxt = code[k + 1].text if k + 1 < n else ""
            if (nxt == "<<<" or nxt == "<") and not inside[k]:
                outside.add(t.text)

    pybind: dict[str, str] = {}
    names_only: set[str] = set()
    for k in range(n - 3):
        if code[k].text in ("def", "impl") and k >= 1 and code[k - 1].text in (".", "->") \
                and code[k + 1].text == "(" and code[k + 2].kind == "string":
            # pybind11 m.def("name", &fn, ...) and the dispatcher's m.def("ns::name(Tensor x) -> Tensor") /
            # m.impl("name", fn): the name Python reaches and the C++ function bound to it
            pyname = re.split(r"[(\s.]", code[k + 2].text, maxsplit=1)[0].split("::")[-1]
            args, _ = split_args(code, k + 1)
            target = _bound_function(code, args[1:], functions, pyname, launch_macros) if len(args) > 1 else None
            if target:
                pybind.setdefault(pyname, target)
            names_only.add(pyname)  # m.def("op(Tensor x) -> Tensor") declares a schema only
    for pyname in names_only:
        pybind.setdefault(pyname, pyname)
    return ModuleAnalysis(functions, kernels, kernel_refs, outside, pybind)


# wrappers around the bound function in registrations: m.impl("op", TORCH_FN(fn)),
# m.impl("op", torch::dispatch(c10::DispatchKey::CUDA, TORCH_FN(fn))), py::arg("x"), ...
_BIND_WRAPPERS = {"TORCH_FN", "TORCH_FN_TYPE", "dispatch", "DispatchKey", "CppFunction", "makeFromUnboxedFunction",
                  "makeFromBoxedFunction", "c10", "torch", "at", "std", "py", "pybind11", "arg", "kw_only",
                  "call_guard", "gil_scoped_release", "return_value_policy", "CPU", "CUDA", "Meta",
                  "CompositeImplicitAutograd", "CompositeExplicitAutograd", "Autograd"}


def _bound_function(code: list[CTok], args: list[list[CTok]], functions: dict[str, list[CFunc]], pyname: str,
                    launch_macros: set[str]) -> str | None:
    """The C++ function a registration binds (a lambda becomes a synthetic function of its own)."""
    for arg in args:
        if arg and arg[0].text == "[":  # lambda: [captures](params) { body }
            depth, start, end = 0, None, None
            for k, t in enumerate(arg):
                if t.text == "{":
                    depth += 1
                    if depth == 1 and start is None:
                        start = k + 1
                elif t.text == "}":
                    depth -= 1
                    if depth == 0 and start is not None:
                        end = k
                        break
            if start is None:
                continue
            body = arg[start:end]
            idents = {t.text for t in body if t.kind == "ident"}
            launches = any(t.text == "<<<" for t in body) or bool(idents & LAUNCH_APIS) or bool(idents & launch_macros)
            name = f"<lambda {pyname}>"
            functions.setdefault(name, []).append(CFunc(name, arg[0].line, -1, -1, idents, launches))
            return name
    idents = [t.text for arg in args for t in arg if t.kind == "ident" and t.text not in _BIND_WRAPPERS]
    for name in idents:
        if name in functions:
            return name
    return idents[0] if idents else None


def launched_kernels(an: ModuleAnalysis, entries: set[str]) -> set[str]:
    """Kernels launched from a function reachable from ``entries`` (C++ names)."""
    seen: set[str] = set()
    work = [e for e in entries if e in an.functions]
    while work:
        name = work.pop()
        if name in seen:
            continue
        seen.add(name)
        for f in an.functions.get(name, []):
            for ident in f.idents:
                if ident in an.functions and ident not in seen:
                    work.append(ident)
    out: set[str] = set()
    for name in seen:
        for f in an.functions[name]:
            if f.launches:
                out |= f.idents & set(an.kernels)
    if entries:
        out |= an.launch_sites_outside
    return out
