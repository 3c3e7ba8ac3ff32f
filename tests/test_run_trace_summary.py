"""The trace summary `run --trace` prints: steps of every marked function, the one with the most
time first; copy events set beside the transfers `run` counted; one duration format."""

from __future__ import annotations

from jaxopt_audit.runtime.trace import CopyTime, StepTime, TraceSummary
from jaxopt_audit.units import seconds


def _summary(copies: tuple[CopyTime, ...] = ()) -> TraceSummary:
    evaluation = [StepTime("evaluate at prog.py:9", n, 0.002) for n in range(1, 11)]  # 20 ms in all
    training = [StepTime("train_step at prog.py:3", n, 0.0005) for n in range(1, 20001)]  # 10 s in all
    training[6] = StepTime("train_step at prog.py:3", 7, 0.25)
    return TraceSummary("t.xplane.pb", span_s=12.0, ops_total_s=9.0, top_ops=(), steps=tuple(evaluation + training),
                        compile_s=1.5, copies=copies)


def test_the_function_with_the_most_step_time_comes_first_and_none_is_hidden() -> None:
    lines = _summary().render().splitlines()
    steps = [line for line in lines if line.lstrip().startswith("steps (")]
    assert [line.split(")")[0] for line in steps] == ["  steps (train_step at prog.py:3",
                                                      "  steps (evaluate at prog.py:9"]
    assert f"20000 steps, {seconds(0.0005 * 19999 + 0.25)} in all, median {seconds(0.0005)}" in steps[0]
    assert f"slowest 7: {seconds(0.25)}" in steps[0]
    assert steps[1].count(": ") == 11  # few steps: each one's time (after the name, 10 steps)


def test_copy_events_are_set_beside_the_transfers_run_counted() -> None:
    reads = CopyTime("d2h", "np.asarray(jax.Array)", 3, 0.001)
    text = _summary((reads,)).render(copies_seen=1200)
    assert "3 host<->device copy events in the trace, 1200 transfers counted by run" in text
    agreeing = _summary().render(copies_seen=0)
    assert "no host<->device copy events in the trace" in agreeing and "counted by run" not in agreeing


def test_durations_use_the_one_formatter() -> None:
    first = _summary().render().splitlines()[0]
    assert first == f"trace t.xplane.pb: span {seconds(12.0)}, XLA ops {seconds(9.0)}, compilation {seconds(1.5)}"
