"""When a notebook shows a pitfall on purpose.

Tutorials and docs demonstrate the mistakes the error rules (JAX401-404) find: a cell that jits a
function with a value-dependent `if`, under a heading "The following fails", or with `# This will
fail!` above a `try`/`except`. They also time a call the wrong way beside the right one (`# WRONG:
measures dispatch time`) and draw twice from one key to show the same numbers come back. The claim
is true and nothing should change, so a finding in such a cell is dropped. The evidence is what a
reader of the notebook sees: the cell's saved outputs (the tracing error, a printed tracer), the
prose just before the cell, and the cell's own comments. Only notebooks (.ipynb, MyST) carry it: a
`.py` file's findings stand.
"""

from __future__ import annotations

import io
import re
import tokenize

from ...notebook_format import Cell
from ..knowledge import apis

# Prose that teaches a tracing pitfall: it says the code below fails ("this fails", "# This will
# fail!", "jit does not work with strings", "incompatible with JIT", "iterators are a no no"), or
# it explains tracing itself ("Traced values", "print executes at trace time", "static shapes",
# "side effects", "pure functions").
_PITFALL = re.compile(
    r"\b(?:fail(?:s|ed|ing|ure)?|raises?|throws?|violates?|incompatible|limitations?|pitfalls?|gotchas?"
    r"|workarounds?|no[- ]no|sharp bits"
    r"|(?:an|this|the following|will give an|gives an)\s+error"
    r"|(?:does\s+not|doesn't|do\s+not|don't|won't|will\s+not|cannot|can't|can\s+not)\s+work"
    r"|not\s+(?:allowed|supported)"
    r"|trac(?:e|es|ed|ing|er|ers)|trace-time|static\s+shapes?|concrete\s+values?"
    r"|side[- ]?effects?|impure|(?:not|non)[- ]pure|pure\s+functions?|purity"
    r"|" + "|".join(sorted(apis.TRACING_ERRORS)) + r")\b", re.IGNORECASE)


def commentary(cell: Cell) -> str:
    """What the notebook says about the cell: the prose just before it and its comments, whole
    lines and trailing ones (`print(normal(key))  # generates same number`)."""
    return "\n".join([cell.prose, *_comments(cell.source)])


def _comments(source: str) -> list[str]:
    try:
        return [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
                if token.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):  # a cell that does not tokenize: whole comment lines
        return [line.strip() for line in source.splitlines() if line.strip().startswith("#")]


def shows_tracing_error(cell: Cell) -> bool:
    """The cell failed with a tracing error when it was last run, or printed one it caught
    (`except Exception as ex: print(type(ex).__name__, ex)`): its saved outputs say so."""
    return not apis.TRACING_ERRORS.isdisjoint(cell.shown_errors) or _TRACING_ERROR_NAMED.search(
        cell.shown_text) is not None


_TRACING_ERROR_NAMED = re.compile(r"\b(?:" + "|".join(sorted(apis.TRACING_ERRORS)) + r")\b")


def teaches_pitfall(cell: Cell) -> bool:
    """The prose before the cell or its comments say the code fails, or explain tracing."""
    return _PITFALL.search(commentary(cell)) is not None


# A cell marked as the wrong way on purpose: "# WRONG", "incorrect", "the most common mistake",
# "don't do this". ("naive" and "bad" are left out: a benchmark's prose says them of a baseline it
# means to measure.)
_MARKED_WRONG = re.compile(
    r"\b(?:wrong|incorrect(?:ly)?|mistakes?|pitfalls?|gotchas?|anti-?patterns?|no[- ]no"
    r"|(?:don't|do\s+not)\s+do\s+this)\b", re.IGNORECASE)

# A cell showing what one key gives twice: "the same key gives the SAME random numbers",
# "reusing the key", "# the values remain the same", "# No no no!".
_SAME_DRAW = re.compile(
    r"\bsame\s+(?:random\s+)?(?:keys?|values?|numbers?|results?|samples?|outputs?)\b"
    r"|\breus(?:e|es|ed|ing)\s+(?:the\s+|a\s+)?(?:same\s+)?(?:prng\s+|random\s+)?keys?\b"
    r"|\b(?:values?|numbers?)\s+(?:remain|stay|are)\s+the\s+same\b|\bno[- ]no\b", re.IGNORECASE)


# A cell under prose about asynchronous dispatch: it shows the unwaited figure on purpose.
_ASYNC_DISPATCH = re.compile(r"\basynchron\w*|\basync\b|\breturns?\s+immediately|\bnot\s+waited",
                             re.IGNORECASE)


def shows_async_dispatch(cell: Cell) -> bool:
    """The prose around the cell or its comments are about asynchronous dispatch: a tutorial
    timing a call without a wait to show what the wait changes (`%time f(x)` under "Jax is
    asynchronous", then `%time f(x).block_until_ready()`; or a timing followed by "the above
    timing ... is the time taken to dispatch the work")."""
    return _ASYNC_DISPATCH.search(commentary(cell)) is not None or _TOLD_AFTER.search(cell.after) is not None


def marked_wrong(cell: Cell) -> bool:
    """The prose before the cell or its comments call what it does wrong: a tutorial's "wrong way"
    shown beside the right one (`# WRONG - this measures dispatch time`),
    or the prose after it says so of the cell above."""
    return _MARKED_WRONG.search(commentary(cell)) is not None or _TOLD_AFTER.search(cell.after) is not None


# Prose after a cell that says what the cell above showed: "The above timing for DeviceArray is the
# time taken to dispatch the work". Only a sentence pointing back counts: a later aside on
# benchmarking ("jax returns a future ... Async Dispatch") explains the waits the cell has, and the
# one it lacks is still reported.
_TOLD_AFTER = re.compile(
    r"\b(?:above|previous|preceding)\b[^.!?\n]{0,100}?\b(?:dispatch\w*|asynchron\w*|async|wrong|incorrect\w*"
    r"|mistakes?)\b", re.IGNORECASE)


def shows_same_draw(cell: Cell) -> bool:
    """The prose before the cell or its comments say one key gives the same numbers: a tutorial
    drawing twice on purpose."""
    return _SAME_DRAW.search(commentary(cell)) is not None
