"""Gradients made with jax.value_and_grad and jax.grad and called without jit: one made once
and handed to a host-side optimiser whose objective converts to floats (so the objective itself
cannot be jitted), one made anew inside a loop on every iteration."""

import jax
import jax.numpy as jnp
import numpy as np

x = jnp.linspace(-2.0, 2.0, 64)
y = jnp.tanh(1.5 * x) + 0.1 * x


def loss(w):
    hidden = jnp.tanh(x[:, None] * w[:4] + w[4:8])
    return jnp.mean((hidden @ w[8:12] - y) ** 2)


value_and_gradient = jax.value_and_grad(loss)


def objective(w):
    value, gradient = value_and_gradient(jnp.asarray(w, jnp.float32))
    return float(value), np.asarray(gradient, np.float64)


w = np.full(12, 0.3)
for _ in range(150):  # a host optimiser's iterations
    value, gradient = objective(w)
    w = w - 0.1 * gradient

v = jnp.full(12, 0.3)
for _ in range(150):
    v = v - 0.1 * jax.grad(loss)(v)
print(f"{value:.5f} {float(loss(v)):.5f}")
