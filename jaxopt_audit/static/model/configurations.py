"""Loops over configurations: which names change from one iteration to the next, and whether
what a loop builds from them is a different program per iteration (a sweep, each configuration
compiled once on purpose) or the same program with a Python number baked in (a schedule).

A rule about work rebuilt every iteration (a jitted wrapper, a compiled body) stays quiet on the
first and reports the second; these functions tell them apart.
"""

from __future__ import annotations

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import read_names, walk
from .core import SemanticModel
from .index import Function, Loop, Site
from .loops import literal_trip_count
from .runs import callers_of


def varying_names(site: Site) -> set[str]:
    """Which names change from one step to the next at `site`: the targets of the loops around
    it and the names bound in those loops (or, in a per-step function outside any loop, its
    parameters and locals)."""
    loops = list(site.loop.outward()) if site.loop is not None else []
    fn = site.function
    if not loops:
        return set(fn.params) | {t for a in fn.assignments for t in a.targets}
    names: set[str] = set()
    for loop in loops:
        names.update(loop.targets)
        names.update(t for a in fn.assignments if loop.encloses(a.site.loop) for t in a.targets)
    return names


def factory_of_varying_values(model: SemanticModel, target: cst.BaseExpression, site: Site) -> bool:
    """Is `target` a call of a factory (not `partial`, not a JAX transform) with arguments that
    change per iteration, as in `jax.jit(make_train(config))`? One compilation per
    configuration is then the point (a sweep), not a mistake."""
    if not isinstance(target, cst.Call):
        return False
    q = model.resolve(target.func)
    if q == "functools.partial" or q in apis.TRACING_TRANSFORMS or q in apis.JIT_WRAPPERS:
        return False
    varying = varying_names(site)
    return any(name in varying for arg in target.args for name in read_names(arg.value))


def returned_per_configuration(site: Site, step_call: Site | None) -> bool:
    """Is what `site` builds returned by its function, a factory (`make_train(config)`) that the
    loop's `step_call` calls with arguments that change per iteration? One compilation per
    configuration is then needed."""
    fn = site.function
    if step_call is None or step_call is site or step_call.node is site.node:
        return False
    returned = {id(r) for r in fn.returns}
    names = {t for a in fn.assignments if a.value is site.node for t in a.targets}
    if id(site.node) not in returned and not any(
            isinstance(r, cst.Name) and r.value in names for r in fn.returns):
        return False
    varying = varying_names(step_call)
    return any(name in varying for arg in step_call.node.args for name in read_names(arg.value))


def closes_over_configuration(model: SemanticModel, target: Function | None, site: Site) -> bool:
    """Is `target` a lambda or def in a loop over configurations (`for blocks, tile in
    itertools.product(...)`) that reads only the configuration among the loop's changing names?
    Then it is a different program per configuration, compiled once each."""
    if target is None or target.is_module or site.loop is None:
        return False
    read = read_names(target.body) - set(target.params)
    varying = varying_names(site) & read
    if not varying:
        return False
    loop: Loop | None = site.loop
    config_targets: set[str] = set()
    while loop is not None:
        if isinstance(loop.node, cst.For) and configuration_iterable(model, loop.node.iter, site.function):
            config_targets.update(loop.targets)
        loop = loop.parent
    return varying <= config_targets


def configuration_iterable(model: SemanticModel, expr: cst.BaseExpression, fn: Function) -> bool:
    """Does `expr` iterate configurations: a literal tuple, list or set, `itertools.product(...)`,
    `range(...)`, a `zip`/`enumerate` of those, or a name bound once to one?"""
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return True
    if isinstance(expr, cst.Call):
        q = model.resolve(expr.func) or ""
        if q.startswith("itertools.") or q == "builtins.range":
            return True
        if q in ("builtins.zip", "builtins.enumerate"):
            return all(configuration_iterable(model, a.value, fn) for a in expr.args)
        return False
    if isinstance(expr, cst.Name):
        bindings = fn.bindings(expr.value)
        return len(bindings) == 1 and bindings[0].value is not None \
            and configuration_iterable(model, bindings[0].value, fn)
    return False


def sweeps_written_out(loop: Loop) -> bool:
    """Is `loop` a sweep over settings written out (`for lr in [1e-4, 1e-3, 1e-2]`), each a
    different program that compiles once whatever the function object?"""
    return isinstance(loop.node, cst.For) and isinstance(loop.node.iter, (cst.List, cst.Tuple, cst.Set))


def schedule_value(model: SemanticModel, fn: Function, loop: Loop, name: str) -> bool:
    """Is `name` the counter of a `range` loop around `loop` (or `loop` itself), or bound in
    `loop` only to arithmetic on numbers and such counters (`lr = 0.5 * 0.95 ** epoch`)? Then it
    is a Python number that could be an argument of a function instead of a constant baked in."""
    counters: set[str] = set()
    current: Loop | None = loop
    while current is not None:
        node = current.node
        if isinstance(node, cst.For) and isinstance(node.iter, cst.Call) \
                and model.resolve(node.iter.func) == "builtins.range":
            counters.update(current.targets)
        current = current.parent
    if name in counters:
        return True
    bindings = [a for a in fn.bindings(name) if loop.encloses(a.site.loop)]
    return bool(bindings) and all(
        a.value is not None and len(a.targets) == 1 and all(
            isinstance(n, (cst.BinaryOperation, cst.UnaryOperation, cst.Integer, cst.Float, cst.Name,
                           cst.BaseBinaryOp, cst.BaseUnaryOp, cst.LeftParen, cst.RightParen))
            for n in walk(a.value))
        and read_names(a.value) <= counters for a in bindings)


def called_per_iteration(model: SemanticModel, site: Site, built: Function | None) -> Site | None:
    """The call, in a loop of the file, that runs `site`'s function (outside any loop of its own) on
    every iteration of that loop, unguarded: what the function builds at `site` (a jitted wrapper
    around `built`, a nested def) is built anew on every iteration. None when no such call is
    found, when the loop is a sweep written out or runs once, or when `built` reads a parameter
    that the call fills from what a `for` loop walks (`for width in widths:`): one program per
    item, each compiled once, may be the point."""
    fn = site.function
    if site.loop is not None or site.guarded or fn.is_module:
        return None
    read = read_names(built.body) if built is not None and not built.is_module else set(fn.params)
    for call in callers_of(model, fn):
        loop = call.loop
        if loop is None or call.guarded or call.function.traced or sweeps_written_out(loop):
            continue
        count = literal_trip_count(loop, model.resolve)
        if count is not None and count <= 1:
            continue
        walked = {t for outer in loop.outward() if isinstance(outer.node, cst.For)
                  and not _is_range(model, outer.node.iter) for t in outer.targets}
        if any(read_names(value) & walked and param in read for param, value in _bound_params(fn, call)):
            continue
        return call
    return None


def _bound_params(fn: Function, call: Site[cst.Call]) -> list[tuple[str, cst.BaseExpression]]:
    """The parameters of `fn` that `call` fills, with the value it gives each (`self` skipped)."""
    params = [p for p in fn.params if p not in ("self", "cls")] if fn.cls is not None else list(fn.params)
    bound: list[tuple[str, cst.BaseExpression]] = []
    for i, arg in enumerate(a for a in call.node.args if a.keyword is None and not a.star):
        if i < len(params):
            bound.append((params[i], arg.value))
    bound.extend((a.keyword.value, a.value) for a in call.node.args if a.keyword is not None)
    return bound


def _is_range(model: SemanticModel, expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and model.resolve(expr.func) == "builtins.range"
