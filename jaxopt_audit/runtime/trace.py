"""Capture an XProf/TensorBoard trace and summarise it without a server.

    with TraceCapture("traces/run1") as trace:
        for step in range(3):
            with step_marker(step):
                state = train_step(state)
            jax.block_until_ready(state)
    print(trace.where())                 # the .xplane.pb and the command that opens it
    print(trace.summary().render())      # top XLA ops, step times, compilation, copies

The trace is what `jax.profiler.start_trace` writes (`DIR/plugins/profile/<run>/<host>.xplane.pb`),
so `xprof server --logdir DIR` opens it (`open_command` says what is installed here).
The summary reads the XSpace with `jax.profiler.ProfileData` (jaxlib's own parser, offline):
XLA ops are the events carrying an `hlo_op` stat (CPU thunks and GPU kernels alike), steps are
the `StepTraceAnnotation` events (they carry `step_num`), compilation is the union of the
host's lowering/compilation events, and copies are the host<->device transfer events.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import shlex
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jax

from ..units import seconds

STEP_NAME = "step"
_COMPILE_EVENT = re.compile(r"^(backend_compile\w*|lower_sharding_computation|lower_jaxpr\w*|"
                            r"trace_to_jaxpr\w*|compile_or_get_cached|pjit\._create_pjit_jaxpr)$")
_H2D_EVENT = re.compile(r"H2D|HtoD|HostToDevice", re.IGNORECASE)
_D2H_EVENT = re.compile(r"D2H|DtoH|DeviceToHost|np\.asarray\(jax\.Array\)", re.IGNORECASE)
_DEVICE_OP_LINES = re.compile(r"^(XLA Ops|Stream #\d+.*)$")


@dataclass(frozen=True)
class OpTime:
    """One XLA op (by module and name) aggregated over the trace."""

    name: str
    module: str
    count: int
    total_s: float


@dataclass(frozen=True)
class StepTime:
    name: str
    step: int
    seconds: float


@dataclass(frozen=True)
class CopyTime:
    """Host<->device transfer events of one name."""

    direction: Literal["h2d", "d2h"]
    name: str
    count: int
    total_s: float


@dataclass(frozen=True)
class TraceSummary:
    path: str
    span_s: float  # first event start to last event end
    ops_total_s: float
    top_ops: tuple[OpTime, ...]
    steps: tuple[StepTime, ...]
    compile_s: float
    copies: tuple[CopyTime, ...] = field(default_factory=tuple)
    modules: tuple[tuple[str, float], ...] = ()  # (XLA module, seconds of its ops), e.g. ("jit_step", 0.03)

    def op_names(self) -> list[str]:
        return [op.name for op in self.top_ops]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path, "span_s": self.span_s, "ops_total_s": self.ops_total_s,
            "compile_s": self.compile_s,
            "top_ops": [op.__dict__ for op in self.top_ops],
            "steps": [s.__dict__ for s in self.steps],
            "copies": [c.__dict__ for c in self.copies],
            "modules": dict(self.modules),
        }

    def render(self, top: int = 10, copies_seen: int | None = None) -> str:
        """Plain-text summary, a few lines per section, each sorted by time.

        copies_seen: the host<->device transfers counted outside the trace (by `run`'s hooks),
        so the copy line can say how the two counts relate.
        """
        lines = [f"trace {self.path}: span {seconds(self.span_s)}, XLA ops {seconds(self.ops_total_s)}, "
                 f"compilation {seconds(self.compile_s)}"]
        lines.extend(self._step_lines())
        if self.top_ops:
            lines.append("  top XLA ops by total time:")
            for op in self.top_ops[:top]:
                share = op.total_s / self.ops_total_s * 100 if self.ops_total_s else 0.0
                lines.append(f"    {seconds(op.total_s):>9} {share:5.1f}%  x{op.count:<5} {op.name}  [{op.module}]")
        else:
            lines.append("  no XLA op events in the trace (nothing compiled ran while tracing)")
        for copy in sorted(self.copies, key=lambda c: -c.total_s):
            lines.append(f"  {copy.direction} copy events: {copy.name} x{copy.count}, {seconds(copy.total_s)}")
        events = sum(copy.count for copy in self.copies)
        if copies_seen is not None and copies_seen != events:
            lines.append(f"  {events} host<->device copy events in the trace, {copies_seen} transfers counted by run: "
                         "the profiler records a copy only where data really moves (on CPU the device's "
                         "memory is the host's, and a NumPy buffer may be aliased)")
        elif not self.copies:
            lines.append("  no host<->device copy events in the trace")
        return "\n".join(lines)

    def _step_lines(self, shown: int = 12) -> list[str]:
        """Steps per marker name, the name with the most time first: each step's time when few,
        else their count, total, median and the slowest."""
        by_name: dict[str, list[StepTime]] = defaultdict(list)
        for step in self.steps:
            by_name[step.name].append(step)
        lines = []
        for name, steps in sorted(by_name.items(), key=lambda item: (-sum(s.seconds for s in item[1]), item[0])):
            if len(steps) <= shown:
                times = ", ".join(f"{s.step}: {seconds(s.seconds)}" for s in steps)
                lines.append(f"  steps ({name}): {times}")
                continue
            durations = sorted(s.seconds for s in steps)
            slowest = ", ".join(f"{s.step}: {seconds(s.seconds)}"
                                for s in sorted(steps, key=lambda s: -s.seconds)[:3])
            lines.append(f"  steps ({name}): {len(steps)} steps, {seconds(sum(durations))} in all, median "
                         f"{seconds(durations[len(durations) // 2])}; slowest {slowest}")
        return lines


def step_marker(step: int, name: str = STEP_NAME) -> jax.profiler.StepTraceAnnotation:
    """The annotation that makes a step show up as a step in XProf and in `TraceSummary.steps`."""
    return jax.profiler.StepTraceAnnotation(name, step_num=step)


def open_command(log_dir: str | os.PathLike[str]) -> str:
    """The shell command that serves the trace in a browser, as installed here.

    The runtime extra brings xprof (through tensorboard-plugin-profile), not tensorboard: the
    hint names tensorboard only where it is installed. xprof 2.2x's command is `xprof server`;
    older ones took the flags directly.
    """
    where = shlex.quote(os.fspath(log_dir))
    if importlib.util.find_spec("xprof") is None:
        command = f"pip install xprof && xprof server --logdir {where} --port 6006"
    elif importlib.util.find_spec("xprof.cli") is not None:
        command = f"xprof server --logdir {where} --port 6006"
    else:
        command = f"xprof --logdir {where} --port 6006"
    if importlib.util.find_spec("tensorboard") is not None:
        command += f"   (or: tensorboard --logdir {where})"
    return command + ", then open http://localhost:6006"


def find_xplane(log_dir: str | os.PathLike[str]) -> Path:
    """The newest `.xplane.pb` under log_dir."""
    found = glob.glob(os.path.join(os.fspath(log_dir), "**", "*.xplane.pb"), recursive=True)
    if not found:
        raise FileNotFoundError(f"no .xplane.pb under {log_dir}; capture a trace there first "
                                "(jaxopt-audit bench PIPELINE --trace DIR)")
    return Path(max(found, key=os.path.getmtime))


class TraceCapture:
    """Context manager around `jax.profiler.start_trace`/`stop_trace`.

    python_tracer: also record every Python function call (large traces, slow); off by default
    so the trace shows JAX's own annotations, XLA ops and transfers.
    """

    def __init__(self, log_dir: str | os.PathLike[str], *, python_tracer: bool = False) -> None:
        self.log_dir = Path(log_dir)
        self.python_tracer = python_tracer
        self.path: Path | None = None

    def __enter__(self) -> TraceCapture:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        options = jax.profiler.ProfileOptions()
        options.python_tracer_level = 1 if self.python_tracer else 0
        options.host_tracer_level = 2  # jaxlib's TraceMe annotations (dispatch, transfers, compile)
        jax.profiler.start_trace(str(self.log_dir), profiler_options=options)
        return self

    def __exit__(self, *exc: object) -> None:
        jax.profiler.stop_trace()
        self.path = find_xplane(self.log_dir)

    def where(self) -> str:
        if self.path is None:
            raise RuntimeError("the trace is written when the `with TraceCapture(...)` block exits")
        return f"trace written to {self.path}\n  open it with: {open_command(self.log_dir)}"

    def summary(self, top: int = 10) -> TraceSummary:
        if self.path is None:
            raise RuntimeError("the trace is written when the `with TraceCapture(...)` block exits")
        return summarize_trace(self.path, top=top)


def _stats(event: Any) -> dict[str, Any]:
    return dict(event.stats)


def _union_seconds(intervals: list[tuple[float, float]]) -> float:
    """Total length of the union of [start, end) intervals in ns, in seconds (nested events count once)."""
    total, current_start, current_end = 0.0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start  # type: ignore[operator]
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start  # type: ignore[operator]
    return total / 1e9


def _events(profile: Any) -> Iterator[tuple[str, str, Any]]:
    for plane in profile.planes:
        for line in plane.lines:
            for event in line.events:
                yield plane.name, line.name, event


def summarize_trace(path: str | os.PathLike[str], top: int = 10) -> TraceSummary:
    """Read an `.xplane.pb` (or the newest one under a directory) and summarise it."""
    target = Path(path)
    if target.is_dir():
        target = find_xplane(target)
    profile = jax.profiler.ProfileData.from_file(str(target))

    op_count: dict[tuple[str, str], int] = defaultdict(int)
    op_time: dict[tuple[str, str], float] = defaultdict(float)
    device_line_ops: dict[tuple[str, str], list[float]] = defaultdict(list)
    steps: list[StepTime] = []
    compile_intervals: list[tuple[float, float]] = []
    copies: dict[tuple[str, str], list[float]] = defaultdict(list)
    first, last = float("inf"), float("-inf")

    for plane_name, line_name, event in _events(profile):
        start, duration = float(event.start_ns), float(event.duration_ns)
        name = event.name
        if duration > 0 and not name.startswith("end: "):
            first, last = min(first, start), max(last, start + duration)
        stats = _stats(event)
        if "hlo_op" in stats:
            key = (str(stats["hlo_op"]), str(stats.get("hlo_module", "?")))
            op_count[key] += 1
            op_time[key] += duration / 1e9
        elif plane_name.startswith("/device:") and _DEVICE_OP_LINES.match(line_name):
            device_line_ops[(name, line_name)].append(duration / 1e9)
        if "step_num" in stats and plane_name.startswith("/host:"):
            steps.append(StepTime(name, int(stats["step_num"]), duration / 1e9))
        if plane_name.startswith("/host:") and _COMPILE_EVENT.match(name):
            compile_intervals.append((start, start + duration))
        if _H2D_EVENT.search(name):
            copies[("h2d", name)].append(duration / 1e9)
        elif _D2H_EVENT.search(name):
            copies[("d2h", name)].append(duration / 1e9)

    if not op_count and device_line_ops:
        # GPU traces without hlo_op stats: the kernels on the device's op/stream lines
        for (name, line_name), durations in device_line_ops.items():
            op_count[(name, line_name)] = len(durations)
            op_time[(name, line_name)] = sum(durations)

    ops = sorted((OpTime(name, module, op_count[(name, module)], op_time[(name, module)])
                  for name, module in op_count), key=lambda op: (-op.total_s, op.name))
    copy_times = sorted((CopyTime(direction, name, len(d), sum(d))  # type: ignore[arg-type]
                         for (direction, name), d in copies.items()),
                        key=lambda c: (c.direction, -c.count, c.name))
    steps.sort(key=lambda s: (s.name, s.step))
    module_s: dict[str, float] = defaultdict(float)
    for (_, module), spent in op_time.items():
        module_s[module] += spent
    return TraceSummary(
        path=str(target),
        span_s=(last - first) / 1e9 if last > first else 0.0,
        ops_total_s=sum(op.total_s for op in ops),
        top_ops=tuple(ops[:top]),
        steps=tuple(steps),
        compile_s=_union_seconds(compile_intervals),
        copies=tuple(copy_times),
        modules=tuple(sorted(module_s.items(), key=lambda m: (-m[1], m[0]))),
    )
