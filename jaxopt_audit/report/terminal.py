"""Terminal output for `scan`: `full` (a code frame per finding, like ruff) and `concise` (one
line each), a summary, and `--statistics`. Renderers never analyse: they format a ScanResult."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.table import Table

STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _source_lines(path: str, cache: dict[str, list[str]]) -> list[str]:
    if path not in cache:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                cache[path] = handle.read().splitlines()
        except OSError:
            cache[path] = []
    return cache[path]


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


def render_terminal(result, console: Console, concise: bool = False, statistics: bool = False) -> None:
    cache: dict[str, list[str]] = {}
    for f in result.findings:
        style = STYLES.get(f.severity, "")
        location = f"[bold]{escape(f.path)}[/]:{f.line}:{f.column}:"
        if concise:
            console.print(f"{location} [{style}]{f.code}[/] {escape(f.message)}", highlight=False)
            continue
        console.print(f"{location} [{style}]{f.code} {f.name}[/] ({f.severity})", highlight=False)
        console.print(f"  {escape(f.message)}", highlight=False)
        _frame(console, f, _source_lines(f.path, cache))
        console.print(f"  [green]fix:[/] {escape(f.fix)}", highlight=False)
        console.print()
    for e in result.errors:
        console.print(f"[bold]{escape(e.path)}[/]: [red]error:[/] {escape(e.message)}", highlight=False)
    if statistics and result.findings:
        counts = Counter((f.code, f.name, f.severity) for f in result.findings)
        table = Table(title="Findings per rule", show_edge=False)
        for column in ("count", "code", "name", "severity"):
            table.add_column(column, justify="right" if column == "count" else "left")
        for (code, name, severity), count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            table.add_row(str(count), code, name, severity)
        console.print(table)
    by_severity = Counter(f.severity for f in result.findings)
    if result.findings:
        detail = ", ".join(f"{by_severity[s]} {s}{'s' if by_severity[s] != 1 else ''}"
                           for s in ("error", "warning", "info") if by_severity[s])
        files = len({f.path for f in result.findings})
        console.print(f"Found {len(result.findings)} finding{'s' if len(result.findings) != 1 else ''} "
                      f"({detail}) in {files} file{'s' if files != 1 else ''}; "
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
    for column in ("code", "name", "severity", "summary"):
        table.add_column(column)
    for r in rules:
        table.add_row(r.CODE, r.NAME, f"[{STYLES[r.SEVERITY]}]{r.SEVERITY}[/]", r.SUMMARY)
    console.print(table)
