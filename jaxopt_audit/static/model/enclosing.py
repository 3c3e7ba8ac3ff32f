"""Where a node sits: the site of a call, and the statements that enclose a node inside one
function body (`if` tests, `try` handlers).

The model tags sites with their loop and periodic guard only; a few rules also need to know
whether a site sits under some other `if` (a memoisation guard like `if self._fn is None:`) or in
an `except` block. Computed on demand for the few sites a rule asks about.
"""

from __future__ import annotations

import libcst as cst

from ..syntax.walk import children, describe, walk
from .core import SemanticModel
from .index import Assignment, Function, Loop, Site


def site_of(model: SemanticModel, call: cst.Call) -> Site | None:
    """The call's site, in the function (or module) whose own calls include it."""
    return next((s for f in model.functions for s in f.calls if s.node is call), None)


def enclosing_statements(fn: Function, target: cst.CSTNode) -> list[cst.CSTNode] | None:
    """The `If`/`While`/`For`/`Try`/`ExceptHandler`/`With` nodes around `target` in `fn`'s own
    body, outermost first; None when `target` is not in it (nested defs are not entered)."""
    body = fn.body
    # an explicit stack, each node with the blocks around it: a recursive closure would hold the
    # tree in a reference cycle (the closure's cell) until the cyclic collector ran
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(body, ())]
    while stack:
        node, path = stack.pop()
        if node is target:
            return list(path)
        if node is not body and isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, _BLOCKS):
            path = (*path, node)
        stack.extend((child, path) for child in children(node))
    return None


_BLOCKS = (cst.If, cst.While, cst.For, cst.Try, cst.ExceptHandler, cst.With)


def condition_around(fn: Function, node: cst.CSTNode, loop) -> str | None:
    """The innermost `if` between `node` and `loop` (or around it in `fn`'s body when `loop` is
    None), as a message says it: "when `x > 0` holds", or "when `x > 0` does not hold" in its
    `else`. The node runs on those iterations only."""
    path = enclosing_statements(fn, node)
    if not path:
        return None
    inside = loop is None
    innermost: cst.If | None = None
    for statement in path:
        if loop is not None and statement is loop.node:
            inside = True
        elif inside and isinstance(statement, cst.If):
            innermost = statement
    if innermost is None:
        return None
    holds = any(n is node for n in walk(innermost.body))
    return f"when `{describe(innermost.test, 40)}` {'holds' if holds else 'does not hold'}"


def dominating_binding(model: SemanticModel, fn: Function, loop: Loop, use: cst.Name) -> Assignment | None:
    """The binding of `use` that every way to it in the loop body goes through: the latest before
    it, in the loop, in no block that does not hold the use too and on the use's side of every
    `if` around it (`dones = np.logical_or(term, trunc)` right before `update(..., dones)`, not
    the `dones = np.zeros(n)` of the `else:` that skips the update). None when the use may see
    another (or it is not a name of `fn`'s own body, or sits outside `loop`)."""
    binding = model.reaching_binding(use, fn)
    if binding is None or not loop.encloses(binding.site.loop):
        return None
    around_binding = enclosing_statements(fn, binding.site.node)
    around_use = enclosing_statements(fn, use)
    if around_binding is None or around_use is None or len(around_binding) > len(around_use) \
            or any(b is not u for b, u in zip(around_binding, around_use, strict=False)):
        return None
    for block in around_binding:
        if isinstance(block, cst.If) and _in_body(block, binding.site.node) != _in_body(block, use):
            return None
    return binding


def _in_body(block: cst.If, node: cst.CSTNode) -> bool:
    return any(n is node for n in walk(block.body))
