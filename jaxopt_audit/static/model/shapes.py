"""Shapes a loop changes from one iteration to the next.

A jitted function is compiled once per distinct input shape. A loop that hands it a slice whose
length is rebound on every iteration (`x[:n]` with `n = 10 + i`), or an array made with a shape
that reads such a name (`np.random.randn(n, 4)`), makes it trace and compile again for every new
length. The file shows these shapes when the length is an expression of names the loop rebinds;
a slice with both bounds moving together (`x[i:i + bs]`) keeps its length and is not one of
them, and neither is a loop over a written-out list of sizes (a sweep: one compilation per
size is what it asks for).
"""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import describe, names_in, walk
from .core import SemanticModel
from .enclosing import condition_around, enclosing_statements
from .facts import fact
from .index import Function, Loop, Site
from .loops import GROWING_CALLS, element_bound, has_fixed_trip_count
from .memoisation import runs_once

# Array makers and the positions of their arguments that give the result's shape (None: every
# positional argument, as in `np.random.randn(n, 4)` or `arange(start, stop, step)`); `shape=`/`size=`
# give it too. The other arguments (a PRNG key, a fill value, a dtype, bounds of a draw) give only
# the values: a new key each step draws new numbers of the same shape.
SHAPED_MAKERS: dict[str, tuple[int, ...] | None] = {
    "numpy.random.randn": None, "numpy.random.rand": None, "numpy.arange": None, "jax.numpy.arange": None,
    "numpy.zeros": (0,), "numpy.ones": (0,), "numpy.empty": (0,), "numpy.full": (0,),
    "jax.numpy.zeros": (0,), "jax.numpy.ones": (0,), "jax.numpy.empty": (0,), "jax.numpy.full": (0,),
    "jax.random.normal": (1,), "jax.random.uniform": (1,),
}
_SHAPE_KEYWORDS = frozenset({"shape", "size"})
# Conversions that keep the shape of what they are given.
_CONVERSIONS = frozenset({"jax.numpy.asarray", "jax.numpy.array", "numpy.asarray", "numpy.array", "jax.device_put"})


def rebound_each_iteration(loop: Loop) -> set[str]:
    """The loop's targets and the names its body binds outside any periodic guard: their value
    may differ on every iteration."""
    fn = loop.function
    names = set(loop.targets)
    names.update(t for a in fn.assignments if loop.encloses(a.site.loop) and not a.site.guarded for t in a.targets)
    return names


def changing_shape(model: SemanticModel, expr: cst.BaseExpression, loop: Loop, depth: int = 0) -> str | None:
    """The name whose new value on each iteration of `loop` gives `expr` a new shape, or None:
    `x[:n]`, `x[n:]`, `x[i:end]` (one bound moving, the other fixed), `np.random.randn(n, 4)`, or a
    name the loop binds to one of those."""
    if depth > 3 or _sweeps_literal_sizes(loop):
        return None
    fn = loop.function
    varying = rebound_each_iteration(loop)
    if isinstance(expr, cst.Subscript):
        for element in expr.slice:
            part = element.slice
            if not isinstance(part, cst.Slice):
                continue
            lower, upper = part.lower, part.upper
            # one bound moving and the other fixed (or absent): the length moves with it
            moving = [b for b in (lower, upper) if b is not None and _reads(b, varying)]
            if len(moving) == 1:
                return _reads(moving[0], varying)
        return None
    if isinstance(expr, cst.Call):
        q = model.resolve(expr.func)
        if q in _CONVERSIONS and expr.args:  # `jnp.asarray(x_np[:n])`: the same shape on the device
            return changing_shape(model, expr.args[0].value, loop, depth + 1)
        if q in SHAPED_MAKERS:
            positions = SHAPED_MAKERS[q]
            positional = [a for a in expr.args if a.keyword is None]
            shaping = [a for i, a in enumerate(positional) if positions is None or i in positions]
            shaping += [a for a in expr.args if a.keyword is not None and a.keyword.value in _SHAPE_KEYWORDS]
            for arg in shaping:
                name = _reads(arg.value, varying)
                if name is not None:
                    return name
        return None
    if isinstance(expr, cst.Name):
        for a in _bindings_in(fn, expr.value, loop):
            value = element_bound(a, expr.value)  # `xb, yb = x[:n], y[:n]` too
            if value is not None and (len(a.targets) == 1 or value is not a.value):
                found = changing_shape(model, value, loop, depth + 1)
                if found is not None:
                    return found
    return None


def _bindings_in(fn: Function, name: str, loop: Loop):
    return [a for a in fn.bindings(name) if loop.encloses(a.site.loop) and not a.site.guarded]


