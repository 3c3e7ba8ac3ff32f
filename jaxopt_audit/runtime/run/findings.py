"""What went wrong at runtime, as findings with the rule codes of docs/rules.md.

From the instruments' records:

- JAX101 missing-jit: a user function called once per step that executed JAX ops one by one
  (at least two eager ops per call): its eager op count per call and its share of the wall time.
  The function named is the step (`report.eager_roles`): a helper called from the step is left
  to the step's finding, a function that calls the step in a loop (`train` around `train_step`)
  is not the one to jit, and work done once or every k steps (initialisation, evaluation) is
  setup, a line of the summary, never a finding.
- JAX102 jit-in-loop: `jax.jit` applied again and again at one line (a new wrapper, so a new
  trace, each time).
- JAX103 recompile-on-changing-input: a jitted function compiled again and again because an
  argument's shape, dtype, weak type, static value or structure changed (from JAX's cache-miss
  explanations, which name the argument), or because a static argument is a new function object
  on every call (a closure made per call and handed to a jitted function that takes it static,
  as `odeint` does: JAX explains nothing then, the instrument tells it from the arguments). It is
  reported at the user's line that made the call, never where a library applied `jax.jit`.
- JAX101 also for an un-jitted function with few ops whose own line compiled again on every call
  an op that takes a function (`lax.scan`, `fori_loop`, `cond`): the function it passes is made
  anew each call; the recompilations are the cost and the saving.
- JAX201 loop-to-scan (JAX202 loop-to-vmap where the calls take no jitted output of the call
  before): a jitted function called again and again from one line of a Python loop, the calls a
  large part of the run; or such a loop in a function run once, or in a per-step function (a
  loop over the examples of a batch), that issues eager ops around the jitted steps every
  iteration (`driven`): one finding for the loop, the whole body to scan or vmap, its eager
  work (its callees' included) no longer setup or a finding of its own. Where the calls' line
  is in a helper called once per item of another function's loop, or in a short loop of its
  own restarted with each item (a few Newton iterations per item), the finding is at that
  outer loop, the one whose items are independent (`_outer_loop`).
- JAX101 also at a line of such a loop whose eager ops come, most of them, from a call into a JAX
  library (optax's `optimiser.update` beside a jitted gradient: `driven.LibraryCall`): the call
  to move into the jitted step; the rest of the loop is a loop finding only if still worth one.
- JAX301 host-sync-in-step: a device array read on the host (`float`, `.item()`, `np.asarray`,
  `print`, ...) or `block_until_ready` at the same line again and again: a stall per step; or a
  host callback compiled code ran about once per step or more (`callbacks`), its measured time
  `CALLBACK_SHARE` of the wall time or more: the compiled program stops for it each run.
- JAX302 host-to-device-in-step: host (NumPy) data copied to the device at the same line again
  and again: as arguments of a jitted call, or through `jnp.asarray` / `jax.device_put`, or
  nested Python lists of numbers made into an array by `jnp.array` / `jnp.asarray` (converted
  element by element on the host first: that conversion is the cost and the saving).

"Again and again" is `REPEATED` or more separate occurrences: once or twice (a final print, a
warm-up) is not a per-step pattern, and neither is one burst of consecutive events at one line
with nothing else in between (a comprehension moving a dict of arrays to the device once), nor
a transfer `PERIODIC_STEPS` or more steps apart (logging every 100 steps: `step_period`), nor a
read once per call of a jitted function taking `AMORTISED_CALL_S` or more (an epoch as one
scan: the wait is for that much work); one every few steps is reported with its period. A
`block_until_ready` followed by a timer read is a benchmark's measurement, which needs the
wait, not a stall. A transfer in code a third-party
library calls in its own loop (SciPy's optimizer evaluating the objective) happens as often as
that loop iterates and the library gives and takes host values there: a line of the summary
with its count (`report.driven_notes`), not a finding.
Each finding has `cost_s`, the time it took in this run where it is measured, and `saving_s`,
what fixing it saves where a counterfactual is measured, with `saving_method` saying how or why
there is no estimate: JAX102 and JAX103 save the compile time of the compilations after the
first; a JAX302 copy made by `jnp.asarray` or `jax.device_put` saves the time of those calls,
one made by passing NumPy arrays to a jitted call the time of copying such arrays, measured
after the run (`copy_saving`);
JAX101 saves its eager time less the jitted function's time, measured after the run by jitting
the function on the argument shapes it was called with (`jit_saving`); JAX201/JAX202 save the
calls' time less that of one jitted `lax.scan` or `vmap` of them, timed after the run on inputs
of the recorded shapes (`loop_saving`), plus, for a loop with eager work around its steps, that
work's measured op and compile time, and for a loop whose outputs are stacked by one eager op
afterwards (`jnp.stack` over thousands of them compiles an op with that many operands), that
op's time, which the scan or vmap makes unnecessary; a JAX301 read of a
jitted function's output saves the time waited beyond that function's device work (each read
waits for at most one call); other waits (a sync, a read of an unknown array) have no
estimate, and cost_s bounds them. Findings come ordered by
saving, else by cost (`RuntimeFinding.rank_s`).

Then, when the static scan is available, each finding is marked `confirmed_by_scan` if the scan
reports the same code at that line.
"""

from __future__ import annotations

import linecache
import math
import os
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from types import CodeType
from typing import Any

from ...units import seconds
from . import jit_saving, loop_saving
from .arguments import NOT_FUNCTIONS
from .cachemiss import DTYPE, NEW_FUNCTION_ARGUMENT, PYTREE, REDEFINED, SHAPE, STATIC, WEAK_TYPE
from .catalog import RUN_CODES
from .copy_saving import copies_saving
from .driven import LOOP_CALLS, LOOP_SHARE, DrivenLoop, LibraryCall, carries_state, lines_by_loop
from .instrument import EagerRecord, FunctionRecord, Instrument, LineWork, TransferKey
from .jit_saving import JitSaving
from .report import (
    EAGER_OPS_WORTH_A_JIT,
    EagerFunctionReport,
    RuntimeFinding,
    eager_functions,
    eager_loops,
    eager_roles,
)
from .roles import REPEATED, STEP
from .sites import SourceLine, display_path
from .source_loops import enclosing, loop_carries, loop_carries_into_call
from .transforms import TransformRecord

