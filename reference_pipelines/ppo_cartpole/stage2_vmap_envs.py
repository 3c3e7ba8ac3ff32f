"""Stage 2: `jax.vmap` over the environments, and many of them per update (JAX202; changes the math: 4 -> many envs).

Stage 1 reset and stepped its environments one by one in Python loops (the step's unrolled by
the trace: a graph as large as the environment count). `jax.vmap(env_reset)` and
`jax.vmap(env_step)` batch one environment's functions over all of them, so the count is a
number, not code: this stage spends the same env-step budget with `workload.vectorized`
(thousands of environments, 16-step rollouts, fewer and larger updates, a larger learning rate)
instead of PureJaxRL's 4 environments. Different math from stage 0: validated by learning (the
final mean return must reach the workload's target).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from .cartpole import EnvState, StepResult, env_reset, env_step
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

gae = jax.jit(compute_gae, static_argnames=("cfg",))
update_minibatch = jax.jit(minibatch_update, static_argnames=("cfg",))


def shuffle_minibatches(key: jax.Array, batch: Batch, num_minibatches: int) -> Batch:
    """Permute the update batch and cut it into (num_minibatches, minibatch_size, ...)."""
    perm = jax.random.permutation(key, batch.advantage.shape[0])
    shuffled = jax.tree.map(lambda x: jnp.take(x, perm, axis=0), batch)
    return jax.tree.map(lambda x: x.reshape((num_minibatches, -1) + x.shape[1:]), shuffled)


def rollout_step(cfg: PPOConfig, carry: tuple, _: None) -> tuple[tuple, Transition]:
    params, env_state, obs, key = carry
    key, k_act, k_step = jax.random.split(key, 3)
    action, log_prob, value = sample_action(params, obs, k_act)
    result: StepResult = jax.vmap(env_step)(jax.random.split(k_step, cfg.num_envs), env_state, action)
    transition = Transition(obs, action, result.reward, result.done, value, log_prob,
                            result.finished_return)
    return (params, result.state, result.obs, key), transition


@partial(jax.jit, static_argnames=("cfg",))
def rollout(params: Params, env_state: EnvState, obs: jax.Array, key: jax.Array,
            cfg: PPOConfig) -> tuple[EnvState, jax.Array, jax.Array, Transition, jax.Array]:
    (params, env_state, obs, key), traj = jax.lax.scan(
        partial(rollout_step, cfg), (params, env_state, obs, key), None, length=cfg.num_steps)
    _, last_value = apply_network(params, obs)
    return env_state, obs, key, traj, last_value


def run(workload: Workload) -> Outputs:
    cfg = workload.vectorized
    key = jax.random.key(workload.seed)
    key, k_init, k_reset = jax.random.split(key, 3)
    params = init_network(k_init)
    opt_state = make_optimizer(cfg).init(params)
    env_state, obs = jax.vmap(env_reset)(jax.random.split(k_reset, cfg.num_envs))

    return_sum, episodes, actions_taken, mean_loss = [], [], [], []
    for update in range(cfg.num_updates):
        env_state, obs, key, traj, last_value = rollout(params, env_state, obs, key, cfg)
        advantages, targets = gae(traj, last_value, cfg)
        batch = flatten_batch(traj, advantages, targets)
        losses = []
        for epoch in range(cfg.update_epochs):
            key, k_perm = jax.random.split(key)
            minibatches = shuffle_minibatches(k_perm, batch, cfg.num_minibatches)
            for i in range(cfg.num_minibatches):
                minibatch = jax.tree.map(lambda x: x[i], minibatches)  # noqa: B023 - applied at once
                params, opt_state, loss = update_minibatch(params, opt_state, minibatch, cfg)
                losses.append(loss)
        return_sum.append(traj.finished_return.sum())
        episodes.append(traj.done.sum())
        actions_taken.append(traj.action.sum())
        mean_loss.append(jnp.stack(losses).mean())
    return Outputs(jnp.stack(return_sum), jnp.stack(episodes), jnp.stack(actions_taken),
                   jnp.stack(mean_loss), params)


if __name__ == "__main__":
    from .workload import final_mean_return, make_workload

    out = run(make_workload("small"))
    print(f"stage2_vmap_envs: {len(out.return_sum)} updates, final mean return {final_mean_return(out):.1f}")
