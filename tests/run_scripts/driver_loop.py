"""A main function called once whose Python loop splits a key and draws noise eagerly every
iteration around a jitted step (and reads a value every 500 steps), after a one-time
initialisation of its parameters."""

import sys

import jax
import jax.numpy as jnp

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 5000


def init_params(key):
    k1, k2, k3 = jax.random.split(key, 3)
    scale = jax.random.uniform(k1, (512,)) + 0.5
    drift = 0.1 * jax.random.normal(k2, (512,))
    occ = jnp.zeros(512) + 0.01 * jax.random.normal(k3, (512,))
    return scale, drift, occ


@jax.jit
def em_step(x, occ, noise):
    x = x + 0.01 * (occ - x) + 0.1 * noise
    occ = 0.99 * occ + 0.01 * jnp.tanh(x)
    return x, occ


def main():
    key = jax.random.key(3)
    scale, drift, occ = init_params(jax.random.key(0))
    x = scale * drift
    for t in range(STEPS):
        key, sub = jax.random.split(key)
        x, occ = em_step(x, occ, jax.random.normal(sub, (512,)))
        if t % 500 == 0:
            print(f"step {t}: {float(jnp.mean(x)):.4f}")
    print(f"done {float(jnp.mean(x)):.4f}")


main()
