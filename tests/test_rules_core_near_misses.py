"""Near misses for the core rules found while scanning flax, optax and equinox: each must stay
quiet (and the positive twin beside it must not)."""

from __future__ import annotations

from conftest import scan_text


def codes(source, all_rules):
    return sorted((f.line, f.code) for f in scan_text(source, all_rules))


def test_testing_a_python_list_of_arrays_is_static_under_jit(all_rules):
    assert codes("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def combine(masks, x):
            masks_list = [m for m in masks if m is not None]
            if not masks_list:
                return x
            leaves = jax.tree.leaves(x)
            if leaves:
                x = x * 2.0
            if jnp.any(x > 0):
                x = -x
            return x
    """, all_rules) == [(12, "JAX402")]


def test_testing_a_list_of_device_values_in_a_loop_is_not_a_sync(all_rules):
    assert codes("""
        import jax
        import jax.numpy as jnp

        step = jax.jit(lambda w: w * 0.5)

        def train(w, n):
            history = []
            for i in range(n):
                w = step(w)
                history.append(w)
                if history and w.sum() > 1.0:
                    w = w / 2
            return w, history
    """, all_rules) == [(8, "JAX201"), (11, "JAX301")]