PERIODIC_STEPS = 10  # a transfer this many steps apart or more is amortised: not a finding
CONTROL_FLOW_SHARE = 0.01  # of the wall time a jit must be measured to save a function whose one op is a lax loop

RULE_NAMES = RUN_CODES  # code -> stable name, for every code `run` reports

_FIX_BY_KIND = {
    SHAPE: "give the argument a fixed shape (pad or bucket sizes) or mark it static only if it "
           "takes few values",
    DTYPE: "cast the argument to one dtype before the call",
    WEAK_TYPE: "pass a typed array (jnp.float32(x)) instead of alternating Python scalars and arrays",
    STATIC: "make the argument a traced array instead of static_argnums/static_argnames, or limit "
            "its values",
    PYTREE: "keep the argument's structure (keys, lengths, None entries) the same on every call",
    REDEFINED: "create the jitted function once, outside the loop, and call it in the loop",
    NEW_FUNCTION_ARGUMENT: "pass the same function object on every call: define it once (at module level, "
                           "what it closed over passed as arguments), or jit the function that makes it so the "
                           "call is traced inside one compiled program",
}


def derive_findings(instrument: Instrument, wall_s: float, measure: bool = False) -> list[RuntimeFinding]:
    """All runtime findings, the one whose fix saves most first (`RuntimeFinding.rank_s`).

    With `measure` (after the program has finished, instruments off) each JAX101 saving is
    measured by jitting the function on its recorded arguments (`jit_saving`), and the copies
    of a jitted call's NumPy arguments by copying arrays of their shapes (`copy_saving`)."""
    findings: list[RuntimeFinding] = []
    covered: set[tuple[str, int]] = set()  # eager-op copy lines reported at an un-jitted function's call
    records = {(display_path(r.path), r.line, r.name): r for r in instrument.eager.values()}
    loops = eager_loops(instrument, wall_s)
    calling = {id(t): _calling_lines(t, instrument) for t in instrument.transforms.records.values()}
    transformed = [t for t in instrument.transforms.records.values()
                   if _transformed_per_step(t, calling[id(t)], instrument)]
    in_loops = {(display_path(instrument.eager[code].path), instrument.eager[code].line)
                for loop in loops for code in loop.absorbed}
    # (record, its findings) of the un-jitted steps; the transformed functions their jit covers
    steps: list[tuple[EagerRecord, EagerFunctionReport, list[RuntimeFinding]]] = []
    covered_transforms: set[int] = set()
    for eager in eager_functions(instrument, wall_s):
        # a callee of a loop reported whole (`DrivenLoop.absorbed`) is part of that loop's finding
        own = records.get((eager.path, eager.line, eager.name))
        # one op per call gains nothing from a jit, unless it is a lax loop or branch run eagerly
        # (its body traced and its loop dispatched on every call), called `PERIODIC_STEPS` times
        # or more, and a jit is measured to gain `CONTROL_FLOW_SHARE` of the wall time
        by_ops = eager.ops_per_call >= EAGER_OPS_WORTH_A_JIT
        control_flow = own is not None and own.control_flow_ops >= own.calls >= PERIODIC_STEPS
        if (eager.role != STEP or own is None or not (by_ops or (control_flow and measure))
                or (eager.path, eager.line) in in_loops):
            continue
        saving = _jit_saving(own, eager) if measure else None
        gained = saving.saving_s if saving is not None and saving.saving_s is not None else 0.0
        if not by_ops and gained < max(CONTROL_FLOW_SHARE * wall_s, 1e-9):
            continue
        through = [t for t in transformed if own.code in t.caller_codes]
        if through and 2 * sum(own.line_ops[site.line] for t in through for site in t.callers
                               if site.path == own.path) >= own.own_ops:
            # its own work is a transformed function's calls: where it cannot be jitted as
            # written (an objective converting to floats), the jit goes where that is made
            if saving is not None and saving.saving_s is None:
                continue
            covered_transforms.update(id(t) for t in through)
        # jitting it as written measured to save nothing, its work in a loop of its own: the
        # loop unrolls into a long compile; the loop is the thing to change
        unrolled = _loop_in_function(own, wall_s, saving) if saving is not None and saving.saving_s == 0 else None
        found = [unrolled or _missing_jit(eager, saving, control_flow)]
        if eager.h2d_transfers >= REPEATED and eager.called_from:
            found.append(_copied_by_eager_ops(eager))
        steps.append((own, eager, found))
    reported_transforms = [t for t in transformed if id(t) not in covered_transforms]
    findings.extend(_transformed_call(t, calling[id(t)], wall_s, measure) for t in reported_transforms)
    # a function run mostly inside those calls (the loss a gradient traces) is their finding's
    callers = {site for t in reported_transforms for site in t.callers}
    for own, eager, found in steps:
        if callers and 2 * sum(n for site, n in own.callers.items() if site in callers) >= sum(own.callers.values()):
            continue
        findings.extend(found)
        if len(found) > 1:
            covered.update((path, line) for path, line, _ in eager.h2d_lines)
    reported = {(f.path, f.line) for f in findings if f.code == "JAX101"}
    for eager_record in instrument.eager.values():
        if (display_path(eager_record.path), eager_record.line) not in reported:
            findings.extend(_eager_recompiling(eager_record, instrument))
    # a loop doing eager work around jitted steps in a function run once: one finding for all of it
    looped: set[int] = set()
    for loop in loops:
        if loop.library is not None:
            findings.append(_library_call(loop, loop.library, wall_s))
        if loop.reported:
            findings.append(_driven_loop(loop, wall_s, measure))
            looped.update(id(step.record) for step in loop.steps)
    for record in instrument.functions.values():
        findings.extend(_jit_rebuilt(record))
        findings.extend(_recompiling(record))
        if id(record) not in looped:
            findings.extend(_python_loop(record, wall_s, measure))
    findings.extend(f for f in _transfers(instrument, measure) if (f.path, f.line) not in covered or f.code != "JAX302")
    findings.extend(_callbacks(instrument, wall_s))
    # the largest measured saving (else cost) first; the place breaks ties, so equal runs list alike
    return sorted(findings, key=lambda f: (-f.rank_s, f.path, f.line, f.code, f.message))


