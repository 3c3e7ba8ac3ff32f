"""Where a jit wrapper is built, what it wraps, and how many calls each build serves.

`jax.jit(f)` returns a new wrapper each time it is evaluated; whether that costs a compilation
depends on the function it wraps (a new object each time, or the same one), and whether it costs
anything at all depends on how the wrapper is used (called once, or kept and called many times).
These functions answer those questions for one jit call or jit-decorated `def`:

- `jit_target`, `jit_wrapper`, `is_jit_decorator`: the call is a jit and what it wraps;
- `fresh_function`, `stable_function`: the wrapped function is a new object each time, or one;
- `wrapper_reuse`, `ahead_of_time`, `builds_functions`: each build serves many calls;
- `per_outer_pass`, `rebuilt_alike`: built once per pass of an epoch loop, from nothing that
  changes between passes but a schedule of Python numbers.
"""

from __future__ import annotations

from typing import Literal

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import children, read_names, walk
from .configurations import schedule_value, varying_names
from .core import SemanticModel
from .index import Function, Loop, Site
from .loops import literal_trip_count
from .per_step import SINGLE_PASS, StepContext


def jit_wrapper(model: SemanticModel, call: cst.Call) -> str | None:
    """Which wrapper does a call evaluate: `jax.pmap` for `jax.pmap(f)` and for
    `partial(jax.pmap, ...)(f)`; the qualified name of the callee otherwise."""
    func = call.func
    if isinstance(func, cst.Call) and model.resolve(func.func) == "functools.partial" and func.args:
        return model.resolve(func.args[0].value)
    return model.resolve(func)


def jit_target(model: SemanticModel, call: cst.Call) -> cst.BaseExpression | None:
    """The function a jit call wraps: `f` in `jax.jit(f, ...)` and in `partial(jax.jit, ...)(f)`;
    None when the call is not a jit (see `apis.JIT_WRAPPERS`)."""
    if not call.args or call.args[0].keyword is not None:
        return None
    return call.args[0].value if jit_wrapper(model, call) in apis.JIT_WRAPPERS else None


def is_jit_decorator(model: SemanticModel, decorator: cst.BaseExpression) -> bool:
    """Is a decorator expression a jit: `@jax.jit`, `@jax.jit(...)`, `@partial(jax.jit, ...)`?"""
    if model.resolve(decorator) in apis.JIT_WRAPPERS:
        return True
    if isinstance(decorator, cst.Call):
        inner = model.resolve(decorator.func)
        if inner in apis.JIT_WRAPPERS:
            return True
        if inner == "functools.partial" and decorator.args \
                and model.resolve(decorator.args[0].value) in apis.JIT_WRAPPERS:
            return True
    return False


def ahead_of_time(fn: Function, call: cst.Call) -> bool:
    """Is the jit call compiled ahead of time in `fn` (`jax.jit(f).lower(x).compile()`, also
    `.trace`, `.eval_shape`)? Compiling per item is then the purpose: one executable per shape."""
    return any(isinstance(s.node.func, cst.Attribute) and s.node.func.value is call
               and s.node.func.attr.value in ("lower", "trace", "eval_shape") for s in fn.calls)


def fresh_function(model: SemanticModel, target: cst.BaseExpression, site: Site) -> bool:
    """Is the function `target` names a new object at every evaluation of `site`: a lambda, a call
    (`partial(...)`, `jax.grad(f)`, a factory), a bound method (`self.method`), a closure defined
    in the per-step function or a def in the loop body? JAX's caches key on the object, so a new
    one is traced and compiled again."""
    fn = site.function
    if isinstance(target, cst.Lambda):
        return True
    if isinstance(target, cst.Call):
        return True  # partial(...), jax.grad(f), a factory: a new callable per call
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
        owner = target.value.value
        # `self.method` / `obj.method`: a new bound method object each time
        return model.function_ref(target, fn) is not None and owner not in model.classes
    if isinstance(target, cst.Name):
        defined = model.lookup_function(target.value, fn)
        if defined is not None and defined.parent is fn:
            if not fn.is_module and site.loop is None:
                return True  # a closure defined in the per-step function: redefined per call
            def_site = next((a.site for a in fn.assignments if a.site.node is defined.node), None)
            # a def in the loop body is redefined every iteration
            return def_site is not None and site.loop is not None and site.loop.encloses(def_site.loop)
    return False


def stable_function(model: SemanticModel, target: cst.BaseExpression, fn: Function) -> bool:
    """Is the function `target` names in `fn` the same object every time: a def made once (module
    level, or a closure defined before the loop), a class's function, or a library function?
    Ask `fresh_function` first: a def in the loop passes this test too."""
    if isinstance(target, cst.Name):
        defined = model.lookup_function(target.value, fn)
        if defined is not None:
            return defined.parent is not None  # not fresh (checked first): defined once
        return model.resolve(target) is not None and target.value not in fn.params
    if isinstance(target, cst.Attribute):
        if isinstance(target.value, cst.Name) and target.value.value in model.classes:
            return True
        return model.resolve(target) is not None
    return False


