"""The machine report of `jaxopt-audit run`: records, and the JSON object docs/design.md specifies.

Built once, from what the instruments recorded and the findings derived from them
(`build_report`); the terminal renderer and `--json` both read it, neither analyses.

The time split is measured on one clock, the program thread's: wall = compile + device + host,
where compile is the trace, lowering and XLA compilation JAX reports in that thread (an event
nested in another counted once), device the time the program's thread was in the device's
hands (inside top-level jitted calls, their compilation excluded, and blocked in host reads and
syncs) and host the rest: the program's
own Python, eager op dispatch included. Per function, device time is measured on synchronised
sample calls (`exec_measured` of them); their sum is checked against the run's device time.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ...fileio import write_text_atomic
from ...units import seconds
from .arguments import NOT_FUNCTIONS
from .driven import DrivenLoop, driven_loops
from .instrument import EagerRecord, FunctionRecord, Instrument
from .roles import DRIVER, HELPER, PERIODIC, REPEATED, SETUP, STEP
from .sites import display_path

EAGER_OPS_WORTH_A_JIT = 2  # eager ops per call that make a finding (JAX101): one op gains nothing from a jit


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
    exec_s: float  # device time of its calls: `exec_measured` synchronised calls, the rest at their median
    dispatch_s: float  # the program's thread inside its calls that did not compile
    h2d_transfers: int
    d2h_transfers: int
    host_array_args: int
    jit_wrappers: int  # how many times jax.jit was applied to it
    exec_measured: int
    recompiles: tuple[RecompileReport, ...]
    trace_xla_s: float | None = None  # its XLA ops' time in the --trace capture (None: not traced)

    @property
    def h2d_per_call(self) -> float:
        return self.h2d_transfers / self.calls if self.calls else 0.0

    @property
    def d2h_per_call(self) -> float:
        return self.d2h_transfers / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class EagerFunctionReport:
    """A user function that executed JAX ops one by one (not under jit)."""

    name: str
    path: str
    line: int
    calls: int
    ops: int  # eager ops inside it, its callees' included
    ops_per_call: float
    op_s: float  # time inside those ops, compilation excluded
    compiles: int  # eager compilations inside those ops
    compile_s: float
    wall_share: float  # (op_s + compile_s) / wall
    h2d_transfers: int  # NumPy inputs of its eager ops, copied to the device
    h2d_lines: tuple[tuple[str, int, int], ...]  # (path, line, count) of those ops
    called_from: tuple[str, ...]  # "path:line" of its callers, most frequent first
    nested_in_eager: bool  # a helper of another function reported here (role "helper")
    role: str = STEP  # step, helper, driver or setup: `eager_roles`


@dataclass(frozen=True)
class TimeSplit:
    """How the wall time divides, each part measured, with the method stated."""

    compile_s: float
    device_s: float
    host_s: float
    eager_op_s: float  # part of host: dispatching eager ops
    functions_device_s: float  # the per-function device times summed (sampled)
    methods: tuple[tuple[str, str], ...]


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
class RuntimeFinding:
    code: str
    name: str
    path: str
    line: int
    message: str
    fix: str
    count: int  # how many times it happened (compilations, transfers, jit wrappers)
    # seconds it took in this run, where known: compile time, eager ops and their compilation, time
    # waited in the reads or syncs, time in the copy calls
    cost_s: float | None
    confirmed_by_scan: bool | None = None  # None: the static scan did not run
    # what it is about: the un-jitted function (JAX101, JAX302 by its eager ops), the jitted one
    # (JAX102, JAX103, JAX301/JAX302 of its outputs or arguments); None when not known. With the
    # line, what `report a.json b.json` matches a problem by across two versions of a program
    function: str | None = None
    saving_s: float | None = None  # what fixing it saves, where a counterfactual was measured
    saving_method: str = ""  # how saving_s was obtained, or why there is none

    @property
    def rank_s(self) -> float:
        """What orders findings: the measured saving, else the cost (fixing saves at most that)."""
        return self.saving_s if self.saving_s is not None else (self.cost_s or 0.0)


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
    eager_ops: int = 0
    eager_functions: tuple[EagerFunctionReport, ...] = ()
    split: TimeSplit | None = None
    findings: tuple[RuntimeFinding, ...] = ()
    h2d_total: int | None = None  # every host-to-device transfer jaxlib made (None: not observable)
    scan: str = "skipped"  # "ok", "skipped", or why it could not run
    trace: dict[str, Any] | None = None
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The docs/design.md object; extra keys are additive."""
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
            "eager_ops": self.eager_ops,
            "time_split": None if self.split is None else {
                "compile_s": self.split.compile_s, "device_s": self.split.device_s, "host_s": self.split.host_s,
                "eager_op_s": self.split.eager_op_s, "functions_device_s": self.split.functions_device_s,
                "methods": dict(self.split.methods)},
            "h2d_total": self.h2d_total,
            "functions": functions,
            "eager_functions": [asdict(e) | {"called_from": list(e.called_from),
                                              "h2d_lines": [{"path": p, "line": n, "count": c}
                                                            for p, n, c in e.h2d_lines]}
                                for e in self.eager_functions],
            "transfers": [asdict(t) | {"functions": list(t.functions)} for t in self.transfers],
            "findings": [asdict(f) for f in self.findings],
            "scan": self.scan,
            "trace": self.trace,
            "notes": list(self.notes),
        }


