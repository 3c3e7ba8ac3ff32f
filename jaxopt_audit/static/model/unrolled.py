"""Python loops that JAX unrolls: a `for` loop inside a function that JAX compiles runs at trace
time, so the compiled program holds one copy of the loop's body per iteration and compilation
time (and program size) grows with the count; `jax.lax.fori_loop`/`scan` trace the body once.

A function is compiled when the file shows it: jitted (a decorator, `jax.jit(f)`, `jax.jit(g)`
with `g = jax.value_and_grad(f)` bound beside it), the body of a compiled loop or branch
(`lax.scan`, `fori_loop`, `while_loop`, `cond`, `switch`, `lax.map`), or reached from one of those
(called, handed to `jax.grad` inside it, a lambda or transformed def nested in it). `jax.grad` or
`jax.vmap` alone trace without compiling: the loop then runs op by op, which is JAX201's other
case, not this one.

A loop counts when its body does array work and either its trip count is known and above
`SHORT_LOOP` (a literal, a name bound once to one, a configured value, or the literal argument a
call of the file passes for the bound), or it walks a list that its caller refills with
`.append` in a `while` loop before each call of the jitted function (its length, and so the
program, changes from call to call, and each new length traces again). Loops over a pytree's
structure (layers, dict items, `range(len(params))`, `params[i]` in the body) are the program's
structure, not steps, and are left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import int_value, names_in, walk
from .core import SemanticModel
from .eager import iterates_structure
from .enclosing import condition_around
from .facts import fact
from .index import Function, Loop, Site
from .loops import grown_list, has_fixed_trip_count, literal_trip_count
from .per_step import SHORT_LOOP
from .runs import callers_of, configured_int, configured_trip_count, passed_argument

# Transforms that compile the function they are given (besides jit): its body is staged into one
# XLA loop or branch, even outside jit.
STAGING_TRANSFORMS = apis.COMPILED_LOOPS | frozenset({"jax.lax.cond", "jax.lax.switch", "jax.lax.map",
                                                      "jax.lax.associative_scan"})
# A count named like this counts parts of a model (`num_layers`, `n_heads`, `depth`), not steps.
_STRUCTURE_COUNT = re.compile(r"layer|block|head|depth|stage|level|module|channel|dim|feature",
                              re.IGNORECASE)


@dataclass(frozen=True)
class UnrolledLoop:
    """A `for` loop JAX unrolls into a compiled program, with the evidence."""

    loop: Loop
    compiled: str  # why the function is compiled, as a message says it: "jitted at line 161"
    count: int | None  # the trip count; None for a length that changes per call
    source: str = ""  # where the count comes from ("" for a literal)
    varying: str = ""  # for a per-call length: the list, who refills it and where the call is


class Compiled(NamedTuple):
    """Why JAX compiles a function, kept as the node whose line a message names: a line costs a
    rendering of its statement, and only a reported loop's message needs it."""

    head: str  # "jitted at line", "compiled by the `scan` at line"
    node: cst.CSTNode  # the jit or transform call
    tail: str = ""  # ", when ..." (the condition around it)
    via: str = ""  # "reached from `f`": compiled because a compiled function calls it

    def text(self, model: SemanticModel) -> str:
        """As a message says it: "reached from `f`, jitted at line 161"."""
        return (f"{self.via}, " if self.via else "") + f"{self.head} {model.line_of(self.node)}{self.tail}"


@fact
def compiled_functions(model: SemanticModel) -> dict[Function, Compiled]:
    """Each function of the file that JAX compiles, with the reason a message gives for it (see
    the module docstring). Host callbacks run on NumPy values and are left out."""
    found: dict[Function, Compiled] = {}
    work: list[Function] = []
    callbacks = model.host_callback_functions

    def add(fn: Function | None, why: Compiled) -> None:
        if fn is not None and fn not in found and not fn.is_module and id(fn) not in callbacks:
            found[fn] = why
            work.append(fn)

    def condition(text: str | None) -> str:
        return f", {text}" if text else ""

    for root in model.trace_roots:
        if root.wrapper in apis.JIT_WRAPPERS and root.via != "inner":
            around = condition_around(root.scope, root.site, None) if root.via == "call" else None
            add(root.function, Compiled("jitted at line", root.site, condition(around)))
        elif root.wrapper in STAGING_TRANSFORMS:
            add(root.function, Compiled(f"compiled by the `{root.wrapper.rsplit('.', 1)[-1]}` at line", root.site))
    for scope in model.functions:  # `g = jax.value_and_grad(f)`, then `g = jax.jit(g)`
        for site in scope.calls:
            target = _jit_of_transformed(model, site.node, scope)
            if target is not None:
                add(target, Compiled("jitted at line", site.node, condition(condition_around(scope, site.node, None))))
    lambdas: dict[Function, list[Function]] = {}
    for inner in model.functions:
        if inner.name == "<lambda>" and inner.parent is not None:
            lambdas.setdefault(inner.parent, []).append(inner)
    while work:
        fn = work.pop()
        why = found[fn]
        if fn.name != "<lambda>" and not why.via:
            why = why._replace(via=f"reached from `{fn.name}`")
        for site in fn.calls:
            add(model.callee(site.node, fn).function, why)
            if model.resolve(site.node.func) in apis.TRACING_TRANSFORMS:  # jax.grad(loss_fn) inside
                for arg in site.node.args:
                    add(model.function_ref(arg.value, fn), why)
        for inner in fn.nested.values():
            if inner.transform_roots or inner.jitted:
                add(inner, why)
        for inner in lambdas.get(fn, ()):
            add(inner, why)
    return found


