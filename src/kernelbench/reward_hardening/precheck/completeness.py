"""RH-46 completeness: the static analysis could not cover the whole source.

What it catches
    A source the precheck could not analyse completely: an analysis step or another
    rule raised (typically ``RecursionError`` on pathological nesting), or the source
    nests deeper than ``MAX_ANALYSIS_DEPTH`` (200) AST levels, where the recursive
    helpers are not followed.  Every failure is listed with its step or rule name.

Why it matters
    A rule that raises reports nothing, so a candidate that can make one raise turns
    that rule off: appending a 1,200-term ``1 + 1 + ...`` expression once made the
    module-constant step fail and hid a rebinding of the reference's ``batch_size``
    (RH-08).  The precheck fails closed instead: an incomplete analysis is a
    ``warning`` (SUSPICIOUS, no verified runtime) under both policies -- not an error,
    because the fault may be the evaluator's, but never a silent pass.

Example
    ``_PAD = 1 + 1 + 1 + ...`` (1,000 terms) at module level next to ``batch_size = 1``.

Known limits
    It runs after every other rule and sees only what they reported; a rule that
    returns early without raising is not visible here.  The runtime detectors still
    run on such a candidate.
"""

from __future__ import annotations

from ._context import MAX_ANALYSIS_DEPTH, Context, Hit, Rule, hit


def check(ctx: Context) -> list[Hit]:
    hits = [hit(0, f"{'rule' if e.get('code') != 'precheck' else 'analysis step'} {e.get('rule')!r} failed: "
                   f"{e.get('error')}", step=e.get("rule"))
            for e in ctx.facts.rule_errors]
    if ctx.max_depth > MAX_ANALYSIS_DEPTH:
        hits.append(hit(ctx.max_depth_line, f"source nests {ctx.max_depth} levels deep (analysis limit "
                                             f"{MAX_ANALYSIS_DEPTH})", step="depth"))
    return hits


RULE = Rule("RH-46", "completeness", check, __doc__ or "")
