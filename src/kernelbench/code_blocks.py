"""Fenced code blocks in a model's reply: finding them and extracting their bodies (any process).

Differences from upstream KernelBench's extractors (same names, same call shapes,
re-exported by ``kernelbench.utils``): blocks whose language tag is *not* one of the
requested languages are skipped (upstream returned them with the tag glued on),
longer fences are honoured (four backticks may wrap a block that itself contains
three), and an unterminated block (a reply cut off at ``max_tokens``) is no block.
Only the standard library is imported.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

__all__ = ["extract_code_blocks", "extract_first_code", "extract_last_code", "extract_python_code",
           "find_code_blocks", "remove_code_block_header"]

# A fence opens with three or more backticks, optionally followed by an info string
# whose first word is the language tag.  It may start mid-line (models sometimes write
# "Here it is: ```python") but must follow whitespace, a colon or the start of the
# text, so the closing half of an inline ```x``` span never opens a block.  The body
# starts on the next line.
_OPEN_FENCE = re.compile(r"(?<![^\s:])(`{3,})[ \t]*([^\s`]*)[^\n`]*\n")

_LANGUAGE_ALIASES = {
    "py": "python",
    "python3": "python",
    "c++": "cpp",
    "cxx": "cpp",
}


def _canonical_tag(tag: str) -> str:
    tag = tag.strip().lower().lstrip("{.").rstrip("}")
    return _LANGUAGE_ALIASES.get(tag, tag)


def _wanted_tags(languages: Iterable[str] | str | None) -> set[str] | None:
    if languages is None:
        return None
    if isinstance(languages, str):
        languages = [languages]
    wanted = {_canonical_tag(lang) for lang in languages if lang and lang.strip()}
    return wanted or None


def _clean_body(body: str) -> str:
    # Drop leading blank lines and trailing whitespace; keep the first line's indent.
    body = re.sub(r"\A(?:[ \t]*\n)+", "", body)
    return body.rstrip()


def find_code_blocks(text: str | None) -> list[tuple[str, str]]:
    """All terminated fenced blocks in ``text`` as ``(tag, body)`` pairs, in order.

    ``tag`` is the lower-cased language tag (``""`` when the fence has none; common
    aliases such as ``py`` / ``c++`` are mapped to ``python`` / ``cpp``).  A closing
    fence is a line holding only backticks, at least as many as the opening fence; if
    there is none, the first later run of that many backticks closes the block.  A block
    with no closing fence at all is ignored.
    """
    if not text:
        return []
    blocks: list[tuple[str, str]] = []
    pos = 0
    while True:
        opening = _OPEN_FENCE.search(text, pos)
        if opening is None:
            break
        ticks = len(opening.group(1))
        tag = _canonical_tag(opening.group(2))
        body_start = opening.end()
        closing_line = re.compile(r"^[ \t]*`{%d,}[ \t]*$" % ticks, re.MULTILINE)
        closing = closing_line.search(text, body_start)
        if closing is not None:
            body_end, pos = closing.start(), closing.end()
        else:
            inline = text.find("`" * ticks, body_start)
            if inline < 0:
                break  # unterminated: the reply was probably cut off
            body_end, pos = inline, inline + ticks
            while pos < len(text) and text[pos] == "`":
                pos += 1
        blocks.append((tag, _clean_body(text[body_start:body_end])))
    return blocks


def _matching_blocks(text: str | None, languages: Iterable[str] | str | None) -> list[str]:
    wanted = _wanted_tags(languages)
    out = []
    for tag, body in find_code_blocks(text):
        if wanted is None or tag == "" or tag in wanted:
            out.append(body)
    return out


def extract_first_code(output_string: str | None, code_language_types: Sequence[str] | str) -> str | None:
    """Body of the first fenced block tagged with one of ``code_language_types``.

    Untagged blocks count as a match; blocks tagged with another language are skipped.
    Returns ``None`` when there is no such (terminated) block.
    """
    blocks = _matching_blocks(output_string, code_language_types)
    return blocks[0] if blocks else None


def extract_last_code(output_string: str | None, code_language_types: Sequence[str] | str) -> str | None:
    """Body of the last matching fenced block (see :func:`extract_first_code`)."""
    blocks = _matching_blocks(output_string, code_language_types)
    return blocks[-1] if blocks else None


def extract_code_blocks(text: str | None, code_language_types: Sequence[str] | str) -> str:
    """All matching fenced block bodies joined by a blank line (``""`` when none).

    Returns one string, as upstream does; use :func:`find_code_blocks` for a list.
    """
    return "\n\n".join(_matching_blocks(text, code_language_types))


def extract_python_code(text: str | None) -> str:
    """All ```python blocks of ``text`` joined by newlines; ``""`` when there is none."""
    return "\n".join(_matching_blocks(text, ["python"]))


def remove_code_block_header(code: str, code_language_type: str) -> str:
    """Drop a leading language word (``python``, ``cpp`` ...) left on the first line of a block."""
    if code.startswith(code_language_type):
        code = code[len(code_language_type):].strip()
    return code