def builds_functions(model: SemanticModel, site: Site) -> bool:
    """Does `site` sit, outside any loop of its own, in a function that returns a function (a
    lambda, a nested def, a jitted wrapper)? Such a builder runs once per configuration."""
    fn = site.function
    if site.loop is not None or fn.is_module:
        return False
    for r in fn.returns:
        if isinstance(r, cst.Lambda):
            return True
        if isinstance(r, cst.Name) and (r.value in fn.nested or any(
                isinstance(a.value, cst.Call) and jit_target(model, a.value) is not None
                for a in fn.bindings(r.value))):
            return True
        if isinstance(r, cst.Call) and jit_target(model, r) is not None:
            return True
    return False


# How one build of a wrapper serves many calls: kept for later, or called in a loop of its own.
WrapperReuse = Literal["kept", "inner loop"]


def wrapper_reuse(fn: Function, node: cst.CSTNode, loop: Loop | None) -> WrapperReuse | None:
    """How the wrapper built at `node` (a jit call, or a jit-decorated `def`) in `fn` serves more
    than one call: "kept" (handed to a call, returned, stored in an attribute or item, captured
    by a nested function, used as a value) or "inner loop" (called in a loop of its own inside
    `loop`); None when each build serves one call."""
    if any(r is node for r in fn.returns) or any(
            a.value is node for s in fn.calls for a in s.node.args):
        return "kept"
    if isinstance(node, cst.FunctionDef):
        name = node.name.value
    else:
        bound = [a for a in fn.assignments if a.value is node]
        if not bound:
            return None
        if any(a.attribute_target is not None or len(a.targets) != 1 for a in bound):
            return "kept"  # `self._fn = jax.jit(...)`, `fns[k] = ...`: kept for later calls
        name = bound[0].targets[0]
    called_in = {id(s.node.func): s.loop for s in fn.calls if isinstance(s.node.func, cst.Name)}
    bound_names = {id(t) for t in _binding_names(fn.body)}
    stack: list[tuple[cst.CSTNode, bool]] = [(fn.body, False)]
    found: WrapperReuse | None = None
    while stack:
        current, nested = stack.pop()
        if isinstance(current, cst.Name) and current.value == name and id(current) not in bound_names:
            if nested or id(current) not in called_in:
                return "kept"  # captured by a nested function, or used as a value
            use_loop = called_in[id(current)]
            if use_loop is not None and use_loop is not loop and (loop is None or loop.encloses(use_loop)):
                found = "inner loop"  # called in a loop of its own: many calls per build
        if isinstance(current, cst.Attribute):  # `obj.name` and `name=` are not reads of name
            stack.append((current.value, nested))
        elif isinstance(current, cst.Arg):
            stack.append((current.value, nested))
        elif not isinstance(current, cst.Param):  # a parameter of that name shadows it
            inner = nested or isinstance(current, (cst.FunctionDef, cst.Lambda)) and current is not node
            stack.extend((child, inner) for child in children(current)
                         if not (isinstance(current, cst.FunctionDef) and child is current.name))
    return found


def _binding_names(body: cst.CSTNode) -> list[cst.Name]:
    """The names an assignment, a `for` or a `with ... as` binds (their uses are elsewhere)."""
    targets: list[cst.BaseExpression] = []
    for node in walk(body):
        if isinstance(node, cst.Assign):
            targets.extend(t.target for t in node.targets)
        elif isinstance(node, (cst.AnnAssign, cst.For, cst.CompFor)):
            targets.append(node.target)
        elif isinstance(node, cst.AsName):
            targets.append(node.name)
    return [n for t in targets for n in walk(t) if isinstance(n, cst.Name)]


def per_outer_pass(model: SemanticModel, site: Site) -> StepContext | None:
    """Does `site` run once per pass of an untraced loop around a loop over steps (an epoch loop
    of more than one pass), unguarded? A wrapper built there and called in its inner loop is
    rebuilt once per pass. None when it does not."""
    loop = site.loop
    if loop is None or site.guarded or site.function.traced or not loop.is_epoch:
        return None
    count = literal_trip_count(loop, model.resolve)
    return StepContext(site, None) if count is None or count > SINGLE_PASS else None


def rebuilt_alike(model: SemanticModel, target: cst.BaseExpression, site: Site) -> list[str] | None:
    """Does the wrapper built at `site`, called in a loop of its own, wrap a function made anew on
    each iteration of the loop that builds it (a lambda, a `partial`, a def in the loop) from
    nothing that changes between iterations but Python numbers of a schedule
    (`jax.jit(lambda p, x: update(p, x, lr))` once per epoch, `lr = 0.5 * 0.95 ** epoch`)? Then
    each build traces and compiles the same program again. Returns those schedule names ([] when
    none), or None when the function reads another value of the loop (a configuration of a
    sweep, a size: a program per value)."""
    if site.loop is None or not fresh_function(model, target, site):
        return None
    fn = site.function
    defined = model.function_ref(target, fn)
    if defined is not None and not defined.is_module:
        read = read_names(defined.body) - set(defined.params)
    else:
        read = read_names(target)
    varying = read & varying_names(site)
    if not all(schedule_value(model, fn, site.loop, name) for name in varying):
        return None
    return sorted(varying)
