"""Explicit finite-difference heat diffusion on a periodic grid with a random conductivity field."""

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

GRID = 16
STEPS = 80000
DT = 0.02
SOURCE = np.outer(np.sin(np.linspace(0, 2 * np.pi, GRID)), np.cos(np.linspace(0, 2 * np.pi, GRID)))


@jax.jit
def diffuse(u, kappa):
    lap = jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4.0 * u
    return u + DT * (kappa * lap + SOURCE - 0.05 * u)


def main():
    key = jax.random.key(9)
    u = jax.random.normal(key, (GRID, GRID))
    kappa = 0.5 + 0.4 * jax.random.uniform(key, (GRID, GRID))  # <- JAX501

    start = time.perf_counter()
    for t in range(STEPS):  # <- JAX201 major
        u = diffuse(u, kappa)
    elapsed = time.perf_counter() - start  # <- JAX701

    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, u=np.asarray(u))
    print(f"field std {float(u.std()):.5f} after {STEPS} steps ({elapsed:.2f} s)")


if __name__ == "__main__":
    main()
