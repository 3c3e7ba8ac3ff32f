"""`jaxopt-audit run` never changes what a program computes: a differential test.

tests/run_scripts/differential_cases.py holds many small programs (every API `run` wraps or
patches, composed with jit, grad, value_and_grad, vmap, pmap, scan, checkpoint, custom_jvp/vjp,
shard_map, static arguments, donation, pytrees, methods, partials, AOT lowering, optax, host
reads and writes, eager ops, errors). It runs all of them in one process and pickles every
result as raw bytes; here it runs plainly, under `run` and under `run --trace`, and the results
and the program's stdout must be identical, byte for byte.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).parent / "run_scripts" / "differential_cases.py"


def _results(tmp_path: Path, label: str, prefix: list[str]) -> tuple[dict[str, Any], str]:
    out = tmp_path / f"{label}.pkl"
    proc = subprocess.run([*prefix, str(SCRIPT)], capture_output=True, text=True, timeout=300,
                          env=os.environ | {"DIFFERENTIAL_OUT": str(out)}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out, "rb") as handle:
        return pickle.load(handle), proc.stdout


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    return _results(tmp_path_factory.mktemp("plain"), "plain", [sys.executable])


def _differences(expected: dict[str, Any], got: dict[str, Any]) -> list[str]:
    return [f"{name}: plainly {expected[name]!r:.300}, under run {got.get(name)!r:.300}"
            for name in expected if got.get(name) != expected[name]]


@pytest.mark.slow
def test_the_cases_themselves_run_plainly(plain: tuple[dict[str, Any], str]) -> None:
    results, _ = plain
    assert len(results) >= 40
    # a case that raises is compared by its error; none of these is meant to
    assert [name for name, result in results.items() if result[0] != "ok"] == []


@pytest.mark.slow
def test_every_result_is_identical_under_run(plain: tuple[dict[str, Any], str], tmp_path: Path) -> None:
    results, stdout = plain
    audited, audited_stdout = _results(tmp_path, "run", [sys.executable, "-m", "jaxopt_audit.cli", "run", "--no-scan"])
    assert _differences(results, audited) == []
    assert audited_stdout == stdout


@pytest.mark.slow
def test_every_result_is_identical_under_run_with_a_trace(plain: tuple[dict[str, Any], str], tmp_path: Path) -> None:
    results, stdout = plain
    audited, audited_stdout = _results(tmp_path, "trace", [sys.executable, "-m", "jaxopt_audit.cli", "run",
                                                           "--no-scan", "--trace", str(tmp_path / "trace")])
    assert _differences(results, audited) == []
    assert audited_stdout == stdout


@pytest.mark.slow
def test_the_program_compiles_what_it_compiles_plainly(tmp_path: Path) -> None:
    # the tool must not run (and so compile) an op of its own before the program: the program's
    # first op of that kind would then find it compiled, and the count would be one short
    script = str(SCRIPT.parent / "compile_count.py")
    plainly = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300)
    report = tmp_path / "report.json"
    audited = subprocess.run([sys.executable, "-m", "jaxopt_audit.cli", "run", "--no-scan", "--json", str(report),
                              script], capture_output=True, text=True, timeout=300)
    assert plainly.returncode == audited.returncode == 0, plainly.stderr + audited.stderr
    assert int(audited.stdout) == int(plainly.stdout) >= 4
    counted = json.loads(report.read_text())
    assert counted["eager_compiles"] + sum(f["compiles"] for f in counted["functions"]) == int(plainly.stdout)


@pytest.mark.slow
def test_the_equinox_cases_run_where_equinox_is_installed(plain: tuple[dict[str, Any], str]) -> None:
    pytest.importorskip("equinox")  # not in the test extra; where it is, the tests above compare these cases too
    results, _ = plain
    assert sorted(name for name, result in results.items() if name.startswith("eqx_") and result[0] == "ok") == \
        ["eqx_filter_jit_grad_vmap", "eqx_mlp_training_with_optax"]