SPLIT_METHODS = (
    ("compile", "trace + lowering + XLA compile durations reported by jax.monitoring in the program's "
                "thread, nested events counted once"),
    ("device", "the program's thread inside top-level jitted calls, their compilation excluded "
               "(dispatch to results where a call is synchronised), and blocked in host reads and "
               "syncs, timed around each"),
    ("host", "wall - compile - device: the program's own Python between those, eager op dispatch "
             "included"),
    ("function device", "per jitted function: calls synchronised before and after (the first "
                        "3, then 1 in 16 at most every 20 ms), the other calls at their median"),
)


def build_report(instrument: Instrument, argv: list[str], exit_status: int, error: str | None,
                 wall_s: float, findings: tuple[RuntimeFinding, ...] = (), scan: str = "skipped",
                 trace: dict[str, Any] | None = None, h2d_total: int | None = None) -> RunReport:
    """The whole report from the instruments' records and the findings derived from them."""
    modules = (trace or {}).get("xla_by_module") or {}
    functions = tuple(sorted((_function(r, modules) for r in instrument.functions.values() if r.calls or r.compiles),
                             key=lambda f: (-f.compile_s - f.exec_s - f.dispatch_s, f.path, f.line, f.name)))
    transfers = tuple(sorted(
        (TransferReport(key.direction, display_path(key.path), key.line, count,
                        instrument.transfer_occurrences[key], key.via,
                        tuple(sorted(instrument.transfer_functions.get(key, {}))))
         for key, count in instrument.transfers.items()),
        key=lambda t: (-t.count, t.path, t.line, t.direction, t.via)))
    compile_s = instrument.program_compile_s
    device_s = instrument.in_calls_s + instrument.waited_s
    host_s = wall_s - compile_s - device_s
    functions_device_s = sum(record.exec_estimate_s for record in instrument.functions.values())
    notes = []
    if host_s < 0:  # each part is a disjoint stretch of the program's thread: only clock rounding
        notes.append(f"compile + device exceed the wall time by {seconds(-host_s)}; host time is shown as 0")
        host_s = 0.0
    if instrument.other_threads_compile_s > 0.001:
        notes.append(f"other threads (host callbacks, data loaders) compiled for "
                     f"{seconds(instrument.other_threads_compile_s)} while the program's thread ran on; "
                     "not part of the split")
    notes.extend(_setup_notes(instrument, wall_s))
    notes.extend(driven_notes(instrument))
    if trace is not None:
        notes.append(f"--trace: the profiler recorded every op and call while it was on, which slows the "
                     f"program's Python (host time) and dispatch; starting and stopping it took "
                     f"{seconds(trace.get('switching_s', 0.0))} of the wall time. Run without --trace for the "
                     "program's own times")
    if functions_device_s - device_s > 0.1 * wall_s:
        notes.append(f"the jitted functions' sampled device times add up to {seconds(functions_device_s)}, more "
                     f"than the {seconds(device_s)} the program waited for the device: their work overlapped the "
                     "program's Python (asynchronous dispatch)")
    split = TimeSplit(_r(compile_s), _r(device_s), _r(host_s), _r(instrument.eager_op_s),
                      _r(functions_device_s), SPLIT_METHODS)
    return RunReport(tuple(argv), exit_status, error, _r(wall_s), _r(compile_s), _r(device_s), _r(host_s),
                     instrument.eager_compiles, _r(instrument.eager_compile_s), functions, transfers,
                     eager_ops=instrument.eager_ops, eager_functions=eager_functions(instrument, wall_s),
                     split=split, findings=findings, h2d_total=h2d_total, scan=scan, trace=trace,
                     notes=tuple(notes))