def _loop_in_function(record: EagerRecord, wall_s: float, jitted: JitSaving) -> RuntimeFinding | None:
    """The loop of a per-step function holding half or more of its own eager ops, as the
    finding in place of its JAX101, or None. Only where jitting the function as written was
    measured to save nothing (`jitted`): traced under jit, the loop unrolls, so the compilation
    grows with its iterations; the body vmapped over the loop's items (or scanned, where the
    loop carries a state) inside the jitted function compiles once. The saving is the calls'
    eager time less their jitted time, as `jitted` timed them, plus the run's eager
    compilations; the compiled loop's own compilation is not timed (said so)."""
    if jitted.eager_call_s is None or jitted.jitted_call_s is None or not record.own_ops:
        return None
    spans = Counter({span: record.work_of(lines).ops for span, lines in lines_by_loop(record).items()})
    if not spans:
        return None
    (first, last), ops = spans.most_common(1)[0]
    if 2 * ops < record.own_ops or ops < LOOP_CALLS:
        return None
    _, op_s, compile_s = record.work_of(line for line in record.line_ops if first <= line <= last)
    carried = loop_carries(record.path, (first, last)) is not False
    code = "JAX201" if carried else "JAX202"
    body = ("as lax.scan or lax.fori_loop (the state it carries as the carry)" if carried else
            "jax.vmap'ed over the items the loop goes through")
    eager_s = op_s + compile_s
    per_call = ops / record.calls if record.calls else 0
    # the calls as timed after the run, eager against jitted, without the unrolled loop's
    # compilation, which the fix does not have (its own, smaller one is not timed)
    saving = record.calls * (jitted.eager_call_s - jitted.jitted_call_s) + record.compile_s
    method = (f"measured: {record.calls} calls of {record.name} as written took {seconds(jitted.eager_call_s)} "
              f"each, jitted {seconds(jitted.jitted_call_s)} each (timed alike after the run), and its eager ops "
              f"compiled for {seconds(record.compile_s)} in the run; not counted: compiling the loop written as "
              f"{'a scan' if carried else 'a vmap'}, which is not timed. Jitting {record.name} as written, its "
              f"loop unrolled: {jitted.method.removeprefix('measured: ')}")
    return RuntimeFinding(
        code, RULE_NAMES[code], display_path(record.path), first,
        f"{record.name}'s loop (lines {first}-{last}) issued {ops} of its {record.own_ops} eager ops "
        f"({per_call:.0f} per call over {record.calls} calls; {seconds(op_s)}"
        + (f" and {seconds(compile_s)} compiling them" if compile_s else "")
        + f", {eager_s / wall_s if wall_s > 0 else 0:.0%} of the wall time): jitting {record.name} as written unrolls "
        "the loop, and was measured to save nothing",
        f"write the loop's body {body} inside {record.name}, then jax.jit {record.name}: one compiled loop "
        "instead of an unrolled one", ops, round(eager_s, 6), function=record.name,
        saving_s=round(max(0.0, saving), 6), saving_method=method)


def _calling_lines(transform: TransformRecord, instrument: Instrument) -> LineWork:
    """The eager work of the lines calling a transformed function (its backward or batched pass)."""
    ops, op_s, compile_s = 0, 0.0, 0.0
    for code in transform.caller_codes:
        caller = instrument.eager.get(code)
        if caller is not None:
            work = caller.work_of({site.line for site in transform.callers
                                   if site.path == caller.path and site.line in caller.line_ops})
            ops, op_s, compile_s = ops + work.ops, op_s + work.op_s, compile_s + work.compile_s
    return LineWork(ops, op_s, compile_s)


def _transformed_per_step(transform: TransformRecord, lines: LineWork, instrument: Instrument) -> bool:
    """Called `REPEATED` times or more, about as often as the program's steps, with
    `EAGER_OPS_WORTH_A_JIT` eager ops per call or more from the calling lines."""
    return (transform.calls >= REPEATED and transform.calls * PERIODIC_STEPS >= _steps(instrument)
            and lines.ops >= EAGER_OPS_WORTH_A_JIT * transform.calls)


def _steps(instrument: Instrument) -> int:
    """The program's steps, as jitted calls: the calls of its most called jitted function."""
    return max((r.calls for r in instrument.functions.values()), default=0)


def _transformed_call(transform: TransformRecord, lines: LineWork, wall_s: float,
                      measure: bool) -> RuntimeFinding:
    """JAX101 at the line that made a transformed function the program calls without jit; the
    saving measured by jitting the function made there on the recorded arguments
    (`jit_saving`), against its eager calls timed alike."""
    callers = ", ".join(f"{display_path(site.path)}:{site.line}" for site, _ in transform.callers.most_common(3))
    eager_s = lines.op_s + lines.compile_s
    made = "made here" if transform.made == 1 else f"made here {transform.made} times"
    message = (f"{transform.expression}, {made}, is called without jit {transform.calls} times "
               f"(from {callers}): each call traces {transform.name} again and runs its "
               f"{'batched' if transform.api == 'jax.vmap' else 'derivative'} computation op by op, "
               f"{lines.ops} eager ops from the calling line ({seconds(eager_s)}, "
               f"{eager_s / wall_s if wall_s > 0 else 0:.0%} of the wall time, the tracing not counted)")
    fix = (f"jax.jit({transform.expression}) here, once, and call that: the caller need not be jitted "
           "(an optimizer's objective converting to floats can call a jitted gradient)")
    if measure:
        try:
            saving = jit_saving.measure(transform.latest, transform.argument_samples, transform.calls,
                                        lines.compile_s)
        except (Exception, SystemExit) as exc:  # the measurement is an extra: it never costs the report
            saving = JitSaving(None, f"no estimate: measuring the jitted function failed ({type(exc).__name__})")
    else:
        saving = JitSaving(None, "no estimate: the jitted function's time is not measured (--trace)")
    return RuntimeFinding(
        "JAX101", RULE_NAMES["JAX101"], display_path(transform.path), transform.line, message, fix, transform.calls,
        round(eager_s, 6), function=transform.name, saving_s=saving.saving_s, saving_method=saving.method)


