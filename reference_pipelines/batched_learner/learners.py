"""The alberta-framework online linear learner: IDBD or Autostep step sizes, optional online normalisation.

One step sees one observation: normalise it (or not), predict with a linear model plus bias,
take the prediction error, and update weights and per-weight step sizes with
- IDBD (Sutton 1992, "Adapting bias by gradient descent"): log step sizes follow the correlation
  of the current gradient with a trace of recent updates; log step sizes are clipped, as the
  seed's alberta-framework does, and the step actually taken is bounded so that it never
  overshoots the current example (Autostep's effective-step bound; the framework's later
  "bounders" do the same job), because IDBD alone diverges on badly scaled features;
- Autostep (Mahmood, Sutton, Degris, Pilarski 2012, "Tuning-free step-size adaptation"): the same
  meta-gradient normalised by a running bound `v`, and step sizes scaled down whenever the
  effective step `sum(alpha * x**2)` would exceed 1, which keeps it stable at any feature scale.
The normaliser is an exponential moving mean/variance whose rate starts at 1/count (so early
statistics are exact averages) and settles at 1 - decay.

Every function works on one seed (vectors of shape (18,) = 17 features + bias). The step that
composes them (normalise, predict, update) is written in each stage file, because how it is
looped, jitted and batched is exactly what the stages change. The normaliser's statistics depend
only on the seed's observations, so the per-condition stages run it in every condition's state
while the last stage runs it once per seed: the same arithmetic.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

OPTIMIZERS = ("idbd", "autostep")


class Hyperparameters(NamedTuple):
    idbd_initial_step: float = 1e-3
    idbd_meta_step: float = 0.01
    idbd_log_step_range: tuple[float, float] = (-16.0, -3.0)  # alpha in [1e-7, 0.05]
    autostep_initial_step: float = 0.01
    autostep_meta_step: float = 0.01
    autostep_tau: float = 1e4
    normalizer_decay: float = 0.999
    normalizer_eps: float = 1e-6


class NormalizerState(NamedTuple):
    mean: jax.Array  # (17,)
    var: jax.Array  # (17,)
    count: jax.Array  # () float32


class OptimizerState(NamedTuple):
    """IDBD uses `step_sizes` as log step sizes and ignores `v`; Autostep uses all fields."""

    weights: jax.Array  # (18,) the last entry is the bias
    step_sizes: jax.Array  # (18,)
    traces: jax.Array  # (18,) h: recent weight changes, the memory of the meta-gradient
    v: jax.Array  # (18,) Autostep's running bound on |delta * x * h|


class LearnerState(NamedTuple):
    optimizer: OptimizerState
    normalizer: NormalizerState


def init_optimizer(optimizer: str, n_features: int, hp: Hyperparameters) -> OptimizerState:
    n = n_features + 1
    if optimizer == "idbd":
        step_sizes = jnp.full(n, jnp.log(hp.idbd_initial_step), jnp.float32)
    elif optimizer == "autostep":
        step_sizes = jnp.full(n, hp.autostep_initial_step, jnp.float32)
    else:
        raise ValueError(f"unknown optimizer {optimizer!r}; choose from {', '.join(OPTIMIZERS)}")
    zeros = jnp.zeros(n, jnp.float32)
    return OptimizerState(weights=zeros, step_sizes=step_sizes, traces=zeros, v=zeros)


def init_normalizer(n_features: int) -> NormalizerState:
    return NormalizerState(mean=jnp.zeros(n_features, jnp.float32),
                           var=jnp.ones(n_features, jnp.float32), count=jnp.zeros((), jnp.float32))


def init_learner(optimizer: str, n_features: int, hp: Hyperparameters) -> LearnerState:
    return LearnerState(optimizer=init_optimizer(optimizer, n_features, hp),
                        normalizer=init_normalizer(n_features))


def normalize_features(
    state: NormalizerState, x: jax.Array, hp: Hyperparameters
) -> tuple[jax.Array, NormalizerState]:
    count = state.count + 1.0
    rate = jnp.maximum(1.0 / count, 1.0 - hp.normalizer_decay)
    mean = state.mean + rate * (x - state.mean)
    var = state.var + rate * ((x - state.mean) * (x - mean) - state.var)
    normalized = (x - mean) * jax.lax.rsqrt(var + hp.normalizer_eps)
    return normalized, NormalizerState(mean=mean, var=var, count=count)


def idbd_update(state: OptimizerState, x: jax.Array, error: jax.Array,
                hp: Hyperparameters) -> OptimizerState:
    low, high = hp.idbd_log_step_range
    log_steps = jnp.clip(state.step_sizes + hp.idbd_meta_step * error * x * state.traces, low, high)
    # Overshoot bound: never step past this example's target (plain IDBD diverged on 8 of 120
    # full-size runs of these heavy-tailed features, normalised or not).
    steps = jnp.exp(log_steps)
    steps = steps * (1.0 / jnp.maximum(jnp.sum(steps * x * x), 1.0))  # one divide per seed, not per weight
    weights = state.weights + steps * error * x
    traces = state.traces * jnp.maximum(0.0, 1.0 - steps * x * x) + steps * error * x
    return state._replace(weights=weights, step_sizes=log_steps, traces=traces)


def autostep_update(state: OptimizerState, x: jax.Array, error: jax.Array,
                    hp: Hyperparameters) -> OptimizerState:
    meta_gradient = error * x * state.traces
    steps = state.step_sizes
    v = jnp.maximum(jnp.abs(meta_gradient),
                    state.v + steps * x * x * (jnp.abs(meta_gradient) - state.v) * (1.0 / hp.autostep_tau))
    # A weight whose bound is still 0 has seen no signal yet: leave its step size alone.
    ratio = jnp.where(v > 0.0, meta_gradient / jnp.where(v > 0.0, v, 1.0), 0.0)
    steps = steps * jnp.exp(hp.autostep_meta_step * ratio)
    steps = steps * (1.0 / jnp.maximum(jnp.sum(steps * x * x), 1.0))
    weights = state.weights + steps * error * x
    traces = state.traces * (1.0 - steps * x * x) + steps * error * x
    return state._replace(weights=weights, step_sizes=steps, traces=traces, v=v)


# The update each optimiser applies once the prediction error is known.
UPDATES = {"idbd": idbd_update, "autostep": autostep_update}
