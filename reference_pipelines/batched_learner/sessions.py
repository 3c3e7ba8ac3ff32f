"""The honeypot session log that every run of the experiment reads: a table of raw features.

The experiment turns each Cowrie SSH session into a 17-dimensional vector: session features (counts),
behavioural features (entropies), context features (IP reputation, country code, byte counts,
cyclical hour/day encodings). We cannot ship real attack traffic, so this module synthesises a
log with the same shape and the same trouble for a learner: counts, bounded scores and byte
counts (in MB) that span five orders of magnitude side by side, a bot/human mixture, and attack waves
that shift the distribution over time. It is generated once, deterministically, from a key, and
shared by every seed (like a log file on disk).
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp

FEATURE_NAMES: tuple[str, ...] = (
    "connection_age_h",
    "auth_attempts",
    "unique_usernames",
    "commands_executed",
    "files_downloaded",
    "lateral_movement_attempts",
    "command_entropy_bits",
    "timing_randomness",
    "ip_reputation",
    "country_risk",
    "bytes_sent_mb",
    "bytes_received_mb",
    "session_duration_min",
    "hour_sin",
    "hour_cos",
    "day_sin",
    "day_cos",
)
N_FEATURES = len(FEATURE_NAMES)

# The log covers 90 days of sessions; waves of scanning bots come and go every few days.
LOG_DAYS = 90.0
BOT_FRACTION = 0.8
WAVE_PERIOD_DAYS = 6.0


@partial(jax.jit, static_argnames="n_sessions")
def make_sessions(key: jax.Array, n_sessions: int) -> jax.Array:
    """Raw session features, shape (n_sessions, 17) float32, in arrival order."""
    keys = jax.random.split(key, 12)
    # Arrival times spread over the log; waves raise the bot share and the payload sizes.
    day = jnp.sort(jax.random.uniform(keys[0], (n_sessions,), maxval=LOG_DAYS))
    wave = 0.5 + 0.5 * jnp.sin(2.0 * math.pi * day / WAVE_PERIOD_DAYS)
    is_bot = jax.random.uniform(keys[1], (n_sessions,)) < BOT_FRACTION * (0.8 + 0.25 * wave)

    def poisson(k: jax.Array, rate: jax.Array) -> jax.Array:
        return jax.random.poisson(k, rate, (n_sessions,)).astype(jnp.float32)

    def lognormal(k: jax.Array, log_median: jax.Array, sigma: float) -> jax.Array:
        return jnp.exp(log_median + sigma * jax.random.normal(k, (n_sessions,)))

    auth_attempts = 1.0 + poisson(keys[2], jnp.where(is_bot, 6.0, 1.5))
    unique_usernames = jnp.minimum(auth_attempts, 1.0 + poisson(keys[3], jnp.where(is_bot, 3.0, 0.3)))
    commands = poisson(keys[4], jnp.where(is_bot, 2.0, 18.0))
    files = poisson(keys[5], jnp.where(is_bot, 0.2, 1.2) * (1.0 + wave))
    lateral = poisson(keys[6], jnp.where(is_bot, 0.02, 0.4))
    u = jax.random.uniform(keys[7], (n_sessions, 3))
    # Bots replay a script: low command entropy and metronomic timing.
    entropy = jnp.where(is_bot, 1.2 * u[:, 0], 1.5 + 3.0 * u[:, 0]) * (commands > 0)
    timing = jnp.where(is_bot, 0.15 * u[:, 1], 0.6 + 1.4 * u[:, 1])
    reputation = jnp.where(is_bot, 0.6 + 0.4 * u[:, 2], u[:, 2])
    # The country code, frequency-encoded: the share of all attacks that came from that country.
    country_risk = 0.25 * jax.random.beta(keys[8], 0.5, 3.0, (n_sessions,))
    # Payloads in megabytes: most sessions move a few kB, a few move tens of MB.
    bytes_sent = lognormal(keys[9], jnp.log(8e-4) + 1.5 * wave * is_bot, 1.0)
    bytes_received = lognormal(keys[10], jnp.log(4e-3) + jnp.log1p(commands), 1.0)
    age_and_duration = jax.random.normal(keys[11], (n_sessions, 2))
    connection_age = jnp.exp(jnp.log(0.5) + 1.0 * age_and_duration[:, 0])
    duration = jnp.exp(jnp.where(is_bot, jnp.log(0.15), jnp.log(4.0)) + 0.7 * age_and_duration[:, 1])
    hour_angle = 2.0 * math.pi * (day % 1.0)
    day_angle = 2.0 * math.pi * ((day // 1.0) % 7.0) / 7.0
    columns = (
        connection_age, auth_attempts, unique_usernames, commands, files, lateral, entropy, timing,
        reputation, country_risk, bytes_sent, bytes_received, duration,
        jnp.sin(hour_angle), jnp.cos(hour_angle), jnp.sin(day_angle), jnp.cos(day_angle),
    )
    return jnp.stack(columns, axis=1).astype(jnp.float32)