def _jit_saving(record: EagerRecord | None, eager: EagerFunctionReport) -> JitSaving:
    if record is None:
        return JitSaving(None, "no estimate: the function's record was not found")
    try:
        return jit_saving.measure(jit_saving.function_of(record.code), record.argument_samples, eager.calls,
                                  eager.compile_s)
    except (Exception, SystemExit) as exc:  # the measurement is an extra: it never costs the report
        return JitSaving(None, f"no estimate: measuring the jitted function failed ({type(exc).__name__})")


def _missing_jit(eager: EagerFunctionReport, saving: JitSaving | None, control_flow: bool = False) -> RuntimeFinding:
    where = f" (called from {', '.join(eager.called_from)})" if eager.called_from else ""
    compiled = f", {eager.compiles} eager compilations ({seconds(eager.compile_s)})" if eager.compiles else ""
    loops = (" (lax loops or branches run outside jit: each call traces the Python body again and dispatches "
             "the loop)" if control_flow else "")
    return RuntimeFinding(
        "JAX101", RULE_NAMES["JAX101"], eager.path, eager.line,
        f"{eager.name} is not jitted and ran {eager.ops_per_call:.0f} JAX ops one by one per call{loops} over "
        f"{eager.calls} calls{where}: {eager.ops} eager ops{compiled}, {eager.wall_share:.0%} of the wall "
        "time inside them",
        f"jax.jit {eager.name} (or the step that calls it) so each call is one compiled program",
        eager.calls, round(eager.op_s + eager.compile_s, 6), function=eager.name,
        saving_s=saving.saving_s if saving is not None else None,
        saving_method=saving.method if saving is not None else
        "no estimate: the jitted function's time is not measured (--trace); fixing it saves at most "
        "cost_s, the time in its eager ops and their compilation")


# primitives that take a function (traced into a jaxpr on each call that passes a new one)
_TRACING_OPS = frozenset({"scan", "while", "cond", "pjit", "jit", "closed_call", "core_call", "custom_jvp_call",
                          "custom_vjp_call", "custom_vjp_call_jaxpr", "checkpoint", "remat", "shard_map",
                          "custom_lin", "xla_pmap", "map"})


def _eager_recompiling(record: EagerRecord, instrument: Instrument) -> Iterable[RuntimeFinding]:
    """An un-jitted function whose own line runs an op that takes a function (`lax.scan`,
    `fori_loop`, `cond`) and compiled it again on every call: the function it passes is a new
    object each call (a closure defined inside), so JAX traces and compiles the op again. Few
    ops per call, so not JAX101's op-by-op cost: the recompilations are the cost and the saving."""
    if record.calls < REPEATED or record.code.co_name in NOT_FUNCTIONS:
        return
    again = record.compile_s - record.first_call_compile_s
    lines = [line for line, n in record.line_compiles.items()
             if n >= record.calls and set(record.line_compiled_ops.get(line, {})) & _TRACING_OPS]
    if not lines or again <= 0:
        return
    line = max(lines, key=lambda n: record.line_compile_s.get(n, 0.0))
    ops = "/".join(sorted(set(record.line_compiled_ops[line]) & _TRACING_OPS))
    nested = sorted((c.co_firstlineno, c.co_name) for c in record.code.co_consts
                    if isinstance(c, CodeType) and c.co_name not in NOT_FUNCTIONS)
    made = (f": the function it is given, {', '.join(f'{n} (line {first})' for first, n in nested[:3])} defined "
            f"inside {record.name}, is a new object on every call, so JAX traces and compiles it again"
            if nested else ": the function it is given is a new object on every call, so JAX traces and "
                           "compiles it again")
    static = record.function_parameters + record.int_parameters
    static_text = f" with static_argnames={static!r}" if static else ""
    last = max((n for _, _, n in record.code.co_lines() if n is not None), default=record.line)
    reads = sorted({key.line for key in instrument.transfers if key.direction == "d2h"
                    and key.path == record.path and record.line <= key.line <= last})
    moved = f"; move its host reads (line {', '.join(map(str, reads))}) out of it first" if reads else ""
    path = display_path(record.path)
    yield RuntimeFinding(
        "JAX101", RULE_NAMES["JAX101"], path, line,
        f"{record.name} is not jitted and its {ops} here compiled again on each of its {record.calls} calls "
        f"({record.compiles} eager compilations, {seconds(record.compile_s)}){made}",
        f"jax.jit {record.name}{static_text} so the {ops} is traced and compiled once{moved}; or create the "
        "function it is given once and pass the same object each call",
        record.calls, round(record.op_s + record.compile_s, 6), function=record.name,
        saving_s=round(again, 6),
        saving_method="measured: the eager compile time after its first call, which compiling once removes")


def _copied_by_eager_ops(eager: EagerFunctionReport) -> RuntimeFinding:
    path, _, line = eager.called_from[0].rpartition(":")
    lines = ", ".join(f"{os.path.basename(p)}:{n} x{c}" for p, n, c in eager.h2d_lines[:6])
    return RuntimeFinding(
        "JAX302", RULE_NAMES["JAX302"], path, int(line),
        f"{eager.h2d_transfers} host (NumPy) arrays given to {eager.name} here were copied to the device by "
        f"its eager ops over {eager.calls} calls, {eager.h2d_transfers / eager.calls:.0f} per call ({lines})",
        "move the data set to the device once (jax.device_put before the loop) and slice it on the device, "
        f"and jax.jit {eager.name}", eager.h2d_transfers, None, function=eager.name,
        saving_method="no estimate: the copies happen inside the eager ops, whose time is JAX101's cost")


def _jit_rebuilt(record: FunctionRecord) -> Iterable[RuntimeFinding]:
    for site, created in record.jit_sites.items():
        if created < REPEATED:
            continue
        compiled = f"; it was compiled {record.compiles} times" if record.compiles > 1 else ""
        yield RuntimeFinding(
            "JAX102", RULE_NAMES["JAX102"], display_path(site.path), site.line,
            f"jax.jit was applied to {record.name} {created} times at this line: every new wrapper "
            f"starts with an empty cache and is traced again{compiled}",
            _FIX_BY_KIND[REDEFINED], created, round(record.compile_s, 6), function=record.name,
            saving_s=_recompile_s(record), saving_method=_RECOMPILES_MEASURED)


