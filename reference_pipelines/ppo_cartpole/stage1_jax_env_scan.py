"""Stage 1: CartPole in JAX and the rollout as a jitted `lax.scan`: no host transfer per step (JAX302, JAX301).

The environment's physics now run as `jax.numpy` (the same function the host environment ran
with NumPy), so the rollout — policy, environment step, automatic reset — is one `lax.scan`
over the steps inside `jax.jit`, and its buffers stay on the device for GAE and the update. The
environments are still reset and stepped one at a time, in Python loops (the step's is unrolled
by the trace): JAX202, next stage. Same math and keys as stage 0: equal rollouts.
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

reset_env = jax.jit(env_reset)
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
    step_keys = jax.random.split(k_step, cfg.num_envs)
    results = []
    for i in range(cfg.num_envs):
        state_i = jax.tree.map(lambda leaf: leaf[i], env_state)  # noqa: B023 - applied at once
        results.append(env_step(step_keys[i], state_i, action[i]))
    result: StepResult = jax.tree.map(lambda *leaves: jnp.stack(leaves), *results)
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
    cfg = workload.host
    key = jax.random.key(workload.seed)
    key, k_init, k_reset = jax.random.split(key, 3)
    params = init_network(k_init)
    opt_state = make_optimizer(cfg).init(params)
    resets = []
    for reset_key in jax.random.split(k_reset, cfg.num_envs):
        resets.append(reset_env(reset_key))
    env_state, obs = jax.tree.map(lambda *leaves: jnp.stack(leaves), *resets)

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
    print(f"stage1_jax_env_scan: {len(out.return_sum)} updates, final mean return {final_mean_return(out):.1f}")
