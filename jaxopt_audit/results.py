"""The bench result, typed: what `bench` measures per stage and `report` writes up.

`runtime/bench/harness.py` builds a `BenchResult`, `commands/bench.py` writes `to_json()`, and the
case study and its plots read `BenchResult.from_json(...)` instead of string keys. The JSON form is
the contract (docs/design.md, "Bench results"; tests/schemas/bench.schema.json), and
`from_json(x).to_json() == x` for every file `bench` writes. A leaf module: no JAX, no rich, so
`report` reads results on a machine without the runtime extra.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

BENCH_SCHEMA_VERSION = 1

T = TypeVar("T")

# The static scan that `bench` and `report` record findings with, handed down by their commands
# (`static.engine.scan_for_report`): file paths in, a result whose `.findings` are theirs out.
Scan = Callable[[list[str]], Any]


def finite(value: Any) -> Any:
    """JSON has no NaN/inf: they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def _flat(cls: type[T], data: dict[str, Any]) -> T:
    """A flat record from its JSON object: known keys only, missing ones take their defaults."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Times:
    """Seconds per call over the synchronised steady-state calls."""

    median: float
    min: float
    max: float
    repeats: int
    mean: float | None = None
    stdev: float | None = None
    spread: float | None = None  # (max - min) / median

    def scaled(self, factor: float) -> Times:
        """The same calls, extrapolated to `factor` times the work (spread and repeats unchanged)."""
        def times(value: float | None) -> float | None:
            return None if value is None else value * factor

        return dataclasses.replace(self, median=self.median * factor, min=self.min * factor,
                                   max=self.max * factor, mean=times(self.mean), stdev=times(self.stdev))

    def to_json(self) -> dict[str, Any]:
        return {"median": self.median, "min": self.min, "max": self.max, "mean": self.mean,
                "stdev": self.stdev, "spread": self.spread, "repeats": self.repeats}


@dataclass(frozen=True)
class CompileTimes:
    """What the first call traced, lowered and compiled (jax.monitoring durations)."""

    trace_s: float | None = None
    lower_s: float | None = None
    backend_compile_s: float | None = None
    compiles: int | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Throughput:
    value: float | None
    unit: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Check:
    """A stage's outputs compared with stage 0's on the same workload."""

    ok: bool
    metric: str
    value: float | None
    tolerance: float | None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class BreakEven:
    """Work (in the throughput unit) before the extra start-up pays for itself against `versus`."""

    value: int
    unit: str
    calls: int
    versus: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class StageFinding:
    """A static finding on the stage's file."""

    code: str
    line: int
    name: str = ""
    severity: str = ""
    message: str = ""

    @classmethod
    def of(cls, finding: Any) -> StageFinding:
        """From a scan's finding (static/framework/rule.py, Finding): the file is the stage's, so no path."""
        return cls(code=finding.code, line=finding.line, name=finding.name, severity=finding.severity,
                   message=finding.message)

    @classmethod
    def sorted(cls, findings: Any) -> list[StageFinding]:
        """A scan's findings on one file, by line then code."""
        return sorted((cls.of(f) for f in findings), key=lambda f: (f.line, f.code))

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "name": self.name, "line": self.line, "severity": self.severity,
                "message": self.message}


