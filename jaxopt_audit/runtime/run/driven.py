"""Loops that call a jitted step and do eager JAX work around it every iteration, in a
function that itself runs once (or every k steps), or inside a per-step function; and loops of
eager ops alone in a function run once or at a script's top level.

A function called once is setup by its call count (`report.eager_roles`), but when its code is
where a jitted function is called `LOOP_CALLS` or more times from one line, that line is in a
Python loop, and the eager ops the function issues are that loop's body (a key split, a noise
draw, a metric), its "setup" is a loop doing per-step work: the fix is the whole loop body
(the eager ops and the step) as one `lax.scan` inside jit (JAX201 at the loop's call).

What counts as the loop's eager work, from what the instruments recorded (nothing estimated):
the ops the driver's own lines inside the loop statement issued (from the source's syntax
tree: the innermost `for` or `while` around the call), and those of the functions it calls
only from lines inside the loop; a line or a callee that ran `PERIODIC` times less often than
the step (a log every 100 steps) is not per iteration, and a callee with its own per-step
finding (an un-jitted step, JAX101) or a loop of its own keeps its work. The loop is reported
when it issues at least one eager op per call of the step and its eager ops (their compilation
included) and the step's calls together take `LOOP_SHARE` of the wall time, as a loop of jitted
calls alone is (JAX201).

A loop inside a function that is itself called per step (a driver called `REPEATED` times or
more: `dp_step` looping over the examples of its batch, calling a jitted per-example gradient
and an un-jitted clip) whose iterations carry no state into the step's call runs its body per
item of the step: the fix is the body vmapped inside one jitted step, which takes in the
callees called only from the loop, so their work is the loop's even where it would be a
finding of its own (`DrivenLoop.absorbed`). Whether the loop carries a state is read from the
source (`source_loops.loop_carries_into_call`): the state often passes through eager code.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, NamedTuple

from .instrument import EagerRecord, FunctionRecord, Instrument
from .roles import DRIVER, PERIODIC, REPEATED, SETUP
from .sites import SourceLine
from .source_loops import enclosing, loop_carries, loop_carries_into_call

LOOP_CALLS = 100  # calls of one jitted function from a loop that make a loop worth one compiled call
LOOP_SHARE = 0.1  # ... when the program spends this share of its wall time in the loop's dispatch
LIBRARY_CALL_OPS = 4  # eager ops per iteration from a library call that make it a function to jit


class LoopedStep(NamedTuple):
    """A jitted function called from one line of a loop."""

    record: FunctionRecord
    site: SourceLine  # its call inside the loop
    calls: int  # its calls from `site`
    call_s: float  # the program's time inside those calls (as `FunctionRecord.call_s`)


@dataclass(frozen=True)
class LibraryCall:
    """A loop's lines whose eager ops are issued inside calls into a JAX library (optax's
    `optimiser.update` and `optax.apply_updates` beside a jitted gradient): the fix is to move
    those calls into the jitted step (JAX101 at the line), not the loop into a scan."""

    package: str  # the library's top-level package
    lines: tuple[int, ...]  # the loop's lines calling it, the most ops first
    ops: int  # their eager ops over the run
    op_s: float  # their time, compilation excluded
    compile_s: float  # their eager compilations
    calls: tuple[LoopedStep, ...]  # the library's own jitted functions, called from those lines


@dataclass(frozen=True)
class DrivenLoop:
    """A loop in `driver` that calls jitted steps and issues eager ops around them."""

    driver: EagerRecord
    # the most called first (then by line): the first is where it is reported. Empty: a loop of
    # eager ops alone, reported at its first line
    steps: tuple[LoopedStep, ...]
    first_line: int  # the loop statement (`for` or `while`) ...
    last_line: int  # ... to its last line
    iterations: int  # the most calls of one of its steps (0 without steps: not counted)
    ops: int  # eager ops per iteration inside the loop, over the run
    op_s: float  # their time, compilation excluded
    compile_s: float  # their eager compilations
    callees: tuple[str, ...]  # the functions called in the loop whose eager ops are counted
    lines: frozenset[int]  # the driver's own lines whose eager ops are counted
    absorbed: frozenset[Any] = frozenset()  # codes of callees with a finding of their own, counted here
    carried: bool = True  # the loop carries a state into its steps (scan), else its items are independent (vmap)
    # the library calls doing most of the loop's eager work, counted apart from `ops` (whose
    # lines stay in `lines`); `reported` says whether what remains is still a loop finding
    library: LibraryCall | None = None
    reported: bool = True

    @property
    def call_s(self) -> float:
        return sum(step.call_s for step in self.steps)


def driven_loops(instrument: Instrument, roles: dict[Any, str], wall_s: float,
                 worth_a_finding: set[Any]) -> list[DrivenLoop]:
    """The loops of functions whose role is setup, or of drivers called per step, that do eager
    work around jitted steps.

    `roles` are `report.eager_roles` by code; `worth_a_finding` the codes of callees whose eager
    work is reported on its own (an un-jitted step, JAX101), left out of a setup function's loop."""
    if wall_s <= 0:
        return []
    setup = {code: instrument.eager[code] for code, role in roles.items()
             if role == SETUP or (role == DRIVER and instrument.eager[code].calls >= REPEATED)}
    loops: dict[tuple[Any, int, int], list[LoopedStep]] = {}
    for step in instrument.functions.values():
        if step.calls < LOOP_CALLS or not step.sampled_sites:
            continue
        (site, sampled), all_sampled = step.sampled_sites.most_common(1)[0], sum(step.sampled_sites.values())
        calls = round(step.calls * sampled / all_sampled)
        driver = next((code for code in setup if _issues_line(code, site)), None)
        if calls < LOOP_CALLS or driver is None:
            continue
        span = enclosing(site).loop
        if span is not None:
            looped = LoopedStep(step, site, calls, step.call_s * calls / step.calls)
            loops.setdefault((driver, *span), []).append(looped)
    callees: dict[Any, list[EagerRecord]] = {}
    for record in instrument.eager.values():
        for caller in record.caller_codes:
            callees.setdefault(caller, []).append(record)
    found = []
    for (driver, first, last), steps in loops.items():
        steps.sort(key=lambda s: (-s.calls, s.site.line))
        carried = carries_state(steps[0].record, steps[0].site, (first, last))
        # a loop in a per-step function whose iterations are independent runs per item (the
        # examples of a batch): its callees' work is the body vmapped. One that carries a state
        # (a line search's iterate) leaves an un-jitted callee its own finding: jitting it is the fix
        items = roles[driver] == DRIVER and not carried
        loop = _eager_work(setup[driver], tuple(steps), (first, last), callees.get(driver, []), roles,
                           set() if items else worth_a_finding, carried)
        loop = _split_library_calls(loop, wall_s)
        # the ops' compilation counts: a jitted loop compiles once, and on a short run under
        # load compilation is much of the wall time
        spent = loop.op_s + loop.compile_s + loop.call_s
        worth = bool(loop.steps) and loop.ops >= loop.iterations and spent >= LOOP_SHARE * wall_s
        if worth or loop.library is not None:
            found.append(dataclasses.replace(loop, reported=worth))
    taken = {(loop.driver.code, loop.first_line, loop.last_line) for loop in found}
    found.extend(_eager_only_loops(instrument, roles, wall_s, taken))
    return found


