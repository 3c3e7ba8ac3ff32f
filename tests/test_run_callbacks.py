"""Host callbacks in compiled code: their runs timed by the line that registered them, the
callables' results unchanged, per-step ones reported with their measured time."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from jaxopt_audit.runtime.run.callbacks import Callbacks
from jaxopt_audit.runtime.run.sites import UserFiles

from test_run import SCRIPTS, audit

CALLBACKS = SCRIPTS / "callback_per_step.py"


def _line_of(path: Path, text: str) -> int:
    return 1 + next(i for i, line in enumerate(path.read_text().splitlines()) if text in line)


def _installed(callbacks: Callbacks) -> dict[str, Any]:
    """The patched APIs by name, without touching jax's own attributes."""
    patched: dict[str, Any] = {}
    callbacks.install(lambda owner, name, replacement: patched.__setitem__(name, replacement))
    return patched


def test_a_callable_registered_again_from_one_line_is_one_wrapper_that_returns_what_it_returns() -> None:
    callbacks = Callbacks(UserFiles((os.path.abspath(__file__),)))
    seen = []

    def original(callback: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(callback)
        return callback(*args, **kwargs)

    register = callbacks._registering(original, "jax.debug.callback")
    square = lambda v: v * v  # noqa: E731
    results = [register(square, 3) for _ in range(2)]
    assert results == [9, 9]
    assert seen[0] is seen[1] and seen[0] is not square  # wrapped once, reused: JAX's caches see one callable
    (record,) = callbacks.records.values()
    assert (record.api, record.name, record.calls) == ("jax.debug.callback", "<lambda>", 2)
    assert record.line == _line_of(Path(__file__), "results = [register(square, 3)")
    callbacks.counting = False  # after the program: runs are not its own
    assert register(square, 4) == 16 and record.calls == 2
    assert callbacks._registering(lambda callback, v: callback(v), "jax.pure_callback")(callback=square, v=5) == 25


def test_every_callback_api_is_patched() -> None:
    assert set(_installed(Callbacks(UserFiles((os.path.abspath(__file__),))))) == {
        "callback", "pure_callback", "io_callback"}


@pytest.mark.slow
def test_a_callback_run_on_every_step_is_a_host_stall_with_its_measured_time(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(CALLBACKS))
    assert status == 0
    line = _line_of(CALLBACKS, "jax.debug.callback(log_loss, i, loss)")
    stalls = [f for f in report["findings"] if f["code"] == "JAX301"]
    assert [(f["line"], f["count"]) for f in stalls] == [(line, 300)]
    assert stalls[0]["message"].startswith("jax.debug.callback(log_loss) ran 300 times from compiled code")
    assert 0 < stalls[0]["saving_s"] == stalls[0]["cost_s"]
    assert stalls[0]["saving_method"].startswith("measured: the 300 runs of log_loss took")
    # the callback's own float()/int() reads are its cost, not reads of the program's; the logger
    # run every 100 steps is no per-step stall
    inside = range(_line_of(CALLBACKS, "def log_loss"), _line_of(CALLBACKS, "def log_summary"))
    assert not any(t["line"] in inside for t in report["transfers"])