@dataclass
class StageResult:
    """One stage: its identity, then either `error` or the measurements, then the comparisons."""

    name: str
    stage: int
    addresses: list[str] = field(default_factory=list)
    changes_math: bool = False
    math_note: str = ""
    title: str | None = None
    # a stage that failed: the error's first line and a short traceback, and no measurements
    error: str | None = None
    traceback: str | None = None
    # measured (None when the stage failed)
    compile_s: float | None = None
    first_call_s: float | None = None
    startup_s: float | None = None
    compile: CompileTimes | None = None
    steady_s: Times | None = None
    extrapolated: bool = False
    prefix_fraction: float | None = None
    measured_steady_s: Times | None = None  # before extrapolation, on the prefix
    throughput: Throughput | None = None
    work_units: float | None = None
    compiles_per_call: float | None = None
    recompiled: list[str] = field(default_factory=list)
    host_transfers_per_call: int | None = None
    h2d_transfers_per_call: int | None = None
    d2h_transfers_per_call: int | None = None
    cost: dict[str, Any] | None = None  # XLA's cost analysis (flops, bytes_accessed, lower_bound)
    cost_note: str = ""
    flops_per_s: float | None = None
    bytes_per_s: float | None = None
    validation: Check | None = None
    trace: dict[str, Any] | None = None  # where the profile is and its summary (runtime/trace.py)
    # the static scan of the stage's file; None: not recorded (findings_note says why)
    findings: list[StageFinding] | None = None
    findings_note: str = ""
    # against stage 0 and the previous measured stage (harness._add_comparisons)
    speedup_vs_stage0: float | None = None
    speedup_vs_previous: float | None = None
    break_even: BreakEven | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def measured(self) -> bool:
        return self.error is None and self.steady_s is not None

    @property
    def median_s(self) -> float:
        assert self.steady_s is not None, f"{self.name} was not measured"
        return self.steady_s.median

    @property
    def valid(self) -> bool:
        return self.validation is not None and self.validation.ok

    # the JSON form: the keys `bench` writes for a measured stage and for a failed one
    _IDENTITY = ("name", "stage", "addresses", "changes_math", "math_note")
    _MEASURED = ("title", "compile_s", "first_call_s", "startup_s", "compile", "steady_s", "extrapolated",
                 "prefix_fraction", "measured_steady_s", "throughput", "work_units", "compiles_per_call",
                 "recompiled", "host_transfers_per_call", "h2d_transfers_per_call", "d2h_transfers_per_call",
                 "cost", "cost_note", "flops_per_s", "bytes_per_s", "validation")
    _COMPARED = ("speedup_vs_stage0", "speedup_vs_previous", "break_even")

    def to_json(self) -> dict[str, Any]:
        keys = self._IDENTITY + (("title", "error", "traceback") if self.failed else self._MEASURED)
        keys += ("trace",) if self.trace is not None else ()
        # findings: recorded when the stage was scanned (None with a note: the scan failed)
        keys += ("findings",) if self.findings is not None or self.findings_note else ()
        keys += ("findings_note",) if self.findings_note else ()
        keys += self._COMPARED
        return finite({key: _json_value(getattr(self, key)) for key in keys
                       if key != "title" or self.title is not None})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StageResult:
        nested = {"compile": CompileTimes, "steady_s": Times, "measured_steady_s": Times,
                  "throughput": Throughput, "validation": Check, "break_even": BreakEven}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key in nested and isinstance(value, dict):
                value = _flat(nested[key], value)
            elif key == "findings" and value is not None:
                value = [_flat(StageFinding, f) for f in value]
            values[key] = value
        return _flat(cls, values)


def _json_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value.to_json() if hasattr(value, "to_json") else value


@dataclass
class BenchResult:
    """One pipeline measured at one size on one machine."""

    pipeline: str
    size: str
    platform: str
    device: str
    jax_version: str
    variants: list[StageResult]
    pipeline_path: str | None = None  # a user's folder: what `bench` was given
    title: str = ""
    description: str = ""
    machine: dict[str, Any] = field(default_factory=dict)  # runtime/bench/machine.py, MachineInfo
    throughput_unit: str = ""
    harness_overhead_s: float | None = None
    created: str = ""
    schema_version: int = BENCH_SCHEMA_VERSION

    _ORDER = ("pipeline", "pipeline_path", "title", "description", "size", "platform", "device",
              "jax_version", "machine", "throughput_unit", "harness_overhead_s", "created",
              "schema_version", "variants")

    @property
    def label(self) -> str:
        return f"{self.platform.upper()}: {self.device}"

    def measured(self) -> list[StageResult]:
        return [v for v in self.variants if v.measured]

    def stage(self, index: int) -> StageResult | None:
        return next((v for v in self.variants if v.stage == index), None)

    def to_json(self) -> dict[str, Any]:
        # pipeline_path only for a user's folder: a bundled pipeline is named by `pipeline`
        return finite({key: _json_value(getattr(self, key)) for key in self._ORDER
                       if key != "pipeline_path" or self.pipeline_path is not None})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BenchResult:
        """A result as `bench` wrote it; check it first with report/results_check.results_problem."""
        variants = [StageResult.from_json(v) for v in data["variants"]]
        return _flat(cls, {**data, "variants": variants})