def _eager_only_loops(instrument: Instrument, roles: dict[Any, str], wall_s: float,
                      taken: set[tuple[Any, int, int]]) -> list[DrivenLoop]:
    """Loops with no jitted call in them (nor in what they call) whose own lines issue eager
    ops, in a function run once or at the script's top level (a sampler or a training loop
    written inline): `LOOP_CALLS` ops or more, taking `LOOP_SHARE` of the wall time with their
    compilation (which a jitted loop does once). Each line counts for the innermost loop around it."""
    # the lines jitted calls were made from, or the calls of the functions that made them:
    # a loop around one of them drives a jitted step (the loops above, or `_outer_loop`'s)
    jitted_lines = {site for record in instrument.functions.values() for site in record.sampled_sites}
    jitted_lines.update(outer for record in instrument.functions.values()
                        for _, outer in record.sampled_outer_sites)
    found = []
    for code, record in instrument.eager.items():
        if roles.get(code) != SETUP and code.co_name != "<module>":
            continue
        for (first, last), lines in lines_by_loop(record).items():
            if (code, first, last) in taken or any(
                    site.path == record.path and first <= site.line <= last for site in jitted_lines):
                continue
            ops, op_s, compile_s = record.work_of(lines)
            if ops < LOOP_CALLS or op_s + compile_s < LOOP_SHARE * wall_s:
                continue
            carried = loop_carries(record.path, (first, last))
            found.append(DrivenLoop(record, (), first, last, 0, ops, op_s, compile_s, (), frozenset(lines),
                                    carried=carried is not False))
    return found