def eager_roles(instrument: Instrument, wall_s: float = 0.0) -> dict[Any, str]:
    """What each un-jitted function running eager ops is to the program (code -> role).

    - driver: a function whose eager ops are mostly (half or more) those of a function it calls
      `REPEATED` or more times per call (`train` calling `train_step` in a loop): the callee is
      the one to jit; or (with the run's `wall_s`) one that would be setup but loops over a
      jitted step doing eager work every iteration (`driven.driven_loops`): the loop is the
      finding (JAX201).
    - helper: only ever called from repeated eager functions that are not drivers (a loss, or a
      `tree.map` lambda, inside the step): its ops are its caller's finding. A lambda called many
      times per call of its caller is mapped over leaves, so it never makes its caller a driver.
    - setup: called fewer than `REPEATED` times, or `PERIODIC` times less often than the
      program's step (parameter initialisation, an evaluation every k steps): not a per-step cost.
    - step: the rest, per-step work whose function is the one to jit.
    """
    return _roles_and_loops(instrument, wall_s)[0]


def eager_loops(instrument: Instrument, wall_s: float) -> list[DrivenLoop]:
    """The loops around a jitted step in which a function run once does eager work every
    iteration (`driven.driven_loops`)."""
    return _roles_and_loops(instrument, wall_s)[1]


def _roles_and_loops(instrument: Instrument, wall_s: float) -> tuple[dict[Any, str], list[DrivenLoop]]:
    roles = _roles_by_calls(instrument)
    reported = {code for code, role in roles.items()
                if role == STEP and instrument.eager[code].ops >= EAGER_OPS_WORTH_A_JIT * instrument.eager[code].calls}
    loops = driven_loops(instrument, roles, wall_s, reported)
    for loop in loops:
        if loop.driver.code in roles:  # not the script's top level, which has no role
            roles[loop.driver.code] = DRIVER
    return roles, loops


def _roles_by_calls(instrument: Instrument) -> dict[Any, str]:
    records = {code: r for code, r in instrument.eager.items() if code.co_name not in NOT_FUNCTIONS and r.ops}
    repeated = {code for code, r in records.items() if r.calls >= REPEATED}
    roles: dict[Any, str] = {}
    callees: dict[Any, list[EagerRecord]] = {}
    for record in records.values():
        for caller in record.caller_codes:
            callees.setdefault(caller, []).append(record)
    for code, record in records.items():
        # a lambda called many times per call is mapped over a pytree's leaves (`jax.tree.map(
        # lambda p, g: p - lr * g, ...)`), not looped over steps: its ops are its caller's
        looped = sum(c.ops for c in callees.get(code, ())
                     if c.calls >= REPEATED * record.calls and c.caller_codes == {code}
                     and c.code.co_name != "<lambda>")
        if looped * 2 >= record.ops:
            roles[code] = DRIVER
    for code, record in records.items():
        # a lambda mapped over a repeated caller's leaves is that caller's work, driver or not
        callers = repeated if code.co_name == "<lambda>" else repeated - set(roles)
        if code not in roles and record.caller_codes and record.caller_codes <= callers:
            roles[code] = HELPER
    steps = max([r.calls for code, r in records.items() if roles.get(code) is None]
                + [r.calls for r in instrument.functions.values()], default=0)
    for code, record in records.items():
        if code not in roles:
            per_step = record.calls >= REPEATED and record.calls * PERIODIC > steps
            roles[code] = STEP if per_step else SETUP
    return roles


def eager_functions(instrument: Instrument, wall_s: float) -> tuple[EagerFunctionReport, ...]:
    """User functions that ran ops eagerly, the costliest first (module level left out)."""
    roles = eager_roles(instrument, wall_s)
    reports = [_eager(instrument.eager[code], wall_s, role) for code, role in roles.items()]
    return tuple(sorted(reports, key=lambda e: (-(e.op_s + e.compile_s), e.path, e.line)))


