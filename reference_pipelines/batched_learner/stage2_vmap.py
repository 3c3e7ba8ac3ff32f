"""Batch the seeds: `jax.vmap` of the scanned run over the 30 seed keys, one call per condition (JAX202).

The seed loop of the previous stage calls the same compiled function on independent keys, so
`vmap` turns the 30 runs into one: every step now updates a (30, 18) state with the same
operations, and the session log is shared, not copied per seed. This is the blog's fix (~30x).
The four conditions are still a Python loop of four compiled calls.
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
def run_condition(condition: Condition, seed_keys: jax.Array, sessions: jax.Array,
                  stream_config: StreamConfig, hp: Hyperparameters, n_obs: int,
                  window: int) -> tuple[jax.Array, ...]:
    def run_seed(key):
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

    return jax.vmap(run_seed)(seed_keys)


def run(workload: Workload) -> dict[str, jax.Array]:
    weights, step_sizes, window_mse, early_sq_error = [], [], [], []
    for condition in workload.conditions:
        condition_weights, condition_step_sizes, condition_window_mse, condition_early = run_condition(
            condition, workload.seed_keys, workload.sessions, workload.stream, workload.hp,
            workload.n_obs, workload.window)
        weights.append(condition_weights)
        step_sizes.append(condition_step_sizes)
        window_mse.append(condition_window_mse)
        early_sq_error.append(condition_early)
    return {"weights": jnp.stack(weights), "step_sizes": jnp.stack(step_sizes),
            "window_mse": jnp.stack(window_mse), "early_sq_error": jnp.stack(early_sq_error)}


if __name__ == "__main__":
    from .workload import make_workload

    outputs = run(make_workload("small"))
    print(f"stage2_vmap: window_mse per condition {np.asarray(outputs['window_mse']).mean(axis=(1, 2))}")