def _recompiling(record: FunctionRecord) -> Iterable[RuntimeFinding]:
    recompiles = [r for r in record.recompiles if REDEFINED not in r.kinds]
    if len(recompiles) + 1 < REPEATED:
        return
    kinds: Counter[str] = Counter(kind for r in recompiles for kind in r.kinds)
    arguments: Counter[str] = Counter(arg for r in recompiles for arg in r.arguments)
    sites: Counter[tuple[str, int]] = Counter((r.site.path, r.site.line) for r in recompiles if r.site)
    if sites:
        (path, line), _ = sites.most_common(1)[0]
    else:
        path, line = record.path, record.line
    every = f"{record.calls} calls" + (" (every call)" if record.compiles >= record.calls else "")
    changed = ", ".join(f"{arg}" for arg, _ in arguments.most_common()) or "its inputs"
    what = ", ".join(kind for kind, _ in kinds.most_common())
    top_kind = kinds.most_common(1)[0][0]
    example = next(r.reason for r in reversed(recompiles) if top_kind in r.kinds)
    # a function given a new function object from several lines: each line is a place to fix
    if len(sites) > 1:
        example += "; recompiled from " + ", ".join(f"{os.path.basename(p)}:{n} x{c}"
                                                    for (p, n), c in sites.most_common(6))
    fix = "; ".join(_FIX_BY_KIND[k] for k, _ in kinds.most_common() if k in _FIX_BY_KIND) or \
        "keep the arguments' shapes, dtypes and static values the same from call to call"
    yield RuntimeFinding(
        "JAX103", RULE_NAMES["JAX103"], display_path(path), line,
        f"{record.name} was compiled {record.compiles} times in {every} because {changed} changed "
        f"({what}); last: {example}",
        fix, record.compiles, round(record.compile_s, 6), function=record.name,
        saving_s=_recompile_s(record), saving_method=_RECOMPILES_MEASURED)


def _python_loop(record: FunctionRecord, wall_s: float, measure: bool = False) -> Iterable[RuntimeFinding]:
    """A jitted function called again and again from one line, the calls a large part of the run.

    Each call is a dispatch from Python; one `lax.scan` (a state carried from call to call: an
    argument that is an earlier call's output) or one `vmap` (independent calls) replaces them.
    With `measure` (after the program has finished) the scanned or vmapped loop is timed against
    the calls one by one (`loop_saving`)."""
    cost = record.call_s + record.stacked_s
    if record.calls < LOOP_CALLS or wall_s <= 0 or cost < LOOP_SHARE * wall_s or not record.sampled_sites:
        return
    if record.wrappers_created >= REPEATED or len(record.recompiles) + 1 >= REPEATED:
        return  # the loop re-traces or recompiles: JAX102/JAX103 come first
    (site, _), sampled = record.sampled_sites.most_common(1)[0], sum(record.sampled_sites.values())
    carried = carries_state(record, site)
    code = "JAX201" if carried else "JAX202"
    fix = ("run the loop as lax.scan (or lax.fori_loop) inside one jitted function: one dispatch for all "
           "the steps" if carried else
           f"jax.vmap {record.name} over the values the loop goes through: one call instead of {record.calls}")
    how = "each step's state comes from the call before" if carried else "the calls are independent"
    outer = _outer_loop(record, site, sampled)
    if outer is not None:
        site, code, fix, how = outer
        carried = code == "JAX201"
    if measure:
        saving = loop_saving.measure(record, carried)
        if saving.saving_s is not None and saving.saving_s > record.call_s:
            # timed on a busier machine than the run: no fix saves more than the calls took
            saving = loop_saving.LoopSaving(round(record.call_s, 6), f"{saving.method}; at most the calls' "
                                                                     f"{seconds(record.call_s)} in the run")
        if saving.saving_s is not None and record.stacked_s:
            saving = loop_saving.LoopSaving(
                round(saving.saving_s + record.stacked_s, 6),
                f"{saving.method}; plus {seconds(record.stacked_s)} stacking up to {record.stacked_outputs} of its "
                f"outputs in one eager op after the loop (compiled for that many operands), which the "
                f"{'scan' if carried else 'vmap'} returns stacked")
    else:
        saving = loop_saving.LoopSaving(None, "no estimate: the scanned or vmapped loop is not timed (--trace); "
                                              "cost_s, the program's time inside the calls, bounds what it saves")
    yield RuntimeFinding(
        code, RULE_NAMES[code], display_path(site.path), site.line,
        f"{record.name} was called {record.calls} times from a Python loop here ({how}): "
        f"{seconds(record.call_s / record.calls)} of the program's time per call, "
        f"{record.call_s / wall_s:.0%} of the wall time in the calls"
        + (f", and {seconds(record.stacked_s)} stacking up to {record.stacked_outputs} of their outputs in one "
           "eager op after the loop" if record.stacked_s else ""),
        fix, record.calls, round(cost, 6), function=record.name,
        saving_s=saving.saving_s, saving_method=saving.method)


def _outer_loop(record: FunctionRecord, site: SourceLine, sampled: int) -> tuple[SourceLine, str, str, str] | None:
    """The loop to change when it is not the one around the calls: (its call line, code, fix,
    how the calls go), or None.

    The calls' line is in a function another line calls from a loop, and either the line is in
    no loop of its function (a helper making one call per item), or its loop carries a state in
    chains shorter than `PERIODIC_STEPS` calls (a few Newton iterations per item, the chain
    restarting with each item: the share of calls taking a jitted output says how long): the
    items are the outer loop's, independent of each other, so that loop is the one to vmap."""
    outers = Counter({outer: n for (inner, outer), n in record.sampled_outer_sites.items() if inner == site})
    if not outers:
        return None
    outer, _ = outers.most_common(1)[0]
    inner = enclosing(site)
    if inner.function is None or enclosing(outer).loop is None:
        return None
    carried_share = record.sampled_carried / sampled
    chain = 1 / (1 - carried_share) if carried_share < 1 else math.inf
    if inner.loop is not None and not (record.carries_state and chain < PERIODIC_STEPS):
        return None
    how = (f"in {inner.function} (lines {inner.function_span[0]}-{inner.function_span[1]})" if inner.function_span
           else f"in {inner.function}")
    outer_span = enclosing(outer).loop
    if inner.loop is None and outer_span is not None and loop_carries_into_call(outer, outer_span):
        # the outer loop hands its state to the helper each iteration (`x, f = relax(x, f)`):
        # the iterations are a chain, scanned, not items to vmap
        return outer, "JAX201", (
            f"run the loop as lax.scan (or lax.fori_loop) with {inner.function} as its body, inside one jitted "
            f"function: one dispatch for all the iterations instead of {record.calls} calls of {record.name}"), (
            how + ", once per iteration of the loop here, which carries its state into it")
    if inner.loop is not None:
        how += (f", whose own loop carries a state in short chains: {record.sampled_carried} of {sampled} timed "
                "calls took the output of the call before, the others began a new item of the loop here")
    else:
        how += ", once per item of the loop here"
    fix = (f"jax.vmap {inner.function} over the items of this loop, inside one jitted function"
           + (" (its own loop as lax.while_loop or lax.fori_loop)" if inner.loop is not None else "")
           + f": one dispatch for all of them instead of {record.calls} calls of {record.name}")
    return outer, "JAX202", fix, how


