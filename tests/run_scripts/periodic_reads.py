"""A jitted step called 200 times; one output read every step, one every 4 steps, one every 50."""

import jax
import jax.numpy as jnp


@jax.jit
def step(w):
    return w * 0.99, jnp.sum(w ** 2), jnp.max(w), jnp.min(w)


w = jnp.ones(8)
for i in range(200):
    w, loss, top, bottom = step(w)
    first = float(loss)
    if i % 4 == 0:
        sampled = top.item()
    if i % 50 == 0:
        print(f"step {i}: {float(bottom):.3f}")
