"""`jaxopt-audit bench PATH`: a user's own pipeline folder (tests/user_pipeline/my_pipeline),
measured stage by stage and turned into a case study."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("jax")

from jaxopt_audit.cli import main  # noqa: E402

pytestmark = pytest.mark.slow

FOLDER = Path(__file__).parent / "user_pipeline" / "my_pipeline"


def test_bench_runs_a_pipeline_folder_and_report_reproduces_it(tmp_path: Path) -> None:
    out = tmp_path / "mine.json"
    assert main(["bench", str(FOLDER), "--format", "json", "--out", str(out), "--repeats", "2"]) == 0
    results = json.loads(out.read_text())
    assert results["pipeline"] == "my_pipeline" and results["pipeline_path"] == str(FOLDER)
    assert [v["name"] for v in results["variants"]] == ["stage0_loop", "stage1_scan"]
    assert all(v["validation"]["ok"] for v in results["variants"])
    assert results["variants"][1]["addresses"] == ["JAX101", "JAX201"]
    study = tmp_path / "mine.md"
    assert main(["report", str(out), "-o", str(study)]) == 0
    assert f"jaxopt-audit bench {FOLDER} --size small --out mine.json" in study.read_text()


def test_a_folder_without_a_pipeline_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["bench", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err.strip()
    assert "no __init__.py" in err and len(err.splitlines()) == 1
