"""Fit a small tanh MLP to a noisy sine curve with full-batch gradient descent."""

import os

import jax
import jax.numpy as jnp
import numpy as np

STEPS = 300
LR = 0.05


def init_params(key, sizes):
    keys = jax.random.split(key, len(sizes) - 1)
    params = []
    for k, m, n in zip(keys, sizes[:-1], sizes[1:]):
        params.append({"w": jax.random.normal(k, (m, n)) / np.sqrt(m), "b": jnp.zeros(n)})
    return params


def forward(params, x):
    for layer in params[:-1]:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params = jax.tree.map(lambda p, g: p - LR * g, params, grads)
    return params, loss


def main():
    data_key, init_key = jax.random.split(jax.random.key(0))
    x = jnp.linspace(-3.0, 3.0, 256)[:, None]
    y = jnp.sin(x) + 0.1 * jax.random.normal(data_key, x.shape)
    params = init_params(init_key, [1, 32, 32, 1])

    losses = []
    for step in range(STEPS):  # <- JAX201
        params, loss = train_step(params, x, y)
        losses.append(float(loss))  # <- JAX301

    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        flat = {f"p{i}": np.asarray(leaf) for i, leaf in enumerate(jax.tree.leaves(params))}
        np.savez(out, losses=np.asarray(losses), **flat)
    print(f"final loss {losses[-1]:.5f} after {STEPS} steps")


if __name__ == "__main__":
    main()
