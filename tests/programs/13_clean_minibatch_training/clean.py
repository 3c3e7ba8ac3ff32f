"""Minibatch training of an MLP regressor, written the way JAX wants it."""

import os

import jax
import jax.numpy as jnp
import numpy as np

STEPS = 600
BATCH = 128


def init(key, sizes):
    keys = jax.random.split(key, len(sizes) - 1)
    return [
        {"w": jax.random.normal(k, (m, n)) / np.sqrt(m), "b": jnp.zeros(n)}
        for k, m, n in zip(keys, sizes[:-1], sizes[1:])
    ]


def forward(params, x):
    for layer in params[:-1]:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


@jax.jit
def train_step(params, x, y, key):
    # the batch is sampled on the device from data copied there once
    idx = jax.random.randint(key, (BATCH,), 0, x.shape[0])

    def loss_fn(params):
        return jnp.mean((forward(params, x[idx]) - y[idx]) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), loss


def main():
    rng = np.random.default_rng(0)
    x_host = rng.uniform(-2.0, 2.0, size=(4096, 3)).astype(np.float32)
    y_host = np.sin(x_host).sum(axis=1, keepdims=True).astype(np.float32)
    x, y = jax.device_put(x_host), jax.device_put(y_host)

    key, init_key = jax.random.split(jax.random.key(0))
    params = init(init_key, [3, 64, 64, 1])
    for step in range(STEPS):
        key, batch_key = jax.random.split(key)
        params, loss = train_step(params, x, y, batch_key)
        if step % 100 == 0:
            print(f"step {step} loss {float(loss):.4f}")

    final = jnp.mean((forward(params, x) - y) ** 2)
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, final=np.asarray(final))
    print(f"final loss {float(final):.5f}")


if __name__ == "__main__":
    main()
