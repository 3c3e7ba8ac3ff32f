"""A NumPy batch built on the host and fed to the jitted step every step (7 steps)."""

import jax
import jax.numpy as jnp
import numpy as np

STEPS = 7


@jax.jit
def update(w, batch):
    return w - 0.1 * jnp.mean(batch, axis=0)


def main() -> None:
    rng = np.random.default_rng(0)
    w = jnp.zeros(3)
    for _ in range(STEPS):
        batch = rng.normal(size=(16, 3)).astype(np.float32)
        w = update(w, batch)
    w.block_until_ready()


if __name__ == "__main__":
    main()
