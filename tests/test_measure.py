"""The measurement core on small jitted functions whose behaviour is known by construction."""

from __future__ import annotations

import pytest

pytest.importorskip("jax")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxopt_audit.runtime.bench.measure import Stats, break_even_calls, cost_analysis, measure  # noqa: E402

pytestmark = pytest.mark.slow


def test_a_function_that_recompiles_every_call_is_reported() -> None:
    x = jnp.ones(16)

    def rejit_every_call(v: jax.Array) -> jax.Array:
        return jax.jit(lambda a: a * 2.0 + 1.0)(v)  # a new lambda: a new cache entry each call

    m = measure(rejit_every_call, x, repeats=4, count_transfers=False, analyse_cost=False)
    assert m.steady_compiles == 4
    assert m.compiles_per_call == 1.0
    assert m.recompiled == ("jit(<lambda>)",) * 4


def test_a_stable_jitted_function_does_not_compile_in_steady_state() -> None:
    f = jax.jit(lambda v: jnp.sin(v) * 2.0)
    m = measure(f, jnp.ones(16), repeats=5)
    assert m.compile.compiles == 1
    assert m.compile.trace_s > 0 and m.compile.lower_s > 0 and m.compile.compile_s > 0
    assert m.steady_compiles == 0 and m.recompiled == ()
    assert f._cache_size() == 1  # type: ignore[attr-defined]  # jax's own count of compiled entries


@pytest.mark.parametrize("k", [0, 3])
def test_per_call_transfer_counts_are_exact(k: int) -> None:
    step = jax.jit(lambda v: jnp.sum(v * v))
    host_batches = [np.full(4, i, np.float32) for i in range(k)]

    def k_transfers(batches: list[np.ndarray]) -> list[float]:
        return [float(step(jnp.asarray(b))) for b in batches]  # one h2d and one d2h each

    m = measure(k_transfers, host_batches, repeats=3, analyse_cost=False)
    assert m.transfers is not None
    assert m.transfers.h2d == k
    assert m.transfers.d2h == k
    assert m.transfers_per_call == 2 * k


def test_compile_time_is_not_in_steady_state_time() -> None:
    @jax.jit
    def slow_to_compile(v: jax.Array) -> jax.Array:
        for i in range(150):  # unrolled: a long program to compile, microseconds to run
            v = jnp.sin(v + i) * 0.5
        return v

    m = measure(slow_to_compile, jnp.ones(8), repeats=5, count_transfers=False, analyse_cost=False)
    assert m.compile.compiles == 1 and m.steady_compiles == 0
    assert m.first_call_s >= m.compile.compile_s
    assert m.steady.max < m.compile.compile_s


def _heavy(x: jax.Array) -> jax.Array:
    return jax.lax.fori_loop(0, 30, lambda i, a: jnp.tanh(a @ x), x)


def test_outputs_are_synchronised_before_the_clock_is_read() -> None:
    heavy = jax.jit(_heavy)
    x = jnp.full((384, 384), 1.0 / 384, jnp.float32)
    heavy(x).block_until_ready()
    # control: without a sync the computation is still running when the call returns
    pending = heavy(x)
    assert not pending.is_ready(), "the test computation must run asynchronously to test the sync"
    pending.block_until_ready()

    produced: list[jax.Array] = []
    ready_at_clock: list[bool] = []

    def tracked(v: jax.Array) -> jax.Array:
        out = heavy(v)
        produced.append(out)
        return out

    def clock() -> float:
        # called by the harness before and after each timed call: every output must be done by then
        ready_at_clock.append(all(o.is_ready() for o in produced))  # type: ignore[attr-defined]
        import time
        return time.perf_counter()

    m = measure(tracked, x, repeats=4, clock=clock, count_transfers=False, analyse_cost=False)
    assert m.steady.repeats == 4
    assert len(produced) >= 6  # first call + warm-up + 4 timed
    assert all(ready_at_clock)


def test_adaptive_repeats_stop_at_min_repeats_with_no_budget() -> None:
    f = jax.jit(lambda v: v + 1.0)
    m = measure(f, jnp.ones(3), min_repeats=4, budget_s=0.0, analyse_cost=False)
    assert m.steady.repeats == 4
    assert len(m.steady.samples) == 4
    assert m.steady.min <= m.steady.median <= m.steady.max


def test_cost_analysis_of_a_matmul_counts_its_flops() -> None:
    n, k, p = 32, 48, 16
    matmul = jax.jit(lambda a, b: a @ b)
    a, b = jnp.ones((n, k)), jnp.ones((k, p))
    cost, note = cost_analysis(matmul, a, b)
    assert note == ""
    assert cost is not None and cost.flops == 2 * n * k * p
    assert cost.bytes_accessed and cost.bytes_accessed >= 4 * (n * k + k * p + n * p)
    assert not cost.loops_counted_once
    m = measure(matmul, a, b, repeats=3)
    assert m.flops_per_s == pytest.approx(cost.flops / m.steady.median)


def test_cost_analysis_flags_loops_and_needs_a_jitted_function() -> None:
    cost, _ = cost_analysis(jax.jit(_heavy), jnp.ones((8, 8)))
    assert cost is not None and cost.loops_counted_once
    cost, note = cost_analysis(_heavy, jnp.ones((8, 8)))
    assert cost is None and "jitted" in note


def test_measurement_records_the_machine_and_own_overhead() -> None:
    m = measure(jax.jit(lambda v: v * 3.0), jnp.ones(4), repeats=2, analyse_cost=False)
    data = m.to_json()
    assert data["machine"]["platform"] == jax.default_backend()
    assert data["machine"]["jax_version"] == jax.__version__
    assert data["harness_overhead_s"] > 0
    assert data["steady_s"]["repeats"] == 2


def test_stats_and_break_even_arithmetic() -> None:
    stats = Stats.of([3.0, 1.0, 2.0, 4.0])
    assert (stats.median, stats.min, stats.max, stats.repeats) == (2.5, 1.0, 4.0, 4)
    assert stats.spread == pytest.approx(3.0 / 2.5)
    with pytest.raises(ValueError):
        Stats.of([])
    # 2 s more start-up, 0.5 s saved per call: paid back after 4 calls
    assert break_even_calls(3.0, 1.0, 1.0, 1.5) == 4
    assert break_even_calls(0.5, 1.0, 1.0, 1.5) == 0
    assert break_even_calls(3.0, 2.0, 1.0, 1.5) is None
    assert break_even_calls(1.1, 0.5, 1.0, 0.6) == 1  # an int: exact
