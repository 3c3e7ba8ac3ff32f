"""A running mean printed from a list of device scalars converted whole on every step: the
conversions grow with the list (each element read again every step)."""

import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def step(w):
    return w * 0.99, jnp.sum(w**2)


w = jnp.ones(100)
losses, running = [], []
for i in range(400):
    w, loss = step(w)
    losses.append(loss)
    running.append(np.mean(losses))
print(f"{running[-1]:.3f}")
