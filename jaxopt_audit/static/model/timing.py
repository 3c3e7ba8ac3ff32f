"""Timed regions in one function: pairs of timer readings and what runs between them.

A timed region is a reading `start = time.perf_counter()` and a later reading whose value is
subtracted from it (`time.perf_counter() - start`, or `end = ...; end - start`). The calls of the
function are put in evaluation order (arguments before the call that takes them, nested defs
and lambdas left out), so "what runs between the two readings" is a slice of that list.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .. import apis
from ..walk import children, read_names, walk
from .core import Function, SemanticModel
from .facts import fact

# Timer readings (timeit.timeit/repeat run a statement; they are not readings).
TIMER_READS = apis.TIMER_FUNCTIONS - {"timeit.timeit", "timeit.repeat"}
SYNC_CALLS = frozenset({"jax.block_until_ready", "jax.effects_barrier", "jax.device_get",
                        "jax.experimental.multihost_utils.sync_global_devices"})
# Methods that wait for a device value: block_until_ready and the host reads.
SYNC_METHODS = apis.SYNC_METHODS | apis.HOST_METHODS
# jax.tree_util functions that only look at a pytree's structure: no device work is dispatched.
TREE_STRUCTURE_PREFIXES = ("jax.tree_util.", "jax.tree.")


@dataclass(frozen=True)
class TimedRegion:
    start: cst.Call  # the first timer reading
    end: cst.Call  # the second one
    # the calls evaluated between them, in order, and the f-string fields (formatting reads the value)
    calls: tuple[cst.Call | cst.FormattedStringExpression, ...]
    in_loop: bool  # the second reading sits in a loop (per-iteration or windowed measurement)


def calls_in_order(fn: Function, fstrings: bool = False) -> list:
    """`fn`'s own calls in evaluation order: arguments and receivers before the call; with
    `fstrings`, the f-string fields too, each right after the value it formats."""
    body = fn.body
    out: list = []

    def visit(node: cst.CSTNode) -> None:
        if node is not body and isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            if isinstance(node, cst.FunctionDef):
                for d in node.decorators:
                    visit(d)
            return
        if isinstance(node, cst.Assign):  # the value is evaluated before the targets
            visit(node.value)
            for t in node.targets:
                visit(t)
            return
        for child in children(node):
            visit(child)
        if type(node) is cst.Call or (fstrings and type(node) is cst.FormattedStringExpression):
            out.append(node)

    visit(body)
    return out


def _timer_bindings(model: SemanticModel, fn: Function) -> dict[str, list[cst.Call]]:
    """name -> the timer readings bound to it (`start = time.perf_counter()`)."""
    out: dict[str, list[cst.Call]] = {}
    for a in fn.assignments:
        value = a.value
        if isinstance(value, cst.Call) and len(a.targets) == 1 and model.resolve(value.func) in TIMER_READS:
            out.setdefault(a.targets[0], []).append(value)
    return out


def _subtractions(fn: Function) -> list[cst.BinaryOperation]:
    body = fn.body
    out = []
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if node is not body and isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
            out.append(node)
        stack.extend(children(node))
    return out


def timed_regions(model: SemanticModel, fn: Function) -> list[TimedRegion]:
    """Every (start, end) pair of timer readings of `fn` that is subtracted, with the calls
    between them."""
    bound = _timer_bindings(model, fn)
    if not bound:
        return []  # no `start = time...()`: nothing to pair (and no walk of the body)
    order = calls_in_order(fn, fstrings=True)
    position = {id(c): i for i, c in enumerate(order)}
    reading_of = {id(c): name for name, calls in bound.items() for c in calls}
    loop_of = {id(s.node): s.loop for s in fn.calls}
    regions: list[TimedRegion] = []
    seen: set[tuple[int, int]] = set()
    for sub in _subtractions(fn):
        left, right = sub.left, sub.right
        if not isinstance(right, cst.Name) or right.value not in bound:
            continue
        if isinstance(left, cst.Call) and model.resolve(left.func) in TIMER_READS:
            ends = [left]
        elif isinstance(left, cst.Name) and left.value in bound:
            ends = bound[left.value]
        else:
            continue
        for end in ends:
            if id(end) not in position:
                continue
            j = position[id(end)]
            starts = [c for c in bound[right.value] if id(c) in position and position[id(c)] < j]
            if not starts:
                continue
            start = max(starts, key=lambda c: position[id(c)])
            i = position[id(start)]
            key = (i, j)
            if key in seen:
                continue
            seen.add(key)
            between = tuple(c for c in order[i + 1:j] if id(c) not in reading_of
                            and (type(c) is not cst.Call or model.resolve(c.func) not in TIMER_READS))
            regions.append(TimedRegion(start, end, between, loop_of.get(id(end)) is not None))
    return regions


@fact
def syncing_functions(model: SemanticModel) -> set[Function]:
    """Same-module functions that wait for device results (directly or through callees)."""
    syncing: set[Function] = set()
    changed = True
    while changed:
        changed = False
        for fn in model.functions:
            if fn in syncing or fn.is_module:
                continue
            for site in fn.calls:
                target = model.callee(site.node, fn).function
                if is_sync(model, site.node, fn, set()) or (target is not None and target in syncing):
                    syncing.add(fn)
                    changed = True
                    break
    return syncing


def is_sync(model: SemanticModel, call: cst.Call, fn: Function, results: set[str]) -> bool:
    """The call waits for a device value: `block_until_ready`, `jax.device_get`, `float(x)`,
    `np.asarray(x)`, `x.item()` on an array (or on a name bound from JAX work, `results`)."""
    q = model.resolve(call.func)
    if q in SYNC_CALLS:
        return True
    # `jax.tree.map(np.asarray, metrics)`: a host read of every leaf
    if q in apis.TREE_MAPS and call.args and _reads_to_host(model, call.args[0].value):
        return True
    # `jax.tree.map(lambda x: x.block_until_ready(), out)` (brax's training loop)
    if any(isinstance(a.value, cst.Lambda) and _lambda_syncs(a.value) for a in call.args):
        return True
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in SYNC_METHODS and q is None:
        return True
    if q in apis.HOST_PULL_FUNCTIONS or (q or "").startswith("numpy."):
        for arg in call.args:
            value = arg.value
            if model.is_array(value, fn) or _reads_any(value, results):
                return True
            # `float(step(x))`: converting a call's result waits for it
            if q in apis.HOST_PULL_FUNCTIONS and isinstance(value, cst.Call) and q != "builtins.print":
                return True
    return False


def _lambda_syncs(node: cst.Lambda) -> bool:
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
               and n.func.attr.value in SYNC_METHODS for n in walk(node.body))


def _reads_any(expr: cst.BaseExpression, names: set[str]) -> bool:
    return bool(read_names(expr) & names)


def _reads_to_host(model: SemanticModel, fn: cst.BaseExpression) -> bool:
    """`np.asarray`, `float`, `jax.device_get` passed as a function: each call reads a value back."""
    q = model.resolve(fn)
    return q in (apis.HOST_PULL_FUNCTIONS - {"builtins.print"}) or q in SYNC_CALLS


def formats_device_value(model: SemanticModel, field: cst.FormattedStringExpression, fn: Function,
                         results: set[str]) -> bool:
    """An f-string field formatting a device array (or a name bound from JAX work) converts it
    to text on the host: it waits for the value."""
    return model.is_array(field.expression, fn) or _reads_any(field.expression, results)


def structural_tree_call(model: SemanticModel, call: cst.Call) -> bool:
    """`jax.tree_util.tree_structure(x)`, `tree_flatten(x)`, `treedef_is_leaf(...)`: walks the
    pytree on the host; only `tree.map` and friends run a function that may dispatch work."""
    q = model.resolve(call.func) or ""
    return q.startswith(TREE_STRUCTURE_PREFIXES) and q not in apis.TREE_MAPS
