"""Loops over independent items: which values are a loop's items, whether the items are
replicates or settings (not structure), whether each iteration's result is collected, and whether
a call carries state from one iteration to the next through an object it updates in place.

A loop whose iterations are independent can run as one `jax.vmap` over the stacked items; these
functions answer the questions that decide whether they are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import cast

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import read_names
from .core import SemanticModel
from .index import Function, Loop
from .loops import mutated_params

# Loop variables named like independent replicates or hyper-parameters. A name is the evidence
# left when the iterable is a parameter or an attribute, whose values the file does not show:
# `for seed in seeds`, `for lr in self.lrs`. (`key` is not among them: `for key in d` iterates a
# dict; keys are recognised by their use.)
ITEM_NAME = re.compile(r"(^|_)(seed|seeds|lr|learning_rate|step_size|temperature|trial|replicate)($|_)",
                       re.IGNORECASE)


def mentions(args: Sequence[cst.Arg], names: set[str]) -> bool:
    """Does any of the arguments `args` read one of `names`?"""
    return any(read_names(a.value) & names for a in args)


def item_names(fn: Function, loop: Loop) -> set[str]:
    """The per-item values of `loop`: its loop variables and the names computed from them in its
    body (three rounds of propagation through assignments)."""
    items = set(loop.targets)
    for _ in range(3):
        for a in fn.assignments:
            if a.value is not None and loop.encloses(a.site.loop) and read_names(a.value) & items:
                items.update(a.targets)
    return items


def collects_results(fn: Function, loop: Loop, items: set[str]) -> bool:
    """Does `loop` collect a result per item into a container that lives outside it
    (`results.append(...)` of an item or a call's result, `results[i] = ...` indexed by an item)?"""
    inside = {t for a in fn.assignments if loop.encloses(a.site.loop) for t in a.targets}
    for site in fn.calls:
        call = site.node
        if loop.encloses(site.loop) and isinstance(call.func, cst.Attribute) \
                and call.func.attr.value in ("append", "extend", "add") \
                and isinstance(call.func.value, cst.Name) and call.func.value.value not in inside \
                and mentions(call.args, items | _call_results(fn, loop)):
            return True
    for a in fn.assignments:
        target = a.site.node
        if loop.encloses(a.site.loop) and isinstance(target, cst.Subscript) \
                and isinstance(target.value, cst.Name) and target.value.value not in inside \
                and any(isinstance(e.slice, cst.Index) and read_names(e.slice.value) & items
                        for e in target.slice):
            return True
    return False


def _call_results(fn: Function, loop: Loop) -> set[str]:
    """Names bound in `loop` to the result of a call."""
    return {t for a in fn.assignments if loop.encloses(a.site.loop) and isinstance(a.value, cst.Call)
            for t in a.targets}


def independent_items(model: SemanticModel, fn: Function, loop: Loop) -> bool:
    """Does the `for` loop run over replicates or settings, not over structure: PRNG keys or seeds
    turned into keys, a literal grid of numbers, the rows of JAX arrays (each source of a `zip` or
    `enumerate` so), or variables named so (`ITEM_NAME`)?"""
    iterable = cast(cst.For, loop.node).iter
    zipped = isinstance(iterable, cst.Call) and model.resolve(iterable.func) in ("builtins.enumerate",
                                                                                 "builtins.zip")
    sources = [a.value for a in iterable.args if a.keyword is None] \
        if isinstance(iterable, cst.Call) and zipped else [iterable]
    if sources and all(is_grid(model, fn, s) or is_key_batch(model, fn, s) or _is_jax_array(model, fn, s)
                       for s in sources):
        return True
    if any(ITEM_NAME.search(name) for name in loop.targets):
        return True
    # a seed or counter turned into a key, or the loop variable used as a key
    targets = set(loop.targets)
    for site in fn.calls:
        call: cst.Call = site.node
        if not loop.encloses(site.loop) or not call.args:
            continue
        q = model.resolve(call.func) or ""
        if q in apis.SEED_TO_KEY and mentions(call.args, targets):
            return True
        first = call.args[0].value
        if q.startswith("jax.random.") and isinstance(first, cst.Name) and first.value in targets:
            return True
    return False


def is_key_batch(model: SemanticModel, fn: Function, expr: cst.BaseExpression) -> bool:
    """Is `expr` a batch of PRNG keys: `jax.random.split(key, n)` or a name bound once to it?"""
    if isinstance(expr, cst.Call):
        return model.resolve(expr.func) == "jax.random.split"
    if isinstance(expr, cst.Name):
        bindings = fn.bindings(expr.value)
        return len(bindings) == 1 and bindings[0].value is not None \
            and is_key_batch(model, fn, bindings[0].value)
    return False


def _is_jax_array(model: SemanticModel, fn: Function, expr: cst.BaseExpression) -> bool:
    """A JAX array built in this function (`xs = jnp.stack(...)`, a jitted function's output):
    iterating it yields rows. Parameters are not trusted: in library code they are often pytrees."""
    if not isinstance(expr, cst.Name) or expr.value in fn.params:
        return False
    bindings = fn.bindings(expr.value)
    return bool(bindings) and all(a.value is not None and model.is_array(a.value, fn) for a in bindings)


def is_grid(model: SemanticModel, fn: Function, expr: cst.BaseExpression) -> bool:
    """Is `expr` a grid of settings: a literal list or tuple of more than one number
    (`[1e-3, 1e-2]`), a grid function (`np.logspace(-4, 0, 8)`), or a name bound once to one?"""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return len(expr.elements) > 1 and all(
            isinstance(e.value, (cst.Integer, cst.Float)) or (
                isinstance(e.value, cst.UnaryOperation) and isinstance(e.value.expression, (cst.Integer, cst.Float)))
            for e in expr.elements)
    if isinstance(expr, cst.Call):
        return model.resolve(expr.func) in apis.GRID_FUNCTIONS
    if isinstance(expr, cst.Name):
        bindings = fn.bindings(expr.value) or model.module_function.bindings(expr.value)
        return len(bindings) == 1 and bindings[0].value is not None and is_grid(model, fn, bindings[0].value)
    return False


def updates_shared_object(model: SemanticModel, fn: Function, call: cst.Call, items: set[str]) -> bool:
    """Does the called function update in place an object that every iteration passes again (a
    model and optimizer updated by `optimizer.update(grads)`, `self` through a method)? Then one
    step depends on the last, and the items are not independent."""
    callee = model.callee(call, fn).function
    if callee is None:
        return False
    mutated = mutated_params(model).get(callee, frozenset())
    if not mutated:
        return False
    params = callee.params[1:] if callee.cls is not None and isinstance(call.func, cst.Attribute) else callee.params
    if callee.cls is not None and callee.params and callee.params[0] in mutated \
            and isinstance(call.func, cst.Attribute):
        return True
    for index, arg in enumerate(call.args):
        name = arg.keyword.value if arg.keyword is not None else (params[index] if index < len(params) else None)
        if name in mutated and not read_names(arg.value) & items:
            return True
    return False
