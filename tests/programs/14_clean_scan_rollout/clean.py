"""Random-walk agents in a bounded box, rolled out with lax.scan and a fresh key per step."""

import os

import jax
import jax.numpy as jnp
import numpy as np

AGENTS = 256
HORIZON = 2000


def step(pos, key):
    move = 0.05 * jax.random.normal(key, pos.shape)
    pos = jnp.clip(pos + move - 0.01 * pos, -1.0, 1.0)
    reward = -jnp.sum(pos**2, axis=1)
    return pos, reward.mean()


@jax.jit
def rollout(key):
    start_key, walk_key = jax.random.split(key)
    pos = jax.random.uniform(start_key, (AGENTS, 2), minval=-1.0, maxval=1.0)
    return jax.lax.scan(step, pos, jax.random.split(walk_key, HORIZON))


def main():
    pos, rewards = rollout(jax.random.key(12))
    rewards = np.asarray(rewards)
    for t in range(0, HORIZON, 500):
        print(f"t={t} mean reward {rewards[t]:.4f}")

    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, pos=np.asarray(pos), rewards=rewards)
    print(f"return {rewards.sum():.2f} over {HORIZON} steps")


if __name__ == "__main__":
    main()
