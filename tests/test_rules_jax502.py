"""JAX502 constant-key-in-step: a training loop's preprocessing noise, in its un-jitted (original) and
jitted (optimisation 2) forms, keys in compiled-loop bodies, and the "Quiet on" clauses."""

from __future__ import annotations

from jaxopt_audit.rules.jax502_constant_key_in_step import ConstantKeyInStep

from conftest import scanners

findings, lines = scanners([ConstantKeyInStep])


SEED001_PREPROCESS = """
import jax
from jax import numpy as jnp

{decorator}
def preprocess_batch_jax(batch):
    x = batch['x']
    x = (x - jnp.mean(x)) / jnp.std(x)
    noise = jax.random.normal(jax.random.PRNGKey(0), x.shape) * 0.01
    x = x + noise
    return {{'x': x, 'y': batch['y']}}

@jax.jit
def train_step(params, batch):
    return params - 0.001 * jnp.mean(batch['x'] @ params - batch['y'])

def train(params, dataloader):
    for epoch in range(10):
        for batch in dataloader:
            batch = preprocess_batch_jax(batch)
            params = train_step(params, batch)
    return params
"""


def test_noise_key_in_unjitted_preprocessing_called_every_batch():
    found = findings(SEED001_PREPROCESS.format(decorator=""))
    assert [f.line for f in found] == [8]
    assert "preprocess_batch_jax" in found[0].message and "for batch in dataloader" in found[0].message


def test_noise_key_in_jitted_preprocessing_called_every_batch():
    # a jitted function called every step runs its body every step: same key, same noise
    assert lines(SEED001_PREPROCESS.format(decorator="@jax.jit")) == [8]


def test_helpers_of_a_jitted_step_and_scan_bodies_run_every_step():
    found = findings("""
        import jax
        import jax.numpy as jnp

        SEED = 7

        def dropout(x, rate):
            mask = jax.random.bernoulli(jax.random.key(SEED), 1 - rate, x.shape)
            return jnp.where(mask, x / (1 - rate), 0.0)

        @jax.jit
        def train_step(w, x):
            return w - 0.1 * jnp.mean(dropout(x @ w, 0.5)) * w

        def fit(w, batches):
            for x in batches:
                w = train_step(w, x)
            return w

        @jax.jit
        def simulate(x0, n):
            def body(x, _):
                x = x + 0.1 * jax.random.normal(jax.random.key(1), x.shape)
                return x, x
            return jax.lax.scan(body, x0, None, length=n)
    """)
    assert [f.line for f in found] == [7, 22]
    assert "scan" in found[1].message


def test_quiet_on_keys_derived_per_step_and_init_only_keys():
    assert lines("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def train_step(w, x, step):
            key = jax.random.fold_in(jax.random.key(0), step)
            base = jax.random.key(1)
            noise = jax.random.normal(jax.random.fold_in(base, step), x.shape)
            sub = jax.random.split(jax.random.key(2), 1000)[step]
            return w - 0.1 * jnp.mean(x + noise + jax.random.normal(key, x.shape) + jax.random.normal(sub)) * w

        def fit(model, w, batches):
            for step, x in enumerate(batches):
                w = train_step(w, x, step)
                params = model.init(jax.random.key(0), x)
            return w, params
    """) == []


def test_quiet_when_the_key_is_threaded_guarded_or_outside_the_loop():
    assert lines("""
        import jax
        import jax.numpy as jnp

        SEED = 0

        @jax.jit
        def step(w, key):
            return w + jax.random.normal(key, w.shape)

        def fit(w, n, seed):
            key = jax.random.key(SEED)
            scores = []
            for i in range(n):
                key, sub = jax.random.split(key)
                w = step(w, sub)
                w = step(w, jax.random.key(seed))
                if i % 100 == 0:
                    scores.append(step(w, jax.random.key(1234)))
            for _ in range(1):
                w = step(w, jax.random.key(5))
            return w, scores

        def shadowed(w, batches):
            for SEED, x in enumerate(batches):
                w = step(w + x, jax.random.key(SEED))
            return w

        w0 = step(jnp.zeros(3), jax.random.key(0))
    """) == []


def test_a_constant_key_in_a_loop_of_three_literal_iterations_is_reported():
    assert lines("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(w, key):
            return w + jax.random.normal(key, w.shape)

        def warm_up(w):
            for _ in range(3):
                w = step(w, jax.random.key(5))
            return w
    """) == [10]


def test_quiet_on_one_key_for_every_candidate_of_a_sweep():
    # common random numbers: each candidate (noise level, model) sees the same draws on purpose,
    # and nothing is carried from one iteration to the next
    assert lines("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def loss_at(params, x, level):
            noise = jax.random.normal(jax.random.key(7), x.shape)
            return jnp.mean((params * (x + level * noise)) ** 2)

        def sweep(params, x, levels, models):
            losses = []
            for level in levels:
                losses.append(loss_at(params, x, level))
            scores = []
            for model in models:
                key = jax.random.key(42)
                eps = jax.random.normal(key, x.shape)
                scores.append(jnp.mean((model(x + eps) - x) ** 2))
            return losses, scores
    """) == []


def test_still_reported_when_the_loop_trains():
    assert lines("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def update(params, x):
            noise = jax.random.normal(jax.random.key(7), x.shape)
            return params - 0.1 * jnp.mean(params * (x + noise))

        def fit(params, batches):
            for x in batches:
                params = update(params, x)
            return params
    """) == [6]


def test_quiet_on_a_recurrent_cell_carry_initialised_per_sequence():
    assert lines("""
        import jax
        import jax.numpy as jnp

        def run(cell, params, xs):
            outs = []
            for x in xs:
                carry = cell.initialize_carry(jax.random.key(0), x.shape)
                for t in range(x.shape[0]):
                    carry, y = cell.apply(params, carry, x[t])
                    outs.append(y)
            return jnp.stack(outs)
    """) == []


def test_quiet_on_a_key_its_comment_calls_a_dummy():
    # A policy that samples an action and returns a value estimate is called every
    # update with `rng=PRNGKey(0)  # Dummy key since we're just extracting the value`. The
    # author says the draws do not matter; without the comment the same line is reported.
    source = """
import jax
import jax.numpy as jnp

def policy(params, obs, rng):
    action = jax.random.categorical(rng, obs @ params)
    return action, jnp.sum(obs @ params)

@jax.jit
def update(params, obs):
    return params - 0.01 * jnp.mean(obs)

def train(params, observations):
    for obs in observations:
        _, value = policy(params, obs, jax.random.PRNGKey(0))  # dummy key: only the value is used
        params = update(params, obs * value)
    return params
"""
    assert lines(source) == []
    assert lines(source.replace("  # dummy key: only the value is used", "")) == [14]
