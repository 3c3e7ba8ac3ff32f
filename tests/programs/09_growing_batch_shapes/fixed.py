"""Linear regression trained on a curriculum that uses a few more examples at every step."""

import os

import jax
import jax.numpy as jnp
import numpy as np

STEPS = 40
MAX_N = 64 + 8 * STEPS
D = 48


@jax.jit
def train_step(w, x, y, n):
    # every call sees MAX_N rows; the rows past n are masked out of the mean
    mask = jnp.arange(MAX_N) < n

    def loss_fn(w):
        return jnp.sum(jnp.where(mask, (x @ w - y) ** 2, 0.0)) / n

    loss, grad = jax.value_and_grad(loss_fn)(w)
    return w - 0.05 * grad, loss


@jax.jit
def train(w, x, y):
    def body(w, n):
        return train_step(w, x, y, n)

    return jax.lax.scan(body, w, 64 + 8 * jnp.arange(STEPS))


def main():
    rng = np.random.default_rng(2)
    x_np = rng.normal(size=(MAX_N, D)).astype(np.float32)
    y_np = (x_np @ rng.normal(size=D) + 0.1 * rng.normal(size=MAX_N)).astype(np.float32)
    w = jnp.zeros(D)
    # the data set goes to the device once; the curriculum is a scan over the example counts
    w, losses = train(w, jnp.asarray(x_np), jnp.asarray(y_np))
    losses = np.asarray(losses)
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, w=np.asarray(w), losses=losses)
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.5f} over {STEPS} steps")


if __name__ == "__main__":
    main()
