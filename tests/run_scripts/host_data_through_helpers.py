"""NumPy batches made in the loop and handed through helpers before they reach JAX: each copy is
the loop's statement that makes or passes the batch, not the helper's line that forwards it."""

import jax
import jax.numpy as jnp
import numpy as np

STEPS = 6


@jax.jit
def update(w, x):
    return w - 0.1 * jnp.mean(x)


def forward_to_jit(w, batch):
    x, _ = batch
    return update(w, x)


def eager_loss(w, x):
    return jnp.sum(w * x)


def to_device(x):
    return jnp.asarray(x)


def forward_a_batch_made_here(w, rng):
    x = rng.normal(size=4).astype(np.float32)
    return update(w, x)


def main() -> None:
    rng = np.random.default_rng(0)
    data = rng.normal(size=(STEPS, 4)).astype(np.float32)
    w = jnp.zeros(4)
    for step in range(STEPS):
        w = forward_to_jit(w, (data[step], None))
        w = w - 0.1 * eager_loss(w, data[step])
        w = w + to_device(data[step])
        w = forward_a_batch_made_here(w, rng)
    w.block_until_ready()


if __name__ == "__main__":
    main()
