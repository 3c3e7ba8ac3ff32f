"""Roll out a noisy linear controller on a batch of cart-poles and report the mean return."""

import os

import jax
import jax.numpy as jnp
import numpy as np

N_ENVS = 16
HORIZON = 15000
DT = 0.02


@jax.jit
def env_step(state, force):
    x, x_dot, theta, theta_dot = state.T
    sin, cos = jnp.sin(theta), jnp.cos(theta)
    temp = (force + 0.05 * theta_dot**2 * sin) / 1.1
    theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos**2 / 1.1))
    x_acc = temp - 0.05 * theta_acc * cos / 1.1
    new = jnp.stack(
        [x + DT * x_dot, x_dot + DT * x_acc, theta + DT * theta_dot, theta_dot + DT * theta_acc], axis=1
    )
    reward = jnp.exp(-(new[:, 0] ** 2) - 20.0 * new[:, 2] ** 2)
    return new, reward


@jax.jit
def policy(gains, state):
    key = jax.random.PRNGKey(0)  # <- JAX502
    noise = 0.1 * jax.random.normal(key, (state.shape[0],))
    return jnp.clip(state @ gains + noise, -10.0, 10.0)


def main():
    gains = jnp.array([1.0, 2.0, 20.0, 5.0])
    state = 0.05 * jax.random.normal(jax.random.key(3), (N_ENVS, 4))
    total = 0.0
    for t in range(HORIZON):  # <- JAX201 major
        force = policy(gains, state)
        state, reward = env_step(state, force)
        total = total + reward.mean()

    mean_return = float(total)
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, final_state=np.asarray(state), mean_return=np.asarray(mean_return))
    print(f"mean return {mean_return:.3f} over {HORIZON} steps")


if __name__ == "__main__":
    main()
