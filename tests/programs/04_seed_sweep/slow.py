"""Train the same small regression MLP from 48 seeds and report the spread of final losses."""

import os

import jax
import jax.numpy as jnp
import numpy as np

SEEDS = 200
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
def train(params, x, y):
    def step(params, _):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), loss

    params, losses = jax.lax.scan(step, params, None, length=STEPS)
    return losses[-1]


def make_data():
    x = jax.random.uniform(jax.random.key(100), (64, 2), minval=-2.0, maxval=2.0)
    y = jnp.sin(x[:, 0]) * jnp.cos(x[:, 1])
    return x, y


def main():
    x, y = make_data()
    final = []
    for seed in range(SEEDS):  # <- JAX202 major
        params = init_mlp(jax.random.key(seed), SIZES)
        final.append(train(params, x, y))

    final = jnp.stack(final)
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, final_losses=np.asarray(final))
    print(f"final loss over {SEEDS} seeds: mean {float(final.mean()):.4f} std {float(final.std()):.4f}")


if __name__ == "__main__":
    main()
