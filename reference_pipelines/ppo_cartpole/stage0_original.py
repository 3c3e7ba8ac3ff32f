"""Stage 0 (original): CartPole stepped on the host in NumPy, the policy on the device: a transfer each way every step (JAX302, JAX301).

The shape of a CleanRL-style PPO whose policy and update are already JAX: a list of gym-like
NumPy environments; every step copies the observations to the device (`jnp.asarray`), runs the
jitted policy, and copies the sampled actions back (`np.asarray`) so that the environments can
step one by one in Python. Once per update the NumPy rollout buffers go to the device for GAE
and the jitted minibatch steps, driven by Python loops over epochs and minibatches.
"""  # noqa: E501 - the first line is the stage title in bench reports

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .cartpole import OBS_SIZE, HostCartPole
from .ppo import (
    Batch,
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

policy_step = jax.jit(sample_action)
value_of = jax.jit(lambda params, obs: apply_network(params, obs)[1])
gae = jax.jit(compute_gae, static_argnames=("cfg",))
update_minibatch = jax.jit(minibatch_update, static_argnames=("cfg",))


def shuffle_minibatches(key: jax.Array, batch: Batch, num_minibatches: int) -> Batch:
    """Permute the update batch and cut it into (num_minibatches, minibatch_size, ...)."""
    perm = jax.random.permutation(key, batch.advantage.shape[0])
    shuffled = jax.tree.map(lambda x: jnp.take(x, perm, axis=0), batch)
    return jax.tree.map(lambda x: x.reshape((num_minibatches, -1) + x.shape[1:]), shuffled)


def run(workload: Workload) -> Outputs:
    cfg = workload.host
    key = jax.random.key(workload.seed)
    key, k_init, k_reset = jax.random.split(key, 3)
    params = init_network(k_init)
    opt_state = make_optimizer(cfg).init(params)
    envs = [HostCartPole() for _ in range(cfg.num_envs)]
    reset_keys = jax.random.split(k_reset, cfg.num_envs)
    obs = np.stack([env.reset(reset_keys[i]) for i, env in enumerate(envs)])

    return_sum, episodes, actions_taken, mean_loss = [], [], [], []
    for update in range(cfg.num_updates):
        obs_buf = np.zeros((cfg.num_steps, cfg.num_envs, OBS_SIZE), np.float32)
        action_buf = np.zeros((cfg.num_steps, cfg.num_envs), np.int32)
        reward_buf = np.zeros((cfg.num_steps, cfg.num_envs), np.float32)
        done_buf = np.zeros((cfg.num_steps, cfg.num_envs), bool)
        finished_buf = np.zeros((cfg.num_steps, cfg.num_envs), np.float32)
        values, log_probs = [], []
        for t in range(cfg.num_steps):
            key, k_act, k_step = jax.random.split(key, 3)
            action, log_prob, value = policy_step(params, jnp.asarray(obs), k_act)
            action = np.asarray(action)
            step_keys = jax.random.split(k_step, cfg.num_envs)
            obs_buf[t], action_buf[t] = obs, action
            values.append(value)
            log_probs.append(log_prob)
            for i, env in enumerate(envs):
                obs[i], reward_buf[t, i], done_buf[t, i], finished_buf[t, i] = env.step(int(action[i]))
                if done_buf[t, i]:
                    obs[i] = env.reset(step_keys[i])

        traj = Transition(jnp.asarray(obs_buf), jnp.asarray(action_buf), jnp.asarray(reward_buf),
                          jnp.asarray(done_buf), jnp.stack(values), jnp.stack(log_probs),
                          jnp.asarray(finished_buf))
        advantages, targets = gae(traj, value_of(params, jnp.asarray(obs)), cfg)
        batch = flatten_batch(traj, advantages, targets)
        losses = []
        for epoch in range(cfg.update_epochs):
            key, k_perm = jax.random.split(key)
            minibatches = shuffle_minibatches(k_perm, batch, cfg.num_minibatches)
            for i in range(cfg.num_minibatches):
                minibatch = jax.tree.map(lambda x: x[i], minibatches)  # noqa: B023 - applied at once
                params, opt_state, loss = update_minibatch(params, opt_state, minibatch, cfg)
                losses.append(loss)
        return_sum.append(finished_buf.sum())
        episodes.append(done_buf.sum())
        actions_taken.append(action_buf.sum())
        mean_loss.append(jnp.stack(losses).mean())
    return Outputs(np.array(return_sum, np.float32), np.array(episodes, np.int32),
                   np.array(actions_taken, np.int32), jnp.stack(mean_loss), params)


if __name__ == "__main__":
    from .workload import final_mean_return, make_workload

    out = run(make_workload("small"))
    print(f"stage0_original: {len(out.return_sum)} updates, final mean return {final_mean_return(out):.1f}")
