"""`jaxopt-audit run --trace DIR [--trace-steps N:M]`: an XProf trace of the user's program.

The whole run by default; with `--trace-steps N:M`, calls N..M (1-based, inclusive) of the
hottest jitted function: the first function to reach N-1 calls is followed (the one called
most often so far), tracing starts after its call N-1 and stops once its call M has finished
on the device. Each traced call is marked as a step (`runtime.trace.step_marker`, named after
the function). Capture and summary are the harness's (`runtime.trace`), so `run` and `bench`
traces read the same way.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

from ..trace import TraceCapture, open_command, step_marker
from .instrument import FunctionRecord


def marker_name(record: FunctionRecord) -> str:
    """The steps' name in the trace: two functions may share a name (`<lambda>`), not a line."""
    return f"{record.name} at {os.path.basename(record.path)}:{record.line}"


class TraceStepsError(ValueError):
    """--trace-steps is not N:M with 1 <= N <= M."""


def parse_steps(text: str | None) -> tuple[int, int] | None:
    """`"5:8"` -> (5, 8); None -> None (trace everything)."""
    if text is None:
        return None
    first, sep, last = text.partition(":")
    try:
        start, stop = int(first), int(last if sep else first)
    except ValueError:
        raise TraceStepsError(f"--trace-steps {text!r}: expected N:M with whole numbers, e.g. 10:12") from None
    if not 1 <= start <= stop:
        raise TraceStepsError(f"--trace-steps {text!r}: need 1 <= N <= M (calls are counted from 1)")
    return start, stop


class RunTrace:
    """Starts and stops the capture around the whole run or around steps N..M."""

    def __init__(self, log_dir: str, steps: tuple[int, int] | None,
                 wait: Callable[[Any], None]) -> None:
        self.log_dir = log_dir
        self.steps = steps
        self._wait = wait  # blocks until a call's outputs are computed (no counting)
        self._capture: TraceCapture | None = None
        self._followed: FunctionRecord | None = None
        self._finished = False
        self.switching_s = 0.0  # the program's thread starting and stopping the profiler

    def start(self) -> None:
        """At program start: begin now unless waiting for step N."""
        if self.steps is None or self.steps[0] == 1:
            self._begin()

    def annotate(self, record: FunctionRecord, call_number: int) -> contextlib.AbstractContextManager[Any]:
        """A step marker around a call while capturing: the followed function's calls with
        --trace-steps (XProf and the summary then show them as steps), every function's otherwise."""
        if self._capture is None:
            return contextlib.nullcontext()
        if self.steps is None or self._followed is None or record is self._followed:
            return step_marker(call_number, name=marker_name(record))
        return contextlib.nullcontext()

    def on_call(self, record: FunctionRecord, outputs: Any) -> None:
        """After each top-level jitted call."""
        if self.steps is None or self._finished:
            return
        start, stop = self.steps
        if self._followed is None:
            if self._capture is not None or record.calls == start - 1:
                self._followed = record
                if self._capture is None:
                    self._begin()
            if self._followed is None:
                return
        if record is self._followed and record.calls >= stop:
            self._wait(outputs)
            self._end()

    def finish(self, copies_seen: int | None = None) -> dict[str, Any]:
        """After the program: stop if still capturing; the summary for the report.

        copies_seen: the host<->device transfers the instruments counted, set beside the
        trace's copy events. The time this takes is not the program's (`switching_s` is only
        what starting and stopping took while the program ran)."""
        if self._capture is not None:
            during = self.switching_s
            self._end()
            self.switching_s = during
        info: dict[str, Any] = {"dir": self.log_dir, "switching_s": round(self.switching_s, 6),
                                "steps": f"{self.steps[0]}:{self.steps[1]}" if self.steps else None,
                                "followed": self._followed.name if self._followed else None}
        if self._path is None:
            info["summary"] = ("no trace captured: the program never made the requested calls"
                               if self.steps else "no trace captured")
            return info
        info["path"] = self._path
        info["open"] = open_command(self.log_dir)
        try:
            from ..trace import summarize_trace

            summary = summarize_trace(self._path)
            info["summary"] = summary.render(copies_seen=copies_seen)
            info["xla_by_module"] = dict(summary.modules)  # the per-function check of device time
        except Exception as exc:  # the trace file is the deliverable; its summary is a bonus
            info["summary"] = f"summary unavailable ({type(exc).__name__}: {exc})"
        return info

    _path: str | None = None

    def _begin(self) -> None:
        began = time.perf_counter()
        self._capture = TraceCapture(self.log_dir)
        self._capture.__enter__()
        self.switching_s += time.perf_counter() - began

    def _end(self) -> None:
        capture, self._capture = self._capture, None
        self._finished = True
        if capture is None:
            return
        began = time.perf_counter()
        capture.__exit__(None, None, None)
        self.switching_s += time.perf_counter() - began
        self._path = str(capture.path) if capture.path else None
