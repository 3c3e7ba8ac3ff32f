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


@jax.jit
def simulate(pos, vel):
    def body(carry, _):
        pos, vel = step(*carry)
        return (pos, vel), (pos, 0.5 * jnp.sum(vel**2))

    # the trajectory and energies are stacked by scan instead of copied into a history array every step
    return jax.lax.scan(body, (pos, vel), None, length=T)


def main():
    pos = jax.random.normal(jax.random.key(7), (N, 2))
    vel = jnp.zeros((N, 2))
    (pos, vel), (hist, energies) = simulate(pos, vel)

    radius = jnp.sqrt(jnp.sum(hist**2, axis=-1)).mean(axis=1)
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, final_pos=np.asarray(pos), radius=np.asarray(radius), energy=np.asarray(energies))
    print(f"mean radius {float(radius[0]):.4f} -> {float(radius[-1]):.4f} over {T} steps")


if __name__ == "__main__":
    main()