def _driven_loop(loop: DrivenLoop, wall_s: float, measure: bool) -> RuntimeFinding:
    """A function run once whose loop calls jitted steps and does eager work around them every
    iteration (`driven.driven_loops`): one finding at the most called step's call, the whole
    loop body to scan.

    The saving adds measured parts only: the loop's eager ops and their compilation in this run,
    which one jitted loop removes, (`measure`) what scanning or vmapping each step's calls saves,
    timed as for a loop of jitted calls (`loop_saving`), and the eager stacking of the steps'
    outputs after the loop (`FunctionRecord.stacked_s`), which a compiled loop returns stacked."""
    if not loop.steps:
        return _eager_loop(loop, wall_s)
    driver, top = loop.driver, loop.steps[0]
    eager_s = loop.op_s + loop.compile_s
    compiled = f" and {seconds(loop.compile_s)} compiling them" if loop.compile_s else ""
    callees = f" (with {', '.join(loop.callees)})" if loop.callees else ""
    calls = " and ".join(f"{s.record.name} {s.calls} times" for s in loop.steps)
    around = "it" if len(loop.steps) == 1 else "them"
    message = (f"{driver.name}'s loop (lines {loop.first_line}-{loop.last_line}) calls {calls} and issues "
               f"{loop.ops} eager ops around {around}{callees} ({loop.ops / loop.iterations:.0f} per iteration, "
               f"{seconds(eager_s)}, {eager_s / wall_s:.0%} of the wall time; {seconds(loop.call_s)} more in the "
               f"calls): the loop's own JAX work runs op by op every iteration")
    # a loop that carries no state into its steps goes over independent items (the examples of a
    # batch): mapped rather than scanned
    carried = loop.carried
    code = "JAX201" if carried else "JAX202"
    fix = ("run the whole loop body (the eager ops and the step) as lax.scan or lax.fori_loop inside one jitted "
           "function: one dispatch for all the iterations" if carried else
           "jax.vmap the whole loop body (the step and the eager work around it) over the items the loop goes "
           "through, inside one jitted function, and sum or stack the results after: one dispatch for all of them")
    where = (display_path(top.site.path), top.site.line)
    stacked_s = sum(step.record.stacked_s * step.calls / step.record.calls for step in loop.steps)
    cost = round(eager_s + loop.call_s + stacked_s, 6)
    if not measure:
        return RuntimeFinding(
            code, RULE_NAMES[code], *where, message, fix, top.calls, cost, function=top.record.name,
            saving_method="no estimate: the scanned loop is not timed (--trace) and the eager ops' time is "
                          "inflated by the profiler; cost_s, the loop's eager ops and calls, bounds what it saves")
    parts = [f"the loop's {loop.ops} eager ops took {seconds(loop.op_s)}{compiled} in this run, which one "
             "jitted loop removes"]
    saving = eager_s
    for step in loop.steps:
        name = step.record.name
        if step.record.wrappers_created >= REPEATED or len(step.record.recompiles) + 1 >= REPEATED:
            parts.append(f"{name}'s calls are not counted: the loop re-traces or recompiles it (JAX102/JAX103)")
            continue
        scanned = loop_saving.measure(step.record, carried)
        if scanned.saving_s is None:
            parts.append(f"{name}'s calls are not counted ({scanned.method})")
            continue
        # the measurement scales to all the function's calls: this loop's share of them
        share = step.calls / step.record.calls
        saving += scanned.saving_s * share
        parts.append(f"plus {seconds(scanned.saving_s * share)} from {'scanning' if carried else 'vmapping'} "
                     f"{name}'s calls ({scanned.method.removeprefix('measured: ')})")
        if step.record.stacked_s:
            stacked = step.record.stacked_s * share
            saving += stacked
            parts.append(f"plus {seconds(stacked)} stacking up to {step.record.stacked_outputs} of {name}'s outputs in "
                         "one eager op after the loop, which the loop compiled as one returns stacked")
    parts.append("not subtracted: the time the same ops take compiled inside the loop, which is not timed")
    return RuntimeFinding(
        code, RULE_NAMES[code], *where, message, fix, top.calls, cost, function=top.record.name,
        saving_s=round(saving, 6), saving_method="measured: " + "; ".join(parts))


def _library_call(loop: DrivenLoop, library: LibraryCall, wall_s: float) -> RuntimeFinding:
    """Calls into a JAX library on a loop's lines that run its work op by op every iteration
    (`driven.LibraryCall`): JAX101 at the line issuing most of them; the saving is their eager
    ops' measured time and compilation, which one jitted step removes, less nothing (the
    compiled call's own time is not timed: said so)."""
    driver, top = loop.driver, library.lines[0]
    eager_s = library.op_s + library.compile_s
    compiled = f" and {seconds(library.compile_s)} compiling them" if library.compile_s else ""
    calls = "the call" if len(library.lines) == 1 else f"the calls (lines {', '.join(map(str, sorted(library.lines)))})"
    per = f", {library.ops / loop.iterations:.0f} per iteration" if loop.iterations else ""
    who = "the script's" if driver.code.co_name == "<module>" else f"{driver.name}'s"
    into = f"into the jitted {loop.steps[0].record.name}" if loop.steps else "into one jitted step function"
    message = (f"{calls} into {library.package} in {who} loop (lines {loop.first_line}-{loop.last_line}) ran "
               f"{library.ops} JAX ops one by one{per} ({seconds(library.op_s)}{compiled}, "
               f"{eager_s / wall_s:.0%} of the wall time): the library's work is not jitted")
    fix = (f"move {calls} {into} (or jax.jit a function making them) so the library's work is one compiled "
           "program per iteration")
    return RuntimeFinding(
        "JAX101", RULE_NAMES["JAX101"], display_path(driver.path), top, message, fix, library.ops,
        round(eager_s + sum(step.call_s for step in library.calls), 6),
        function=driver.name if driver.code.co_name != "<module>" else None, saving_s=round(eager_s, 6),
        saving_method=f"measured: the calls' {library.ops} eager ops took {seconds(library.op_s)}{compiled} in this "
                      "run, which jitting them removes; not subtracted: the compiled calls' own time, which is not "
                      "timed")


