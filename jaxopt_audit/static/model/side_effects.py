"""What traced code reaches outside its trace: the containers, iterators and prints that JAX403
(side effects in traced code) asks about.

JAX runs a traced function's Python once, at trace time. What it does to state that lives
outside the trace (a list of the module, an iterator of the caller, `self.log`) happens once, and
a traced value stored there leaks a tracer; state created inside the same trace (in the traced
function or in an enclosing function of the same trace) is trace-time structure and harmless.
"""

from __future__ import annotations

import libcst as cst

from ..syntax.walk import walk
from .core import SemanticModel
from .enclosing import enclosing_statements
from .index import Function
from .traced import is_traced_value
from .tracers import really_traced

# Calls that build a mutable container.
CONTAINER_FACTORIES = frozenset({"builtins.list", "builtins.dict", "builtins.set", "collections.deque",
                                 "collections.defaultdict", "collections.OrderedDict", "queue.Queue"})
# Keywords of `print` that say how to print, not what.
_PRINT_OPTIONS = frozenset({"sep", "end", "file", "flush"})


def same_trace(model: SemanticModel, fn: Function, scope: Function | None) -> bool:
    """Whether `fn` is nested in traced `scope` and runs inside scope's trace: no jit or transform
    boundary lies between them (a helper called in a Python loop of a jitted function)."""
    if scope is None or id(scope) not in really_traced(model):
        return False
    for current in fn.scopes():
        if current is scope:
            return True
        if current.jitted or current.transform_roots:
            return False
    return False


def outer_container(model: SemanticModel, expr: cst.BaseExpression, fn: Function) -> str | None:
    """The name of the list, dict or set `expr` spells when it lives outside `fn`'s trace:
    `history` bound only to containers in the module or an enclosing function of another trace,
    or `self.log` set only to containers by the class's methods; None otherwise."""
    if isinstance(expr, cst.Name):
        name = expr.value
        scope = _outer_scope(model, fn, name)
        if scope is None:
            return None
        values = [a.value for a in scope.bindings(name)]
        return name if values and all(_is_container(model, v) for v in values) else None
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        cls = next((s.cls for s in fn.scopes() if s.cls is not None), None)
        owned = cls.attribute_values.get(expr.attr.value, []) if cls is not None else []
        if owned and all(_is_container(model, v) for v, _owner in owned):
            return f"self.{expr.attr.value}"
    return None


def _outer_scope(model: SemanticModel, fn: Function, name: str) -> Function | None:
    """The enclosing function or module that binds `name` when `fn` neither takes nor binds it
    and that scope is outside `fn`'s trace; None otherwise."""
    if name in fn.params or fn.bindings(name):
        return None
    scope = fn.binding_scope(name)
    if scope is None or scope is fn or same_trace(model, fn, scope):
        return None
    return scope


def _is_container(model: SemanticModel, value: cst.BaseExpression | None) -> bool:
    if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
        return True
    if isinstance(value, cst.Call):
        return model.resolve(value.func) in CONTAINER_FACTORIES
    return False


def outer_iterator(model: SemanticModel, call: cst.Call, fn: Function) -> str | None:
    """For `next(name)` in `fn`: `name` when it is an iterator from outside `fn`'s trace (a
    parameter of an enclosing function, or a name bound there only to call results). An iterator
    the same trace builds (`keys = iter(random.split(key, n))` read by a tree-mapped lambda), or
    a local one (`next(iter(tree.values()))`), is trace-time structure: None."""
    if not call.args or not isinstance(call.args[0].value, cst.Name):
        return None
    name = call.args[0].value.value
    scope = _outer_scope(model, fn, name)
    if scope is None:
        return None
    values = [a.value for a in scope.bindings(name)]
    if name not in scope.params and (not values or not all(isinstance(v, cst.Call) for v in values)):
        return None
    return name


def printed_tracer(model: SemanticModel, call: cst.Call, fn: Function) -> cst.BaseExpression | None:
    """The first traced value a `print(...)` call in `fn` prints, as an argument or inside an
    f-string's braces; None when it prints none."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in _PRINT_OPTIONS:
            continue
        value = arg.value
        if isinstance(value, cst.FormattedString):
            for part in value.parts:
                if isinstance(part, cst.FormattedStringExpression) and is_traced_value(model, part.expression, fn):
                    return part.expression
        elif is_traced_value(model, value, fn):
            return value
    return None


def catches_type_error(fn: Function, node: cst.CSTNode) -> bool:
    """Whether `node` sits in the body of a `try` of `fn` whose handler catches a TypeError
    (`except TypeError:`, `except Exception as e:`, a bare `except:`): an error it raises is
    expected there (a tutorial showing that JAX arrays are immutable)."""
    for block in enclosing_statements(fn, node) or ():
        if isinstance(block, cst.Try) and any(n is node for n in walk(block.body)):
            for handler in block.handlers:
                caught = [] if handler.type is None else [
                    n.value for n in walk(handler.type) if isinstance(n, cst.Name)]
                if handler.type is None or {"TypeError", "Exception", "BaseException"} & set(caught):
                    return True
    return False


def top_level_call(call: cst.Call, fn: Function) -> bool:
    """Whether `call` is an expression statement of `fn`'s body itself, not of a branch or loop
    in it (`if static: print("path A")`)."""
    body = fn.node.body
    if not isinstance(body, cst.IndentedBlock):
        return False
    return any(isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(small, cst.Expr) and small.value is call for small in stmt.body) for stmt in body.body)
