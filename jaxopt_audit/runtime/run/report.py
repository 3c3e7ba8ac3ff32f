"""The machine report of `jaxopt-audit run`: records, and the JSON object DESIGN.md specifies.

Built once from what the instruments recorded (`build_report`); the terminal renderer and
`--json` both read it, neither analyses.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .instrument import FunctionRecord, Instrument
from .sites import display_path
from ...fileio import write_text_atomic


@dataclass(frozen=True)
class RecompileReport:
    reason: str
    arguments: tuple[str, ...]
    kinds: tuple[str, ...]
    path: str | None
    line: int | None


@dataclass(frozen=True)
class FunctionReport:
    name: str
    path: str
    line: int
    calls: int
    compiles: int
    compile_s: float
    exec_s: float  # device time of its calls (the mean of `exec_measured` timed calls x calls)
    dispatch_s: float  # host time inside its calls, compilation excluded
    h2d_transfers: int
    d2h_transfers: int
    host_array_args: int
    jit_wrappers: int  # how many times jax.jit was applied to it
    exec_measured: int
    recompiles: tuple[RecompileReport, ...]

    @property
    def h2d_per_call(self) -> float:
        return self.h2d_transfers / self.calls if self.calls else 0.0

    @property
    def d2h_per_call(self) -> float:
        return self.d2h_transfers / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class TransferReport:
    direction: str  # "h2d", "d2h", or "sync" (block_until_ready: a wait, no data moved)
    path: str
    line: int
    count: int  # arrays moved (or syncs)
    occurrences: int  # separate times it happened (a burst of consecutive events is one)
    via: str
    functions: tuple[str, ...]  # the jitted functions whose outputs were read, if known


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    path: str
    line: int
    message: str
    fix: str
    count: int  # how many times it happened (compilations, transfers, jit wrappers)
    cost_s: float | None  # seconds it measurably cost, where known (compile time)
    confirmed_by_scan: bool | None = None  # None: the static scan did not run


@dataclass(frozen=True)
class RunReport:
    argv: tuple[str, ...]
    exit_status: int
    error: str | None
    wall_s: float
    compile_s: float
    device_s: float
    host_s: float
    eager_compiles: int
    eager_compile_s: float
    functions: tuple[FunctionReport, ...]
    transfers: tuple[TransferReport, ...]
    findings: tuple[Finding, ...] = ()
    h2d_total: int | None = None  # every host-to-device transfer jaxlib made (None: not observable)
    scan: str = "skipped"  # "ok", "skipped", or why it could not run
    trace: dict[str, Any] | None = None
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The DESIGN.md object; extra keys are additive."""
        functions = []
        for f in self.functions:
            entry = asdict(f)
            entry["recompiles"] = [asdict(r) | {"arguments": list(r.arguments), "kinds": list(r.kinds)}
                                   for r in f.recompiles]
            entry["h2d_per_call"] = round(f.h2d_per_call, 4)
            entry["d2h_per_call"] = round(f.d2h_per_call, 4)
            functions.append(entry)
        return {
            "tool": "jaxopt-audit",
            "argv": list(self.argv),
            "exit_status": self.exit_status,
            "error": self.error,
            "wall_s": self.wall_s,
            "compile_s": self.compile_s,
            "device_s": self.device_s,
            "host_s": self.host_s,
            "eager_compiles": self.eager_compiles,
            "eager_compile_s": self.eager_compile_s,
            "h2d_total": self.h2d_total,
            "functions": functions,
            "transfers": [asdict(t) | {"functions": list(t.functions)} for t in self.transfers],
            "findings": [asdict(f) for f in self.findings],
            "scan": self.scan,
            "trace": self.trace,
            "notes": list(self.notes),
        }


def build_report(instrument: Instrument, argv: list[str], exit_status: int, error: str | None,
                 wall_s: float) -> RunReport:
    """Turn the instruments' records into the report (findings are added by run.findings)."""
    functions = tuple(sorted((_function(r) for r in instrument.functions.values() if r.calls or r.compiles),
                             key=lambda f: (-f.compile_s - f.exec_s - f.dispatch_s, f.path, f.line, f.name)))
    transfers = tuple(sorted(
        (TransferReport(key.direction, display_path(key.path), key.line, count,
                        instrument.transfer_occurrences[key], key.via,
                        tuple(sorted(instrument.transfer_functions.get(key, {}))))
         for key, count in instrument.transfers.items()),
        key=lambda t: (-t.count, t.path, t.line, t.direction, t.via)))
    compile_s = sum(instrument.compile_s_by_kind.values())
    busy_s = sum(record.exec_estimate_s for record in instrument.functions.values())
    device_s = min(busy_s, max(0.0, wall_s - compile_s))
    host_s = max(0.0, wall_s - compile_s - device_s)
    notes = []
    if instrument.exec_unmeasured:
        notes.append(f"{instrument.exec_unmeasured} sampled calls had all outputs donated before they "
                     "could be timed; device times are estimated from the other sampled calls")
    return RunReport(tuple(argv), exit_status, error, _r(wall_s), _r(compile_s), _r(device_s), _r(host_s),
                     instrument.eager_compiles, _r(instrument.eager_compile_s), functions, transfers,
                     notes=tuple(notes))


def _function(record: FunctionRecord) -> FunctionReport:
    recompiles = tuple(RecompileReport(r.reason, r.arguments, r.kinds,
                                       display_path(r.site.path) if r.site else None,
                                       r.site.line if r.site else None) for r in record.recompiles)
    return FunctionReport(record.name, display_path(record.path), record.line, record.calls, record.compiles,
                          _r(record.compile_s), _r(record.exec_estimate_s), _r(record.call_s), record.h2d_transfers,
                          record.d2h_transfers, record.host_array_args, record.wrappers_created,
                          record.exec_measured, recompiles)


def _r(seconds: float) -> float:
    return round(seconds, 6)


def write_json(report: RunReport, path: str) -> None:
    """Write the JSON report atomically (a reader never sees half a file)."""
    write_text_atomic(path, json.dumps(report.to_json(), indent=2) + "\n")
