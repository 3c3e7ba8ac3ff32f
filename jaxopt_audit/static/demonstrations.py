"""When a notebook shows a pitfall on purpose.

Tutorials and docs demonstrate the mistakes the error rules (JAX401-404) find: a cell that jits
a function with a value-dependent `if`, under a heading "The following fails", or with
`# This will fail!` above a `try`/`except`. The claim is true and nothing should change, so a
finding in such a cell is dropped. The evidence is what a reader of the notebook sees: the
cell's saved outputs (the tracing error, a printed tracer), the prose just before the cell, and
the cell's own comments. Only notebooks (.ipynb, MyST) carry it: a `.py` file's findings stand.
"""

from __future__ import annotations

import re

from ..notebook_format import Cell
from . import apis

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
    """What the notebook says about the cell: the prose just before it and its comment lines."""
    comments = [line.strip() for line in cell.source.splitlines() if line.strip().startswith("#")]
    return "\n".join([cell.prose, *comments])


def shows_tracing_error(cell: Cell) -> bool:
    """The cell failed with a tracing error when it was last run (its saved outputs say so)."""
    return not apis.TRACING_ERRORS.isdisjoint(cell.shown_errors)


def teaches_pitfall(cell: Cell) -> bool:
    """The prose before the cell or its comments say the code fails, or explain tracing."""
    return _PITFALL.search(commentary(cell)) is not None
