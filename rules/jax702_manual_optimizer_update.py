"""JAX702 manual-optimizer-update."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    Function,
    Invalid,
    Report,
    Rule,
    SemanticModel,
    Site,
    Valid,
    apis,
    computes_gradients,
    descent_step,
    describe,
    gradient_names,
    read_names,
    target_names,
    why_every_step,
)

# Leaf-wise maps: the function gets the leaves only (`map_with_path` gives a path first).
TREE_MAPS = apis.TREE_MAPS - apis.TREE_MAPS_WITH_PATH
# Names that say "gradient": `grads`, `grad_w`, `g`, `dparams`.
_GRADIENT_NAME = re.compile(r"(^|_)(g|gs|grads?|gradients?|dparams|dp|dw|db)(_|$)|grad", re.IGNORECASE)


class ManualOptimizerUpdate(Rule):
    """
    ## What it does
    Finds hand-written gradient-descent updates over a parameter pytree in a training step:
    `{k: params[k] - lr * grads[k] for k in params}`, `jax.tree.map(lambda p, g: p - lr * g,
    params, grads)` (also `jax.tree_util.tree_map`, `jax.tree_map`), and the list form
    `[p - lr * g for p, g in zip(params, grads)]`.

    A training step is a function that computes the gradients itself (`jax.grad`,
    `jax.value_and_grad`, ...) or that runs every step (called from a step loop, jitted or not,
    or the body of a `lax.scan`); the subtracted term must be a gradient (bound from a gradient
    transform, or named like one: `grads`, `g`, `dw`).

    The name is read because it is the only sign of a gradient handed in from elsewhere
    (`update_layers(layers, grads, lr)`: gradients computed by one function and applied by
    another), which no binding in the file shows to come from a transform; the shape of the
    update alone would also match an integrator (`x - dt * v`).

    ## Why is this bad?
    It is advice, not an error. Under `jit` a hand-written SGD step compiles to the same fused
    code as `optax.sgd`; the cost is everything around it: no optimizer state (momentum, Adam's
    moments), no schedules, clipping or weight decay, and each change of optimizer is a rewrite
    of the training step. Outside `jit` the comprehension also dispatches one operation per leaf.
    A published training-loop case study attributes 2x to switching the hand-written update to
    `optax.adam`; since a jitted
    SGD update is already fused, most of such a gain comes from the better optimizer, which is a
    change of the math, not of the speed of one step.

    ## How to fix
    Build the optimizer once with optax and keep its state next to the parameters:
    `optimizer = optax.sgd(lr)` (or `optax.adam(lr)`), `opt_state = optimizer.init(params)`, then
    in the step `updates, opt_state = optimizer.update(grads, opt_state, params)` and
    `params = optax.apply_updates(params, updates)`.

    The rule stays quiet on code that defines an optimizer (an update rule that neither computes
    gradients nor runs in a step), on updates whose subtracted term is not a gradient (physics
    integrators, `x - dt * v`), and on updates already written with optax.

    ## Measured
    `training_loop` pipeline, stage "optax": hand-written SGD replaced by `optax.adam`; the
    stage's report gives time per epoch and the loss curve (the optimizer changes the math).
    """

    CODE = "JAX702"
    NAME = "manual-optimizer-update"
    SEVERITY = "info"
    SUMMARY = "Hand-written parameter update in a training step: optax gives state, schedules, clipping"
    DEFAULT = False  # advice on style of code that works: asked for by its code
    FIX = ("Use optax: `updates, opt_state = optimizer.update(grads, opt_state, params)` and "
           "`params = optax.apply_updates(params, updates)`.")

    INVALID = [
        Invalid("""
            import jax
            import jax.numpy as jnp

            def model_forward(params, x):
                return jnp.tanh(x @ params["w"] + params["b"])

            @jax.jit
            def train_step(params, batch):
                def loss_fn(params):
                    predictions = model_forward(params, batch["x"])
                    return jnp.mean((predictions - batch["y"]) ** 2)

                grads = jax.grad(loss_fn)(params)
                new_params = {k: params[k] - 0.001 * grads[k] for k in params}  # <- JAX702
                return new_params
        """, note="a training-loop case study's train step"),
        Invalid("""
            import jax
            import jax.numpy as jnp

            LEARNING_RATE = 1e-2

            def loss(params, x, y):
                return jnp.mean((x @ params[0] + params[1] - y) ** 2)

            @jax.jit
            def update(params, x, y):
                value, grads = jax.value_and_grad(loss)(params, x, y)
                params = jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)  # <- JAX702
                return params, value

            @jax.jit
            def update_layers(layers, grads, lr):
                return [(w - lr * dw, b - lr * db)  # <- JAX702
                        for (w, b), (dw, db) in zip(layers, grads)]

            def fit(layers, grads_per_step):
                for grads in grads_per_step:
                    layers = update_layers(layers, grads, 0.1)
                return layers
        """),
    ]
    VALID = [
        Valid("""
            import jax
            import jax.numpy as jnp
            import optax

            optimizer = optax.adam(1e-3)

            @jax.jit
            def train_step(params, opt_state, x, y):
                def loss_fn(params):
                    return jnp.mean((x @ params["w"] - y) ** 2)

                loss, grads = jax.value_and_grad(loss_fn)(params)
                updates, opt_state = optimizer.update(grads, opt_state, params)
                return optax.apply_updates(params, updates), opt_state, loss
        """),
        Valid("""
            import jax
            import jax.numpy as jnp

            def sgd(step_size):
                def init(params):
                    return params

                def update(grads, params):
                    return jax.tree.map(lambda p, g: p - step_size * g, params, grads)

                return init, update

            @jax.jit
            def physics_step(state, dt):
                forces = {k: -state["pos"][k] for k in state["pos"]}
                vel = {k: state["vel"][k] + dt * forces[k] for k in forces}
                pos = {k: state["pos"][k] - dt * vel[k] for k in vel}
                return {"pos": pos, "vel": vel}

            def simulate(state, frames):
                for frame in frames:
                    state = physics_step(frame, 0.01)
                    yield state
        """, note="defining an optimizer, and an integrator: not a training step's update"),
    ]

    def check(self, model: SemanticModel) -> Iterator[Report]:
        for fn in model.functions:
            tree_maps = [s for s in fn.calls if model.resolve(s.node.func) in TREE_MAPS]
            if not tree_maps and not fn.comprehensions:
                continue
            gradients = gradient_names(model, fn)
            in_step = computes_gradients(model, fn)
            for site in tree_maps:
                call: cst.Call = site.node
                term = _tree_map_update(model, call, fn, gradients)
                if term is not None and (in_step or why_every_step(model, site) is not None):
                    yield Report(call, self._message(f"`{describe(call.func)}` applying `{describe(term)}`"))
            for comp in fn.comprehensions:
                node = comp.node
                if isinstance(node, cst.SetComp):
                    continue
                term = _comprehension_update(node, fn, gradients)
                if term is None:
                    continue
                if in_step or why_every_step(model, Site(node, fn, comp.loop, False)) is not None:
                    kind = "dict" if isinstance(node, cst.DictComp) else "list"
                    yield Report(node, self._message(f"a {kind} comprehension applying `{describe(term)}`"))

    def _message(self, what: str) -> str:
        return (f"{what} updates the parameters by hand in a training step; an optax optimizer gives "
                "the same update plus optimizer state, schedules and clipping")


def _is_gradient(expr: cst.BaseExpression, gradients: set[str]) -> bool:
    """`grads[k]`, `g`, `dw`: the expression reads a gradient."""
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return False
    return expr.value in gradients or bool(_GRADIENT_NAME.search(expr.value))


def _lambda_or_def(model: SemanticModel, expr: cst.BaseExpression, fn: Function) -> Function | None:
    target = model.function_ref(expr, fn)
    if target is None or target.is_module or len(target.returns) != 1 or len(target.params) < 2:
        return None
    return target


def _tree_map_update(model: SemanticModel, call: cst.Call, fn: Function,
                     gradients: set[str]) -> cst.BaseExpression | None:
    """`jax.tree.map(lambda p, g: p - lr * g, params, grads)`: the mapped function subtracts a
    scaled second argument from its first, and the second tree is a gradient."""
    args = [a.value for a in call.args if a.keyword is None]
    if len(args) < 3:
        return None
    mapped = _lambda_or_def(model, args[0], fn)
    if mapped is None:
        return None
    expression = mapped.returns[0]
    term = descent_step(expression)
    if term is None:
        return None
    base, step = term
    if not (isinstance(base, cst.Name) and isinstance(step, cst.Name)):
        return None
    params = mapped.params
    if base.value not in params or step.value not in params or base.value == step.value:
        return None
    position = 1 + params.index(step.value)
    tree = args[position] if position < len(args) else None
    base_position = 1 + params.index(base.value)
    base_tree = args[base_position] if base_position < len(args) else None
    if base_tree is not None and _is_gradient(base_tree, gradients):
        return None  # `g_a - c * g_b`: projecting one gradient on another, not updating parameters
    if tree is not None and (_is_gradient(tree, gradients) or _is_gradient(step, set())):
        return expression
    return None


def _comprehension_update(node: cst.ListComp | cst.GeneratorExp | cst.DictComp, fn: Function,
                          gradients: set[str]) -> cst.BaseExpression | None:
    """`{k: params[k] - lr * grads[k] for k in params}`, `{k: v - lr * grads[k] for k, v in
    params.items()}`, `[p - lr * g for p, g in zip(params, grads)]`."""
    value = node.value if isinstance(node, cst.DictComp) else node.elt
    elements = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
    comp_names: set[str] = set()
    comp: cst.CompFor | None = node.for_in
    while comp is not None:
        comp_names.update(target_names(comp.target))
        comp = comp.inner_for_in
    for element in elements:
        term = descent_step(element)
        if term is None:
            return None
        base, step = term
        if not _is_gradient(step, gradients):
            return None
        # both sides are per-item: indexed by, or bound by, the comprehension
        if not (read_names(base) & comp_names and read_names(step) & comp_names):
            return None
        if _root(base) == _root(step) or _is_gradient(base, gradients):
            return None
    return elements[0] if elements else None


def _root(expr: cst.BaseExpression) -> str | None:
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None
