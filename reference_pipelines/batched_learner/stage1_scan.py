"""Compile each seed's whole run: `lax.scan` over observations under `jax.jit` (JAX101, JAX201, JAX301).

The per-step function becomes the body of a `lax.scan` inside one jitted function per seed, so
XLA compiles the loop once and runs it without Python; the squared errors stay on the device as
the scan's stacked output and are averaged per window there, instead of `float(...)` on every
step. Seeds (and conditions) are still a Python loop: one compiled call per run, 120 at full
size, each one a sequential chain of tiny operations.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .learners import UPDATES, Hyperparameters, LearnerState, init_learner, normalize_features
from .stream import StreamConfig, init_stream, stream_step
from .workload import EARLY_STEPS, Condition, Workload


@partial(jax.jit, static_argnames=("condition", "n_obs", "window"))
def run_seed(condition: Condition, key: jax.Array, sessions: jax.Array, stream_config: StreamConfig,
             hp: Hyperparameters, n_obs: int, window: int) -> tuple[jax.Array, ...]:
    learner_state = init_learner(condition.optimizer, sessions.shape[1], hp)
    stream_state = init_stream(key, sessions.shape[0])

    def step(carry, t):
        learner_state, stream_state = carry
        x, target, stream_state = stream_step(stream_state, t, sessions, stream_config)
        normalized, normalizer = normalize_features(learner_state.normalizer, x, hp)
        features = jnp.append(normalized if condition.normalize else x, 1.0)
        error = target - jnp.sum(learner_state.optimizer.weights * features)
        optimizer_state = UPDATES[condition.optimizer](learner_state.optimizer, features, error, hp)
        return (LearnerState(optimizer_state, normalizer), stream_state), error * error

    (learner_state, _), squared_errors = jax.lax.scan(
        step, (learner_state, stream_state), jnp.arange(n_obs))
    window_mse = jnp.mean(squared_errors.reshape(-1, window), axis=1)
    return (learner_state.optimizer.weights, learner_state.optimizer.step_sizes, window_mse,
            squared_errors[:EARLY_STEPS])


def run(workload: Workload) -> dict[str, jax.Array]:
    weights, step_sizes, window_mse, early_sq_error = [], [], [], []
    for condition in workload.conditions:
        for seed in range(workload.n_seeds):
            seed_weights, seed_step_sizes, seed_window_mse, seed_early_sq_error = run_seed(
                condition, workload.seed_keys[seed], workload.sessions, workload.stream,
                workload.hp, workload.n_obs, workload.window)
            weights.append(seed_weights)
            step_sizes.append(seed_step_sizes)
            window_mse.append(seed_window_mse)
            early_sq_error.append(seed_early_sq_error)
    shape = (len(workload.conditions), workload.n_seeds, -1)
    return {"weights": jnp.stack(weights).reshape(shape),
            "step_sizes": jnp.stack(step_sizes).reshape(shape),
            "window_mse": jnp.stack(window_mse).reshape(shape),
            "early_sq_error": jnp.stack(early_sq_error).reshape(shape)}


if __name__ == "__main__":
    from .workload import make_workload

    outputs = run(make_workload("small"))
    print(f"stage1_scan: window_mse per condition {np.asarray(outputs['window_mse']).mean(axis=(1, 2))}")
