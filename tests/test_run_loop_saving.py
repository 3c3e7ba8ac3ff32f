"""What `run` measures for a Python loop of jitted calls (JAX201 scan, JAX202 vmap): the loop
body it records while the program runs, and the counterfactual it times after the program has
finished, or why it has none. These tests check what the saving is made of and when it is
withheld, never how large it is."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxopt_audit.runtime.run import loop_saving
from jaxopt_audit.runtime.run.arguments import ArraySpec
from jaxopt_audit.runtime.run.findings import derive_findings
from jaxopt_audit.runtime.run.instrument import FunctionRecord, Instrument
from jaxopt_audit.runtime.run.sites import UserFiles

CALLS = 64  # enough for several sampled calls (the first three, then every 16th)


@pytest.fixture
def instrument() -> Iterator[Instrument]:
    recording = Instrument(UserFiles((str(Path(__file__).resolve()),)))
    recording.install()
    try:
        yield recording
    finally:
        recording.uninstall()


def _record(instrument: Instrument, name: str) -> FunctionRecord:
    (record,) = [r for r in instrument.functions.values() if r.name.endswith(name)]
    return record


def _run(instrument: Instrument, program: Callable[[], Any]) -> Any:
    result = program()
    jax.block_until_ready(result)
    instrument.uninstall()  # as `run` does before measuring
    return result


def test_a_carried_loop_is_timed_against_one_scan(instrument: Instrument) -> None:
    @jax.jit
    def relax(u, kappa):
        return u + 0.01 * kappa * (jnp.roll(u, 1) - u)

    def program() -> Any:
        u, kappa = jnp.linspace(0.0, 1.0, 32), jnp.full(32, 0.5)
        for _ in range(CALLS):
            u = relax(u, kappa)
        return u

    result = _run(instrument, program)
    record = _record(instrument, "relax")
    # the recorded body is abstract: shapes and dtypes, never the program's arrays
    assert record.loop_sample is not None and record.loop_previous is None
    assert record.loop_sample.leaves == [ArraySpec((32,), jnp.float32, False)] * 2
    assert record.loop_varying == [True, False]  # u changes from call to call, kappa does not
    saving = loop_saving.measure(record, carried=True)
    assert saving.saving_s is not None and saving.saving_s >= 0
    assert saving.method.startswith("measured: ")
    assert "lax.scan" in saving.method and "carrying u" in saving.method and f"{CALLS} calls seen" in saving.method
    # the measurement ran on arrays of its own: the program's result is what the loop computed
    np.testing.assert_array_equal(np.asarray(result), np.asarray(program()))


def test_the_state_is_told_from_a_constant_of_the_same_shape(instrument: Instrument) -> None:
    @jax.jit
    def blend(field, state):  # field comes first and is shaped like the output too
        return 0.5 * (state + field)

    def program() -> Any:
        field, state = jnp.ones(8), jnp.zeros(8)
        for _ in range(CALLS):
            state = blend(field, state)
        return state

    _run(instrument, program)
    saving = loop_saving.measure(_record(instrument, "blend"), carried=True)
    assert "carrying state" in saving.method


def test_independent_calls_are_timed_against_one_vmap_over_what_changed(instrument: Instrument) -> None:
    @jax.jit
    def score(weights, scale):
        return jnp.tanh(weights * scale).sum()

    def program() -> Any:
        weights = jnp.linspace(-1.0, 1.0, 16)
        return [score(weights, scale) for scale in np.linspace(0.1, 2.0, CALLS)]

    _run(instrument, program)
    record = _record(instrument, "score")
    assert record.loop_varying == [False, True]
    saving = loop_saving.measure(record, carried=False)
    assert saving.saving_s is not None and saving.saving_s >= 0
    assert saving.method.startswith("measured: ") and "vmap over" in saving.method
    assert "values of scale" in saving.method


def test_a_state_that_passes_through_other_code_is_scanned_over_given_inputs(instrument: Instrument) -> None:
    @jax.jit
    def push(state):
        return state.sum() * jnp.ones(3)

    @jax.jit
    def extend(pushed, state):
        return jnp.concatenate([pushed, state[:1]]) * 0.5

    def program() -> Any:
        state = jnp.ones(4)
        for _ in range(CALLS):
            state = extend(push(state), state)
        return state

    _run(instrument, program)
    saving = loop_saving.measure(_record(instrument, "push"), carried=True)
    assert saving.saving_s is not None and saving.method.startswith("measured: ")
    assert "lax.scan of" in saving.method and "over stacked inputs of state" in saving.method
    assert "each step is given its input" in saving.method
    # extend's output is shaped like its state: that loop is measured
    assert loop_saving.measure(_record(instrument, "extend"), carried=True).saving_s is not None


def test_a_loop_whose_state_is_elsewhere_and_inputs_never_change_has_no_estimate(instrument: Instrument) -> None:
    @jax.jit
    def shift(state):
        return jnp.concatenate([state, state])

    def program() -> Any:
        state = jnp.ones(4)
        return [shift(state) for _ in range(CALLS)]

    _run(instrument, program)
    saving = loop_saving.measure(_record(instrument, "shift"), carried=True)
    assert saving.saving_s is None
    assert saving.method.startswith("no estimate: its output is not shaped like any of its arguments and none")


def test_a_changing_static_argument_cannot_be_vmapped(instrument: Instrument) -> None:
    def head(x, n):
        return x[:n].sum()

    head_static = jax.jit(head, static_argnums=1)

    def program() -> Any:
        x = jnp.arange(80.0)
        return [head_static(x, 1 + i % 2) for i in range(CALLS)]

    _run(instrument, program)
    saving = loop_saving.measure(_record(instrument, "head"), carried=False)
    assert saving.saving_s is None and "static" in saving.method


def test_calls_of_different_structures_have_no_one_loop_body(instrument: Instrument) -> None:
    @jax.jit
    def total(tree):
        return sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(tree))

    def program() -> Any:
        return [total([jnp.ones(2)] * (1 + i % 3)) for i in range(CALLS)]

    _run(instrument, program)
    record = _record(instrument, "total")
    assert record.loop_sample is None
    saving = loop_saving.measure(record, carried=False)
    assert saving.saving_s is None and "not of one structure" in saving.method


def test_the_loop_finding_carries_the_measured_saving_and_what_was_measured(instrument: Instrument) -> None:
    @jax.jit
    def step(u):
        return jnp.sin(u) + 0.1

    def program() -> Any:
        u = jnp.zeros(4)
        for _ in range(400):
            u = step(u)
        return u

    _run(instrument, program)
    # the whole "run" is the loop: its calls are far above the share that makes it a finding
    wall_s = _record(instrument, "step").call_s
    (measured,) = [f for f in derive_findings(instrument, wall_s, measure=True) if f.code == "JAX201"]
    assert measured.saving_s is not None and "lax.scan" in measured.saving_method
    assert measured.saving_method.startswith("measured: ")
    (unmeasured,) = [f for f in derive_findings(instrument, wall_s, measure=False) if f.code == "JAX201"]
    assert unmeasured.saving_s is None and "--trace" in unmeasured.saving_method


def test_outputs_stacked_after_the_loop_are_part_of_what_vmapping_it_saves(instrument: Instrument) -> None:
    @jax.jit
    def score(w, scale):
        return jnp.sum(jnp.tanh(w * scale))

    def program() -> Any:
        w = jnp.linspace(-1.0, 1.0, 16)
        scores = []
        for scale in np.linspace(0.1, 2.0, 200):
            scores.append(score(w, float(scale)))
        few = jnp.stack(scores[:3])  # a handful stacked: not the loop's results
        return jnp.stack(scores), few

    stacked, few = _run(instrument, program)
    record = _record(instrument, "score")
    assert record.stacked_outputs == 200 and record.stacked_s > 0
    # the stack's time is the loop's, not its caller's: the caller keeps only the small stack
    (caller,) = [r for r in instrument.eager.values() if r.name.endswith("program")]
    lines, first = inspect.getsourcelines(program)
    stack_line = first + next(i for i, text in enumerate(lines) if "return jnp.stack(scores)" in text)
    few_line = stack_line - 1
    assert caller.line_compile_s.get(stack_line, 0.0) == pytest.approx(0.0, abs=1e-9)
    assert caller.line_compile_s.get(few_line, 0.0) > 0  # its own small stack compiled for it
    wall_s = record.call_s + record.stacked_s
    found = derive_findings(instrument, wall_s, measure=True)
    loops = [f for f in found if f.code == "JAX202"]
    assert len(loops) == 1, [(f.code, f.message) for f in found]
    finding = loops[0]
    assert finding.saving_s is not None and "stacking up to 200 of its outputs" in finding.saving_method
    assert finding.saving_s >= record.stacked_s - 1e-6  # rounded to the microsecond
    np.testing.assert_array_equal(np.asarray(stacked), np.asarray(program()[0]))


def test_a_list_of_outputs_of_different_functions_is_not_a_loops_results(instrument: Instrument) -> None:
    @jax.jit
    def first(x):
        return x + 1.0

    @jax.jit
    def second(x):
        return x * 2.0

    def program() -> Any:
        outs = [first(jnp.float32(i)) for i in range(40)] + [second(jnp.float32(i)) for i in range(40)]
        return jnp.stack(outs)

    _run(instrument, program)
    assert _record(instrument, "first").stacked_s == 0 and _record(instrument, "second").stacked_s == 0
