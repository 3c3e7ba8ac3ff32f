"""`jaxopt-audit run` on patterns of real programs: a closure made anew on every call and passed to
JAX code that compiles it (a library's jitted function taking it as a static argument, an eager
`lax.scan`), and the objective a third-party optimizer (SciPy) evaluates a few times.

Each script has the mistake next to its correct form, so the checks say both that the mistake is
found where it is made and that the correct form is left alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from test_run import SCRIPTS, audit, audit_in_subprocess, function

pytestmark = pytest.mark.slow


def _line_of(script: str, text: str) -> int:
    lines = (SCRIPTS / script).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def _findings(report: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["code"] == code]


def test_a_closure_made_per_call_for_a_librarys_jitted_function_is_the_cause(tmp_path: Path) -> None:
    # in a fresh interpreter: JAX jits `odeint` when `jax.experimental.ode` is imported, and in
    # this process another test may have imported it before any run, out of the run's sight
    proc, report = audit_in_subprocess(tmp_path, "--no-scan", str(SCRIPTS / "closure_per_call.py"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    solver = function(report, "_odeint_wrapper")
    # three closures, then one module-level function for three calls: four compilations
    assert (solver["calls"], solver["compiles"]) == (6, 4)
    # jitted by JAX when the script's import ran: listed where JAX defines it, not at the import
    assert solver["path"].endswith(os.path.join("experimental", "ode.py"))
    closure_call = _line_of("closure_per_call.py", "return ode.odeint(field")
    shared_call = _line_of("closure_per_call.py", "return ode.odeint(decay")
    kinds = [(r["line"], r["kinds"]) for r in solver["recompiles"]]
    # the closures' recompilations, at the user's line that passes the new closure; the shared
    # function's first compilation is another function, not the same one made again
    assert kinds == [(closure_call, ["new-function-argument"])] * 2 + [(shared_call, ["static"])]
    [finding] = _findings(report, "JAX103")
    assert (os.path.basename(finding["path"]), finding["line"]) == ("closure_per_call.py", closure_call)
    assert "a new function object on every call" in finding["message"]
    defined = _line_of("closure_per_call.py", "def field")
    assert f"field, defined at closure_per_call.py:{defined} inside solve_with_closure" in finding["message"]
    assert "same function object" in finding["fix"]
    # the saving: every compilation after the first
    assert finding["cost_s"] == pytest.approx(solver["compile_s"], abs=1e-6)
    assert 0 < finding["saving_s"] < finding["cost_s"]


def test_an_eager_scan_over_a_closure_made_per_call_compiles_every_call(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(SCRIPTS / "scan_closure_per_call.py"))
    assert status == 0
    eager = {e["name"]: e for e in report["eager_functions"]}
    assert eager["sample"]["compiles"] >= 3  # one scan per call, compiled each time
    assert eager["sample_shared"]["compiles"] <= 1  # the same body: compiled once
    scans = [f for f in _findings(report, "JAX101") if f["function"] in ("sample", "sample_shared")]
    assert [(f["function"], f["line"]) for f in scans] == \
        [("sample", _line_of("scan_closure_per_call.py", "jax.lax.scan(step"))]
    [finding] = scans
    assert "compiled again on each of its 3 calls" in finding["message"]
    assert f"step (line {_line_of('scan_closure_per_call.py', 'def step')})" in finding["message"]
    assert "static_argnames=('n',)" in finding["fix"]
    # the f-string read inside sample would stop a jit of it: the fix says to move it out
    assert f"host reads (line {_line_of('scan_closure_per_call.py', 'mean=')})" in finding["fix"]
    assert finding["saving_s"] > 0 and finding["saving_s"] <= eager["sample"]["compile_s"]
    assert finding["saving_method"].startswith("measured")


def test_reads_in_an_objective_scipy_evaluates_are_no_per_step_finding(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(SCRIPTS / "library_driven_reads.py"))
    assert status == 0
    objective_lines = {_line_of("library_driven_reads.py", "value, g = value_and_grad"),
                       _line_of("library_driven_reads.py", "return float(value), np.asarray")}
    per_step = {(f["code"], f["line"]) for f in report["findings"]}
    assert not {line for _, line in per_step} & objective_lines
    # the program's own loop still has its per-step read
    assert ("JAX301", _line_of("library_driven_reads.py", "print(float(value))")) in per_step
    # the objective's reads and copies are a line of the summary with their true counts
    notes = [n for n in report["notes"] if "scipy calls the program's code" in n]
    assert len(notes) == 2
    assert any("3 arrays read on the host (float()) in 3 calls" in n for n in notes)
    assert any("arrays copied to the device (jnp.asarray)" in n for n in notes)
    assert not any("every ~" in n or "per step:" in n.removeprefix("not per step:") for n in notes)