def _eager_loop(loop: DrivenLoop, wall_s: float) -> RuntimeFinding:
    """A loop of eager ops alone in a function run once or at the script's top level: one
    finding at the loop's first line; the saving is the ops' measured time and compilation,
    less nothing (the compiled loop's own time is not timed: said so)."""
    driver = loop.driver
    who = "the script's" if driver.code.co_name == "<module>" else f"{driver.name}'s"
    eager_s = loop.op_s + loop.compile_s
    compiled = f" and {seconds(loop.compile_s)} compiling them" if loop.compile_s else ""
    code = "JAX201" if loop.carried else "JAX202"
    message = (f"{who} loop (lines {loop.first_line}-{loop.last_line}) calls no jitted function and its lines issued "
               f"{loop.ops} eager ops ({seconds(loop.op_s)}{compiled}, {eager_s / wall_s:.0%} of the wall time): "
               "the loop's JAX work runs op by op every iteration")
    fix = ("run the loop as lax.scan or lax.fori_loop inside one jitted function (the state it carries as the "
           "carry), or jit its body as a step function: one dispatch per loop or per iteration" if loop.carried else
           "jax.vmap the loop body over the items the loop goes through, inside one jitted function")
    return RuntimeFinding(
        code, RULE_NAMES[code], display_path(driver.path), loop.first_line, message, fix, loop.ops,
        round(eager_s, 6), function=driver.name if driver.code.co_name != "<module>" else None,
        saving_s=round(eager_s, 6),
        saving_method=f"measured: the loop's {loop.ops} eager ops took {seconds(loop.op_s)}{compiled} in this run, "
                      "which one jitted loop removes; not subtracted: the compiled loop's own time and "
                      "compilation, which are not timed")


_RECOMPILES_MEASURED = "measured: the compile time of every compilation after the first, which the fix removes"


def _recompile_s(record: FunctionRecord) -> float:
    return round(max(0.0, record.compile_s - record.first_compile_s), 6)


def step_period(instrument: Instrument, key: TransferKey) -> float | None:
    """Steps between two occurrences of a transfer (median), None when it cannot be told.

    A step is a call of the function the program calls most often (jitted or running ops
    eagerly): the run's clock counts every such call of every function, so a step advances it
    by clock / hottest calls on average."""
    clocks = instrument.occurrence_clocks.get(key, [])
    roles = eager_roles(instrument)  # a helper called several times per step is not the step
    hottest = max([r.calls for r in instrument.functions.values()]
                  + [instrument.eager[code].calls for code, role in roles.items() if role == STEP], default=0)
    if len(clocks) < 2 or not hottest or not instrument.clock:
        return None
    gaps = [later - earlier for earlier, later in zip(clocks, clocks[1:], strict=False)]
    return statistics.median(gaps) * hottest / instrument.clock


def _transfers(instrument: Instrument, measure: bool = False) -> Iterable[RuntimeFinding]:
    for key, count in instrument.transfers.items():
        if instrument.transfer_occurrences[key] < REPEATED:
            continue
        if key in instrument.transfer_drivers:
            continue  # a library's loop runs it (SciPy's optimizer): a line of the summary (`driven_notes`)
        period = step_period(instrument, key)
        if period is not None and period >= PERIODIC_STEPS:
            continue  # already done every k steps: not a per-step stall or copy
        if key.direction == "d2h" and _waits_for_long_calls(instrument, key):
            continue  # once per long call (an epoch's scan): the wait is the work, amortised like every k steps
        # "every ~3 steps" where that is what the run saw, else per step
        every = f"every ~{period:.0f} steps" if period is not None and period >= 1.5 else "per step"
        functions = sorted(instrument.transfer_functions.get(key, {}))
        of = f" of {', '.join(functions)}'s output" if functions else ""
        about = functions[0] if len(functions) == 1 else None
        timed = round(instrument.transfer_s[key], 6) if key in instrument.transfer_s else None
        path = display_path(key.path)
        if key.direction == "d2h":
            saving, method = _beyond_device_work(instrument, key, about, timed)
            rereads = instrument.transfer_lines[key].rereads
            again = (f", and converted again {rereads} times after their first read (a list of device arrays "
                     "converted whole every step: the work grows with the list)" if rereads >= count else "")
            yield RuntimeFinding(
                "JAX301", RULE_NAMES["JAX301"], path, key.line,
                f"{count} device arrays{of} were read on the host here ({key.via}), {every}{again}: "
                + ("each conversion is host work, and the first read of each waited for the device" if again else
                   "each read waits for the device to finish, so host and device stop overlapping"),
                "keep values on the device and read them every k steps or after the loop "
                "(accumulate metrics in the jitted step)" + ("; read each value once into a host list, or keep a "
                                                             "running sum, instead of converting the whole list each "
                                                             "step" if again else ""),
                count, timed, function=about, saving_s=saving, saving_method=method)
        elif key.direction == "sync":
            if " in " in key.via:  # a library's own sync inside its jit wrapper: not the user's to move
                continue
            if _timed_sync(key.path, key.line):  # a benchmark's wait before reading its timer: needed
                continue
            yield RuntimeFinding(
                "JAX301", RULE_NAMES["JAX301"], path, key.line,
                f"{key.via} was called {count} times here, {every}: each call waits for the device",
                "synchronise once after the loop (or only where you read a timer)", count, timed, function=about,
                saving_method=_WAIT_NOT_SAVED)
        elif key.direction == "h2d":
            lists = key.via.endswith(" of Python lists")
            saving, method = timed, (
                "no estimate: copies of a jitted call's arguments happen inside the call, not timed apart"
                if timed is None else
                "measured: the time of the conversion calls at this line (element by element on the host, then "
                "the copy), which converting the data once removes" if lists else
                "measured: the time of the copy calls at this line, which moving the data once removes "
                "(on CPU a copy shares host memory and costs little)")
            if timed is None and measure and key in instrument.argument_copies:
                saving, method = copies_saving(instrument.argument_copies[key], count)
            if lists:
                message = (f"{count} Python lists of numbers were made into device arrays here ({key.via}): each "
                           f"one converted element by element on the host and copied, {every}")
                fix = ("make the data one NumPy array once, before the loop, move it with jax.device_put and "
                       "slice it on the device")
            else:
                message = (f"{count} host (NumPy) arrays were copied to the device here ({key.via}): a "
                           f"host-to-device transfer {every}")
                fix = "move the data set to the device once (jax.device_put before the loop) and slice it on the device"
            yield RuntimeFinding("JAX302", RULE_NAMES["JAX302"], path, key.line, message, fix, count, timed,
                                 function=about, saving_s=saving, saving_method=method)


