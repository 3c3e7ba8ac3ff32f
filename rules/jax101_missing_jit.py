"""JAX101 missing-jit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import libcst as cst

from jaxopt_audit.static import (
    UNSAFE,
    WORTH_JIT,
    EagerGradient,
    Fix,
    Function,
    FunctionSummary,
    Invalid,
    Report,
    Rule,
    SemanticModel,
    Site,
    Valid,
    array_only_parameters,
    condition_around,
    counted_steps,
    describe,
    dispatch_loop,
    dotted_expression,
    eager_baseline,
    eager_gradients,
    eager_ops,
    eager_tree_updates,
    grown_names,
    host_side,
    imported_candidate,
    module_alias,
    no_new_trace_findings,
    prepares_compiled_input,
    read_names,
    rebound_globals,
    rebound_kind,
    scalar_inputs,
)


class MissingJit(Rule):
    """
    ## What it does
    Finds functions and methods that do JAX array work (`jnp.*`, `lax.*`, `jax.grad(f)(x)`,
    arithmetic on arrays, a function mapped over a pytree with `jax.tree.map`) and are called on
    every iteration of a loop, yet are neither jitted nor reached from jitted code. Reported at
    the `def`; the message names the loop. Also an update of a whole pytree written in the loop
    itself (`params = jax.tree.map(lambda p, g: p - lr * g, params, grads)`) after a compiled
    `grads = grad_fn(params, batch)`: every operation of the update is dispatched for every
    leaf on every iteration, beside a compiled call it could be part of; reported at the map.
    Also an optimizer update (`optimizer.update` then `optax.apply_updates`) run outside jit in
    the loop, reported at `optimizer.update`, or in an undecorated function the loop calls on
    every iteration (a `step` whose `@jax.jit` was commented out), reported at its `def`.

    And a gradient step with no step function to decorate: a derivative evaluated eagerly in the
    body of a loop over steps (`loss, grads = jax.value_and_grad(loss_fn)(params, x, y)`, or
    `forces = -force_fn(positions)` with `force_fn = jax.grad(energy)` in a minimiser's loop),
    reported at that call, the optimizer update it feeds named in the same finding; and a
    function that is a whole training step (a derivative, `optimizer.update`, `optax.apply_updates`)
    with no loop of its own that nothing in the file jits, reported at the transform, with the
    loop that calls it or the fact that the file does not call it (a method a script elsewhere
    calls once per batch).

    ## Why is this bad?
    Without `jit`, JAX runs op by op: every `jnp` call is dispatched separately from Python,
    allocates its result, and nothing is fused. A training step of a few dozen ops pays that
    overhead dozens of times per step; compiled, it is one call.

    ## How to fix
    Decorate the function with `@jax.jit` (mark arguments that select code paths or shapes as
    `static_argnames`), or wrap it once outside the loop: `step = jax.jit(step)`. For a gradient
    step written in the loop, gather the step (the gradient and the update it feeds) into one
    function decorated with `@jax.jit` and call that in the loop. When the
    function reads a module-level array that the program rebinds (a loop at module level
    updating `W` that `forward` reads), jit would freeze the value it saw when tracing: the
    message says so, and the fix is to pass the array as an argument first.

    The rule stays quiet on functions jitted by any form (decorator, `partial(jax.jit, ...)`,
    `f = jax.jit(f)`, `self.f = jax.jit(self._f)`, equinox/flax/objax jit wrappers), functions
    called only outside loops, helpers only ever called from jitted code, and functions running
    fewer than five eager ops a call (counting the un-jitted helpers they call, and twice a
    function they differentiate; an eager derivative counts at least five; arrays made from
    Python values, `jnp.array(token_ids)` or `jnp.arange(n)`, are uploads, not ops): jitted, such a
    helper saves about 15 us a call on CPU, and no reader of real code called one worth a
    finding. It is also quiet on a function called with the step count and numbers alone
    (`lr = schedule(step)`): scalar math, microseconds a step; on a helper making a fresh
    input of a compiled call in the same loop (`xb = sample_batch(key, data)` before
    `train_step(params, xb)`: its ops overlap with the step already queued), unless it
    differentiates or the loop carries its result; and on a function called with an input the
    loop grows every step (`forward(params, tokens)` while `tokens` gains a token a step): jit
    would compile it again for each length, and JAX201 reports the loop. Nor does it report an
    eager loop in a function that reads a timer when the file also jits the same function under
    another name (`fast = jax.jit(f)`) or a copy of it (the same `def` written again and jitted):
    that loop is the baseline of an eager-versus-jit benchmark.
    A derivative is not an eager step when it is compiled (`jax.jit(jax.grad(loss))`, under any
    name, or `jax.grad` of a jitted function) or traced (inside a jitted function), evaluated once
    outside loops, under a condition that picks some iterations, in a loop over structure or of one
    literal iteration, or timed beside a jitted version of the same function; nor is a training-step
    function that is jitted, traced, a flax/equinox module method, handed to other code, or called
    only outside loops, nor one the file does not call unless it reads its result back
    (`loss.item()`): a pure one may be called from jitted code in another file.

    ## Automatic fix
    Unsafe (`--unsafe-fixes`): `scan --fix` adds `@jax.jit` to a plain function when no argument
    has to be static (each is used as an array: an operand, indexed, passed to a JAX function or
    a transform's result such as `jax.value_and_grad(loss)(w, x)`, or to an array function of
    the file), that is when the trace rules (JAX401-JAX404) find nothing new in the file once it
    is jitted. Unsafe because jitting changes when Python side effects run. Methods, functions
    that need `static_argnames` and functions reading rebound module-level arrays are left for
    you.

    ## At run time
    `jaxopt-audit run` names the function whose own lines issue the eager ops, with the saving
    measured by jitting it on the arguments it saw. It names instead: where a function made by
    `jax.grad`, `jax.value_and_grad`, `jax.vmap`, `jax.jacfwd`, `jax.jacrev` or `jax.hessian` is
    made, when it is called without jit from code that is no step or cannot be jitted as written
    (a SciPy objective converting to floats); the line calling a library (optax's
    `optimiser.update`) whose ops are most of a loop's eager work beside a jitted step; a
    function's own loop (JAX201/JAX202) when jitting the function as written was measured to save
    nothing because the loop unrolls.

    ## Measured
    A published case study of a training loop measured 20x from adding `@jit` to the training
    step; see the `training_loop` pipeline's "jit" stage for this machine's figure.
    """

    CODE = "JAX101"
    NAME = "missing-jit"
    SEVERITY = "warning"
    SUMMARY = "Function doing JAX array work is called every step without jit"
    FIX = "Decorate it with `@jax.jit` (static_argnames for shape/config arguments) or wrap it once outside the loop."

    INVALID = [
        Invalid("""
            import jax
            import jax.numpy as jnp
            import optax

            def loss(params, x, y):
                return jnp.mean((x @ params["w"] - y) ** 2)

            grad_fn = jax.jit(jax.grad(loss))
            optimizer = optax.adam(1e-3)

            def train(params, xs, ys):
                opt_state = optimizer.init(params)
                for x, y in zip(xs, ys):
                    grads = grad_fn(params, x, y)
                    updates, opt_state = optimizer.update(grads, opt_state)  # <- JAX101
                    params = optax.apply_updates(params, updates)
                return params
        """, note="the gradient is compiled, the Adam update around it is not"),
        Invalid("""
            import jax.numpy as jnp
            from jax import grad

            def model_forward(params, x):
                return jnp.tanh(x @ params["w"]) @ params["v"]

            def train_step(params, batch):  # <- JAX101
                def loss_fn(p):
                    return jnp.mean((model_forward(p, batch["x"]) - batch["y"]) ** 2)
                grads = grad(loss_fn)(params)
                return {k: params[k] - 0.001 * grads[k] for k in params}  # <- JAX702

            def train(params, batches):
                for epoch in range(10):
                    for batch in batches:
                        params = train_step(params, batch)
                return params
        """),
        Invalid("""
            import jax
            import jax.numpy as jnp

            class Learner:
                def __init__(self, lr):
                    self.lr = lr

                def update(self, w, x, y):  # <- JAX101
                    err = jnp.dot(w, x) - y
                    return w - self.lr * err * x

                def fit(self, w, xs, ys):
                    for x, y in zip(xs, ys):
                        w = self.update(w, x, y)
                    return w
        """),
        Invalid("""
            import jax
            import jax.numpy as jnp

            def update(w, x):  # <- JAX101
                # one fused step once jitted
                return w - 0.1 * jnp.tanh(x @ w) * jnp.mean(x)

            def fit(w, batches):
                for x in batches:
                    w = update(w, x)
                return w
        """, fixed="""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def update(w, x):  # <- JAX101
                # one fused step once jitted
                return w - 0.1 * jnp.tanh(x @ w) * jnp.mean(x)

            def fit(w, batches):
                for x in batches:
                    w = update(w, x)
                return w
        """, note="fixed by --unsafe-fixes: no argument needs to be static"),
        Invalid("""
            import jax
            import jax.numpy as jnp

            def loss(w, x, y):
                return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

            def train_step(w, x, y):  # <- JAX101
                value, g = jax.value_and_grad(loss)(w, x, y)
                return w - 0.1 * g, value

            def fit(w, x, y, steps):
                for _ in range(steps):  # <- JAX201
                    w, value = train_step(w, x, y)
                return w
        """, fixed="""
            import jax
            import jax.numpy as jnp

            def loss(w, x, y):
                return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

            @jax.jit
            def train_step(w, x, y):  # <- JAX101
                value, g = jax.value_and_grad(loss)(w, x, y)
                return w - 0.1 * g, value

            def fit(w, x, y, steps):
                for _ in range(steps):  # <- JAX201
                    w, value = train_step(w, x, y)
                return w
        """, note="a gradient step over a fixed data set; fixed by --unsafe-fixes"),
        Invalid("""
            import jax
            import jax.numpy as jnp
            import optax

            def loss(params, x, y):
                return jnp.mean((jnp.tanh(x @ params["w"]) - y) ** 2)

            def fit(params, loader, epochs=5):
                optimizer = optax.sgd(0.1)
                state = optimizer.init(params)
                for epoch in range(epochs):
                    for x, y in loader:
                        value, grads = jax.value_and_grad(loss)(params, x, y)  # <- JAX101
                        updates, state = optimizer.update(grads, state)
                        params = optax.apply_updates(params, updates)
                return params
        """, note="no step function exists: the gradient and the update are written in the loop"),
        Invalid("""
            import jax
            import jax.numpy as jnp

            def relax(coords, potential, n_steps=500, eta=0.01):
                force = jax.grad(potential)
                for _ in range(n_steps):
                    coords = coords - eta * force(coords)  # <- JAX101
                return coords
        """, note="a named, un-jitted derivative evaluated at the state the loop updates"),
        Invalid("""
            import jax
            import jax.numpy as jnp
            import optax

            class Trainer:
                def __init__(self, params):
                    self.params = params
                    self.tx = optax.adam(1e-3)
                    self.opt_state = self.tx.init(params)

                def loss(self, params, x):
                    return jnp.mean(jnp.tanh(x @ params) ** 2)

                def train_on_batch(self, x):
                    value, grads = jax.value_and_grad(self.loss)(self.params, x)  # <- JAX101
                    updates, self.opt_state = self.tx.update(grads, self.opt_state)
                    self.params = optax.apply_updates(self.params, updates)
                    return float(value)
        """, note="a whole training step another file calls, which reads its loss back (so nothing "
                  "can trace it); reported at the transform"),
        Invalid("""
            import jax
            import jax.numpy as jnp

            def loss(params, x, y):
                return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)

            grad_fn = jax.jit(jax.grad(loss))

            def adam(params, grads, m, v, lr=1e-3):  # <- JAX101
                m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, m, grads)
                v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, v, grads)
                return jax.tree.map(lambda p, m, v: p - lr * m / (jnp.sqrt(v) + 1e-8), params, m, v), m, v

            def train(params, m, v, batches):
                for x, y in batches:
                    params, m, v = adam(params, grad_fn(params, x, y), m, v)
                return params

            def train_sgd(params, batches):
                for x, y in batches:
                    grads = grad_fn(params, x, y)
                    params = jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)  # <- JAX101 JAX702
                return params
        """, fixed="""
            import jax
            import jax.numpy as jnp

            def loss(params, x, y):
                return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)

            grad_fn = jax.jit(jax.grad(loss))

            @jax.jit
            def adam(params, grads, m, v, lr=1e-3):  # <- JAX101
                m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, m, grads)
                v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, v, grads)
                return jax.tree.map(lambda p, m, v: p - lr * m / (jnp.sqrt(v) + 1e-8), params, m, v), m, v

            def train(params, m, v, batches):
                for x, y in batches:
                    params, m, v = adam(params, grad_fn(params, x, y), m, v)
                return params

            def train_sgd(params, batches):
                for x, y in batches:
                    grads = grad_fn(params, x, y)
                    params = jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)  # <- JAX101 JAX702
                return params
        """, note="a jitted gradient, then an eager update of every leaf: in a function, and inline"),
    ]
    VALID = [
        Valid("""
            import jax
            import jax.numpy as jnp
            import optax

            def loss(params, x, y):
                return jnp.mean((jnp.tanh(x @ params["w"]) - y) ** 2)

            def fit(params, loader, epochs=5):
                optimizer = optax.sgd(0.1)
                state = optimizer.init(params)

                @jax.jit
                def step(params, state, x, y):
                    value, grads = jax.value_and_grad(loss)(params, x, y)
                    updates, state = optimizer.update(grads, state)
                    return optax.apply_updates(params, updates), state, value

                for epoch in range(epochs):
                    for x, y in loader:
                        params, state, value = step(params, state, x, y)
                first = jax.grad(loss)(params, *loader[0])  # once, after training
                return params, first
        """, note="the step gathered into a jitted function; a one-off gradient outside the loop"),
        Valid("""
            import jax
            import jax.numpy as jnp

            def relax(coords, potential, n_steps=500, eta=0.01):
                force = jax.jit(jax.grad(potential))
                for _ in range(n_steps):
                    coords = coords - eta * force(coords)
                return coords
        """, note="the derivative is compiled; the two-op update beside it is not worth a finding"),
        Valid("""
            import jax
            import jax.numpy as jnp
            import optax

            optimizer = optax.adam(1e-3)

            def loss(params, x, y):
                return jnp.mean((x @ params["w"] - y) ** 2)

            @jax.jit
            def step(params, opt_state, x, y):
                grads = jax.grad(loss)(params, x, y)
                updates, opt_state = optimizer.update(grads, opt_state)
                return optax.apply_updates(params, updates), opt_state

            def train(params, xs, ys):
                opt_state = optimizer.init(params)
                for x, y in zip(xs, ys):
                    params, opt_state = step(params, opt_state, x, y)
                return params
        """, note="the optimizer update inside the jitted step"),
        Valid("""
            from functools import partial
            import jax
            import jax.numpy as jnp
            import optax

            optimizer = optax.sgd(0.001)

            def model_forward(params, x):  # only called from jitted code
                return jnp.tanh(x @ params["w"]) @ params["v"]

            @partial(jax.jit, static_argnames=("clip",))
            def train_step(params, opt_state, batch, clip=False):
                def loss_fn(p):
                    return jnp.mean((model_forward(p, batch["x"]) - batch["y"]) ** 2)
                grads = jax.grad(loss_fn)(params)
                updates, opt_state = optimizer.update(grads, opt_state, params)
                return optax.apply_updates(params, updates), opt_state

            def evaluate(params, x):  # called once, outside any loop
                return jnp.mean(model_forward(params, x))

            def train(params, batches):
                opt_state = optimizer.init(params)
                for batch in batches:
                    params, opt_state = train_step(params, opt_state, batch)
                return params, evaluate(params, batches[0]["x"])
        """),
        Valid("""
            import jax
            import jax.numpy as jnp

            class Learner:
                def __init__(self, lr):
                    self.lr = lr
                    self.update = jax.jit(self._update)

                def _update(self, w, x, y):
                    err = jnp.dot(w, x) - y
                    return w - self.lr * err * x

                def fit(self, w, xs, ys):
                    for x, y in zip(xs, ys):
                        w = self.update(w, x, y)
                    return w
        """),
    ]

    def fix(self, model: SemanticModel, report: Report) -> Fix | None:
        target = next((fn for fn in model.functions
                       if isinstance(fn.node, cst.FunctionDef) and fn.node.name is report.node), None)
        if target is None or target.cls is not None or not isinstance(target.node, cst.FunctionDef) \
                or rebound_globals(model, target):
            return None  # jitted as it is, it would freeze the module-level arrays it reads
        return _jit_decorator(model, target.node)

    def check(self, model: SemanticModel) -> Iterator[Report]:
        called_from: dict[int, tuple[Function, Site]] = {}
        imported: dict[int, tuple[FunctionSummary, Site]] = {}  # defined in another scanned module
        gradients = eager_gradients(model)
        stepped = {id(g.site.node) for g in gradients}  # reported at the derivative, not at the loss's def
        for fn in model.functions:
            if fn.traced:
                continue
            for site in fn.calls:
                if site.loop is None or id(site.node) in stepped or not model.dispatched_per_step(site):
                    continue
                callee = model.callee(site.node, fn)
                target = callee.function
                if callee.imported is not None and not callee.jitted and imported_candidate(callee.imported) \
                        and dispatch_loop(model, site.loop) and counted_steps(model, site.loop) \
                        and id(callee.imported) not in imported:
                    imported[id(callee.imported)] = (callee.imported, site)
                if callee.jitted or target is None or id(target) in called_from or not _candidate(model, target):
                    continue
                # a loop over steps shown by the model, calling a function whose job is device work
                if not dispatch_loop(model, site.loop) or host_side(model, target) or scalar_inputs(site) \
                        or prepares_compiled_input(model, site) or _takes_a_growing_input(model, site) \
                        or eager_baseline(model, fn, target):
                    continue
                called_from[id(target)] = (target, site)
        for target, site in called_from.values():
            loop_line = model.line_of(site.loop.node) if site.loop is not None else 0
            node = target.node
            frozen = rebound_globals(model, target)
            yield Report(node.name if isinstance(node, cst.FunctionDef) else node,
                         f"`{target.qualname}` does JAX array work and is called on every iteration of the "
                         f"loop at line {loop_line} without jit, so each of its operations is dispatched "
                         f"one by one from Python{_frozen_note(frozen, target)}",
                         fix=_frozen_fix(frozen))
        for summary, site in imported.values():  # reported at the call: the def is in another file
            loop_line = model.line_of(site.loop.node) if site.loop is not None else 0
            yield Report(site.node,
                         f"`{summary.name}` (imported) does JAX array work and is called on every iteration "
                         f"of the loop at line {loop_line} without jit, so each of its operations is "
                         "dispatched one by one from Python")
        for gradient in gradients:
            if not (gradient.whole_step and id(gradient.site.function) in called_from):
                yield _eager_gradient_report(model, gradient)
        yield from _inline_tree_updates(model)
        yield from _eager_optax_updates(model, {id(u.node) for g in gradients for u in g.updates} | set(called_from))


def _eager_gradient_report(model: SemanticModel, gradient: EagerGradient) -> Report:
    """A derivative evaluated eagerly in a step loop (at the call), or a whole training step
    written in a function nothing jits (at the transform)."""
    transform, binding, line = gradient.transform, gradient.binding, model.line_of
    what = f"`{describe(transform)}`" if binding is None else \
        f"`{describe(gradient.site.node.func)}` (`{describe(transform)}`, line {line(binding.site.node)})"
    updates = " and ".join(f"`{describe(u.node.func)}` (line {line(u.node)})" for u in gradient.updates)
    passes = "the forward pass, the backward pass and the optimizer update" if updates else \
        "the forward and backward passes"
    fix = ("Gather the step (the gradient and the update it feeds) into one function decorated with "
           "`@jax.jit` (arguments that are not arrays, such as a model object or a config, as "
           "`static_argnames` or closed over) and call that instead.")
    loop = f"the loop at line {line(gradient.loop.node)}" if gradient.loop is not None else None
    if not gradient.whole_step:
        then = f", and so {'is' if len(gradient.updates) == 1 else 'are'} {updates} after it" if updates else ""
        return Report(gradient.site.node, f"{what} is evaluated eagerly on every iteration of {loop}{then}: "
                                          f"{passes} are dispatched op by op each time", fix=fix)
    fn = gradient.site.function
    where = f"it is called on every iteration of {loop}" if loop is not None else \
        "this file does not call it, so how often it runs is not shown here"
    return Report(transform, f"`{fn.qualname}` is a whole training step run without jit: {what} and then "
                             f"{updates}; each call dispatches {passes} op by op, and {where}", fix=fix)


def _jit_decorator(model: SemanticModel, function: cst.FunctionDef) -> Fix | None:
    """`@jax.jit` on a plain function (not a method), offered only when no argument has to be
    static: every parameter is used as an array, nothing branches on or checks a value, and the
    trace rules find nothing new in it once jitted. Unsafe: jitting changes when Python side
    effects run and which values are traced."""
    jax_alias = module_alias(model, "jax")
    if jax_alias is None or function.decorators or not array_only_parameters(model, function):
        return None
    decorator = dotted_expression(cst.Name(jax_alias), "jit")
    new = function.with_changes(decorators=[cst.Decorator(decorator=decorator)])
    if not no_new_trace_findings(model, function, new):
        return None
    return Fix(UNSAFE, ((function, new),), f"`{function.name.value}` decorated with `@{jax_alias}.jit`")


def _frozen_fix(frozen: list[str]) -> str | None:
    """The fix to give instead of `@jax.jit` when jit would freeze module-level arrays."""
    if not frozen:
        return None
    names = ", ".join(f"`{n}`" for n in frozen)
    return (f"Pass {names} as argument{'s' if len(frozen) > 1 else ''}, then jit it (`@jax.jit`); jitted as it "
            "is, it would keep computing with the values it saw when traced.")


def _frozen_note(frozen: list[str], target: Function) -> str:
    """What the message adds when jit would freeze module-level arrays (or functions) the
    function reads."""
    if not frozen:
        return ""
    names, kind = ", ".join(f"`{n}`" for n in frozen), rebound_kind(target, frozen)
    what = f"module-level {kind}s" if len(frozen) > 1 else f"a module-level {kind}"
    return f"; it reads {names}, {what} that the program rebinds, which jit would freeze at the value seen " \
           "when it traces"


def _inline_tree_updates(model: SemanticModel) -> Iterator[Report]:
    """`params = jax.tree.map(lambda p, g: p - lr * g, params, grads)` in the loop, after a
    compiled `grads = grad_fn(params, batch)`: the update is a function doing array work on every
    leaf, run eagerly on every iteration; reported at the map."""
    for fn in model.functions:
        if fn.traced:
            continue
        for loop in fn.loops:
            if not dispatch_loop(model, loop):
                continue
            for site, mapped, feeding in eager_tree_updates(model, loop):
                yield Report(site.node, f"`{describe(site.node.func)}` runs `{describe(mapped.body, 40)}` "
                                        f"eagerly on every leaf, on every iteration of the loop at line "
                                        f"{model.line_of(loop.node)}: one dispatch per operation per leaf, "
                                        f"beside the compiled `{describe(feeding.node.func)}`",
                             fix="Do the update inside a jitted function: one jitted step that computes the "
                                 "gradient and applies it.")


def _eager_optax_updates(model: SemanticModel, reported: set[int]) -> Iterator[Report]:
    """`updates, state = optimizer.update(grads, state)` then `optax.apply_updates(params,
    updates)` in a step loop, outside jit: the optimizer's arithmetic runs op by op on every leaf,
    every iteration (Adam: about a dozen operations per leaf). Reported at `optimizer.update`
    (at `apply_updates` alone without it), or at the def of the step function that runs it; one
    fed by an eager derivative, or in a function already reported at its def, is part of that
    finding (`reported`: ids of those calls and functions)."""
    for fn in model.functions:
        if fn.traced:
            continue
        for site in fn.calls:
            if model.resolve(site.node.func) != "optax.apply_updates" or id(site.node) in reported \
                    or (site.loop is None and id(fn) in reported):
                continue
            # in a loop of its own, or in an undecorated function that a step loop calls every
            # iteration (a decorator the file cannot resolve, `@jax.jit` without `import jax`,
            # may well be jit)
            per_step = model.dispatched_per_step(site) and isinstance(fn.node, cst.FunctionDef) \
                and not fn.node.decorators
            loop = model.step_loop_of(site) if site.loop is not None or per_step else None
            if loop is None or not loop.is_step or not dispatch_loop(model, loop):
                continue
            update = next((other for other in fn.calls if (site.loop is None or loop.encloses(other.loop))
                           and isinstance(other.node.func, cst.Attribute) and other.node.func.attr.value == "update"
                           and model.line_of(other.node) <= model.line_of(site.node)), None)
            line, first = model.line_of, site if update is None else update
            what = f"`{describe(site.node)}`" if update is None else \
                f"`{describe(update.node)}` and `{describe(site.node)}` (line {line(site.node)})"
            verb = "run" if update is not None else "runs"
            condition = condition_around(fn, site.node, site.loop) if site.loop is not None else None
            when = f", {condition}" if condition is not None else ""
            how = "dispatched on its own, for every parameter leaf"
            fix = ("Move the optimizer step into the jitted function: compute the gradient, call "
                   "`optimizer.update` and `optax.apply_updates` inside one `jax.jit` step.")
            if site.loop is not None:
                yield Report(first.node, f"{what} {verb} outside jit on every iteration of the loop at line "
                                         f"{line(loop.node)}{when}: each operation of the update is {how}", fix=fix)
            else:  # at the def, as a function called every step without jit is (the fix goes there)
                what = what.replace("` and", f"` (line {line(first.node)}) and", 1) if update is not None else what
                yield Report(cast(cst.FunctionDef, fn.node).name,
                             f"`{fn.qualname}` runs {what} outside jit, and the loop at line {line(loop.node)} "
                             f"calls it on every iteration: each operation of the update is {how}",
                             fix=f"Decorate `{fn.name}` with `@jax.jit` (or wrap it once before the loop) so the "
                                 "update runs compiled with the rest of the step.")


def _candidate(model: SemanticModel, fn: Function) -> bool:
    # A traced function (say a loss passed to grad inside the jitted step) called directly from
    # an untraced loop still runs eagerly at that call: the call site decides, not the function.
    if fn.is_module or fn.name == "<lambda>" or fn.direct_jit:
        return False
    if fn.cls is not None and fn.cls.is_jax_module:
        return False  # flax/equinox module methods are traced through apply/filter_jit
    # jit pays off by replacing many dispatches with one: a function running a handful of eager
    # ops saves microseconds per call (eager.WORTH_JIT)
    return eager_ops(model, fn) >= WORTH_JIT and not fn.contains_step_loop


def _takes_a_growing_input(model: SemanticModel, site: Site) -> bool:
    """An argument grows every iteration (`forward(params, tokens)` in a decode loop that
    concatenates a token to `tokens` each step): jit would compile the function again for each
    new length, so adding it is not the fix (JAX201 reports the growing loop and its fix)."""
    if site.loop is None:
        return False
    grown = grown_names(model, site.loop)
    return bool(grown) and any(read_names(arg.value) & grown for arg in site.node.args)
