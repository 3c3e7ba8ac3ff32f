"""Terminal output for `scan`: `full` (a code frame per finding, like ruff) and `concise` (one
line each), a summary, and `--statistics` (counts per rule instead of the findings, as ruff
prints them). Renderers never analyse: they format a ScanResult."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..notebook_format import cell_lines

STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _source_lines(path: str, cache: dict, cell: int | None = None) -> list[str]:
    """The lines a finding's line numbers count: the file's, or its notebook cell's."""
    key = (path, cell)
    if key not in cache:
        if cell is not None:
            cache[key] = cell_lines(path, cell)
        else:
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    cache[key] = handle.read().splitlines()
            except OSError:
                cache[key] = []
    return cache[key]


def location(f) -> str:
    """`path:line:col` or, in a notebook, `path:cell N:line:col` (docs/design.md)."""
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{f.path}:{cell}{f.line}:{f.column}"


def _by_impact(f) -> tuple:
    """Most impactful first: by level, then by the runs the code shows, then in file order."""
    if f.impact is None:
        return (float("inf"), 0, f.sort_key())  # after every level
    return (f.impact.rank(), -(f.impact.runs or 0), f.sort_key())


def render_statistics(result, console: Console) -> None:
    """ruff's --statistics: one line per rule, most frequent first; `[*]` when fixable."""
    counts = Counter(f.code for f in result.findings)
    names = {f.code: f.name for f in result.findings}
    fixable = {f.code for f in result.findings if f.fix_applicability == "safe"}
    width = len(str(max(counts.values(), default=0)))
    for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        marker = "[*]" if code in fixable else "[ ]"
        console.print(f"{count:>{width}}\t{code}\t{marker} {names[code]}", markup=False, highlight=False)


def _frame(console: Console, f, lines: list[str]) -> None:
    if not lines or f.line > len(lines):
        return
    first = max(1, f.line - 1)
    last = min(len(lines), f.end_line if f.end_line - f.line < 3 else f.line)
    width = len(str(last))
    for number in range(first, last + 1):
        marker = ">" if f.line <= number <= f.end_line else " "
        console.print(f"[dim]{marker} {number:>{width}} |[/] {escape(lines[number - 1])}", highlight=False)
    if f.end_line == f.line:
        span = max(1, f.end_column - f.column)
    else:
        span = max(1, len(lines[f.line - 1]) - f.column + 1)
    console.print(f"[dim]  {' ' * width} |[/] {' ' * (f.column - 1)}[{STYLES.get(f.severity, '')}]{'^' * span}[/]",
                  highlight=False)


def render_terminal(result, console: Console, concise: bool = False, quiet: bool = False) -> None:
    """`quiet`: the findings and errors only, no summary (ruff's --quiet)."""
    cache: dict = {}
    # the full format leads with what the code shows to matter most; concise keeps file order
    # for tools and readers that go through a file top to bottom
    findings = result.findings if concise else sorted(result.findings, key=_by_impact)
    for f in findings:
        style = STYLES.get(f.severity, "")
        where = f"[bold]{escape(location(f))}[/]:"
        fixable = " [dim][*][/]" if f.fix_applicability == "safe" else ""
        if concise:
            console.print(f"{where} [{style}]{f.code}[/]{fixable} {escape(f.message)}", highlight=False)
            continue
        console.print(f"{where} [{style}]{f.code} {f.name}[/]{fixable} ({f.severity})", highlight=False)
        console.print(f"  {escape(f.message)}", highlight=False)
        if f.impact is not None:
            console.print(f"  [dim]impact {f.impact.level}: {escape(f.impact.why)}[/]", highlight=False)
        _frame(console, f, _source_lines(f.path, cache, f.cell))
        console.print(f"  [green]fix:[/] {escape(f.fix)}", highlight=False)
        console.print()
    for e in result.errors:
        console.print(f"[bold]{escape(e.path)}[/]: [red]error:[/] {escape(e.message)}", highlight=False)
    if quiet:
        return
    by_severity = Counter(f.severity for f in result.findings)
    if result.findings:
        detail = ", ".join(f"{by_severity[s]} {s}{'s' if by_severity[s] != 1 else ''}"
                           for s in ("error", "warning", "info") if by_severity[s])
        files = len({f.path for f in result.findings})
        high = sum(1 for f in result.findings if f.impact is not None and f.impact.level == "high")
        console.print(f"Found {len(result.findings)} finding{'s' if len(result.findings) != 1 else ''} "
                      f"({detail}; {high} of high impact) in {files} file{'s' if files != 1 else ''}; "
                      f"{result.files_scanned} file{'s' if result.files_scanned != 1 else ''} scanned.",
                      highlight=False)
    elif result.errors:  # not "all checks passed" when some (or every) file was not checked
        console.print(f"No findings in {result.files_scanned} file{'s' if result.files_scanned != 1 else ''} "
                      "scanned.", highlight=False)
    else:
        console.print(f"[green]All checks passed:[/] {result.files_scanned} "
                      f"file{'s' if result.files_scanned != 1 else ''} scanned, no findings.", highlight=False)
    if result.errors:
        console.print(f"[red]{len(result.errors)} file{'s' if len(result.errors) != 1 else ''} could not be "
                      "scanned[/] (see the errors above).", highlight=False)


def render_rule_table(rules, console: Console) -> None:
    table = Table(show_edge=False)
    for column in ("code", "name", "severity", "default", "summary"):
        table.add_column(column)
    for r in rules:
        table.add_row(r.CODE, r.NAME, f"[{STYLES[r.SEVERITY]}]{r.SEVERITY}[/]", r.tier(), r.SUMMARY)
    console.print(table)
