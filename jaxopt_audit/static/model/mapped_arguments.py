"""Which arguments of a call a loop's items reach, and whether the call can be mapped over them.

`jax.vmap` maps a function over some of its arguments; it fails or changes meaning when a mapped
argument sets a shape, is static, builds a model or optimizer, or meets a Python branch or a
host read in the function's body. These functions name the mapped parameters of a call (directly,
or bound early with `functools.partial`) and say whether mapping them is possible as written.
"""

from __future__ import annotations

import re

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import read_names
from .core import SemanticModel
from .eager import host_side
from .index import Function, Loop
from .trace_check import traces_as_written

# A keyword named like a size (`token_len=`, `num_layers=`, `hidden_dim=`) most likely sets a
# shape in a callee the file does not show (a library's constructor or function): mapping over it
# would fail, so the name is taken as the evidence.
SIZE_KEYWORD = re.compile(r"(^|_)(len|length|size|dim|shape|width|depth|count)s?($|_)|^(n|num)_", re.IGNORECASE)


def structural_use(model: SemanticModel, fn: Function, call: cst.Call, items: set[str]) -> bool:
    """Do the items change the structure of `call` rather than its data: a shape or size
    argument (`apis.SHAPE_ARGUMENTS`, a keyword named like a size, a `jax.random` shape), a
    static parameter, a class to build or a call returning an object (`optax.adam(lr)`,
    `Model(width)`), or `x.reshape(n)`? Then each item is a different program."""
    q = model.resolve(call.func)
    positions = apis.SHAPE_ARGUMENTS.get(q or "", ())
    for index, arg in enumerate(call.args):
        used = bool(read_names(arg.value) & items)
        if not used:
            continue
        if arg.keyword is not None and (arg.keyword.value in apis.SHAPE_KEYWORDS
                                        or SIZE_KEYWORD.search(arg.keyword.value)):
            return True
        if arg.keyword is None and index in positions:
            return True
        if q is not None and q.startswith("jax.random.") and q not in apis.KEY_BOOKKEEPING and (
                (arg.keyword is None and index == 1) or _inside_shape_tuple(arg.value, items)):
            return True
    callee = model.callee(call, fn)
    if callee.cls is not None:
        return True
    if callee.function is not None and callee.function.static_params:
        params = callee.function.params
        for index, arg in enumerate(call.args):
            name = arg.keyword.value if arg.keyword is not None else (params[index] if index < len(params) else None)
            if name in callee.function.static_params and read_names(arg.value) & items:
                return True
    if model.value_kind(call, fn) == "object":
        return True  # `optax.adam(lr)`, `Model(width)`: a different program per item
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("reshape", "repeat", "tile"):
        return True  # `x.reshape(n)` with an item: a different shape per item
    return False


def _inside_shape_tuple(expr: cst.BaseExpression, items: set[str]) -> bool:
    """A tuple literal (a shape) with an element that reads an item."""
    return isinstance(expr, cst.Tuple) and any(read_names(e.value) & items for e in expr.elements)


def vmappable(model: SemanticModel, call: cst.Call, target: Function, items: set[str]) -> bool:
    """Can the un-jitted function `target` of this file, called by `call`, run under `jax.vmap`
    over the parameters the items reach, as it is written (`vmappable_as_written`)? Not when
    the call unpacks `*args`: which parameters are mapped is then unknown."""
    params = list(target.params)
    mapped: set[str] = set()
    for index, arg in enumerate(call.args):
        if arg.star:
            return False
        name = arg.keyword.value if arg.keyword is not None else (params[index] if index < len(params) else None)
        if name is not None and read_names(arg.value) & items:
            mapped.add(name)
    return vmappable_as_written(model, target, mapped)


def vmappable_as_written(model: SemanticModel, target: Function, mapped: set[str]) -> bool:
    """Can `target` be vmapped over the parameters `mapped` as it is written: it does no host work
    (prints, reads values back, plots), and, for a module-level def, jitting it with the other
    parameters marked static adds no trace-rule finding (no Python branch, NumPy call or
    value-dependent shape on a mapped value)? Nested functions and methods are judged by the
    first test alone."""
    if host_side(model, target):
        return False
    if not isinstance(target.node, cst.FunctionDef) or target.parent is None or not target.parent.is_module:
        return True
    return traces_as_written(model, target.node, static=set(target.params) - mapped)


def bound_with_the_item(model: SemanticModel, fn: Function, loop: Loop, call: cst.Call,
                        items: set[str]) -> tuple[Function, set[str]] | None:
    """For `objective(x, y)` where `loop` binds `objective = jax.jit(partial(nll, scale=s))` (or
    `partial(nll, s)`) with `s` from an item: the function of this file it calls (`nll`), and
    the parameters the items reach through the partial. None otherwise."""
    if not isinstance(call.func, cst.Name):
        return None
    bindings = [a for a in fn.bindings(call.func.value) if loop.encloses(a.site.loop)]
    if len(bindings) != 1 or not isinstance(bindings[0].value, cst.Call):
        return None
    value = bindings[0].value
    if model.resolve(value.func) in apis.JIT_WRAPPERS and value.args and isinstance(value.args[0].value, cst.Call):
        value = value.args[0].value
    if model.resolve(value.func) != "functools.partial" or not value.args:
        return None
    target = model.function_ref(value.args[0].value, fn)
    if target is None:
        return None
    mapped: set[str] = set()
    for index, arg in enumerate(value.args[1:]):
        name = arg.keyword.value if arg.keyword is not None else (
            target.params[index] if index < len(target.params) else None)
        if name is not None and read_names(arg.value) & items:
            mapped.add(name)
    return (target, mapped) if mapped else None


def builds_a_called_partial(model: SemanticModel, fn: Function, loop: Loop, call: cst.Call, items: set[str]) -> bool:
    """Is `call` the `jax.jit(partial(nll, scale=s))` (or the `partial` inside it) bound to a name
    that `loop` then calls (`objective(...)`, see `bound_with_the_item`)? The item is then an
    argument of `nll` bound early, not a new program: the call of what it builds is what counts."""
    names = {t for a in fn.assignments if loop.encloses(a.site.loop) and isinstance(a.value, cst.Call)
             and (a.value is call or any(arg.value is call for arg in a.value.args)) for t in a.targets}
    return any(isinstance(s.node.func, cst.Name) and s.node.func.value in names
               and bound_with_the_item(model, fn, loop, s.node, items) is not None
               for s in fn.calls if loop.encloses(s.loop))
