"""PPO's math shared by every stage: the actor-critic network, GAE, the clipped loss, one minibatch step.

This follows PureJaxRL's `ppo.py` for CartPole: separate actor and critic MLPs
(64-64, tanh, orthogonal initialisation), GAE(lambda), the clipped surrogate with a clipped value
loss and an entropy bonus, Adam behind global-norm clipping with a linearly annealed learning
rate. The stages differ only in how they drive these functions (host loop, scan, vmap, one jit,
shardings), never in the math, so equal keys give equal results where the stage says so.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from .cartpole import NUM_ACTIONS, OBS_SIZE

Params = dict[str, dict[str, jax.Array]]
HIDDEN = 64


class PPOConfig(NamedTuple):
    """Hyper-parameters and sizes of one training run (hashable: jitted functions take it static)."""

    num_envs: int
    num_steps: int  # rollout length per update, per environment
    num_updates: int  # updates this run performs
    schedule_updates: int  # updates the learning-rate schedule spans (a prefix runs fewer)
    update_epochs: int = 4
    num_minibatches: int = 4
    lr: float = 2.5e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches


class Transition(NamedTuple):
    """What a rollout records per step; time-major arrays (num_steps, num_envs, ...)."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    done: jax.Array
    value: jax.Array
    log_prob: jax.Array
    finished_return: jax.Array  # return of an episode ending at this step, else 0


class Batch(NamedTuple):
    """The flattened update batch: transitions with their advantages and value targets."""

    transition: Transition
    advantage: jax.Array
    target: jax.Array


def _dense(key: jax.Array, n_in: int, n_out: int, scale: float) -> dict[str, jax.Array]:
    w = jax.nn.initializers.orthogonal(scale)(key, (n_in, n_out), jnp.float32)
    return {"w": w, "b": jnp.zeros((n_out,), jnp.float32)}


def init_network(key: jax.Array) -> Params:
    keys = jax.random.split(key, 6)
    root2 = math.sqrt(2.0)
    return {
        "actor_0": _dense(keys[0], OBS_SIZE, HIDDEN, root2),
        "actor_1": _dense(keys[1], HIDDEN, HIDDEN, root2),
        "actor_out": _dense(keys[2], HIDDEN, NUM_ACTIONS, 0.01),
        "critic_0": _dense(keys[3], OBS_SIZE, HIDDEN, root2),
        "critic_1": _dense(keys[4], HIDDEN, HIDDEN, root2),
        "critic_out": _dense(keys[5], HIDDEN, 1, 1.0),
    }


def _mlp(params: Params, prefix: str, obs: jax.Array) -> jax.Array:
    h = jnp.tanh(obs @ params[f"{prefix}_0"]["w"] + params[f"{prefix}_0"]["b"])
    h = jnp.tanh(h @ params[f"{prefix}_1"]["w"] + params[f"{prefix}_1"]["b"])
    return h @ params[f"{prefix}_out"]["w"] + params[f"{prefix}_out"]["b"]


def apply_network(params: Params, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Action logits (..., 2) and state value (...) for observations (..., 4)."""
    return _mlp(params, "actor", obs), _mlp(params, "critic", obs)[..., 0]


def sample_action(params: Params, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The policy's step: (action, its log-probability, state value) for a batch of observations."""
    logits, value = apply_network(params, obs)
    action = jax.random.categorical(key, logits)
    log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[..., None], axis=-1)[..., 0]
    return action, log_prob, value


def make_optimizer(cfg: PPOConfig) -> optax.GradientTransformation:
    """Adam behind global-norm clipping; the learning rate decays linearly to 0 over training."""
    steps_per_update = cfg.update_epochs * cfg.num_minibatches

    def schedule(count: jax.Array) -> jax.Array:
        return cfg.lr * (1.0 - (count // steps_per_update) / cfg.schedule_updates)

    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(schedule, eps=1e-5))


def compute_gae(traj: Transition, last_value: jax.Array, cfg: PPOConfig) -> tuple[jax.Array, jax.Array]:
    """GAE(lambda) advantages and value targets, scanning the rollout backwards in time."""

    def backward(carry: tuple[jax.Array, jax.Array], t: Transition) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
        gae, next_value = carry
        not_done = 1.0 - t.done.astype(jnp.float32)
        delta = t.reward + cfg.gamma * next_value * not_done - t.value
        gae = delta + cfg.gamma * cfg.gae_lambda * not_done * gae
        return (gae, t.value), gae

    _, advantages = jax.lax.scan(backward, (jnp.zeros_like(last_value), last_value), traj, reverse=True)
    return advantages, advantages + traj.value


def flatten_batch(traj: Transition, advantages: jax.Array, targets: jax.Array) -> Batch:
    """(num_steps, num_envs, ...) -> (num_steps * num_envs, ...) for minibatching."""
    return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), Batch(traj, advantages, targets))


def ppo_loss(params: Params, batch: Batch, cfg: PPOConfig) -> jax.Array:
    t = batch.transition
    logits, value = apply_network(params, t.obs)
    log_probs = jax.nn.log_softmax(logits)
    log_prob = jnp.take_along_axis(log_probs, t.action[..., None], axis=-1)[..., 0]

    value_clipped = t.value + jnp.clip(value - t.value, -cfg.clip_eps, cfg.clip_eps)
    value_loss = 0.5 * jnp.maximum(jnp.square(value - batch.target),
                                   jnp.square(value_clipped - batch.target)).mean()

    ratio = jnp.exp(log_prob - t.log_prob)
    adv = (batch.advantage - batch.advantage.mean()) / (batch.advantage.std() + 1e-8)
    actor_loss = -jnp.minimum(ratio * adv,
                              jnp.clip(ratio, 1.0 - cfg.clip_eps, 1.0 + cfg.clip_eps) * adv).mean()
    entropy = -(jnp.exp(log_probs) * log_probs).sum(-1).mean()
    return actor_loss + cfg.vf_coef * value_loss - cfg.ent_coef * entropy


def minibatch_update(params: Params, opt_state: Any, minibatch: Batch,
                     cfg: PPOConfig) -> tuple[Params, Any, jax.Array]:
    """One gradient step of PPO on one minibatch; returns (params, opt_state, loss)."""
    loss, grads = jax.value_and_grad(ppo_loss)(params, minibatch, cfg)
    updates, opt_state = make_optimizer(cfg).update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss
