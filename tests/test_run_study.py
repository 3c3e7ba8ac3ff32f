"""`report` on `run --json` results (the study of a user's rewrite) and the plots' human units:
from hand-written results, so no JAX runs here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib")

from jaxopt_audit.cli import main  # noqa: E402
from jaxopt_audit.report import markdown as md  # noqa: E402
from jaxopt_audit.report.plots import _short, speedup_text  # noqa: E402


def run_result(argv: list[str], wall: float, compile_s: float, device: float, codes: list[str]) -> dict[str, Any]:
    return {
        "tool": "jaxopt-audit", "argv": argv, "exit_status": 0, "error": None, "wall_s": wall,
        "compile_s": compile_s, "device_s": device, "host_s": wall - compile_s - device,
        "eager_compiles": 0, "eager_ops": 0,
        "time_split": {"compile_s": compile_s, "device_s": device, "host_s": wall - compile_s - device,
                       "eager_op_s": 0.0, "functions_device_s": device, "methods": {}},
        "functions": [], "transfers": [{"direction": "d2h", "path": "train.py", "line": 9, "count": 50,
                                        "occurrences": 50, "via": ".item()", "functions": []}],
        "findings": [{"code": code, "name": {"JAX101": "missing-jit", "JAX301": "host-sync-in-step"}[code],
                      "path": "train.py", "line": 9, "message": f"{code} here", "fix": "...", "count": 50,
                      "cost_s": 1.5 if code == "JAX101" else None, "confirmed_by_scan": None,
                      "function": "step" if code == "JAX101" else None} for code in codes],
    }


def write(path: Path, data: object) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def test_three_runs_make_one_study_with_speedups_and_removed_findings(tmp_path: Path) -> None:
    files = [write(tmp_path / "v1.json", run_result(["train.py"], 10.0, 2.0, 1.0, ["JAX101", "JAX301"])),
             write(tmp_path / "v2.json", run_result(["train.py", "--jit"], 2.5, 1.0, 1.0, ["JAX301"])),
             write(tmp_path / "v3.json", run_result(["train.py", "--jit", "--k", "10"], 2.0, 1.0, 0.5, []))]
    out = tmp_path / "study.md"
    assert main(["report", *files, "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# Case study: train.py")
    assert "| speedup vs previous | — | 4.00x | 1.25x |" in text
    assert "| speedup vs v1 | — | 4.00x | 5.00x |" in text
    assert "### v1 → v2" in text
    assert "- **Removed:** JAX101 missing-jit `step` at `train.py:9`: cost 1.50 s in v1; in v2: `step` not seen" in text
    assert "- **Remaining:** JAX301 host-sync-in-step at `train.py:9`: cost not measured → not measured" in text
    assert "### v2 → v3" in text
    assert "- **Removed:** JAX301 host-sync-in-step at `train.py:9`: cost not measured in v2; in v3: gone" in text
    assert "- **Added:** none" in text
    assert "jaxopt-audit run --json v2.json train.py --jit" in text
    assert "jaxopt-audit report v1.json v2.json v3.json -o study.md" in text
    assert (tmp_path / "study-time.png").stat().st_size > 0


def test_run_and_bench_results_are_not_mixed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write(tmp_path / "run.json", run_result(["train.py"], 1.0, 0.5, 0.1, []))
    bench = write(tmp_path / "bench.json", {"pipeline": "p", "size": "small", "platform": "cpu", "device": "x",
                                            "jax_version": "0", "variants": []})
    assert main(["report", run, bench, "-o", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err.strip()
    assert "bench.json: not a `jaxopt-audit run --json` result" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r.md").exists()


@pytest.mark.parametrize("seconds, text", [(104760.0, "29.1 h"), (5400.0, "90.0 min"), (90.0, "90.0 s"),
                                           (0.0345, "34.5 ms"), (12e-6, "12.0 µs")])
def test_plot_times_read_in_human_units(seconds: float, text: str) -> None:
    assert _short(seconds, "time") == text


def test_plot_speedups_and_shares_read_as_written() -> None:
    assert speedup_text(1143.6) == "1,144x" and speedup_text(31.24) == "31.2x" and speedup_text(3.214) == "3.21x"
    assert md.share(0.0002) == "0.02%" and md.share(0.25) == "25%" and md.share(1.0) == "100%"


def _finding(code: str, line: int, function: str | None) -> dict[str, Any]:
    return {"code": code, "path": "src/train.py", "line": line, "function": function}


def test_problems_are_matched_by_line_then_by_function() -> None:
    from jaxopt_audit.report.run_study import match

    before = [_finding("JAX101", 10, "step"), _finding("JAX301", 20, None), _finding("JAX301", 30, None),
              _finding("JAX103", 40, "loss")]
    # a decorator line added above `step` moved everything down one line
    after = [_finding("JAX101", 11, "step"), _finding("JAX301", 21, None), _finding("JAX301", 30, None),
             _finding("JAX103", 41, "other")]
    remaining, removed, added = match(before, after)
    assert [(b["line"], a["line"]) for b, a in remaining] == [(30, 30), (10, 11)]
    assert [f["line"] for f in removed] == [20, 40] and [f["line"] for f in added] == [21, 41]
