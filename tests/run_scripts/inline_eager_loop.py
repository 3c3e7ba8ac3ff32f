"""A gradient-descent loop written inline at the script's top level, nothing jitted: each
iteration's gradient and update run op by op; a summary after the loop."""

import jax
import jax.numpy as jnp

x = jnp.linspace(-1.0, 1.0, 64)
y = 3.0 * x + 0.5
w, b = jnp.float32(0.0), jnp.float32(0.0)
for step in range(400):
    residual = w * x + b - y
    w = w - 0.1 * jnp.mean(residual * x)
    b = b - 0.1 * jnp.mean(residual)
print(f"w={float(w):.3f} b={float(b):.3f}")
