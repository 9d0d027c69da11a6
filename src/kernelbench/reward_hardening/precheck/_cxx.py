"""A small C/C++/CUDA lexer for the static precheck.

The precheck never compiles or preprocesses candidate sources.  It lexes them into
tokens so that rules can look for identifiers (``cudaStreamCreate``), qualified names
(``std::thread``), header names (``<thread>``) and string literals (``"/proc/self"``)
without being fooled by comments or by text inside string literals.

What the lexer does, in order:

* splices backslash-newline pairs (translation phase 2), so an identifier split over a
  line continuation is seen whole;
* drops ``//`` and ``/* */`` comments;
* keeps string, raw-string and character literals as single ``string``/``char``
  tokens (their text is the literal body, escapes left as written);
* marks tokens that belong to a preprocessor directive (``directive`` = its id) and turns
  the operand of ``#include`` into one ``header`` token;
* lexes identifiers, pp-numbers and punctuators (longest match, including CUDA's
  ``<<<`` / ``>>>`` and the token-paste operator ``##``).

:func:`expand_pastes` then reconstructs identifiers built with ``##`` in macros;
:func:`._cxx_defs.analyse_module` extracts function definitions, ``__global__`` kernels
and whether those kernels are launched from a given set of entry functions.  Runs in
the trusted parent.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CTok", "Unit", "expand_pastes", "lex", "looks_like_cxx", "parse_macros", "qualified_name",
           "split_args"]


@dataclass(frozen=True)
class CTok:
    kind: str  # ident | number | punct | string | char | header
    text: str
    line: int
    directive: int = 0  # 0: ordinary code; n > 0: token of the n-th preprocessor directive
    pasted: bool = False  # synthesised from a ## paste


@dataclass
class Unit:
    """One C/C++/CUDA source string (possibly folded from several Python literals)."""

    text: str
    seg_starts: list[int]
    seg_lines: list[int]
    seg_multiline: list[bool]
    node_ids: frozenset
    lang: str = "cxx"  # cpp | cuda | cxx (unknown)
    module: int | None = None  # index of the load_inline/load call it was passed to
    tokens: list[CTok] = field(default_factory=list)
    analysis: Any = None  # cache: _cxx_defs.analyse_module(tokens)
    _newlines: list[int] | None = None

    def line_of(self, offset: int) -> int:
        if not self.seg_starts:
            return 0
        i = max(0, bisect.bisect_right(self.seg_starts, offset) - 1)
        base = self.seg_lines[i]
        if not self.seg_multiline[i]:
            return base
        if self._newlines is None:
            self._newlines = [k for k, c in enumerate(self.text) if c == "\n"]
        nl = self._newlines
        return base + bisect.bisect_left(nl, offset) - bisect.bisect_left(nl, self.seg_starts[i])


_PUNCTS = sorted(
    """<<< >>> <<= >>= ... ->* :: -> ## << >> <= >= == != && || ++ -- += -= *= /= %= &= |= ^= .*
    { } [ ] ( ) ; : ? . , + - * / % ^ & | ~ ! = < > #""".split(),
    key=len, reverse=True,
)
_IDENT_START = re.compile(r"[A-Za-z_$\u0080-\uffff]")
_IDENT = re.compile(r"[A-Za-z0-9_$\u0080-\uffff]*")
_PPNUM = re.compile(r"\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.])*")
_RAW_PREFIXES = ("R", "u8R", "uR", "UR", "LR")
_STR_PREFIXES = ("u8", "u", "U", "L")

_CXX_HINTS = ("__global__", "#include", "__device__", "PYBIND11_MODULE", "TORCH_LIBRARY", "torch::", "at::",
              "#define", "#pragma", "extern \"C\"", "__shared__", "cudaStream", "<<<")


def looks_like_cxx(text: str) -> bool:
    """Heuristic: does a Python string look like C/C++/CUDA source?"""
    if any(h in text for h in _CXX_HINTS):
        return True
    return "{" in text and ";" in text and "(" in text and "}" in text


