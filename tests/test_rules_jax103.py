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
