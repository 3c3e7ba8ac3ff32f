"""The alberta-framework experiment as data: conditions, seeds, the session log, and how runs are compared.

Full size is the blog's own: 4 conditions (IDBD and Autostep, each with and without online
normalisation) x 30 seeds x 276,000 observations. All conditions use the same 30 seed keys
(common random numbers), so condition differences are not seed noise. Outputs of every stage:
- `weights`        (conditions, seeds, 18): final weights (17 features + bias),
- `step_sizes`     (conditions, seeds, 18): final per-weight step sizes (IDBD: log step sizes),
- `window_mse`     (conditions, seeds, n_obs // window): mean squared prediction error per window,
- `early_sq_error` (conditions, seeds, 50): the squared error of each of the first 50 steps, which
  is what a full-size run can be checked on against stage 0 run on a prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .learners import Hyperparameters
from .sessions import N_FEATURES, make_sessions
from .stream import StreamConfig

OUTPUT_NAMES = ("weights", "step_sizes", "window_mse", "early_sq_error")
EARLY_STEPS = 50
# Below this magnitude errors count as absolute: weights of large raw features are ~1e-4.
RELATIVE_FLOOR = 0.01


@dataclass(frozen=True)
class Condition:
    name: str
    optimizer: str  # "idbd" or "autostep"
    normalize: bool


CONDITIONS: tuple[Condition, ...] = (
    Condition("IDBD+Norm", "idbd", True),
    Condition("IDBD", "idbd", False),
    Condition("Autostep+Norm", "autostep", True),
    Condition("Autostep", "autostep", False),
)


@dataclass(frozen=True)
class Workload:
    n_obs: int  # observations per seed
    window: int  # observations per entry of window_mse; divides n_obs
    conditions: tuple[Condition, ...]
    seed_keys: jax.Array  # (n_seeds,) typed PRNG keys, shared by all conditions
    sessions: jax.Array  # (n_sessions, 17) the raw session log, shared by all seeds
    stream: StreamConfig
    hp: Hyperparameters

    @property
    def n_seeds(self) -> int:
        return int(self.seed_keys.shape[0])

    @property
    def n_features(self) -> int:
        return N_FEATURES


@dataclass(frozen=True)
class SizeSpec:
    n_obs: int
    n_seeds: int
    window: int
    flip_rate: float


SIZES: Mapping[str, SizeSpec] = {
    # Every stage (the eager loop included) in a few seconds; flips often enough to be seen.
    "small": SizeSpec(n_obs=80, n_seeds=2, window=20, flip_rate=1.0 / 40.0),
    # The blog's experiment: 276k honeypot sessions, 30 seeds; a regime change every ~5,000 sessions.
    "full": SizeSpec(n_obs=276_000, n_seeds=30, window=1000, flip_rate=1.0 / 5000.0),
}
EXPERIMENT_SEED = 0
TARGET_NOISE_STD = 0.5


def make_workload(size: str) -> Workload:
    if size not in SIZES:
        raise KeyError(f"unknown size {size!r} for batched_learner; choose from {', '.join(SIZES)}")
    spec = SIZES[size]
    log_key, seeds_key = jax.random.split(jax.random.key(EXPERIMENT_SEED))
    # The log always has the full experiment's length, so a small run reads real-sized data.
    sessions = make_sessions(log_key, SIZES["full"].n_obs)
    stream = StreamConfig(
        feature_mean=jnp.mean(sessions, axis=0), feature_std=jnp.std(sessions, axis=0),
        flip_rate=spec.flip_rate, noise_std=TARGET_NOISE_STD)
    # Scalars live on the device with the data, so no call copies them from the host.
    to_device = partial(jax.tree.map, lambda value: jnp.asarray(value, jnp.float32))
    workload = Workload(
        n_obs=spec.n_obs, window=spec.window, conditions=CONDITIONS,
        seed_keys=jax.random.split(seeds_key, spec.n_seeds), sessions=sessions,
        stream=to_device(stream), hp=to_device(Hyperparameters()))
    return jax.block_until_ready(workload)


def prefix(workload: Workload, fraction: float) -> Workload:
    """The same experiment on the first `fraction` of each seed's observations."""
    n_obs = max(1, int(round(workload.n_obs * fraction)))
    window = min(workload.window, n_obs)
    return replace(workload, n_obs=n_obs - n_obs % window, window=window)


def work_units(workload: Workload) -> float:
    """Observation-seed pairs over all conditions (the blog's obs*seed, summed over conditions)."""
    return float(workload.n_obs * workload.n_seeds * len(workload.conditions))


def max_relative_error(reference: Mapping[str, Any], outputs: Mapping[str, Any],
                       names: tuple[str, ...] = OUTPUT_NAMES) -> tuple[float, str]:
    """max |out - ref| / (|ref| + 0.01) over the named outputs, and which output it was."""
    worst, where = 0.0, ""
    for name in names:
        ref = np.asarray(reference[name], np.float64)
        out = np.asarray(outputs[name], np.float64)
        if ref.shape != out.shape:
            return float("inf"), f"{name}: shape {out.shape} != reference {ref.shape}"
        if not np.all(np.isfinite(out)):
            return float("inf"), f"{name}: non-finite values"
        err = float(np.max(np.abs(out - ref) / (np.abs(ref) + RELATIVE_FLOOR)))
        if err > worst:
            worst, where = err, name
    return worst, where