def _splice(text: str) -> tuple[str, list[int]]:
    """Remove backslash-newline pairs; return the new text and an offset map."""
    if "\\\n" not in text and "\\\r\n" not in text:
        return text, []
    out: list[str] = []
    offs: list[int] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            if text.startswith("\n", i + 1):
                i += 2
                continue
            if text.startswith("\r\n", i + 1):
                i += 3
                continue
        out.append(c)
        offs.append(i)
        i += 1
    return "".join(out), offs


def lex(unit: Unit, directive_base: int = 0) -> list[CTok]:
    """Tokenise ``unit.text``; lines are mapped back to the Python source.

    Directive ids start after ``directive_base`` so that token lists of several units
    can be concatenated without two directives sharing an id.
    """
    src, offmap = _splice(unit.text)

    def line(pos: int) -> int:
        orig = offmap[pos] if offmap and pos < len(offmap) else (offmap[-1] if offmap and pos >= len(offmap) else pos)
        return unit.line_of(orig)

    toks: list[CTok] = []
    i, n = 0, len(src)
    at_line_start = True
    in_directive = 0
    n_directives = directive_base
    expect_header = False
    while i < n:
        c = src[i]
        if c == "\n":
            at_line_start = True
            in_directive = 0
            expect_header = False
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            # a block comment spanning lines still ends a directive only at a real newline
            i = n if j < 0 else j + 2
            continue
        start = i
        if c == "#" and at_line_start:
            at_line_start = False
            n_directives += 1
            in_directive = n_directives
            toks.append(CTok("punct", "#", line(start), in_directive))
            i += 1
            # directive name
            while i < n and src[i] in " \t":
                i += 1
            m = _IDENT.match(src, i)
            name = m.group(0) if m else ""
            if name:
                toks.append(CTok("ident", name, line(i), in_directive))
                i = m.end()
            expect_header = name in ("include", "include_next", "import")
            continue
        at_line_start = False
        if expect_header:
            expect_header = False
            if c in "<\"":
                close = ">" if c == "<" else "\""
                j = src.find(close, i + 1)
                eol = src.find("\n", i + 1)
                if j >= 0 and (eol < 0 or j < eol):
                    toks.append(CTok("header", src[i + 1:j].strip(), line(start), in_directive))
                    i = j + 1
                    continue
        if _IDENT_START.match(c):
            m = _IDENT.match(src, i + 1)
            word = src[i:m.end()]
            j = m.end()
            if j < n and src[j] == "\"" and word in _RAW_PREFIXES:
                # raw string  R"delim( ... )delim"
                k = src.find("(", j + 1)
                if k >= 0:
                    delim = src[j + 1:k]
                    endm = src.find(")" + delim + "\"", k + 1)
                    end = n if endm < 0 else endm + len(delim) + 2
                    toks.append(CTok("string", src[k + 1:endm if endm >= 0 else n], line(start), in_directive))
                    i = end
                    continue
            if j < n and src[j] in "\"'" and word in _STR_PREFIXES:
                i = j
                c = src[j]  # fall through into the literal lexer below, keeping `start`
            else:
                toks.append(CTok("ident", word, line(start), in_directive))
                i = j
                continue
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            toks.append(CTok("string" if c == "\"" else "char", src[i + 1:min(j, n)], line(start), in_directive))
            i = j + 1
            continue
        if c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit()):
            m = _PPNUM.match(src, i)
            toks.append(CTok("number", m.group(0), line(start), in_directive))
            i = m.end()
            continue
        for p in _PUNCTS:
            if src.startswith(p, i):
                toks.append(CTok("punct", p, line(start), in_directive))
                i += len(p)
                break
        else:
            toks.append(CTok("punct", c, line(start), in_directive))
            i += 1
    return toks


def qualified_name(toks: list[CTok], i: int) -> str:
    """``a::b::c`` for the identifier at ``i`` (looking back through ``::``)."""
    parts = [toks[i].text]
    j = i - 1
    while j >= 1 and toks[j].text == "::" and toks[j - 1].kind == "ident":
        parts.append(toks[j - 1].text)
        j -= 2
    if j >= 0 and toks[j].text == "::" and (j == 0 or toks[j - 1].kind != "ident"):
        parts.append("")  # leading ::  (global namespace)
    return "::".join(reversed(parts))


