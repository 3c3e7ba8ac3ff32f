"""The per-seed prediction stream: which session arrives at step t and what target it carries.

A seed's PRNG key fixes (1) where in the shared session log its stream starts (each seed reads the
log as a different rotation, so its normaliser sees different data at different times), (2) the
signs of the true weights the target is made of, and (3) per step, whether an attack-wave regime
change flips one relevant weight (a drifting target, as in Sutton 1992's tracking task) and the
target's noise. Step t's randomness comes from `fold_in(seed_key, t)`, so the stream is a pure
function of (key, t): eager code, `lax.scan` and `vmap` all compute exactly the same numbers, and
the draws of many steps can be made at once (`step_draws`) ahead of the sequential part
(`apply_draws`), which only flips weights and forms the target.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtri

from .sessions import FEATURE_NAMES, N_FEATURES

# The target depends on behaviour, not on context: 8 of the 17 features matter, 9 are distractors.
RELEVANT_FEATURES: tuple[int, ...] = tuple(
    FEATURE_NAMES.index(name)
    for name in (
        "commands_executed", "files_downloaded", "lateral_movement_attempts",
        "command_entropy_bits", "timing_randomness", "ip_reputation", "bytes_received_mb",
        "session_duration_min",
    )
)


class StreamConfig(NamedTuple):
    """What every seed's stream shares: the log's feature statistics and the drift parameters."""

    feature_mean: jax.Array  # (17,) the log's mean; the target is linear in standardised features
    feature_std: jax.Array  # (17,)
    flip_rate: float  # chance per step that one relevant true weight changes sign
    noise_std: float  # target noise


class StreamState(NamedTuple):
    key: jax.Array  # the seed's typed PRNG key; step t uses fold_in(key, t)
    offset: jax.Array  # int32 scalar: the log row this seed reads at t = 0
    true_weights: jax.Array  # (17,) the drifting weights the target is made of


def init_stream(key: jax.Array, n_sessions: int) -> StreamState:
    """A seed's stream: its own start offset into the log and its own true-weight signs."""
    offset_key, sign_key = jax.random.split(key)
    offset = jax.random.randint(offset_key, (), 0, n_sessions, dtype=jnp.int32)
    signs = jnp.where(jax.random.bernoulli(sign_key, 0.5, (len(RELEVANT_FEATURES),)), 1.0, -1.0)
    true_weights = jnp.zeros(N_FEATURES, jnp.float32).at[jnp.array(RELEVANT_FEATURES)].set(signs)
    return StreamState(key=key, offset=offset, true_weights=true_weights)


class StepDraws(NamedTuple):
    """Step t's randomness for one seed: a pure function of (seed key, t)."""

    sign: jax.Array  # () -1.0 when a regime change flips a true weight at this step, else 1.0
    which: jax.Array  # () int32: the relevant feature whose weight the change would flip
    noise: jax.Array  # () standard normal target noise


def step_draws(key: jax.Array, t: jax.Array | int, config: StreamConfig) -> StepDraws:
    # One key per step and one draw of three uniforms (two threefry blocks, the least there is);
    # the lower bound keeps the inverse normal CDF finite.
    flip_draw, which_draw, noise_draw = jax.random.uniform(
        jax.random.fold_in(key, t), (3,), minval=jnp.finfo(jnp.float32).tiny)
    relevant = jnp.array(RELEVANT_FEATURES, jnp.int32)
    which = relevant[jnp.minimum((which_draw * len(RELEVANT_FEATURES)).astype(jnp.int32),
                                 len(RELEVANT_FEATURES) - 1)]
    sign = jnp.where(flip_draw < config.flip_rate, -1.0, 1.0)
    return StepDraws(sign=sign, which=which, noise=ndtri(noise_draw))


def session_row(state: StreamState, t: jax.Array | int, n_sessions: int) -> jax.Array:
    """Which row of the shared log the seed reads at step t."""
    return (state.offset + t) % n_sessions


def apply_draws(state: StreamState, draws: StepDraws, x: jax.Array,
                config: StreamConfig) -> tuple[jax.Array, StreamState]:
    """The sequential part of a step: drift the true weights, then the target for features x."""
    # A mask, not a scatter: batched over seeds it stays one elementwise fusion.
    flip = jnp.where(jnp.arange(state.true_weights.shape[0]) == draws.which, draws.sign, 1.0)
    true_weights = state.true_weights * flip
    standardized = (x - config.feature_mean) / config.feature_std
    target = jnp.sum(true_weights * standardized) + config.noise_std * draws.noise
    return target, state._replace(true_weights=true_weights)


def stream_step(
    state: StreamState, t: jax.Array | int, sessions: jax.Array, config: StreamConfig
) -> tuple[jax.Array, jax.Array, StreamState]:
    """Step t of a seed's stream: (raw features (17,), target (), next state)."""
    draws = step_draws(state.key, t, config)
    row = session_row(state, t, sessions.shape[0])
    x = jax.lax.dynamic_index_in_dim(sessions, row, axis=0, keepdims=False)
    target, state = apply_draws(state, draws, x, config)
    return x, target, state