def _setup_notes(instrument: Instrument, wall_s: float) -> list[str]:
    """One line per outermost setup function with eager work worth a mention (1% of the wall),
    and per function whose loop is a finding (`eager_loops`), the eager work of its own lines
    that the loop's finding does not count."""
    roles, loops = _roles_and_loops(instrument, wall_s)
    notes = []
    counted: dict[Any, set[int]] = {}
    for loop in loops:
        counted.setdefault(loop.driver.code, set()).update(loop.lines)
    for code, lines in counted.items():
        record = instrument.eager[code]
        rest = [line for line in record.line_ops if line not in lines]
        ops, op_s, compile_s = record.work_of(rest)
        spent = op_s + compile_s
        if ops and wall_s > 0 and spent >= 0.01 * wall_s:
            calls = "once" if record.calls == 1 else f"{record.calls} times"
            name = "the script's top level" if code.co_name == "<module>" else record.name
            notes.append(f"not per step: {name} ({display_path(record.path)}:{record.line}) ran {calls} "
                         f"(setup, or every k steps): {ops} eager ops of its own lines outside its loop's finding, "
                         f"{seconds(spent)} ({spent / wall_s:.0%} of the wall time); a per-step fix does not "
                         "change it")
    for code, role in roles.items():
        record = instrument.eager[code]
        outer = not any(roles.get(c) == SETUP for c in record.caller_codes)
        spent = record.op_s + record.compile_s
        if role != SETUP or not outer or wall_s <= 0 or spent < 0.01 * wall_s:
            continue
        calls = "once" if record.calls == 1 else f"{record.calls} times"
        compiled = f" and {record.compiles} eager compilations" if record.compiles else ""
        notes.append(f"not per step: {record.name} ({display_path(record.path)}:{record.line}) ran {calls} "
                     f"(setup, or every k steps): {record.ops} eager ops{compiled}, {seconds(spent)} "
                     f"({spent / wall_s:.0%} of the wall time); a per-step fix does not change it")
    return notes


def driven_notes(instrument: Instrument) -> list[str]:
    """One line per line of the user's code that a third-party library's loop runs (SciPy's
    optimizer evaluating the objective) and that moves data between host and device: as many
    times as that loop iterates, the library needing host values, so not a per-step problem of
    the program's own loop and no finding."""
    lines: dict[tuple[str, int, str], list[str]] = {}
    for key, count in sorted(instrument.transfers.items()):
        driver = instrument.transfer_drivers.get(key)
        if driver is None:
            continue
        what = "read on the host" if key.direction == "d2h" else "waited for" if key.direction == "sync" \
            else "copied to the device"
        occurrences = instrument.transfer_occurrences[key]
        lines.setdefault((key.path, key.line, driver), []).append(
            f"{count} arrays {what} ({key.via}) in {occurrences} calls")
    return [f"not per step: {display_path(path)}:{line} runs when {driver} calls the program's code (its own "
            f"loop, not the program's): {'; '.join(parts)}; {driver} gives and takes host values there, so "
            "there is no per-step fix" for (path, line, driver), parts in lines.items()]


def _eager(record: EagerRecord, wall_s: float, role: str) -> EagerFunctionReport:
    called_from = tuple(f"{display_path(site.path)}:{site.line}" for site, _ in record.callers.most_common(3))
    share = (record.op_s + record.compile_s) / wall_s if wall_s > 0 else 0.0
    return EagerFunctionReport(record.name, display_path(record.path), record.line, record.calls, record.ops,
                               round(record.ops / record.calls, 2) if record.calls else 0.0, _r(record.op_s),
                               record.compiles, _r(record.compile_s), round(share, 4), record.h2d_transfers,
                               tuple((display_path(site.path), site.line, count)
                                     for site, count in sorted(record.h2d_sites.items())),
                               called_from, role == HELPER, role)


def _function(record: FunctionRecord, modules: dict[str, float]) -> FunctionReport:
    recompiles = tuple(RecompileReport(r.reason, r.arguments, r.kinds,
                                       display_path(r.site.path) if r.site else None,
                                       r.site.line if r.site else None) for r in record.recompiles)
    return FunctionReport(record.name, display_path(record.path), record.line, record.calls, record.compiles,
                          _r(record.compile_s), _r(record.exec_estimate_s), _r(record.call_s), record.h2d_transfers,
                          record.d2h_transfers, record.host_array_args, record.wrappers_created,
                          record.exec_measured, recompiles, _traced(record, modules))


def _traced(record: FunctionRecord, modules: dict[str, float]) -> float | None:
    """XLA op seconds of the function's modules in the trace (`jit_train_step`, `pmap_f`, ...)."""
    if not modules:
        return None
    name = record.jax_name.replace("<", "_").replace(">", "_")
    total = sum(seconds for module, seconds in modules.items()
                if module.split(".")[0] in (f"jit_{name}", f"pmap_{name}", f"xla_pmap_{name}", name))
    return _r(total)


def _r(seconds: float) -> float:
    return round(seconds, 6)


def write_json(report: RunReport, path: str) -> None:
    """Write the JSON report atomically (a reader never sees half a file)."""
    write_text_atomic(path, json.dumps(report.to_json(), indent=2) + "\n")