def _jit_of_transformed(model: SemanticModel, call: cst.Call, scope: Function) -> Function | None:
    """`jax.jit(g)` where `g` is bound in the same scope to `jax.value_and_grad(f)` (or another
    tracing transform of a function of the file): `f` is what compiles."""
    if model.resolve(call.func) not in apis.JIT_WRAPPERS or not call.args \
            or not isinstance(call.args[0].value, cst.Name):
        return None
    for bound in scope.bindings(call.args[0].value.value):
        value = bound.value
        if isinstance(value, cst.Call) and model.resolve(value.func) in apis.TRACING_TRANSFORMS and value.args:
            target = model.function_ref(value.args[0].value, scope)
            if target is not None:
                return target
    return None


def unrolled_loop(model: SemanticModel, loop: Loop) -> UnrolledLoop | None:
    """The facts for `loop` when JAX unrolls it into a compiled program and the count is large or
    changes per call; None otherwise, and for a loop inside one that is reported (the outer loop
    holds the copies)."""
    found = _unrolled(model, loop)
    if found is None or any(_unrolled(model, outer) is not None for outer in list(loop.outward())[1:]):
        return None
    return found


def _unrolled(model: SemanticModel, loop: Loop) -> UnrolledLoop | None:
    fn = loop.function
    compiled = compiled_functions(model).get(fn)
    if compiled is None or not isinstance(loop.node, cst.For) or iterates_structure(model, loop) \
            or model.walks_structure(loop) or _indexes_structure(loop):
        return None
    count = _trip_count(model, loop)
    if count is not None:
        if count[0] <= SHORT_LOOP or not _does_array_work(model, loop):
            return None
        return UnrolledLoop(loop, compiled.text(model), count[0], count[1])
    # the items of a list handed to jit are traced leaves: any use of them is traced work
    varying = _refilled_list(model, loop)
    body = loop.node.body
    if varying and any(isinstance(n, cst.Name) and n.value in loop.targets for n in walk(body)):
        return UnrolledLoop(loop, compiled.text(model), None, "", varying)
    return None


def _does_array_work(model: SemanticModel, loop: Loop) -> bool:
    """The body calls JAX (or a function of the file that does) or computes on arrays."""
    fn = loop.function
    return any(loop.encloses(site.loop) and model.call_work(site.node, fn) is not None for site in fn.calls) \
        or any(loop.encloses(site.loop) and isinstance(site.node, cst.BinaryOperation)
               and (model.is_array(site.node.left, fn) or model.is_array(site.node.right, fn))
               for site in fn.operations)


def _indexes_structure(loop: Loop) -> bool:
    """The body picks a part of a model by the counter: `params[i]`, `self.layers[i]`."""
    counters = loop.counters | set(loop.targets)
    for site in loop.function.subscripts:
        value = site.node.value
        name = value.attr.value if isinstance(value, cst.Attribute) else value.value \
            if isinstance(value, cst.Name) else ""
        if loop.encloses(site.loop) and apis.STRUCTURE_NAMES.search(name) \
                and any(set(names_in(e.slice)) & counters for e in site.node.slice):
            return True
    return False


def _trip_count(model: SemanticModel, loop: Loop) -> tuple[int, str] | None:
    """The loop's count with where it comes from: a literal or configured `range` bound, or the
    literal argument the file's only call of the function passes for a parameter bound."""
    node = loop.node
    assert isinstance(node, cst.For)
    bound = _range_bound(model, node.iter)
    named = bound.attr.value if isinstance(bound, cst.Attribute) else bound.value if isinstance(bound, cst.Name) else ""
    if _STRUCTURE_COUNT.search(named):
        return None  # `range(num_layers)`: the model's parts
    literal = literal_trip_count(loop, model.resolve)
    if literal is not None:
        return literal, ""
    if bound is None or not has_fixed_trip_count(model, loop):
        return None
    fn = loop.function
    if isinstance(bound, cst.Name) and bound.value in fn.params and not fn.bindings(bound.value) \
            and any(passed_argument(site, fn, bound.value, method) is not None
                    for site, method in _calls_of(model, fn)):
        return _passed_count(model, fn, bound.value)  # a call passes it: the default is not the count
    return configured_trip_count(model, loop)


def _range_bound(model: SemanticModel, it: cst.BaseExpression) -> cst.BaseExpression | None:
    """`n` in `range(n)`."""
    if isinstance(it, cst.Call) and model.resolve(it.func) == "builtins.range":
        args = [a.value for a in it.args if a.keyword is None]
        return args[0] if len(args) == 1 else None
    return None


