"""Linear regression trained on a curriculum that uses a few more examples at every step."""

import os

import jax
import jax.numpy as jnp
import numpy as np

STEPS = 40
MAX_N = 64 + 8 * STEPS
D = 48


@jax.jit
def train_step(w, x, y):
    def loss_fn(w):
        return jnp.mean((x @ w - y) ** 2)

    loss, grad = jax.value_and_grad(loss_fn)(w)
    return w - 0.05 * grad, loss


def main():
    rng = np.random.default_rng(2)
    x_np = rng.normal(size=(MAX_N, D)).astype(np.float32)
    y_np = (x_np @ rng.normal(size=D) + 0.1 * rng.normal(size=MAX_N)).astype(np.float32)
    w = jnp.zeros(D)
    losses = []
    for step in range(STEPS):  # <- JAX201
        n = 64 + 8 * step
        xb, yb = jnp.asarray(x_np[:n]), jnp.asarray(y_np[:n])  # <- JAX302
        w, loss = train_step(w, xb, yb)  # <- JAX103 major
        losses.append(loss)

    losses = np.asarray(jnp.stack(losses))
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, w=np.asarray(w), losses=losses)
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.5f} over {STEPS} steps")


if __name__ == "__main__":
    main()