# ---------------------------------------------------------------------------
# token pasting

@dataclass
class _Macro:
    name: str
    params: list[str] | None  # None: object-like
    body: list[CTok]
    line: int


def parse_macros(toks: list[CTok]) -> dict[str, _Macro]:
    macros: dict[str, _Macro] = {}
    i, n = 0, len(toks)
    while i < n:
        t = toks[i]
        if t.directive and t.text == "#" and i + 2 < n and toks[i + 1].text == "define" and toks[i + 2].kind == "ident":
            name_tok = toks[i + 2]
            j = i + 3
            params = None
            end = j
            while end < n and toks[end].directive == t.directive:
                end += 1
            if j < end and toks[j].text == "(":
                k = j + 1
                params = []
                while k < end and toks[k].text != ")":
                    if toks[k].kind == "ident" or toks[k].text == "...":
                        params.append(toks[k].text)
                    k += 1
                j = k + 1
            macros[name_tok.text] = _Macro(name_tok.text, params, toks[j:end], name_tok.line)
            i = end
            continue
        i += 1
    return macros


def split_args(toks: list[CTok], open_idx: int) -> tuple[list[list[CTok]], int]:
    depth = 0
    args: list[list[CTok]] = [[]]
    k = open_idx
    while k < len(toks):
        t = toks[k]
        if t.text in ("(", "[", "{"):
            depth += 1
            if depth == 1:
                k += 1
                continue
        elif t.text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return args, k
        elif t.text == "," and depth == 1:
            args.append([])
            k += 1
            continue
        args[-1].append(t)
        k += 1
    return args, k


def expand_pastes(toks: list[CTok], api_like: re.Pattern) -> list[CTok]:
    """Identifiers produced by ``##`` token pasting (best effort, no full preprocessor).

    * ``a ## b`` with literal operands in any macro body gives ``ab``;
    * for every invocation of a function-like macro whose body pastes its parameters,
      the arguments are substituted and pasted;
    * when the source pastes anything at all, the identifier arguments of every macro
      invocation are also concatenated pairwise and in full (this catches a paste
      hidden behind one level of forwarding macro).

    Only names matching ``api_like`` (the API names rules look for) are returned.
    """
    if not any(t.text == "##" for t in toks):
        return []
    macros = parse_macros(toks)
    out: list[CTok] = []

    def paste_body(body: list[CTok], env: dict[str, list[CTok]], line: int) -> None:
        for k, t in enumerate(body):
            if t.text != "##" or k == 0 or k + 1 >= len(body):
                continue
            left = env.get(body[k - 1].text, [body[k - 1]])
            right = env.get(body[k + 1].text, [body[k + 1]])
            if left and right:
                word = left[-1].text + right[0].text
                # chains a ## b ## c
                m = k + 1
                while m + 2 < len(body) and body[m + 1].text == "##":
                    nxt = env.get(body[m + 2].text, [body[m + 2]])
                    if nxt:
                        word += nxt[0].text
                    m += 2
                if api_like.match(word):
                    out.append(CTok("ident", word, line, 0, True))

    for mac in macros.values():
        if any(t.text == "##" for t in mac.body):
            paste_body(mac.body, {}, mac.line)
    for i, t in enumerate(toks):
        if t.kind != "ident" or i + 1 >= len(toks) or toks[i + 1].text != "(":
            continue
        if i >= 2 and toks[i - 1].text == "define":
            continue
        mac = macros.get(t.text)
        args, _ = split_args(toks, i + 1)
        if mac is not None and mac.params and any(b.text == "##" for b in mac.body):
            env = dict(zip(mac.params, args, strict=False))
            paste_body(mac.body, env, t.line)
        if mac is not None:
            idents = [a[0].text for a in args if len(a) == 1 and a[0].kind == "ident"]
            cands = {a + b for a, b in zip(idents, idents[1:], strict=False)}
            if len(idents) > 2:
                cands.add("".join(idents))
            for word in sorted(cands):
                if api_like.match(word):
                    out.append(CTok("ident", word, t.line, 0, True))
    return out