AMORTISED_CALL_S = 0.01  # a read once per call of a function this slow (median) is not a per-step stall


CALLBACK_SHARE = 0.02  # of the wall time inside a callback's runs that makes it worth a finding

_CALLBACK_FIXES = {
    "jax.pure_callback": "write the host computation in jax.numpy so it compiles with the rest of the step, or "
                         "compute it once outside the loop",
}


def _callbacks(instrument: Instrument, wall_s: float) -> Iterable[RuntimeFinding]:
    """A host callback run from compiled code about as often as the program's steps (or more:
    inside a scanned loop), its runs `CALLBACK_SHARE` of the wall time or more: JAX301 at the
    line registering it, its measured time the saving."""
    steps = _steps(instrument)
    for record in instrument.callbacks.records.values():
        if (record.calls < REPEATED or record.calls * PERIODIC_STEPS < steps or wall_s <= 0
                or record.seconds < CALLBACK_SHARE * wall_s):
            continue
        fix = _CALLBACK_FIXES.get(record.api, "run it every k steps (under lax.cond on the step count) or return "
                                              "what it needs from the jitted function and use it from the loop "
                                              "every k steps")
        yield RuntimeFinding(
            "JAX301", RULE_NAMES["JAX301"], display_path(record.path), record.line,
            f"{record.api}({record.name}) ran {record.calls} times from compiled code ({seconds(record.seconds)} in "
            f"{record.name}, {record.seconds / wall_s:.0%} of the wall time): each run stops the compiled "
            "program while Python runs it, its arguments copied to the host first",
            fix, record.calls, round(record.seconds, 6), saving_s=round(record.seconds, 6),
            saving_method=f"measured: the {record.calls} runs of {record.name} took {seconds(record.seconds)}, which "
                          "the compiled program waited for; not counted: copying its arguments to the host and the "
                          "stall around each run")


def _waits_for_long_calls(instrument: Instrument, key: TransferKey) -> bool:
    """The reads at `key` are of one jitted function's output (those whose producer is known:
    only the leaves at either end of a large output are tracked) and that function's calls take
    `AMORTISED_CALL_S` or more each (an epoch run as one scan): a read per such call stops the
    host and device overlapping once per that much device work, which is what reading every k
    steps buys, so it is no per-step problem."""
    functions = instrument.transfer_functions.get(key) or Counter()
    if len(functions) != 1:
        return False
    (name,) = functions
    records = [r for r in instrument.functions.values() if r.name == name and r.exec_samples]
    return len(records) == 1 and statistics.median(records[0].exec_samples) >= AMORTISED_CALL_S


def _beyond_device_work(instrument: Instrument, key: TransferKey, function: str | None,
                        waited: float | None) -> tuple[float | None, str]:
    """The time waited in the reads beyond the device work they waited for: each read waits at
    most for one call of the function whose output it reads (its median synchronised time)."""
    records = [r for r in instrument.functions.values() if r.name == function and r.exec_samples]
    if waited is None or len(records) != 1:
        return None, _WAIT_NOT_SAVED
    reads = instrument.transfer_occurrences[key]
    device = reads * statistics.median(records[0].exec_samples)
    return round(max(0.0, waited - device), 6), (
        f"measured: the time waited in these reads less the device work they waited for ({reads} reads x "
        f"{seconds(device / reads)}, {function}'s median call), which reading after the loop does not wait for")


_TIMERS = ("perf_counter(", "time.time(", "monotonic(", "process_time(", "perf_counter_ns(", "time_ns(")


def _timed_sync(path: str, line: int) -> bool:
    """The sync's line or one of the next two reads a timer: the wait is part of a measurement."""
    text = "".join(linecache.getline(path, n) for n in range(line, line + 3))
    return any(timer in text for timer in _TIMERS)


_WAIT_NOT_SAVED = ("no estimate: cost_s is the wait, mostly the device finishing work the program needs anyway; "
                   "reading every k steps saves only the part host work could overlap, at most cost_s")


def confirm_with_scan(findings: list[RuntimeFinding], paths: list[str],
                      scan_for_report: Callable[[list[str]], Any]) -> tuple[list[RuntimeFinding], str]:
    """Mark findings the static scan (`scan_for_report`, handed down by the command) also
    reports; returns (findings, scan status)."""
    targets = sorted({os.path.abspath(p) for p in paths if os.path.isfile(p)})
    if not targets:
        return findings, "skipped (no source files to scan)"
    try:
        result = scan_for_report(targets)
    except Exception as exc:  # the scan is a cross-check: its failure must not lose the report
        return findings, f"failed ({type(exc).__name__}: {exc})"
    static: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for found in getattr(result, "findings", ()):
        end = getattr(found, "end_line", None) or found.line
        static.setdefault((os.path.abspath(found.path), found.code), []).append((found.line, end))
    confirmed = []
    for finding in findings:
        spans = static.get((os.path.abspath(finding.path), finding.code), [])
        hit = any(start <= finding.line <= end for start, end in spans)
        confirmed.append(replace(finding, confirmed_by_scan=hit))
    return confirmed, "ok"
