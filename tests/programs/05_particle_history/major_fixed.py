"""Simulate repelling particles in a harmonic trap and keep the whole trajectory."""

import os

import jax
import jax.numpy as jnp
import numpy as np

N = 128
T = 1500
DT = 0.01


@jax.jit
def step(pos, vel):
    diff = pos[:, None, :] - pos[None, :, :]
    dist2 = jnp.sum(diff**2, axis=-1) + 0.05
    repulsion = jnp.sum(diff / dist2[..., None] ** 1.5, axis=1) / N
    force = repulsion - pos - 0.1 * vel
    vel = vel + DT * force
    pos = pos + DT * vel
    return pos, vel


def kinetic_energy(vel, log):
    log.append(float(0.5 * jnp.sum(vel**2)))  # <- JAX301


def main():
    pos = jax.random.normal(jax.random.key(7), (N, 2))
    vel = jnp.zeros((N, 2))
    hist = jnp.zeros((T, N, 2))
    energies = []
    for t in range(T):  # <- JAX201
        pos, vel = step(pos, vel)
        hist = hist.at[t].set(pos)
        kinetic_energy(vel, energies)

    radius = jnp.sqrt(jnp.sum(hist**2, axis=-1)).mean(axis=1)
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, final_pos=np.asarray(pos), radius=np.asarray(radius), energy=np.asarray(energies))
    print(f"mean radius {float(radius[0]):.4f} -> {float(radius[-1]):.4f} over {T} steps")


if __name__ == "__main__":
    main()
