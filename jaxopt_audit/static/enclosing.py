"""The statements that enclose a node inside one function body: `if` tests, `try` handlers.

The model tags sites with their loop and periodic guard only; a few rules also need to know
whether a site sits under some other `if` (a memoisation guard like `if self._fn is None:`) or in
an `except` block. Computed on demand for the few sites a rule asks about.
"""

from __future__ import annotations

import libcst as cst

from .model import Function
from .walk import children


def enclosing_statements(fn: Function, target: cst.CSTNode) -> list[cst.CSTNode] | None:
    """The `If`/`While`/`For`/`Try`/`ExceptHandler`/`With` nodes around `target` in `fn`'s own
    body, outermost first; None when `target` is not in it (nested defs are not entered)."""
    body = fn.body
    path: list[cst.CSTNode] = []

    def search(node: cst.CSTNode) -> bool:
        if node is target:
            return True
        if node is not body and isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        is_block = isinstance(node, (cst.If, cst.While, cst.For, cst.Try, cst.ExceptHandler, cst.With))
        if is_block:
            path.append(node)
        for child in children(node):
            if search(child):
                return True
        if is_block:
            path.pop()
        return False

    return list(path) if search(body) else None
