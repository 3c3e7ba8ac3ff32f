"""Render a `jaxopt-audit run` report for people: rich tables on stderr.

stderr, so the program's own stdout stays its own (pipes and redirects keep working). Reads
the `RunReport`; computes nothing but display strings and the order of the top offenders.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from jaxopt_audit.runtime.run.report import RunReport
from jaxopt_audit.units import seconds

TOP_FUNCTIONS = 15
TOP_TRANSFERS = 10
WIDE = 140


def render(report: RunReport, file: TextIO | None = None) -> None:
    """Print the report (to stderr unless `file` is given)."""
    stream = file or sys.stderr
    console = Console(file=stream, highlight=False, soft_wrap=False)
    if not console.is_terminal:  # logs and CI: wide enough for paths, no wrapping mid-table
        console = Console(file=stream, highlight=False, soft_wrap=False, width=WIDE)
    console.print()
    console.rule("[bold]jaxopt-audit run[/bold]")
    console.print(_summary(report))
    if report.functions:
        console.print(_functions_table(report))
        _print_recompiles(console, report)
    else:
        console.print("No jitted function was called (nothing went through jax.jit).")
    if report.eager_functions:
        console.print(_eager_table(report))
    if report.transfers:
        console.print(_transfers_table(report))
    _print_findings(console, report)
    if report.trace:
        _print_trace(console, report)
    for note in report.notes:
        console.print(f"[dim]note: {note}[/dim]")


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole > 0 else "-"


def _summary(report: RunReport) -> Text:
    status = "ok" if report.exit_status == 0 else f"exit status {report.exit_status}"
    if report.error:
        status += f" ({report.error})"
    text = Text()
    text.append(f"{' '.join(report.argv)}: ", style="bold")
    text.append(status + "\n", style="green" if report.exit_status == 0 else "red")
    wall = report.wall_s
    text.append(f"wall {seconds(wall)} = compile {seconds(report.compile_s)} ({_share(report.compile_s, wall)})"
                f" + device {seconds(report.device_s)} ({_share(report.device_s, wall)})"
                f" + host {seconds(report.host_s)} ({_share(report.host_s, wall)})\n")
    text.append("compile = JAX's trace/lower/compile events; device = the program waiting in jitted calls, "
                "host reads and syncs; host = the program's own Python (eager op dispatch included)\n", style="dim")
    split = report.split
    if split is not None and report.functions:
        sampled = sum(f.exec_measured for f in report.functions)
        text.append(f"jitted functions' device time, measured on {sampled} synchronised calls: "
                    f"{seconds(split.functions_device_s)} (the run's device part: {seconds(split.device_s)})\n",
                    style="dim")
        traced = [f.trace_xla_s for f in report.functions if f.trace_xla_s is not None]
        if traced:
            gap = abs(sum(traced) - split.functions_device_s)
            text.append(f"their XLA ops in the trace: {seconds(sum(traced))} (the profiler's op events; "
                        f"{_share(gap, report.wall_s)} of the wall time from the sampled device time)\n", style="dim")
    if report.eager_ops:
        text.append(f"{report.eager_ops} JAX ops ran eagerly (outside jit), "
                    f"{seconds(split.eager_op_s if split else 0.0)} dispatching them\n", style="dim")
    if report.h2d_total is not None:
        on_lines = sum(t.count for t in report.transfers if t.direction == "h2d")
        text.append(f"{report.h2d_total} host-to-device transfers in all (jaxlib's count, Python scalars "
                    f"of eager ops included); {on_lines} of them traced to source lines below\n", style="dim")
    if report.eager_compiles:
        text.append(f"{report.eager_compiles} compilations outside jitted functions (eager ops), "
                    f"{seconds(report.eager_compile_s)}\n", style="dim")
    return text


def _functions_table(report: RunReport) -> Table:
    table = Table(title="jitted functions", title_justify="left", show_lines=False)
    for header, justify in (("function", "left"), ("where", "left"), ("calls", "right"),
                            ("compiles", "right"), ("compile", "right"), ("device", "right"),
                            ("dispatch", "right"), ("h2d/call", "right"), ("d2h/call", "right")):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for f in report.functions[:TOP_FUNCTIONS]:
        compiles = Text(str(f.compiles), style="bold red" if f.compiles > 2 else "")
        table.add_row(f.name, f"{f.path}:{f.line}", str(f.calls), compiles, seconds(f.compile_s),
                      seconds(f.exec_s), seconds(f.dispatch_s), f"{f.h2d_per_call:.2g}", f"{f.d2h_per_call:.2g}")
    if len(report.functions) > TOP_FUNCTIONS:
        table.caption = f"{len(report.functions) - TOP_FUNCTIONS} more in --json"
    return table


def _eager_table(report: RunReport) -> Table:
    table = Table(title="un-jitted functions running JAX ops one by one", title_justify="left")
    for header, justify in (("function", "left"), ("where", "left"), ("calls", "right"), ("ops/call", "right"),
                            ("in ops", "right"), ("eager compiles", "right"), ("share of wall", "right"),
                            ("NumPy copies", "right")):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    shown = [e for e in report.eager_functions if not e.nested_in_eager][:TOP_FUNCTIONS]
    for e in shown:
        name = {"setup": f"{e.name} (setup, not per step)", "driver": f"{e.name} (calls the step)"}.get(e.role, e.name)
        table.add_row(name, f"{e.path}:{e.line}", str(e.calls), f"{e.ops_per_call:.3g}",
                      seconds(e.op_s + e.compile_s), f"{e.compiles}", f"{100 * e.wall_share:.0f}%",
                      str(e.h2d_transfers))
    return table


def _print_recompiles(console: Console, report: RunReport) -> None:
    for f in report.functions:
        if not f.recompiles:
            continue
        count = f.compiles - 1
        console.print(f"[bold]{f.name}[/bold] recompiled {count} time{'s' if count != 1 else ''}:")
        # identical causes at one call line are one line with a count
        lines = Counter(f"{r.reason}" + (f" (call at {r.path}:{r.line})" if r.path else "") for r in f.recompiles)
        for text, times in lines.most_common(5):
            console.print(f"  - {text}" + (f"  x{times}" if times > 1 else ""), markup=False)
        if len(lines) > 5:
            console.print(f"  ... {len(lines) - 5} more distinct causes")


def _transfers_table(report: RunReport) -> Table:
    table = Table(title="host <-> device traffic by source line", title_justify="left")
    for header, justify in (("direction", "left"), ("where", "left"), ("count", "right"), ("via", "left"),
                            ("of", "left")):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for t in report.transfers[:TOP_TRANSFERS]:
        table.add_row(t.direction, f"{t.path}:{t.line}", str(t.count), t.via, ", ".join(t.functions))
    if len(report.transfers) > TOP_TRANSFERS:
        table.caption = f"{len(report.transfers) - TOP_TRANSFERS} more in --json"
    return table


def _print_findings(console: Console, report: RunReport) -> None:
    if not report.findings:
        console.print("[green]No runtime findings[/green] (no repeated recompilation, sync or host copy).")
    else:
        console.print(f"[bold]top offenders[/bold] ({len(report.findings)} findings, the largest saving first; "
                      "where none is measured, the largest cost):")
        measured = [f for f in report.findings if f.saving_s is not None]
        if measured:
            saved = sum(f.saving_s or 0.0 for f in measured)
            console.print(f"  fixing the {len(measured)} with a measured saving would save about {seconds(saved)} "
                          f"of the {seconds(report.wall_s)} wall time")
        for finding in sorted(report.findings, key=lambda f: f.rank_s, reverse=True):
            mark = {True: " [green]confirmed by scan[/green]", False: " [dim]not in static scan[/dim]",
                    None: ""}[finding.confirmed_by_scan]
            cost = f", cost {seconds(finding.cost_s)}" if finding.cost_s is not None else ""
            if finding.saving_s is not None:
                cost += f", saves {seconds(finding.saving_s)}"
            console.print(f"  [bold yellow]{finding.code}[/bold yellow] {finding.name} "
                          f"{finding.path}:{finding.line} (x{finding.count}{cost}){mark}")
            console.print(f"      {finding.message}", markup=False)
            console.print(f"      fix: {finding.fix}", markup=False, style="dim")
            if finding.saving_method:
                console.print(f"      saving: {finding.saving_method}", markup=False, style="dim")
            console.print(f"      docs: jaxopt-audit rule {finding.code}", style="dim")
    console.print(f"[dim]static scan cross-check: {report.scan}[/dim]")


def _print_trace(console: Console, report: RunReport) -> None:
    trace = report.trace or {}
    console.print(f"[bold]trace[/bold] written to {trace.get('dir')}"
                  + (f" (steps {trace.get('steps')})" if trace.get("steps") else ""))
    summary = trace.get("summary")
    if isinstance(summary, dict):
        for key, value in summary.items():
            console.print(f"  {key}: {value}", markup=False)
    elif summary:
        console.print(f"  {summary}", markup=False)
    if trace.get("open"):
        console.print(f"  open with: {trace['open']}", style="dim", markup=False)
