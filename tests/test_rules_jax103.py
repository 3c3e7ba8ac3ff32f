"""JAX103 recompile-on-changing-input as `scan` sees it: slices and made arrays whose shape reads a
name the loop rebinds, and the near misses whose shape stays put."""

from __future__ import annotations

import pytest

from jaxopt_audit.rules.jax103_recompile_on_changing_input import RecompileOnChangingInput

from conftest import scanners

findings, lines = scanners([RecompileOnChangingInput])

STEP = """
import jax
import jax.numpy as jnp
import numpy as np

@jax.jit
def step(w, xb):
    return w - 0.01 * jnp.mean(xb, axis=0)

def eager(w, xb):
    return w - 0.01 * jnp.mean(xb, axis=0)
"""


def test_a_slice_with_one_moving_bound_and_a_batch_of_a_new_size_are_reported():
    found = findings(STEP + """
def decode(w, tokens, n):
    for t in range(1, n):
        w = step(w, tokens[:, :t])
    return w

def tail(w, x, n):
    for i in range(n):
        w = step(w, x[i:])
    return w

def sizes(w, lengths):
    for n in lengths:
        batch = np.zeros((n, 4))
        w = step(w, batch)
    return w
""")
    assert [f.line for f in found] == [14, 19, 25]
    assert "depends on `t`" in found[0].message and "loop at line 13" in found[0].message


def test_quiet_on_fixed_lengths_written_out_sizes_guards_and_eager_functions():
    assert lines(STEP + """
def train(w, x, bs, n, every):
    for i in range(n):
        w = step(w, x[i * bs:(i + 1) * bs])
        w = step(w, x[i:i + bs])
        w = eager(w, x[:i])
        if i % every == 0:
            w = step(w, x[:i])
    for size in (64, 128):
        w = step(w, x[:size])
    return w
""") == []


def test_a_tuple_of_converted_slices_is_followed():
    assert lines(STEP + """
def train(w, x_np, y_np, steps):
    for step_number in range(steps):
        n = 32 + step_number
        xb, yb = jnp.asarray(x_np[:n]), jnp.asarray(y_np[:n])
        w = step(w, xb)
    return w
""") == [16]


def test_a_draw_takes_its_shape_from_its_shape_argument_never_from_its_key():
    found = findings(STEP + """
def train(w, key, batch_size, dim, steps):
    for i in range(steps):
        key, sub = jax.random.split(key)
        fixed = jax.random.uniform(sub, (batch_size, dim), minval=-1.0, maxval=1.0)
        w = step(w, fixed)
        also_fixed = jax.random.normal(sub, shape=(batch_size, dim))
        w = step(w, also_fixed)
        grown = jax.random.normal(sub, (batch_size + i, dim))
        w = step(w, grown)
        filled = jnp.full((batch_size, dim), i)
        w = step(w, filled)
    return w
""")
    assert [f.line for f in found] == [20]
    assert "depends on `i`" in found[0].message


GROWING_HISTORY = """
import jax
import jax.numpy as jnp

class Thermostat:
    def __init__(self, gain):
        self.gain = gain
        self._tick = jax.jit(self._tick)
        self._tick_fixed = jax.jit(self._tick_fixed)

    def _tick(self, temp, log, noise):
        temp = temp + self.gain * (20.0 - temp) + noise
        log = jnp.concatenate([log, temp[None]])
        return temp, log

    def _tick_fixed(self, temp, log, t, noise):
        temp = temp + self.gain * (20.0 - temp) + noise
        return temp, log.at[t].set(temp)

    def run(self, temp, noises):
        log = jnp.zeros((0,))
        for noise in noises:
            temp, log = self._tick(temp, log, noise)
        return log

    def run_fixed(self, temp, noises):
        log = jnp.zeros((len(noises),))
        for t, noise in enumerate(noises):
            temp, log = self._tick_fixed(temp, log, t, noise)
        return log
"""


