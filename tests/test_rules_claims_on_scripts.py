"""Claims the speed rules make about scripts as people write them: a timed eager baseline beside
its jitted copy, a method jitted by a caller in another module, values a host simulator makes
each step, and host reads of values that never reached the device."""

from __future__ import annotations

from jaxopt_audit.rules.jax101_missing_jit import MissingJit
from jaxopt_audit.rules.jax201_loop_to_scan import LoopToScan

from conftest import scanners

jit_or_scan, jit_or_scan_lines = scanners([MissingJit, LoopToScan])

# The same `def` written twice, the second copy compiled: the eager loop is the measured baseline.
TIMED_TWINS = """
import time
import jax.numpy as jnp
from jax import jit

xs = jnp.linspace(0.0, 1.0, 50)
ys = 3.0 * xs + 1.0
a, c = 0.5, 0.5

def step(a, c, x):
    err = a * x + c - ys
    da, dc = jnp.mean(2 * err * x), jnp.mean(2 * err)
    return a - 0.01 * da, c - 0.01 * dc

t0 = time.perf_counter()
for _ in range(500):
    a, c = step(a, c, xs)
print("eager", time.perf_counter() - t0)

def step(a, c, x):
    err = a * x + c - ys
    da, dc = jnp.mean(2 * err * x), jnp.mean(2 * err)
    return a - 0.01 * da, c - 0.01 * dc

t0 = time.perf_counter()
for _ in range(500):
    a, c = {call}(a, c, xs)
print("compiled", time.perf_counter() - t0)
"""


def test_timed_eager_loop_beside_a_jitted_copy_of_its_step_is_a_baseline():
    lines = jit_or_scan_lines(TIMED_TWINS.format(call="jit(step)"))
    assert 9 not in lines and 15 not in lines  # neither the eager def nor its loop


def test_timed_eager_loop_without_a_jitted_copy_is_reported():
    # the second copy is called eagerly too: nothing in the file shows the compiled version
    lines = jit_or_scan_lines(TIMED_TWINS.format(call="step"))
    assert 15 in lines


def test_a_jitted_function_with_another_body_is_no_twin():
    source = TIMED_TWINS.format(call="jit(step)").replace(
        "    return a - 0.01 * da, c - 0.01 * dc\n\nt0 = time.perf_counter()\nfor _ in range(500):\n"
        "    a, c = jit(", "    return a - 0.1 * da, c - 0.1 * dc\n\nt0 = time.perf_counter()\n"
        "for _ in range(500):\n    a, c = jit(")
    assert "0.1 * da" in source
    assert 15 in jit_or_scan_lines(source)


def test_untimed_eager_loop_beside_a_jitted_copy_is_reported():
    source = TIMED_TWINS.format(call="jit(step)").replace("time.perf_counter()", "0.0")
    assert 15 in jit_or_scan_lines(source)
