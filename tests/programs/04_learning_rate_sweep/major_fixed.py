"""Train the same small regression MLP with 2000 learning rates and report the best one."""

import os

import jax
import jax.numpy as jnp
import numpy as np

LEARNING_RATES = np.geomspace(1e-3, 0.3, 2000)
STEPS = 100
SIZES = [2, 16, 16, 1]


def init_mlp(key, sizes):
    return [
        {"w": jax.random.normal(key, (m, n)) / np.sqrt(m), "b": jnp.zeros(n)}  # <- JAX501
        for m, n in zip(sizes[:-1], sizes[1:])
    ]


def forward(params, x):
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return (x @ params[-1]["w"] + params[-1]["b"])[:, 0]


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


@jax.jit
def train(params, x, y, lr):
    def step(params, _):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss

    params, losses = jax.lax.scan(step, params, None, length=STEPS)
    return losses[-1]


# every learning rate trains in one compiled call over a leading axis
sweep = jax.jit(jax.vmap(train, in_axes=(None, None, None, 0)))


def make_data():
    x = jax.random.uniform(jax.random.key(100), (64, 2), minval=-2.0, maxval=2.0)
    y = jnp.sin(x[:, 0]) * jnp.cos(x[:, 1])
    return x, y


def main():
    x, y = make_data()
    params = init_mlp(jax.random.key(0), SIZES)
    final = sweep(params, x, y, jnp.asarray(LEARNING_RATES, dtype=jnp.float32))
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, final_losses=np.asarray(final))
    best = int(jnp.argmin(final))
    print(f"best learning rate {LEARNING_RATES[best]:.4f} (final loss {float(final[best]):.5f})")


if __name__ == "__main__":
    main()
