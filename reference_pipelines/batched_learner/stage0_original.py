"""Original: an eager Python loop, one observation and one seed at a time (JAX101, JAX201, JAX202, JAX301).

This is how the experiment is first written: for each condition, for each seed, for each
observation, call the per-step function op by op (nothing is jitted), carry the learner and
stream state through a Python `for` loop, and pull every squared error to the host with
`float(...)` to keep a learning curve. Each step dispatches dozens of tiny operations and then
waits for them, so the full experiment (4 x 30 x 276,000 steps) would take most of a day; the
harness measures it on a prefix.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .learners import UPDATES, LearnerState, init_learner, normalize_features
from .stream import StreamState, init_stream, stream_step
from .workload import EARLY_STEPS, Condition, Workload


def step(condition: Condition, learner_state: LearnerState, stream_state: StreamState, t: int,
         workload: Workload) -> tuple[LearnerState, StreamState, jax.Array]:
    x, target, stream_state = stream_step(stream_state, t, workload.sessions, workload.stream)
    normalized, normalizer = normalize_features(learner_state.normalizer, x, workload.hp)
    features = jnp.append(normalized if condition.normalize else x, 1.0)
    error = target - jnp.sum(learner_state.optimizer.weights * features)
    optimizer_state = UPDATES[condition.optimizer](learner_state.optimizer, features, error, workload.hp)
    return LearnerState(optimizer_state, normalizer), stream_state, error * error


def run_seed(condition: Condition, key: jax.Array,
             workload: Workload) -> tuple[jax.Array, jax.Array, np.ndarray, np.ndarray]:
    learner_state = init_learner(condition.optimizer, workload.n_features, workload.hp)
    stream_state = init_stream(key, workload.sessions.shape[0])
    squared_errors = []
    for t in range(workload.n_obs):
        learner_state, stream_state, squared_error = step(
            condition, learner_state, stream_state, t, workload)
        squared_errors.append(float(squared_error))
    window_mse = np.mean(np.reshape(squared_errors, (-1, workload.window)), axis=1)
    early_sq_error = np.asarray(squared_errors[:EARLY_STEPS])
    return learner_state.optimizer.weights, learner_state.optimizer.step_sizes, window_mse, early_sq_error


def run(workload: Workload) -> dict[str, jax.Array]:
    weights, step_sizes, window_mse, early_sq_error = [], [], [], []
    for condition in workload.conditions:
        for seed in range(workload.n_seeds):
            seed_weights, seed_step_sizes, seed_window_mse, seed_early_sq_error = run_seed(
                condition, workload.seed_keys[seed], workload)
            weights.append(seed_weights)
            step_sizes.append(seed_step_sizes)
            window_mse.append(seed_window_mse)
            early_sq_error.append(seed_early_sq_error)
    shape = (len(workload.conditions), workload.n_seeds, -1)
    return {"weights": jnp.stack(weights).reshape(shape),
            "step_sizes": jnp.stack(step_sizes).reshape(shape),
            "window_mse": jnp.asarray(np.stack(window_mse), jnp.float32).reshape(shape),
            "early_sq_error": jnp.asarray(np.stack(early_sq_error), jnp.float32).reshape(shape)}


if __name__ == "__main__":
    from .workload import make_workload

    outputs = run(make_workload("small"))
    print(f"stage0_original: window_mse per condition {np.asarray(outputs['window_mse']).mean(axis=(1, 2))}")
