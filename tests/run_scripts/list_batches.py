"""A jitted step fed batches made each step by jnp.array from nested Python lists of rows (and
one constant list converted once, before the loop)."""

import jax
import jax.numpy as jnp

ROWS = [[float(i % 7), float(i % 5), float(i % 3)] for i in range(2048)]
BATCH = 64


@jax.jit
def step(w, x, y):
    return w - 0.01 * x.T @ (x @ w - y) / x.shape[0]


w = jnp.array([0.0, 0.0, 0.0])
for start in range(0, len(ROWS), BATCH):
    rows = ROWS[start:start + BATCH]
    w = step(w, jnp.array([r[:2] + [1.0] for r in rows]), jnp.array([r[2] for r in rows]))
print(f"w = {w}")
