"""Gradient steps that run eagerly where they are written, with no step function to jit.

Two shapes, both seen in real training and simulation code:

- a derivative evaluated in the body of a loop over steps, in code nothing traces:
  `loss, grads = jax.value_and_grad(loss_fn)(params, x, y)` in a training loop, or
  `forces = -force_fn(positions)` with `force_fn = jax.grad(energy)` in a minimiser's loop. Each
  iteration runs the forward and the backward pass op by op, and the optimizer update that
  follows (`optimizer.update`, `optax.apply_updates`) too.
- a function that is a whole training step (a derivative, then `optimizer.update` and
  `optax.apply_updates` on its result) with no loop of its own, that nothing in the file jits or
  traces and that the file does not call outside loops: a method a training script in another
  file calls once per batch. When the file does not call it at all, only a function that does
  what tracing cannot (reads a value back with `.item()`, branches on a device value) is
  certain to run eagerly.

Not eager steps: a derivative under `jax.jit` (`jax.jit(jax.grad(loss))`, under any name) or of a
jitted function (`jax.grad(jax.jit(f))`: its passes run compiled), one in traced code, one under a
condition that picks some iterations, one in a loop over structure or a short literal loop, and the
eager loop of an eager-versus-jit benchmark (the function reads a timer and the file also jits the
differentiated function).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import read_names, walk
from .core import SemanticModel
from .eager import descent_loop, dispatch_loop, host_side
from .facts import fact
from .gradients import derivative_of
from .index import Assignment, Function, Loop, Site
from .runs import callers_of
from .timing import reads_timer


@dataclass(frozen=True)
class EagerGradient:
    """One derivative evaluated eagerly, and what of its step is eager beside it."""

    site: Site[cst.Call]  # the call evaluating it: `jax.grad(loss)(p)`, `force_fn(x)`
    transform: cst.Call  # the transform's call: `jax.value_and_grad(loss_fn)`
    binding: Assignment | None  # `force_fn = jax.grad(energy)` when it is called by that name
    loop: Loop | None  # the step loop running it; for a whole step, the loop calling its function
    updates: tuple[Site[cst.Call], ...]  # the optimizer update fed by its result, in order
    whole_step: bool  # the function holding it is a whole training step (no loop of its own)


@fact
def eager_gradients(model: SemanticModel) -> list[EagerGradient]:
    """Derivatives evaluated eagerly as a step (module docstring), in walk order."""
    found = []
    for fn in model.functions:
        if fn.traced:
            continue
        for site in fn.calls:
            derivative = derivative_of(model, site)
            if derivative is None or site.guarded or _benchmark_baseline(model, fn, derivative[0]):
                continue
            transform, binding = derivative
            if site.loop is not None:
                if dispatch_loop(model, site.loop) or descent_loop(model, site.loop):
                    updates = _updates_fed_by(model, site, site.loop)
                    found.append(EagerGradient(site, transform, binding, site.loop, updates, False))
                continue
            updates = _updates_fed_by(model, site, None)
            caller_loop = _step_function_loop(model, fn, _reads_back(model, site))
            if len(updates) == 2 and (caller_loop is None or isinstance(caller_loop, Loop)):
                found.append(EagerGradient(site, transform, binding, caller_loop, updates, True))
    return found


def _updates_fed_by(model: SemanticModel, site: Site[cst.Call], loop: Loop | None) -> tuple[Site[cst.Call], ...]:
    """`updates, state = optimizer.update(grads, state)` reading a name bound from the derivative,
    then `optax.apply_updates(params, updates)` reading its result, after it in the same loop (or
    the same function body): the optimizer step the gradient feeds."""
    fn = site.function
    fed = {t for a in fn.assignments if a.value is not None and any(n is site.node for n in walk(a.value))
           for t in a.targets}
    found: list[Site[cst.Call]] = []
    for other in fn.calls:
        if other.loop is not loop and not (loop is not None and loop.encloses(other.loop)):
            continue
        func = other.node.func
        update = not found and isinstance(func, cst.Attribute) and func.attr.value == "update"
        apply = bool(found) and model.resolve(func) == "optax.apply_updates"
        # a line costs a rendering of its statement: asked only of the two calls that can match
        if not (update or apply) or model.line_of(other.node) < model.line_of(site.node):
            continue
        if update and any(read_names(arg.value) & fed for arg in other.node.args):
            found.append(other)
            fed = {t for a in fn.assignments if a.value is other.node for t in a.targets}
        elif apply and any(read_names(arg.value) & fed for arg in other.node.args):
            found.append(other)
            break
    return tuple(found)


def _reads_back(model: SemanticModel, site: Site[cst.Call]) -> bool:
    """The function pulls the derivative's result to the host (`return loss.item()`,
    `float(loss)`): tracing it would fail, so it runs eagerly wherever it is called."""
    fn = site.function
    made = {t for a in fn.assignments if a.value is not None and any(n is site.node for n in walk(a.value))
            for t in a.targets}
    for other in fn.calls:
        func, args = other.node.func, other.node.args
        if isinstance(func, cst.Attribute) and func.attr.value in apis.HOST_METHODS \
                and isinstance(func.value, cst.Name) and func.value.value in made:
            return True
        if model.resolve(func) in apis.HOST_PULL_FUNCTIONS and model.resolve(func) != "builtins.print" and args \
                and isinstance(args[0].value, cst.Name) and args[0].value.value in made:
            return True
    return False


def _step_function_loop(model: SemanticModel, fn: Function, reads_back: bool) -> Loop | None | bool:
    """For a function holding a whole training step and no loop: the loop of this file that calls
    it on every iteration (None when the file does not call it); False when it is not an eager
    step function (jitted, traced, a lambda or module body, a flax/equinox module's method,
    referenced other than by a call, or called only outside loops or under a condition)."""
    if fn.is_module or fn.name == "<lambda>" or fn.jitted or fn.loops \
            or (fn.cls is not None and fn.cls.is_jax_module):
        return False
    callers = callers_of(model, fn)
    if not callers:
        # called from another file, which may trace it (`self.agent.train_step(...)` inside a
        # jitted function): certain to run eagerly only when it does what tracing cannot
        # (`loss.item()`, `float(x)`, a branch on a device value, NumPy on its arrays)
        return None if (reads_back or host_side(model, fn)) and not _referenced(model, fn) else False
    # a whole training step called in a loop makes it a loop over steps, whatever else it does
    looped = [c.loop for c in callers if c.loop is not None and not c.guarded]
    return looped[0] if looped else False


def _referenced(model: SemanticModel, fn: Function) -> bool:
    """The file names the function other than at its `def` (handed to a trainer, stored): what
    receives it may jit it."""
    names, attributes = named_in_file(model)
    own = isinstance(fn.node, cst.FunctionDef)  # its `def`'s name is one of the Name nodes counted
    return names.get(fn.name, 0) > own or fn.name in attributes


@fact
def named_in_file(model: SemanticModel) -> tuple[dict[str, int], frozenset[str]]:
    """How many `Name` nodes of the file carry each name (the names of `def`s included), and the
    names read as attributes (`.name`): one walk for every function's question."""
    names: dict[str, int] = {}
    attributes = set()
    for n in walk(model.module):
        if isinstance(n, cst.Name):
            names[n.value] = names.get(n.value, 0) + 1
        elif isinstance(n, cst.Attribute):
            attributes.add(n.attr.value)
    return names, frozenset(attributes)


def _benchmark_baseline(model: SemanticModel, fn: Function, transform: cst.Call) -> bool:
    """The function reads a timer and the file also jits the differentiated function (`jax.jit(
    jax.grad(loss))` somewhere): the eager loop is the baseline of an eager-versus-jit timing."""
    if not transform.args or not reads_timer(model, fn.calls):
        return False
    target = model.function_ref(transform.args[0].value, fn)
    return target is not None and (target.jitted or any(
        root.function is target and root.via == "inner" for root in model.trace_roots))
