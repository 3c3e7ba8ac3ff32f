"""One loss jitted three ways: as itself, its gradient, its value and gradient (3 calls each)."""

import jax
import jax.numpy as jnp


def loss(w):
    return jnp.sum(jnp.tanh(w) ** 2)


plain = jax.jit(loss)
gradient = jax.jit(jax.grad(loss))
both = jax.jit(jax.value_and_grad(loss))
w = jnp.ones(3)
for _ in range(3):
    plain(w)
    gradient(w)
    both(w)
