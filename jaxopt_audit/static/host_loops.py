"""Loop shapes that make a per-step host transfer a non-issue for JAX301/JAX302."""

from __future__ import annotations

import libcst as cst

from .model import Loop

# `for k, v in d.items()`: a walk over a dict's entries (metrics, splits, parameters), a few
# iterations over structure, not over steps.
_STRUCTURE_METHODS = frozenset({"items", "keys", "values"})


def over_structure(loop: Loop | None) -> bool:
    """The innermost loop walks a dict's entries rather than steps."""
    if loop is None or not isinstance(loop.node, cst.For):
        return False
    it = loop.node.iter
    return isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) \
        and it.func.attr.value in _STRUCTURE_METHODS and not it.args