def _passed_count(model: SemanticModel, fn: Function, param: str) -> tuple[int, str] | None:
    """What the file's one call of `fn` passes for `param`: a literal, or a name with a literal
    default or configured value."""
    sites = _calls_of(model, fn)
    if len(sites) != 1:
        return None
    site, bound_method = sites[0]
    arg = passed_argument(site, fn, param, bound_method)
    if arg is None:
        return None
    line = model.line_of(site.node)
    value = int_value(arg)
    if value is not None:
        return value, f"`{param}` is {value} in the call at line {line}"
    configured = configured_int(model, arg, site.function)
    if configured is None or not isinstance(arg, cst.Name):
        return None
    return configured[0], f"`{param}` is `{arg.value}` in the call at line {line}, {configured[1]}"


def _calls_of(model: SemanticModel, fn: Function) -> list[tuple[Site[cst.Call], bool]]:
    """Calls of `fn` in the file, directly or through a name bound to a transform of it
    (`gradfunc = jax.value_and_grad(self.run)`), each with whether it calls a bound method."""
    found = [(site, isinstance(site.node.func, cst.Attribute)) for site in callers_of(model, fn)]
    for scope in model.functions:
        for site in scope.calls:
            func = site.node.func
            if isinstance(func, cst.Name) and model.callee(site.node, scope).function is None \
                    and _names_transform_of(model, func.value, scope, fn, 0):
                found.append((site, True))
    return found


def _names_transform_of(model: SemanticModel, name: str, scope: Function, fn: Function, depth: int) -> bool:
    """`name` is bound in `scope` to a transform of `fn` (`jax.jit(jax.grad(f))`, or a name
    bound to one in turn) and never to anything else; the wrapped function is a bound method."""
    bindings = scope.bindings(name)
    if not bindings or depth > 3:
        return False
    for bound in bindings:
        value = bound.value
        if not isinstance(value, cst.Call) or not value.args or not (
                model.resolve(value.func) in apis.TRACING_TRANSFORMS or model.resolve(value.func) in apis.JIT_WRAPPERS):
            return False
        inner = value.args[0].value
        if isinstance(inner, cst.Name) and inner.value == name:
            continue  # `g = jax.jit(g)`: the other binding says what `g` wraps
        if isinstance(inner, cst.Call) and inner.args:
            inner = inner.args[0].value
        if model.function_ref(inner, scope) is not fn or not isinstance(inner, cst.Attribute):
            return False
    return True


def _refilled_list(model: SemanticModel, loop: Loop) -> str:
    """For a loop over a parameter of a jitted function (`for s, a, r in reversed(data)`), the
    facts when the file's call of it passes a list that the caller empties (`data = []`) and
    refills with `.append` in a `while` loop before each call: "" otherwise."""
    name = _walked_name(model, loop.node.iter) if isinstance(loop.node, cst.For) else None
    if name is None:
        return ""
    owner = _jitted_owner(loop.function, name)
    if owner is None or name in owner.static_params:
        return ""
    position = owner.params.index(name)
    for site in callers_of(model, owner):
        positional = [a for a in site.node.args if a.keyword is None and not a.star]
        if len(positional) <= position or not isinstance(positional[position].value, cst.Name):
            continue
        listed = positional[position].value.value
        caller = site.function
        emptied = any(isinstance(a.value, cst.List) and not a.value.elements and a.site.loop is not None
                      and a.site.loop.encloses(site.loop) for a in caller.bindings(listed))
        filling = next((s for s in caller.calls if grown_list(s.node) == listed and s.loop is not None
                        and _refilled_in_while(model, s.loop, site)), None)
        if emptied and filling is not None:
            return (f"`{name}` is the list `{caller.name}` empties and refills with `.{_method(filling)}` "
                    f"in a `while` loop before each call of `{owner.name}` (line {model.line_of(site.node)})")
    return ""


def _method(site: Site[cst.Call]) -> str:
    func = site.node.func
    return func.attr.value if isinstance(func, cst.Attribute) else "append"


def _refilled_in_while(model: SemanticModel, growth: Loop, call: Site[cst.Call]) -> bool:
    """The list grows in a `while` loop (of no fixed count) that does not hold the call."""
    return any(isinstance(loop.node, cst.While) and not has_fixed_trip_count(model, loop)
               and not loop.encloses(call.loop) for loop in growth.outward())


def _walked_name(model: SemanticModel, it: cst.BaseExpression) -> str | None:
    """`data` in `data`, `reversed(data)`, `enumerate(data)`."""
    if isinstance(it, cst.Call) and len(it.args) == 1 \
            and model.resolve(it.func) in ("builtins.reversed", "builtins.enumerate", "builtins.list"):
        it = it.args[0].value
    return it.value if isinstance(it, cst.Name) else None


def _jitted_owner(fn: Function, name: str) -> Function | None:
    """The jitted function, `fn` or one around it, whose parameter `name` is, not rebound on the
    way in."""
    current: Function | None = fn
    while current is not None and not current.is_module:
        if name in current.params:
            return current if current.jitted and not current.bindings(name) else None
        if current.bindings(name):
            return None
        current = current.parent
    return None