def test_a_jitted_step_that_returns_its_history_longer_is_reported_at_the_growth():
    found = findings(GROWING_HISTORY)
    assert [f.line for f in found] == [12]
    assert "returns `log` longer than it came in" in found[0].message
    assert "the loop at line 21 passes it back in (line 22)" in found[0].message


@pytest.mark.slow
def test_a_history_fed_back_longer_compiles_the_step_on_every_call():
    """The claim behind the message, on the installed JAX: one compilation per iteration."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from conftest import backend_compiles

    tick = jax.jit(lambda temp, log: (temp * 0.5, jnp.concatenate([log, temp[None]])))
    temp, log = jnp.float32(1.0), jnp.zeros((0,))
    with backend_compiles() as compiles:
        for _ in range(4):
            temp, log = tick(temp, log)
    assert len(compiles) == 4


LISTS = """
import jax
import jax.numpy as jnp

@jax.jit
def fit(w, items):
    return w + sum(jnp.sum(x) for x in items)

@jax.jit
def fit_stacked(w, xs):
    return w + jnp.sum(xs)
"""


def test_lists_whose_length_changes_between_calls_are_reported():
    found = findings(LISTS + """
class Pool:
    def __init__(self, seed_items):
        self.items = list(seed_items)

    def add(self, item):
        self.items.append(item)

    def clear(self):
        self.items = []

    @jax.jit
    def score(self, items):
        return sum(jnp.sum(x) for x in items)

    def total(self):
        return self.score(self.items)

def episodes(w, env, n):
    for _ in range(n):
        items = []
        done = False
        while not done:
            obs, done = env.step()
            items.append(obs)
        w = fit(w, items)
    return w

def streams(w, env, n):
    seen = []
    for _ in range(n):
        seen.append(env.observe())
        w = fit_stacked(w, jnp.stack(seen))
    return w

def rollouts(w, env, n):
    buf = []
    for _ in range(n):
        obs, done = env.step()
        buf.append(obs)
        if done:
            xs = jnp.array(buf)
            w = fit_stacked(w, xs)
            buf = []
    return w
""")
    assert [f.line for f in found] == [27, 36, 43, 53]
    assert "`Pool.score`" not in found[0].message and "which `add` grows (`.append`) and `clear` empties" \
        in found[0].message
    assert "the `while` loop at line 33 fills with `.append`" in found[1].message
    assert "grows with `.append` and never empties" in found[2].message
    assert "empties after a call that runs only when `done` holds" in found[3].message


def test_quiet_on_lists_of_a_fixed_length_at_each_call():
    assert lines(LISTS + """
class FixedPool:
    def __init__(self, seed_items):
        self.items = list(seed_items)  # filled once, when the pool is made

    @jax.jit
    def score(self, items):
        return sum(jnp.sum(x) for x in items)

    def total(self):
        return self.score(self.items)

def horizon(w, env, n, steps):
    for _ in range(n):
        items = []
        for t in range(steps):
            items.append(env.step())
        w = fit(w, items)
    return w

def batches(w, env, n, batch_size):
    buf = []
    for _ in range(n):
        buf.append(env.observe())
        if len(buf) == batch_size:
            w = fit_stacked(w, jnp.stack(buf))
            buf = []
    return w

def periodic(w, env, n, every):
    buf = []
    for step in range(n):
        buf.append(env.observe())
        if step % every == 0:
            w = fit_stacked(w, jnp.stack(buf))
            buf = []
    return w
""") == []


@pytest.mark.slow
def test_a_list_of_a_new_length_compiles_again():
    """The claim behind the list messages, on the installed JAX: one compilation per new length."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from conftest import backend_compiles

    total = jax.jit(lambda items: sum(jnp.sum(x) for x in items))
    total([jnp.ones(2)])
    with backend_compiles() as compiles:
        for n in (2, 3, 3, 1):
            total([jnp.ones(2)] * n)
    assert len(compiles) == 2
