"""JAX702 manual-optimizer-update: a training step's `{k: params[k] - lr * grads[k] for k in params}`, the
`tree_map` spellings, and quiet on optimizer definitions, optax, and non-gradient updates."""

from __future__ import annotations

import pytest

from jaxopt_audit.rules.jax702_manual_optimizer_update import ManualOptimizerUpdate

from conftest import scan_text, scanners

findings, lines = scanners([ManualOptimizerUpdate])


def test_dict_comprehension_update_in_the_unjitted_train_step():
    found = findings("""
        import numpy as np
        from jax import grad
        import jax.numpy as jnp

        def model_forward(params, x):
            return jnp.tanh(x @ params["w"]) @ params["v"]

        def train_step(params, batch):
            # Non-JIT compiled training step
            def loss_fn(params):
                predictions = model_forward(params, batch['x'])
                return jnp.mean((predictions - batch['y'])**2)

            grads = grad(loss_fn)(params)
            # Update params (no optimizer state)
            new_params = {k: params[k] - 0.001 * grads[k] for k in params}
            return new_params
    """)
    assert [f.line for f in found] == [16]
    assert found[0].severity == "info" and "params[k] - 0.001 * grads[k]" in found[0].message


@pytest.mark.parametrize("tree_map", ["jax.tree.map", "jax.tree_util.tree_map", "jax.tree_map"])
def test_tree_map_spellings_in_a_step_called_from_the_loop(tree_map):
    # the step does not compute gradients itself: it is a training step because the loop calls it
    assert lines(f"""
        import jax

        @jax.jit
        def apply_grads(params, grads, lr):
            return {tree_map}(lambda p, g: p - lr * g, params, grads)

        def train(params, grad_stream):
            for grads in grad_stream:
                params = apply_grads(params, grads, 0.01)
            return params
    """) == [5]


def test_items_comprehension_zip_list_and_a_named_update_function():
    assert lines("""
        import jax
        import jax.numpy as jnp

        def loss(params, x):
            return jnp.mean(x @ params["w"])

        @jax.jit
        def step_a(params, x, lr):
            grads = jax.grad(loss)(params, x)
            return {name: value - lr * grads[name] for name, value in params.items()}

        @jax.jit
        def step_b(layers, x, lr):
            g = jax.grad(lambda ls: sum(jnp.sum(w) for w in ls) * jnp.mean(x))(layers)
            return [w - lr * dw for w, dw in zip(layers, g)]

        @jax.jit
        def step_c(params, x):
            def sgd(p, g):
                return p - 0.01 * g
            return jax.tree.map(sgd, params, jax.grad(loss)(params, x))
    """) == [10, 15, 21]


def test_quiet_on_optax_updates_and_optimizer_definitions():
    assert lines("""
        import jax
        import jax.numpy as jnp
        import optax

        def sgd(step_size):
            def update(grads, state, params):
                updates = jax.tree.map(lambda p, g: p - step_size * g, params, grads)
                return updates, state
            return update

        optimizer = optax.adam(1e-3)

        @jax.jit
        def train_step(params, opt_state, x):
            grads = jax.grad(lambda p: jnp.mean(x @ p))(params)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state
    """) == []


def test_quiet_on_updates_that_are_not_gradient_steps():
    assert lines("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(state, target, params, dt):
            grads = jax.grad(lambda p: jnp.sum(p["w"]))(params)
            pos = {k: state["pos"][k] - dt * state["vel"][k] for k in state["pos"]}
            ema = jax.tree.map(lambda t, p: t - 0.01 * (t - p), target, params)
            delta = jax.tree.map(lambda a, b: a - b, params, grads)
            scaled = jax.tree.map(lambda g: -0.1 * g, grads)
            return pos, ema, delta, scaled

        def run(state, target, params):
            for _ in range(100):
                state, target, params, _ = step(state, target, params, 0.01)
            return state
    """) == []


def test_quiet_on_combining_two_gradients_in_a_training_step():
    # removing one gradient's component along another (gradient surgery) is not a parameter update
    assert [f.line for f in scan_text("""
        import jax
        import jax.numpy as jnp

        def loss(params, x):
            return jnp.mean((x @ params["w"]) ** 2)

        @jax.jit
        def train_step(params, x_clean, x_noisy):
            g_clean = jax.grad(loss)(params, x_clean)
            g_noisy = jax.grad(loss)(params, x_noisy)
            overlap = sum(jnp.vdot(a, b) for a, b in zip(jax.tree.leaves(g_clean), jax.tree.leaves(g_noisy)))
            g_residual = jax.tree.map(lambda a, b: a - overlap * b, g_noisy, g_clean)
            layered = [gn - overlap * gc for gn, gc in zip(jax.tree.leaves(g_noisy), jax.tree.leaves(g_clean))]
            return jax.tree.map(lambda p, g: p - 0.1 * g, params, g_residual), layered
    """, [ManualOptimizerUpdate])] == [14]
