"""Code that runs once, however often its function is called: setup methods, memoised functions,
and statements under a memoisation guard (`if self._step is None:`) or in a cache miss's `except`.

Building something expensive there (a jitted wrapper) is the recommended place, not a cost paid
on every call, so rules about work repeated every step ask these questions before reporting.
"""

from __future__ import annotations

import libcst as cst

from ..syntax.walk import walk
from .core import SemanticModel
from .enclosing import enclosing_statements
from .index import Function, Loop

# Methods that run once per object: building a wrapper there is the recommended place. Matched by
# name: these are the names Python (`__init__`, `__post_init__`) and the frameworks (Flax's
# `setup`, Keras-style `build`) call once per object.
SETUP_METHODS = frozenset({"__init__", "__post_init__", "setup", "__call_once__", "build"})
# Decorators that memoise a function's result: its body runs once per distinct argument.
MEMOISING_DECORATORS = frozenset({"functools.cache", "functools.lru_cache", "functools.cached_property",
                                  "builtins.property"})


def memoised_function(model: SemanticModel, fn: Function) -> bool:
    """Is `fn` decorated with a memoising decorator (`functools.cache`, `lru_cache`,
    `cached_property`, `property`), so its body runs once per distinct argument?"""
    for d in fn.decorators:
        expr = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        if model.resolve(expr) in MEMOISING_DECORATORS:
            return True
    return False


def runs_once(model: SemanticModel, fn: Function) -> bool:
    """Does `fn`'s body run once per object or per distinct argument: a setup method
    (`__init__`, `setup`, ...) or a memoised function?"""
    return fn.name in SETUP_METHODS or memoised_function(model, fn)


def is_memo_test(test: cst.BaseExpression) -> bool:
    """Does an `if` test read as a cache check: `x is None`, `key not in cache`,
    `not hasattr(self, "_f")`, `not self._compiled`?"""
    for node in walk(test):
        if isinstance(node, cst.Comparison) and any(
                isinstance(c.operator, (cst.Is, cst.IsNot, cst.NotIn, cst.In)) for c in node.comparisons):
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("hasattr", "getattr"):
            return True
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not) \
                and isinstance(node.expression, (cst.Name, cst.Attribute, cst.Subscript)):
            return True
    return False


def under_memo_guard(fn: Function, node: cst.CSTNode, loop: Loop | None = None) -> bool:
    """Does `node` sit under a memoisation test (`is_memo_test`) or in an `except` (cache miss)
    block of `fn`? With a loop, only tests inside it count: `if not FLAG:` around the whole loop
    is configuration."""
    statements = enclosing_statements(fn, node) or []
    if loop is not None and loop.node in statements:
        statements = statements[statements.index(loop.node) + 1:]
    for stmt in statements:
        if isinstance(stmt, cst.If) and is_memo_test(stmt.test):
            return True
        if isinstance(stmt, cst.ExceptHandler):
            return True
    return False
