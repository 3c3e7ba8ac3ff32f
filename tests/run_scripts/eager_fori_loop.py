"""A pendulum integrator whose inner loop is `lax.fori_loop`, called from a Python loop without
jit: each call traces the body again and dispatches the loop on its own."""

import jax.numpy as jnp
from jax import lax


def body(i, state):
    angle, speed = state
    return angle + 0.01 * speed, speed - 0.01 * jnp.sin(angle)


def integrate(angle, speed):
    return lax.fori_loop(0, 20, body, (angle, speed))


angle, speed = jnp.linspace(0.0, 1.0, 32), jnp.zeros(32)
for _ in range(1000):
    angle, speed = integrate(angle, speed)
print(float(angle[-1]))
