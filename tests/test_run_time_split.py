"""`jaxopt-audit run`'s time split: wall = compile + device + host, each a stretch of the
program's thread, on a whole-program jit as on an eager loop.

tests/run_scripts/time_split.py makes one jitted call that compiles and then runs a scan whose
steps sleep in a host callback, while another thread compiles a function of its own, then runs
a few eager ops. It measures its first call and listens to JAX's compile events itself; the
report must agree with those measurements (relations between them, never timing thresholds).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).parent / "run_scripts" / "time_split.py"
pytestmark = pytest.mark.slow  # runs a JAX program under `run`


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the report, what the program measured itself)."""
    where = tmp_path_factory.mktemp("split")
    own, report = where / "own.json", where / "report.json"
    proc = subprocess.run([sys.executable, "-m", "jaxopt_audit.cli", "run", "--no-scan", "--json", str(report),
                           str(SCRIPT)], capture_output=True, text=True, timeout=300,
                          env=os.environ | {"TIME_SPLIT_OUT": str(own)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(report.read_text()), json.loads(own.read_text())


def test_the_parts_add_up_to_the_wall_time(measured: tuple[dict[str, Any], dict[str, Any]]) -> None:
    report, _ = measured
    split = report["time_split"]
    assert split["compile_s"] + split["device_s"] + split["host_s"] == pytest.approx(report["wall_s"], abs=1e-5)
    assert min(split["compile_s"], split["device_s"], split["host_s"]) > 0
    assert not any("exceed the wall time" in note for note in report["notes"])
    assert split["eager_op_s"] <= split["host_s"]  # eager dispatch is part of the host time


def test_a_call_that_compiled_and_ran_is_not_all_compile_time(measured: tuple[dict[str, Any], dict[str, Any]]) -> None:
    report, own = measured
    train = next(f for f in report["functions"] if f["name"] == "train")
    assert train["compiles"] == 1 and 0 < train["compile_s"] <= report["compile_s"]
    # the callbacks slept inside the first call, after its compilation: execution, not compile
    assert train["compile_s"] <= own["first_call_s"] - own["slept_s"]
    assert report["device_s"] >= own["slept_s"]


def test_compile_time_is_the_program_threads_events_counted_once(
        measured: tuple[dict[str, Any], dict[str, Any]]) -> None:
    report, own = measured
    # nested events (an outer trace containing inner ones) are counted once, so never above their sum
    assert 0 < report["compile_s"] <= own["main_thread_events_s"] + 1e-5
    # the other thread compiled while the program's thread waited: in a note, not in the split
    assert own["other_thread_events_s"] > 0
    assert any(note.startswith("other threads") for note in report["notes"])
