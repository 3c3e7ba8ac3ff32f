"""The typed bench result (jaxopt_audit/results.py): the JSON `bench` writes reads back into the
same result, for the committed case studies and for a failed stage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jaxopt_audit.results import BenchResult, StageResult, Times

REPORTS = sorted((Path(__file__).parent.parent / "reports").glob("*.json"))


@pytest.mark.parametrize("path", REPORTS, ids=[p.stem for p in REPORTS])
def test_committed_results_round_trip(path: Path) -> None:
    data = json.loads(path.read_text())
    result = BenchResult.from_json(data)
    assert result.to_json() == data
    stage0 = result.stage(0)
    assert stage0 is not None and stage0.speedup_vs_stage0 == pytest.approx(1.0)
    assert all(v.measured and v.valid for v in result.variants)


def test_a_failed_stage_keeps_its_identity_and_no_measurements() -> None:
    failed = StageResult(name="stage3_broken", stage=3, addresses=["JAX201"], title="breaks",
                         error="RuntimeError: no", traceback="Traceback ...", findings_note="scanner failed: X")
    data = failed.to_json()
    assert "steady_s" not in data and "validation" not in data
    assert data["error"] == "RuntimeError: no" and data["findings"] is None
    assert data["findings_note"] == "scanner failed: X"
    assert (data["speedup_vs_stage0"], data["speedup_vs_previous"], data["break_even"]) == (None, None, None)
    back = StageResult.from_json(data)
    assert back == failed and back.failed and not back.measured and not back.valid


def test_not_a_number_is_written_as_null() -> None:
    times = Times(median=2.0, min=1.0, max=3.0, mean=2.0, stdev=float("nan"), spread=1.0, repeats=3)
    stage = StageResult(name="s", stage=0, steady_s=times.scaled(10.0))
    data = stage.to_json()
    assert data["steady_s"]["median"] == 20.0 and data["steady_s"]["stdev"] is None
    assert data["steady_s"]["repeats"] == 3 and data["steady_s"]["spread"] == 1.0
