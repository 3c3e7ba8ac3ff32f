"""`jaxopt-audit run [options] script.py [args]` / `run -m module [args]`: a runtime audit.

Runs the program in this process with the instruments of `run.instrument` on (and an XProf
trace with --trace), then prints what happened per jitted function and per source line, with
the rule codes that explain the worst of it, on stderr, and writes the JSON report with
--json. With JAXOPT_AUDIT_H2D_TOTAL=1 in the environment the report also gives jaxlib's own
count of every host-to-device transfer (see `_open_transfer_monitor` for the cost). The
program's exit status is passed through; the report is printed also when the program raises or
exits non-zero.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from jaxopt_audit.report.run_terminal import render

from ..exit_codes import USAGE as EXIT_USAGE  # noqa: E402

# JAX is imported here, at import time, so that cli.py can say which extra to install
from ..fileio import check_output_dir, check_output_file
from ..runtime.monitors import TransferMonitor
from ..runtime.run.findings import confirm_with_scan, derive_findings
from ..runtime.run.instrument import Instrument
from ..runtime.run.program import Program, ProgramNotFound, check
from ..runtime.run.program import run as run_program
from ..runtime.run.report import build_report, write_json
from ..runtime.run.sites import UserFiles
from ..runtime.run.trace import RunTrace, TraceStepsError, parse_steps
from ..static.pipeline.engine import scan_for_report

H2D_TOTAL_ENV = "JAXOPT_AUDIT_H2D_TOTAL"  # =1: also count every host-to-device transfer (see below)


def run_command(args: argparse.Namespace) -> int:
    """Entry point wired in cli.py; returns the program's exit status (2 for a usage error)."""
    try:
        program = _program(args)
        check(program)
        steps = parse_steps(args.trace_steps)
        if steps is not None and not args.trace:
            raise TraceStepsError("--trace-steps needs --trace DIR (where to write the trace)")
        # before the program runs: a bad path must not lose the run's report
        if args.json:
            check_output_file(args.json, "--json")
        if args.trace:
            check_output_dir(args.trace, "--trace")
    except (ProgramNotFound, ValueError) as exc:  # OutputPathError is a ValueError
        print(f"jaxopt-audit run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return _audit(program, args, steps)


def _program(args: argparse.Namespace) -> Program:
    rest = list(args.script_args or [])
    if rest and rest[0] == "--":
        rest = rest[1:]
    if args.module:
        return Program(None, args.module, tuple(rest))
    if not rest:
        raise ProgramNotFound("nothing to run; usage: jaxopt-audit run [options] script.py [args] "
                              "(or -m MODULE [args])")
    return Program(rest[0], None, tuple(rest[1:]))


def _audit(program: Program, args: argparse.Namespace, steps: tuple[int, int] | None) -> int:
    # a script is the user's code wherever it lives; a module's file is known only after the run
    user_files = UserFiles((os.path.abspath(program.script),) if program.script else ())
    instrument = Instrument(user_files)
    tracer: RunTrace | None = None
    if args.trace:
        tracer = RunTrace(args.trace, steps, instrument.wait)
        instrument.on_call = tracer.on_call
        instrument.annotate = tracer.annotate
    jaxlib_transfers = _open_transfer_monitor()
    try:
        instrument.install()  # after the monitor: hooks are removed in reverse order
    except RuntimeError as exc:  # an unsupported JAX: say so before running anything
        instrument.uninstall()
        _close_transfer_monitor(jaxlib_transfers)
        print(f"jaxopt-audit run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    start = time.perf_counter()
    if tracer is not None:
        tracer.start()
    try:
        outcome = run_program(program)
    finally:
        wall_s = time.perf_counter() - start  # the program's time: writing the trace comes after
        copies = sum(count for key, count in instrument.transfers.items() if key.direction != "sync")
        trace_info = tracer.finish(copies) if tracer is not None else None
        instrument.uninstall()
        h2d_total = _close_transfer_monitor(jaxlib_transfers)

    # savings measured now (jitting JAX101 functions, copying JAX302 arguments): not under --trace
    findings = derive_findings(instrument, wall_s, measure=tracer is None)
    scan = "skipped (--no-scan)"
    if not args.no_scan and findings:
        paths = program.source_paths + [f.path for f in findings]
        findings, scan = confirm_with_scan(findings, paths, scan_for_report)
    elif not findings:
        scan = "not needed (no runtime findings)"
    report = build_report(instrument, program.argv, outcome.exit_status, outcome.error, wall_s,
                          tuple(findings), scan, trace_info, h2d_total)
    status = outcome.exit_status
    if args.json:  # before the terminal report: a closed stderr must not lose the file
        try:
            write_json(report, args.json)
        except OSError as exc:
            print(f"jaxopt-audit run: cannot write --json {args.json}: {exc.strerror}; choose a writable path",
                  file=sys.stderr)
            status = status or EXIT_USAGE
    try:
        render(report)
    except BrokenPipeError:  # `... 2>&1 | head`: the reader left; the exit status still counts
        pass
    return status


def _open_transfer_monitor() -> TransferMonitor | None:
    """The harness's exact host-to-device count (jaxlib's transfer-guard log), when asked for.

    It counts what the Python hooks cannot see (the Python scalars of eager ops, for one), but
    not where they came from, so it gives the run's total; the per-line view is the instrument's.
    Off unless JAXOPT_AUDIT_H2D_TOTAL=1: it reads jaxlib's log by pointing fd 2 at a file for
    the whole run and forwards only whole lines, so a progress bar (tqdm) on stderr would
    freeze until its line ends, and stderr lags stdout by up to 0.1 s.
    """
    if os.environ.get(H2D_TOTAL_ENV) != "1":
        return None
    monitor = TransferMonitor(forward_interval=0.1)  # the program's stderr keeps flowing
    try:
        monitor.__enter__()
    except OSError as exc:  # no temporary file or descriptor for the log: the audit runs without the total
        print(f"jaxopt-audit run: {H2D_TOTAL_ENV}=1 ignored: cannot capture jaxlib's transfer log ({exc})",
              file=sys.stderr)
        return None
    return monitor


def _close_transfer_monitor(monitor: TransferMonitor | None) -> int | None:
    """jaxlib's host-to-device count over the run (None: not asked for, or its log is silenced)."""
    if monitor is None:
        return None
    monitor.__exit__(None, None, None)
    return monitor.counts().h2d
