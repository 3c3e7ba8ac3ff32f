"""CartPole-v1 written once for NumPy and JAX: the host environment of stage 0 and the JAX one.

The physics (`cartpole_dynamics`, `is_terminal`) take the array module as their first argument
and use only element-wise operations, so the host environment (NumPy, one environment, gym's
API) and the JAX environment (one environment, gymnax's API with automatic reset) run the very
same arithmetic in float32. Constants are gym's CartPole-v1 (Euler integration).

Both environments draw a reset state with `jax.random.uniform(key, (4,), -0.05, 0.05)` from the
key they are handed: the host environment does it only when an episode ends, the JAX one on
every step (then selects it where the episode ended). Equal keys therefore give equal episodes
in both, which is what lets the pipeline compare the host stage with the JAX stages step for
step.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

GRAVITY = np.float32(9.8)
MASSCART = np.float32(1.0)
MASSPOLE = np.float32(0.1)
TOTAL_MASS = np.float32(MASSPOLE + MASSCART)
LENGTH = np.float32(0.5)  # half the pole's length
POLEMASS_LENGTH = np.float32(MASSPOLE * LENGTH)
FORCE_MAG = np.float32(10.0)
TAU = np.float32(0.02)  # seconds between state updates
FOUR_THIRDS = np.float32(4.0 / 3.0)
THETA_THRESHOLD = np.float32(12 * 2 * math.pi / 360)
X_THRESHOLD = np.float32(2.4)
MAX_EPISODE_STEPS = 500  # CartPole-v1's time limit
RESET_BOUND = 0.05  # initial state ~ U(-0.05, 0.05)^4
OBS_SIZE = 4
NUM_ACTIONS = 2


def cartpole_dynamics(xp: ModuleType, x: Any, x_dot: Any, theta: Any, theta_dot: Any,
                      action: Any) -> tuple[Any, Any, Any, Any]:
    """One Euler step of gym's CartPole-v1; `xp` is `numpy` or `jax.numpy`, inputs float32."""
    force = xp.where(action == 1, FORCE_MAG, -FORCE_MAG)
    costheta = xp.cos(theta)
    sintheta = xp.sin(theta)
    temp = (force + POLEMASS_LENGTH * theta_dot * theta_dot * sintheta) / TOTAL_MASS
    thetaacc = (GRAVITY * sintheta - costheta * temp) / (
        LENGTH * (FOUR_THIRDS - MASSPOLE * costheta * costheta / TOTAL_MASS))
    xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
    return (x + TAU * x_dot, x_dot + TAU * xacc, theta + TAU * theta_dot, theta_dot + TAU * thetaacc)


def is_terminal(xp: ModuleType, x: Any, theta: Any) -> Any:
    """The pole fell past 12 degrees or the cart left the track (gym's termination)."""
    return xp.logical_or(xp.abs(x) > X_THRESHOLD, xp.abs(theta) > THETA_THRESHOLD)


def reset_draw(key: jax.Array) -> jax.Array:
    """The initial (x, x_dot, theta, theta_dot), uniform in [-0.05, 0.05), from a JAX key."""
    return jax.random.uniform(key, (OBS_SIZE,), jnp.float32, -RESET_BOUND, RESET_BOUND)


class HostCartPole:
    """One CartPole-v1 on the host, gym's API (`reset`, `step`), NumPy float32 physics.

    It keeps the running episode return, as gym's RecordEpisodeStatistics wrapper does, and
    reports it in `step`'s result when an episode ends.
    """

    def __init__(self) -> None:
        self.state = np.zeros(OBS_SIZE, np.float32)
        self.time = 0
        self.episode_return = 0.0

    def reset(self, key: jax.Array) -> np.ndarray:
        # One device-to-host copy per episode: the reset draw comes from the shared key stream.
        self.state = np.array(reset_draw(key), np.float32)  # a writable host copy
        self.time = 0
        self.episode_return = 0.0
        return self.state.copy()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, float]:
        """Advance one step; returns (obs, reward, done, finished episode's return or 0)."""
        x, x_dot, theta, theta_dot = cartpole_dynamics(np, *self.state, action)
        self.state = np.array([x, x_dot, theta, theta_dot], np.float32)
        self.time += 1
        self.episode_return += 1.0
        done = bool(is_terminal(np, x, theta)) or self.time >= MAX_EPISODE_STEPS
        return self.state.copy(), 1.0, done, self.episode_return if done else 0.0


class EnvState(NamedTuple):
    """One JAX CartPole's state; every field a scalar (or, stacked, one entry per environment)."""

    physics: jax.Array  # (x, x_dot, theta, theta_dot), float32[4]
    time: jax.Array  # steps into the episode, int32
    episode_return: jax.Array  # reward so far in the episode, float32


class StepResult(NamedTuple):
    state: EnvState
    obs: jax.Array
    reward: jax.Array
    done: jax.Array
    finished_return: jax.Array  # the return of the episode that ended at this step, else 0


def env_reset(key: jax.Array) -> tuple[EnvState, jax.Array]:
    physics = reset_draw(key)
    return EnvState(physics, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.float32)), physics


def env_step(key: jax.Array, state: EnvState, action: jax.Array) -> StepResult:
    """One step of one JAX CartPole with automatic reset (gymnax's convention)."""
    x, x_dot, theta, theta_dot = cartpole_dynamics(jnp, *state.physics, action)
    physics = jnp.stack([x, x_dot, theta, theta_dot])
    time = state.time + 1
    episode_return = state.episode_return + 1.0
    done = jnp.logical_or(is_terminal(jnp, x, theta), time >= MAX_EPISODE_STEPS)
    reset_state, _ = env_reset(key)
    stepped = EnvState(physics, time, episode_return)
    next_state = jax.tree.map(lambda r, s: jnp.where(done, r, s), reset_state, stepped)
    return StepResult(next_state, next_state.physics, jnp.float32(1.0), done,
                      jnp.where(done, episode_return, 0.0))
