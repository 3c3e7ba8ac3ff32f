"""A per-step function whose eager work is a loop of its own, measured to gain nothing from a
jit as written (the loop unrolls): the loop is the finding, with the calls' timed saving."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from jaxopt_audit.runtime.run.findings import _loop_in_function
from jaxopt_audit.runtime.run.instrument import EagerRecord
from jaxopt_audit.runtime.run.jit_saving import JitSaving

SOURCE = '''\
def features(signal):
    emphasised = signal * 0.5
    frames = []
    for start in range(0, 400, 4):
        frames.append(emphasised[start:start + 8].sum())
    return frames


def smooth(x):
    for _ in range(100):
        x = 0.5 * (x + x.mean())
    return x
'''

JITTED = JitSaving(0.0, "measured: unrolled, 3 compilations x 3.00 s", eager_call_s=0.020, jitted_call_s=0.001)


def _record(path: Path, line: int, ops: dict[int, int], calls: int = 50) -> EagerRecord:
    record = EagerRecord("f", str(path), line, None, calls=calls, compile_s=0.5)
    record.line_ops = Counter(ops)
    record.own_ops = sum(ops.values())
    record.line_op_s = {n: 0.001 * count for n, count in ops.items()}
    return record


def test_a_loop_over_independent_items_is_a_vmap_with_the_calls_timed_saving(tmp_path: Path) -> None:
    path = tmp_path / "prog.py"
    path.write_text(SOURCE)
    found = _loop_in_function(_record(path, 1, {2: 50, 5: 5000}), 100.0, JITTED)
    assert found is not None
    assert (found.code, found.line, found.count) == ("JAX202", 4, 5000)
    # 50 calls x (20 ms - 1 ms) + the run's 0.5 s of eager compilation
    assert found.saving_s == round(50 * 0.019 + 0.5, 6)
    assert "not counted: compiling the loop written as a vmap" in found.saving_method


def test_a_loop_carrying_a_state_is_a_scan(tmp_path: Path) -> None:
    path = tmp_path / "prog.py"
    path.write_text(SOURCE)
    found = _loop_in_function(_record(path, 9, {11: 3000}), 100.0, JITTED)
    assert found is not None and (found.code, found.line) == ("JAX201", 10)


def test_a_loop_with_less_than_half_the_ops_leaves_the_jit_finding(tmp_path: Path) -> None:
    path = tmp_path / "prog.py"
    path.write_text(SOURCE)
    assert _loop_in_function(_record(path, 1, {2: 6000, 5: 5000}), 100.0, JITTED) is None
