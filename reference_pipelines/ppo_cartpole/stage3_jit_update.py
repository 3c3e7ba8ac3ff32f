"""Stage 3: the whole update (rollout, GAE, minibatch epochs) is one jitted function, scanned over updates (JAX201).

Stage 2 still drove training from Python: a loop over updates, and inside it loops over epochs
and minibatches carrying (params, opt_state) through a jitted step each (JAX201), with the
unjitted minibatch shuffle dispatched op by op. Here they become `lax.scan`s inside one
`jax.jit` — PureJaxRL's `train` — so a whole training run is one device call. Same math and keys
as stage 2: equal outputs.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .cartpole import EnvState, env_reset, env_step
from .ppo import (
    Batch,
    Params,
    PPOConfig,
    Transition,
    apply_network,
    compute_gae,
    flatten_batch,
    init_network,
    make_optimizer,
    minibatch_update,
    sample_action,
)
from .workload import Outputs, Workload


class RunnerState(NamedTuple):
    params: Params
    opt_state: Any
    env_state: EnvState
    obs: jax.Array
    key: jax.Array


def shuffle_minibatches(key: jax.Array, batch: Batch, num_minibatches: int) -> Batch:
    """Permute the update batch and cut it into (num_minibatches, minibatch_size, ...)."""
    perm = jax.random.permutation(key, batch.advantage.shape[0])
    shuffled = jax.tree.map(lambda x: jnp.take(x, perm, axis=0), batch)
    return jax.tree.map(lambda x: x.reshape((num_minibatches, -1) + x.shape[1:]), shuffled)


def rollout_step(cfg: PPOConfig, carry: tuple, _: None) -> tuple[tuple, Transition]:
    params, env_state, obs, key = carry
    key, k_act, k_step = jax.random.split(key, 3)
    action, log_prob, value = sample_action(params, obs, k_act)
    result = jax.vmap(env_step)(jax.random.split(k_step, cfg.num_envs), env_state, action)
    transition = Transition(obs, action, result.reward, result.done, value, log_prob,
                            result.finished_return)
    return (params, result.state, result.obs, key), transition


def update_step(cfg: PPOConfig, runner: RunnerState, _: None) -> tuple[RunnerState, tuple]:
    """One PPO update: a rollout of num_steps, GAE, then update_epochs passes over minibatches."""
    (params, env_state, obs, key), traj = jax.lax.scan(
        partial(rollout_step, cfg), (runner.params, runner.env_state, runner.obs, runner.key),
        None, length=cfg.num_steps)
    _, last_value = apply_network(params, obs)
    advantages, targets = compute_gae(traj, last_value, cfg)
    batch = flatten_batch(traj, advantages, targets)

    def minibatch_step(carry: tuple, minibatch: Batch) -> tuple[tuple, jax.Array]:
        params, opt_state = carry
        params, opt_state, loss = minibatch_update(params, opt_state, minibatch, cfg)
        return (params, opt_state), loss

    def epoch(carry: tuple, _: None) -> tuple[tuple, jax.Array]:
        params, opt_state, key = carry
        key, k_perm = jax.random.split(key)
        minibatches = shuffle_minibatches(k_perm, batch, cfg.num_minibatches)
        (params, opt_state), losses = jax.lax.scan(minibatch_step, (params, opt_state), minibatches)
        return (params, opt_state, key), losses

    (params, opt_state, key), losses = jax.lax.scan(
        epoch, (params, runner.opt_state, key), None, length=cfg.update_epochs)
    metrics = (traj.finished_return.sum(), traj.done.sum(), traj.action.sum(), losses.mean())
    return RunnerState(params, opt_state, env_state, obs, key), metrics


@partial(jax.jit, static_argnames=("cfg",))
def train(key: jax.Array, cfg: PPOConfig) -> Outputs:
    key, k_init, k_reset = jax.random.split(key, 3)
    params = init_network(k_init)
    env_state, obs = jax.vmap(env_reset)(jax.random.split(k_reset, cfg.num_envs))
    runner = RunnerState(params, make_optimizer(cfg).init(params), env_state, obs, key)
    runner, metrics = jax.lax.scan(partial(update_step, cfg), runner, None, length=cfg.num_updates)
    return Outputs(*metrics, runner.params)


def run(workload: Workload) -> Outputs:
    return train(jax.random.key(workload.seed), workload.vectorized)


if __name__ == "__main__":
    from .workload import final_mean_return, make_workload

    out = run(make_workload("small"))
    print(f"stage3_jit_update: {len(out.return_sum)} updates, final mean return {final_mean_return(out):.1f}")