def _reads(expr: cst.BaseExpression, names: set[str]) -> str | None:
    return next((n for n in names_in(expr) if n in names), None)


def _sweeps_literal_sizes(loop: Loop) -> bool:
    """`for n in [64, 128, 256]`: the sizes are written out; each is meant to compile once."""
    node = loop.node
    return isinstance(node, cst.For) and isinstance(node.iter, (cst.List, cst.Tuple, cst.Set))


def grown_by_callee(model: SemanticModel, site: Site[cst.Call]) -> tuple[str, cst.Call] | None:
    """For a call in a loop that rebinds one of the names it passes to what the callee returns
    (`state, hist = step(state, hist)`), the name and the call in the callee that returns it
    longer than it came in (`hist = jnp.append(hist, x)`, `jnp.concatenate([hist, x])`): the next
    iteration passes it back one step longer, a new shape on every call. None otherwise."""
    callee = model.callee(site.node, site.function).function
    if callee is None or site.loop is None or len(callee.returns) != 1:
        return None
    bound = [a for a in site.function.assignments if a.value is site.node]
    if len(bound) != 1:
        return None
    targets = bound[0].targets
    returned = callee.returns[0]
    outputs = [e.value for e in returned.elements] if isinstance(returned, cst.Tuple) else [returned]
    if len(outputs) != len(targets):
        return None
    params = list(callee.params)
    if params[:1] in (["self"], ["cls"]) and isinstance(site.node.func, cst.Attribute):
        params = params[1:]
    passed = {a.value.value: params[i] for i, a in enumerate(x for x in site.node.args if x.keyword is None)
              if i < len(params) and isinstance(a.value, cst.Name) and not a.star}
    for target, output in zip(targets, outputs, strict=True):
        param = passed.get(target)
        if param is None or not isinstance(output, cst.Name):
            continue
        for a in callee.bindings(output.value):
            value = a.value
            if isinstance(value, cst.Call) and model.resolve(value.func) in GROWING_CALLS \
                    and _extends(value, param):
                return target, value
    return None


def _extends(call: cst.Call, name: str) -> bool:
    """`jnp.append(name, x)`, `jnp.concatenate([name, x])`: the call's first argument is `name`,
    or a list or tuple that holds it."""
    if not call.args:
        return False
    first = call.args[0].value
    items = [e.value for e in first.elements] if isinstance(first, (cst.List, cst.Tuple)) else [first]
    return any(isinstance(i, cst.Name) and i.value == name for i in items)


# Calls that make one array of a whole list: its leading dimension is the list's length.
_LIST_TO_ARRAY = frozenset({"jax.numpy.stack", "jax.numpy.array", "jax.numpy.asarray", "numpy.stack", "numpy.array",
                            "numpy.asarray", "jax.numpy.vstack", "numpy.vstack"})


class GrowingList(NamedTuple):
    """A Python list whose length changes between calls of the jitted function given it."""

    shown: str  # the list as the code writes it: `data`, `buffer[i]`, `self._items`
    converted: str | None  # the call that makes it one array (`jnp.stack`), None when passed as a list
    why: str  # what the file shows about its length, for the message


def growing_list(model: SemanticModel, site: Site[cst.Call], expr: cst.BaseExpression) -> GrowingList | None:
    """`expr`, an argument of the call at `site`, when it is a Python list (or one array stacked
    from one) whose length the file shows changing from call to call: refilled by a `while` loop
    of no fixed count, grown on every iteration of the loop around the call and never emptied,
    emptied after a call that runs only under a condition on run-time values (an episode's end),
    or an attribute list that other methods grow. None otherwise."""
    fn = site.function
    converted = None
    if isinstance(expr, cst.Name) and site.loop is not None:
        bound = [a for a in fn.bindings(expr.value) if site.loop.encloses(a.site.loop)]
        if len(bound) == 1 and isinstance(bound[0].value, cst.Call) and len(bound[0].targets) == 1:
            expr = bound[0].value
    if isinstance(expr, cst.Call) and model.resolve(expr.func) in _LIST_TO_ARRAY and expr.args:
        converted, expr = describe(expr.func), expr.args[0].value
    elif converted is None and not isinstance(expr, (cst.Name, cst.Attribute)):
        return None
    root = _list_root(expr)
    if root is None:
        return None
    growths = [s for s in list_growths(model).get(root, ()) if s.function is fn or root.startswith("self.")]
    if not growths:
        return None
    if root.startswith("self."):
        why = _grown_by_methods(model, fn, root, growths)
    else:
        why = _grown_between_calls(model, site, root, [g for g in growths if g.function is fn])
    return GrowingList(describe(expr), converted, why) if why else None


