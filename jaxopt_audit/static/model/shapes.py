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

import libcst as cst

from ..syntax.walk import names_in
from .core import SemanticModel
from .index import Function, Loop, Site
from .loops import GROWING_CALLS, element_bound

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