def lines_by_loop(record: EagerRecord) -> dict[tuple[int, int], list[int]]:
    """The function's own lines that issued eager ops, by the innermost loop of the function
    around each (first, last line of the loop); lines in no loop of it left out."""
    spans: dict[tuple[int, int], list[int]] = {}
    for line in record.line_ops:
        span = enclosing(SourceLine(record.path, line)).loop
        if span is not None and span[0] >= record.line:  # the first line of its code
            spans.setdefault(span, []).append(line)
    return spans


def carries_state(record: FunctionRecord, site: SourceLine, span: tuple[int, int] | None = None) -> bool:
    """Whether the loop around `site` (`span`, else the innermost one) carries a state into the
    jitted call there: from the source where it tells (the state may pass through eager code, an
    optimiser's update, where the run sees no jitted output fed back), else from the run (most
    timed calls took an output of a jitted call)."""
    span = span or enclosing(site).loop
    carried = loop_carries_into_call(site, span) if span is not None else None
    return record.carries_state if carried is None else carried


def _eager_work(driver: EagerRecord, steps: tuple[LoopedStep, ...], span: tuple[int, int],
                callees: list[EagerRecord], roles: dict[Any, str], worth_a_finding: set[Any],
                carried: bool) -> DrivenLoop:
    first, last = span
    iterations = steps[0].calls
    inside = set(range(first, last + 1)) & _lines_of(driver.code)
    per_iteration = {line for line in inside if driver.line_ops[line] * PERIODIC >= iterations}
    ops, op_s, compile_s = driver.work_of(per_iteration)
    names, absorbed = [], set()
    for callee in callees:
        sites = [s for s in callee.callers if s.path == driver.path]
        if (callee.caller_codes != {driver.code} or callee.code in worth_a_finding
                or roles.get(callee.code) in (DRIVER, SETUP) or callee.calls * PERIODIC < iterations
                or not sites or not all(s.line in inside for s in sites)):
            continue
        ops += callee.ops
        op_s += callee.op_s
        compile_s += callee.compile_s
        names.append(callee.name)
        absorbed.add(callee.code)
    return DrivenLoop(driver, steps, first, last, iterations, ops, op_s, compile_s, tuple(names),
                      frozenset(per_iteration), frozenset(absorbed), carried)


def _split_library_calls(loop: DrivenLoop, wall_s: float) -> DrivenLoop:
    """The loop with the lines that call into one JAX library set apart (`DrivenLoop.library`),
    where those lines issue half or more of the loop's eager ops, at least `LIBRARY_CALL_OPS`
    per iteration, taking `LOOP_SHARE` of the wall time: a library function run op by op every
    iteration, whose call belongs inside the jitted step."""
    driver = loop.driver
    lines = [line for line in loop.lines if driver.line_library_ops[line] * 2 > driver.line_ops[line]]
    packages = {driver.line_library[line] for line in lines}
    if not lines or len(packages) != 1:
        return loop
    lines.sort(key=lambda line: (-driver.line_ops[line], line))
    ops, op_s, compile_s = driver.work_of(lines)
    inside = [step for step in loop.steps if step.site.path == driver.path and step.site.line in lines]
    steps = tuple(step for step in loop.steps if step not in inside)
    iterations = steps[0].calls if steps else loop.iterations
    if ops * 2 < loop.ops or ops < LIBRARY_CALL_OPS * iterations or op_s + compile_s < LOOP_SHARE * wall_s:
        return loop
    library = LibraryCall(packages.pop(), tuple(lines), ops, op_s, compile_s, tuple(inside))
    return dataclasses.replace(loop, steps=steps, iterations=iterations, ops=loop.ops - ops,
                               op_s=loop.op_s - op_s, compile_s=loop.compile_s - compile_s, library=library)


def _issues_line(code: Any, site: SourceLine) -> bool:
    return code.co_filename == site.path and site.line in _lines_of(code)


def _lines_of(code: Any) -> set[int]:
    """The lines of the function's own code (not those of functions defined inside it)."""
    return {line for _, _, line in code.co_lines() if line is not None}
