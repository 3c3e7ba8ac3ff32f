"""The ppo_cartpole workload: sizes, the env-step budget, prefixes, outputs and their validation.

A workload is one PPO training run of a fixed budget of environment steps, described twice:
`host` is PureJaxRL's CartPole configuration (4 environments, 128-step rollouts), which the
host-environment stage 0 and its JAX port (stage 1) run; `vectorized` spends the same budget
with many environments per update, which stages 2-4 run (stage 2 is where the count changes).

Every stage returns `Outputs`: per-update curves (return and count of finished episodes, actions
taken, mean loss) and the final parameters. Stages with the same math and the same keys return
the same outputs (max_abs_err); a stage that changes the math is validated by learning: the mean
return of the episodes finished in the last tenth of training must reach the workload's target
(475 at full size, the CartPole-v1 "solved" bar).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxopt_audit.runtime.bench.pipeline import Stage, Validation

from .ppo import PPOConfig

SOLVED_RETURN = 475.0  # CartPole-v1's reward threshold
SMALL_TARGET_RETURN = 40.0  # about twice a random policy's ~20: learning has started
LEARNING_TAIL = 0.1  # fraction of the updates whose finished episodes measure learning
EQUAL_ROLLOUT_TOLERANCE = 1e-3  # float32 rounding across stages; one diverged action is >= 1
# NumPy and XLA round CartPole's float32 physics differently (XLA fuses multiply-adds, its sin and
# cos differ by an ulp), and the upright pole is unstable: errors grow ~10% per step, so equal
# rollouts from equal keys drift apart once episodes last ~100+ steps. Equality with stage 0 is
# therefore checked over the first updates, while the untrained policy's episodes are short.
EQUAL_ROLLOUT_UPDATES = 8


class Workload(NamedTuple):
    size: str
    seed: int
    host: PPOConfig  # stages 0-1: few environments, long rollouts
    vectorized: PPOConfig  # stages 2-4: many environments, same env-step budget
    target_return: float  # learning validation bar for stages that change the math


class Outputs(NamedTuple):
    return_sum: Any  # (num_updates,) summed returns of the episodes finished in each update
    episodes: Any  # (num_updates,) how many episodes finished in each update
    actions: Any  # (num_updates,) how many "push right" actions each update took (a rollout fingerprint)
    loss: Any  # (num_updates,) mean PPO loss over the update's minibatch steps
    params: Any  # the final network parameters


def _config(num_envs: int, num_steps: int, total_steps: int, **hyper: Any) -> PPOConfig:
    updates = total_steps // (num_envs * num_steps)
    return PPOConfig(num_envs=num_envs, num_steps=num_steps, num_updates=updates,
                     schedule_updates=updates, **hyper)


def make_workload(size: str) -> Workload:
    """`small`: a few seconds per stage (learning barely starts); `full`: a run that solves CartPole."""
    if size == "small":
        total = 2**13  # 8,192 env steps
        return Workload(size, 0, _config(4, 128, total), _config(64, 16, total, lr=1e-3), SMALL_TARGET_RETURN)
    if size == "full":
        total = 2**24  # 16,777,216 env steps
        return Workload(size, 0, _config(4, 128, total), _config(4096, 16, total, lr=1e-3), SOLVED_RETURN)
    raise ValueError(f"ppo_cartpole: unknown size {size!r}; use 'small' or 'full'")


def env_steps(cfg: PPOConfig) -> int:
    return cfg.num_updates * cfg.batch_size


def work_units(workload: Workload) -> float:
    """Environment steps of the run (the same for both configurations by construction)."""
    return float(env_steps(workload.host))


def prefix(workload: Workload, fraction: float) -> Workload:
    """The first `fraction` of the same run: fewer updates, the learning-rate schedule unchanged.

    Rounded so that both configurations still take the same number of env steps.
    """
    step = math.lcm(workload.host.batch_size, workload.vectorized.batch_size)
    total = max(step, round(env_steps(workload.host) * fraction / step) * step)
    return workload._replace(
        host=workload.host._replace(num_updates=total // workload.host.batch_size),
        vectorized=workload.vectorized._replace(num_updates=total // workload.vectorized.batch_size))


def final_mean_return(outputs: Outputs) -> float:
    """Mean return of the episodes finished in the last tenth of the updates (at least one)."""
    return_sum, episodes = np.asarray(outputs.return_sum), np.asarray(outputs.episodes)
    tail = max(1, math.ceil(LEARNING_TAIL * len(return_sum)))
    return float(return_sum[-tail:].sum() / max(1.0, float(episodes[-tail:].sum())))


def rollout_max_abs_err(reference: Outputs, outputs: Outputs,
                        updates: int | None = None) -> tuple[float, str]:
    """Largest difference in the per-update curves (the first `updates`, or the common length)
    and, when both runs are compared whole, in the final parameters."""
    ref_len, out_len = len(np.asarray(reference.return_sum)), len(np.asarray(outputs.return_sum))
    n = min(ref_len, out_len) if updates is None else min(ref_len, out_len, updates)
    err = max(float(np.max(np.abs(np.asarray(a, np.float64)[:n] - np.asarray(b, np.float64)[:n])))
              for a, b in zip(reference[:4], outputs[:4], strict=True))
    detail = f"returns, episodes, actions and loss of the first {n} updates"
    if n == ref_len == out_len:
        leaves = zip(jax.tree.leaves(reference.params), jax.tree.leaves(outputs.params), strict=True)
        err = max([err] + [float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in leaves])
        detail += " and the final params"
    return err, detail + ", equal keys"


def validate(reference: Outputs, outputs: Outputs, workload: Workload, stage: Stage) -> Validation:
    if not stage.changes_math:
        err, detail = rollout_max_abs_err(reference, outputs, EQUAL_ROLLOUT_UPDATES)
        return Validation(err <= EQUAL_ROLLOUT_TOLERANCE, "max_abs_err", err,
                          EQUAL_ROLLOUT_TOLERANCE, detail)
    value = final_mean_return(outputs)
    detail = (f"mean return of episodes finished in the last {LEARNING_TAIL:.0%} of "
              f"{env_steps(workload.vectorized):,} env steps; must reach {workload.target_return:g} "
              f"(stage 0: {final_mean_return(reference):.1f})")
    return Validation(value >= workload.target_return, "final_mean_return", value,
                      workload.target_return, detail)
