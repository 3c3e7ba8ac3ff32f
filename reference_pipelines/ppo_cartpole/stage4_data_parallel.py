"""Stage 4: data parallelism: the environments and minibatches sharded across devices with `jax.sharding`, parameters replicated.

Stage 3's one jitted `train` ran on one device. Here a 1-D device mesh ("data") shards every
per-environment array (environment states, observations, the rollout) along the environment
axis and every minibatch along its sample axis, while the parameters and optimizer state stay
replicated; XLA partitions the program and all-reduces the gradients. The random bits are
partitionable (threefry), so the math is stage 3's for any device count: equal outputs. It uses
the largest number of devices that divides the environment count and the minibatch size (1
included); on CPU, devices are simulated with XLA_FLAGS=--xla_force_host_platform_device_count=N.
"""  # noqa: E501 - the first line is the stage title in bench reports

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

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


def data_mesh(cfg: PPOConfig) -> Mesh:
    """A 1-D mesh over the most devices that divide both the environments and a minibatch."""
    count = max(n for n in range(1, jax.device_count() + 1)
                if cfg.num_envs % n == 0 and cfg.minibatch_size % n == 0)
    return jax.make_mesh((count,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:count])


def shard(tree: Any, mesh: Mesh, axis: int) -> Any:
    """Constrain every array of `tree` to be split across the mesh along dimension `axis`."""
    spec = PartitionSpec(*([None] * axis), "data")
    return jax.lax.with_sharding_constraint(tree, NamedSharding(mesh, spec))


def replicate(tree: Any, mesh: Mesh) -> Any:
    return jax.lax.with_sharding_constraint(tree, NamedSharding(mesh, PartitionSpec()))


def rollout_step(cfg: PPOConfig, mesh: Mesh, carry: tuple, _: None) -> tuple[tuple, Transition]:
    params, env_state, obs, key = carry
    env_state, obs = shard((env_state, obs), mesh, 0)
    key, k_act, k_step = jax.random.split(key, 3)
    action, log_prob, value = sample_action(params, obs, k_act)
    result = jax.vmap(env_step)(jax.random.split(k_step, cfg.num_envs), env_state, action)
    transition = Transition(obs, action, result.reward, result.done, value, log_prob,
                            result.finished_return)
    return (params, result.state, result.obs, key), transition


def update_step(cfg: PPOConfig, mesh: Mesh, runner: RunnerState, _: None) -> tuple[RunnerState, tuple]:
    """One PPO update: a rollout of num_steps, GAE, then update_epochs passes over minibatches."""
    (params, env_state, obs, key), traj = jax.lax.scan(
        partial(rollout_step, cfg, mesh), (runner.params, runner.env_state, runner.obs, runner.key),
        None, length=cfg.num_steps)
    _, last_value = apply_network(params, obs)
    advantages, targets = compute_gae(traj, last_value, cfg)
    batch = flatten_batch(traj, advantages, targets)

    def minibatch_step(carry: tuple, minibatch: Batch) -> tuple[tuple, jax.Array]:
        params, opt_state = carry
        params, opt_state, loss = minibatch_update(params, opt_state, minibatch, cfg)
        return replicate((params, opt_state), mesh), loss

    def epoch(carry: tuple, _: None) -> tuple[tuple, jax.Array]:
        params, opt_state, key = carry
        key, k_perm = jax.random.split(key)
        minibatches = shard(shuffle_minibatches(k_perm, batch, cfg.num_minibatches), mesh, 1)
        (params, opt_state), losses = jax.lax.scan(minibatch_step, (params, opt_state), minibatches)
        return (params, opt_state, key), losses

    (params, opt_state, key), losses = jax.lax.scan(
        epoch, (params, runner.opt_state, key), None, length=cfg.update_epochs)
    metrics = (traj.finished_return.sum(), traj.done.sum(), traj.action.sum(), losses.mean())
    return RunnerState(params, opt_state, env_state, obs, key), metrics


@partial(jax.jit, static_argnames=("cfg", "mesh"))
def train(key: jax.Array, cfg: PPOConfig, mesh: Mesh) -> Outputs:
    key, k_init, k_reset = jax.random.split(key, 3)
    params = replicate(init_network(k_init), mesh)
    env_state, obs = shard(jax.vmap(env_reset)(jax.random.split(k_reset, cfg.num_envs)), mesh, 0)
    runner = RunnerState(params, make_optimizer(cfg).init(params), env_state, obs, key)
    runner, metrics = jax.lax.scan(partial(update_step, cfg, mesh), runner, None, length=cfg.num_updates)
    return Outputs(*metrics, runner.params)


def run(workload: Workload) -> Outputs:
    return train(jax.random.key(workload.seed), workload.vectorized, data_mesh(workload.vectorized))


if __name__ == "__main__":
    from .workload import final_mean_return, make_workload

    out = run(make_workload("small"))
    print(f"stage4_data_parallel: {len(out.return_sum)} updates, final mean return {final_mean_return(out):.1f}")
