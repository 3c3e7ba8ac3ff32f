"""How much work one iteration of a step loop hands to compiled code.

A loop around a jitted step pays one dispatch from Python per iteration (several microseconds
on CPU, more on an accelerator, benchmarks/eager_dispatch.py). Next to a training step of
thousands of operations on large arrays that is noise; next to a physics or environment step of
a few elementwise operations it is most of the time, and `lax.scan` removes it. The file shows
the step's size as the number of array operations its body (and the traced helpers it calls)
writes: that count is the evidence a finding gives, not a timing. The other end is the
idiomatic training loop (`compiled_training_loop`): a compiled step, fed a batch the body slices
or samples, whose dispatch is little next to its work.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import walk
from .core import SemanticModel
from .eager import differentiates, eager_ops, prepares_compiled_input
from .index import Function, Loop, Site
from .loops import indexes_rows, is_numpy_value, iterates_rows, slices_by_counter

# Array operations a compiled step may write and still be "small": a few elementwise updates
# of a state (an integrator, an environment's dynamics). A training step differentiates and is
# never small.
SMALL_STEP_OPS = 20
# Eager ops a step may spend making its batch beside a compiled step: about 5 us each, so under
# 0.1 ms a step, little next to a step worth compiling (benchmarks/eager_dispatch.py).
PREPARATION_OPS = 20


@dataclass(frozen=True)
class CompiledStep:
    """A jitted function (of this file, or one it imports) called on every iteration of a loop,
    and its size."""

    name: str
    ops: int  # array operations its body and its traced helpers write


def small_step_ops(model: SemanticModel, fn: Function) -> int | None:
    """The array operations `fn` writes, when it is a small compiled step: fewer than
    `SMALL_STEP_OPS`, no loop, no scan, no derivative, nothing whose work the file does not show;
    None otherwise."""
    if fn.loops or fn.uses_scan or differentiates(model, fn) or _opaque(model, fn):
        return None
    ops = eager_ops(model, fn) + _negations(model, fn)
    return ops if ops < SMALL_STEP_OPS else None


def small_compiled_steps(model: SemanticModel, loop: Loop) -> list[CompiledStep] | None:
    """The compiled calls one iteration of `loop` makes (unguarded), when every one of them is a
    named jitted function of this file writing fewer than `SMALL_STEP_OPS` array operations, with
    no derivative and no loop of its own, given no data (`x[i:i + bs]`, NumPy rows, a host
    helper's batch: a minibatch of a data set, whose size the file does not show); None when any
    compiled call is larger or not shown (a jitted function of another file, `model.apply`, an
    optimizer)."""
    fn = loop.function
    steps: dict[str, CompiledStep] = {}
    for site in fn.calls:
        if not loop.encloses(site.loop) or site.guarded:
            continue
        if model.call_work(site.node, fn) != "dispatch":
            if _unshown_work(model, site.node, fn):
                return None  # `loss_grad_fn(params, x, y)` bound elsewhere: work the count misses
            continue
        callee = model.callee(site.node, fn)
        target = callee.function
        if not callee.jitted or callee.transform is not None or _fed_data(model, site.node, loop):
            return None
        if target is not None:
            ops, name = small_step_ops(model, target), target.name
        elif callee.imported is not None:  # a jitted function of another scanned module
            ops, name = callee.imported.small_step_ops, callee.imported.name
        else:
            return None
        if ops is None:
            return None
        steps[name] = CompiledStep(name, ops)
    return list(steps.values()) or None


def compiled_training_loop(model: SemanticModel, loop: Loop) -> bool:
    """Whether the loop is the idiomatic training loop around a compiled step: every JAX call of
    the body runs compiled code (a jitted step, `model.apply`), apart from preparing each step's
    batch, and the loop walks steps or batches rather than the rows of an array. Folding it into
    a scan saves a dispatch per step, which next to a compiled step is little (the training_loop
    pipeline measured 1.1x for a scan per epoch). Not one: a compiled step per row of an array
    (`for x in xs: w = update(w, x)`), tiny by construction, and a body doing eager work too (a
    key split per environment step), which pays that dispatch cost every step."""
    fn = loop.function
    if isinstance(loop.node, cst.For) and (iterates_rows(model, loop.node.iter, fn) or indexes_rows(model, loop)):
        return False
    compiled = False
    eager: list[Site] = []
    for site in fn.calls:
        if not loop.encloses(site.loop) or site.guarded:
            continue  # a periodic evaluation (`if step % 100 == 0:`) is not every step's work
        work = model.call_work(site.node, fn)
        if work == "array":
            eager.append(site)
        compiled = compiled or work == "dispatch"
    # eager helpers around a compiled step fed a fresh batch each iteration (a slice of the data
    # set, `x[j * bs:(j + 1) * bs]`) are the batch's preparation: still one training step a batch;
    # a key split for a compiled gradient step (which samples its batch on the device) is too
    return compiled and (not eager or slices_by_counter(loop) or _samples_batches(model, eager)
                         or _keys_for_a_training_step(model, loop, eager))


def _keys_for_a_training_step(model: SemanticModel, loop: Loop, eager: list[Site]) -> bool:
    """The body's only eager work splits keys, and every compiled call it makes is a jitted
    function of this file that differentiates (`params, loss = train_step(params, x, y, sub)`):
    a training step, whose size dwarfs the dispatch a scan would save. A key split around a
    tiny jitted environment step is not one."""
    if any(model.resolve(s.node.func) not in apis.KEY_DERIVATIONS for s in eager):
        return False
    fn = loop.function
    compiled = [s for s in fn.calls if loop.encloses(s.loop) and not s.guarded
                and model.call_work(s.node, fn) == "dispatch"]
    targets = [model.callee(s.node, fn).function for s in compiled]
    return bool(targets) and all(t is not None and differentiates(model, t) for t in targets)


def _samples_batches(model: SemanticModel, eager: list[Site]) -> bool:
    """The body's eager work is a helper of this file making each step's batch for the compiled
    step (`xb = sample_batch(sub, data)` after `key, sub = split(key)`), fewer than
    `PREPARATION_OPS` ops a step in all: a training loop sampling its batches, one step a batch.
    Not one: a key split alone around a compiled step (a rollout), a draw made in the loop
    itself (a batch-1 simulation drawing a shock per step), and a batch from a function the file
    does not show (a PINN resampling its collocation points)."""
    ops = 0
    batches = False
    for site in eager:
        if model.resolve(site.node.func) in apis.KEY_DERIVATIONS:
            ops += 1
            continue
        target = model.callee(site.node, site.function).function
        if target is None or not prepares_compiled_input(model, site):
            return False  # a draw in the loop itself (`shock = normal(sub, ...)`) is a step's own work
        batches = True
        ops += eager_ops(model, target)
    return batches and ops < PREPARATION_OPS


# JAX namespaces whose functions are array operations the count can stand for.
_ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.", "jax.tree", "builtins.")


def _opaque(model: SemanticModel, fn: Function, depth: int = 0) -> bool:
    """The step calls something whose work the file does not show (an optimizer's `update`, a
    model's `apply`, a function bound to a transform elsewhere, another module's function):
    its operation count says nothing of its size."""
    for site in fn.calls:
        callee = model.callee(site.node, fn)
        if callee.function is not None:
            if callee.transform is not None or depth > 4 or _opaque(model, callee.function, depth + 1):
                return True
            continue
        if _relabels(site.node):
            continue
        if not (callee.qualname or "").startswith(_ARRAY_NAMESPACES) or callee.transform is not None:
            return True
    return False


# Methods that give an array a new shape or dtype: the step's own arithmetic, not hidden work.
_SHAPE_METHODS = frozenset({"reshape", "astype", "transpose", "ravel", "flatten", "squeeze", "swapaxes"})


def _relabels(call: cst.Call) -> bool:
    """`u.flatten()`, `x.reshape((n, n))` on a name: an array method the count already covers."""
    func = call.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
        and func.attr.value in _SHAPE_METHODS


def _unshown_work(model: SemanticModel, call: cst.Call, fn: Function) -> bool:
    """A call in the loop that is neither a builtin, a list's bookkeeping, nor a function of the
    file: something the file does not show (a gradient function bound to a transform, an
    environment's step), which may be most of an iteration's work."""
    q = model.resolve(call.func) or ""
    if q.startswith(_ARRAY_NAMESPACES) or model.callee(call, fn).function is not None:
        return False
    return not (isinstance(call.func, cst.Attribute) and call.func.attr.value in apis.CONTAINER_METHODS)


def _fed_data(model: SemanticModel, call: cst.Call, loop: Loop) -> bool:
    """An argument is data rather than state: it slices an array (`step(w, x[i:i + bs])`,
    `step(w, x[:n])`), is NumPy data, or is a name the loop binds to such a value or to the result
    of a host helper of the file (`xb, yb = get_batch(X, Y, i)`)."""
    fn = loop.function
    values: list[cst.BaseExpression] = []
    for arg in call.args:
        values.append(arg.value)
        if isinstance(arg.value, cst.Name):
            values.extend(a.value for a in fn.bindings(arg.value.value)
                          if a.value is not None and loop.encloses(a.site.loop))
    for value in values:
        if any(isinstance(node, cst.Slice) for node in walk(value)) or is_numpy_value(model, value, fn):
            return True
        if isinstance(value, cst.Call):
            helper = model.callee(value, fn).function
            if helper is not None and not helper.does_jax_work:
                return True
    return False


def _negations(model: SemanticModel, fn: Function) -> int:
    """Unary minus on arrays in `fn`'s body (`acc = -pos`): array operations that
    `Function.array_ops`, which counts binary operators, calls and indexing, leaves out."""
    return sum(1 for node in walk(fn.body) if isinstance(node, cst.UnaryOperation)
               and isinstance(node.operator, cst.Minus) and model.is_array(node.expression, fn))