def _list_root(expr: cst.BaseExpression) -> str | None:
    """`data` for `data` or `data[i]`, `self.items` for `self.items`: the list's name."""
    if isinstance(expr, cst.Subscript):
        expr = expr.value
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return f"self.{expr.attr.value}"
    return None


@fact
def list_growths(model: SemanticModel) -> dict[str, list[Site]]:
    """The calls that grow a list (`xs.append(...)`, `self.buf.extend(...)`), by the list's name
    (`xs`, `self.buf`), over every function of the file."""
    found: dict[str, list[Site]] = {}
    for f in model.functions:
        for s in f.calls:
            func = s.node.func
            if isinstance(func, cst.Attribute) and func.attr.value in apis.LIST_GROWING_METHODS:
                root = _list_root(func.value)
                if root is not None:
                    found.setdefault(root, []).append(s)
    return found


def _emptied(node: cst.CSTNode, root: str) -> list[cst.Assign]:
    """`root = []` (or `root[i] = []`, `root = list()`) inside `node`."""
    return [n for n in walk(node) if isinstance(n, cst.Assign)
            and any(_list_root(t.target) == root for t in n.targets)
            and (isinstance(n.value, cst.List) and not n.value.elements
                 or isinstance(n.value, cst.Call) and isinstance(n.value.func, cst.Name)
                 and n.value.func.value == "list" and not n.value.args)]


def _grown_between_calls(model: SemanticModel, site: Site, root: str, growths: list[Site]) -> str:
    """What a loop of `site`'s function shows about the list's length at the call: "" when nothing."""
    method = _method(growths[0].node) if growths else "append"
    for loop in site.loop.outward() if site.loop is not None else ():
        inside = [g for g in growths if loop.encloses(g.loop)]
        if not inside:
            continue
        for g in inside:
            for inner in g.loop.outward() if g.loop is not None else ():
                if inner is loop:
                    break
                if isinstance(inner.node, cst.While) and not has_fixed_trip_count(model, inner) \
                        and not inner.encloses(site.loop):
                    return (f"which the `while` loop at line {model.line_of(inner.node)} fills with `.{method}` "
                            "before each call (a count the file does not fix)")
        line = model.line_of(loop.node)
        if not _emptied(loop.node, root):
            return f"which the loop at line {line} grows with `.{method}` and never empties: each call sees it longer"
        condition = condition_around(site.function, site.node, loop)
        test = _innermost_test(site.function, site.node, loop)
        if condition is not None and test is not None and not _counts(test, loop):
            return (f"which the loop at line {line} grows with `.{method}` and empties after a call that runs only "
                    f"{condition}: its length is the number of iterations between calls")
        return ""
    return ""


def _innermost_test(fn: Function, node: cst.CSTNode, loop: Loop) -> cst.BaseExpression | None:
    path = enclosing_statements(fn, node) or []
    tests = [s.test for s in path[path.index(loop.node) + 1:] if isinstance(s, cst.If)] if loop.node in path else []
    return tests[-1] if tests else None


def _counts(test: cst.BaseExpression, loop: Loop) -> bool:
    """A test of a length or a counter (`len(buf) == n`, `t == horizon`): calls at a fixed length."""
    counters = loop.counters_in_scope()
    # a counter as an index (`done[i]` for the i-th environment) picks an item, it counts nothing
    indices = {id(n) for e in walk(test) if isinstance(e, cst.SubscriptElement) for n in walk(e)}
    for n in walk(test):
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "len":
            return True
        if isinstance(n, cst.Name) and n.value in counters and id(n) not in indices:
            return True
    return False


def _grown_by_methods(model: SemanticModel, fn: Function, root: str, growths: list[Site]) -> str:
    """An attribute list that methods other than setup grow: its length at a call is however many
    items those added."""
    growers = [g for g in growths if g.function is not fn and g.function.cls is fn.cls
               and fn.cls is not None and not runs_once(model, g.function)]
    if not growers:
        return ""
    names = sorted({f"`{g.function.name}`" for g in growers})
    methods = sorted({f"`.{_method(g.node)}`" for g in growers})
    emptying = sorted({f"`{f.name}`" for f in fn.cls.methods.values() if _emptied(f.body, root)}) \
        if fn.cls is not None else []
    emptied = f" and {', '.join(emptying)} empties" if emptying else ""
    return f"which {', '.join(names)} grows ({', '.join(methods)}){emptied}"


def _method(call: cst.Call) -> str:
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else "append"
