"""Notebooks scanned like Python files.

A `.ipynb` notebook's code cells, in order, are one program (as the kernel runs them). IPython
syntax that is not Python (`%magic`, `%%cell magic`, `!shell`, `x = !cmd`, `obj?`) is replaced by
a Python line of the same indentation with the original kept in a comment, so no line moves and a
`# noqa` on such a line still counts. `%timeit f(x)` and `%time f(x)` become the `timeit` call they
amount to (through `apis.IPYTHON_TIMING_MAGICS`), so the timing rule sees what they time.
Findings are then mapped back to (cell, line in cell).
A cell that is still not Python is reported and blanked; the other cells are scanned.

A MyST markdown notebook (```{code-cell}) keeps its own line numbers: every line that is not
code is blanked, so a finding points at the line of the .md file.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from ...notebook_format import Cell, NotebookError, ipynb_cells, is_ipynb, is_myst, myst_cells
from ..framework.results import FileResult, ScanError, ScanSource
from ..knowledge.apis import IPYTHON_TIMING_MAGICS

if TYPE_CHECKING:
    from ..framework.rule import Finding, Rule

# Cell magics whose body is Python that runs (the first line is the magic, the rest is code).
PYTHON_BODY_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit", "px"})

_CELL_MAGIC = re.compile(r"^\s*%%(?P<name>[\w-]+)")
_LINE_MAGIC = re.compile(
    r"^(?P<indent>[ \t]*)(?P<assign>[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*)?(?P<magic>[%!].*)$")
# IPython's automagic: a line magic written without its `%` (`timeit f(x)`, `pip install ...`).
_AUTOMAGIC = re.compile(r"^(?P<indent>[ \t]*)(?P<assign>)(?P<magic>(?:timeit|time|pip|conda|matplotlib|load_ext|"
                        r"autoreload|config|env|cd|ls|run|prun|pdb|who|whos|reset|capture)\s+[^=\s].*)$")
# `%timeit -n 10 f(x)`, `%time f(x)`: a line magic that times a Python expression.
_TIMING_MAGIC = re.compile(r"^(?P<indent>[ \t]*)%(?P<name>timeit|time)\s+(?P<opts>(?:-[nrp]\s*\S+\s+|-[oqc]\s+)*)"
                           r"(?P<stmt>[^-\s].*)$")
_MAGIC_ALIAS = {magic[1:]: alias for alias, magic in IPYTHON_TIMING_MAGICS.items()}
_HELP = re.compile(r"^(?P<indent>[ \t]*)(?:\?{1,2}[\w.]+|[\w.]+(?:\(\))?\?{1,2})\s*$")
_SYNTAX = re.compile(r"^syntax error at (\d+):(\d+): ")

_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


class Program(NamedTuple):
    text: str
    # For each program line (index line - 1): (cell, line within the cell). None: the program's
    # lines are the file's own lines (MyST).
    origin: list[tuple[int, int]] | None
    problems: list[str]  # cells that could not be read as Python, already blanked
    # .ipynb: cell number -> the cell it is (its saved outputs included)
    cells: dict[int, Cell] | None = None


def is_notebook(path: str) -> bool:
    return is_ipynb(path) or is_myst(path)


def _compiles(source: str) -> SyntaxError | None:
    try:
        compile(source, "<cell>", "exec", flags=_FLAGS, dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except (ValueError, MemoryError, RecursionError) as exc:  # null bytes, absurd nesting
        return SyntaxError(str(exc))
    return None


def neutralise(source: str) -> str:
    """IPython-only lines made Python, line for line and keeping indentation."""
    lines = source.split("\n")
    cell_magic = _CELL_MAGIC.match(lines[0]) if lines else None
    if cell_magic:
        keep_body = cell_magic.group("name") in PYTHON_BODY_MAGICS
        head = f"pass  # {lines[0].strip()}"
        body = lines[1:] if keep_body else [f"# {line}" if line.strip() else line for line in lines[1:]]
        lines = [head] + (neutralise("\n".join(body)).split("\n") if keep_body and body else body)
        return "\n".join(lines)
    out = []
    continued = False
    for line in lines:
        magic = _LINE_MAGIC.match(line) or _AUTOMAGIC.match(line)
        if continued:  # a magic's `\` continuation line
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}# {line.lstrip()}" if line.strip() else line)
            continued = line.rstrip().endswith("\\")
        elif timed := _timed_expression(line):
            out.append(timed)
            continued = False
        elif magic:
            value = "None" if magic.group("assign") else "pass"
            out.append(f"{magic.group('indent')}{magic.group('assign') or ''}{value}  # {magic.group('magic')}")
            continued = line.rstrip().endswith("\\")
        elif help_line := _HELP.match(line):
            out.append(f"{help_line.group('indent')}pass  # {line.strip()}")
        else:
            out.append(line)
    return "\n".join(out)


def _timed_expression(line: str) -> str | None:
    """`%timeit f(x)` as `_ipython_timeit.timeit(lambda: f(x)); import timeit as _ipython_timeit`
    on the same line (the call where the magic starts), the magic kept in a comment; None for a
    statement that is not an expression (`%timeit y = f(x)`) or that continues on the next line."""
    match = _TIMING_MAGIC.match(line)
    if match is None or line.rstrip().endswith("\\"):
        return None
    stmt = match.group("stmt")
    try:
        tree = ast.parse(stmt.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return None
    expression = ast.get_source_segment(stmt.strip(), tree.body)  # without a trailing comment
    if expression is None or "\n" in expression:
        return None
    alias = _MAGIC_ALIAS[match.group("name")]
    return f"{match.group('indent')}{alias}.timeit(lambda: {expression}); import timeit as {alias}  # {line.strip()}"


def _cell_program(source: str, number: int, problems: list[str]) -> str:
    if _compiles(source) is None:
        return source
    neutral = neutralise(source)
    error = _compiles(neutral)
    if error is None:
        return neutral
    where = f"{error.lineno}:{error.offset or 1}: " if error.lineno else ""
    problems.append(f"cell {number}: syntax error at {where}{error.msg}; this cell was skipped, "
                    "the other cells were scanned")
    return "\n".join("" for _ in source.split("\n"))


def ipynb_program(data: bytes | str) -> Program:
    """The code cells of a notebook as one program. Raises NotebookError when malformed."""
    parts: list[str] = []
    origin: list[tuple[int, int]] = []
    problems: list[str] = []
    cells: dict[int, Cell] = {}
    for cell in ipynb_cells(data):
        if cell.kind != "code" or not cell.source.strip():
            continue
        cells[cell.number] = cell
        text = _cell_program(cell.source.rstrip("\n"), cell.number, problems)
        count = text.count("\n") + 1
        parts.append(text + "\n")
        origin.extend((cell.number, line) for line in range(1, count + 1))
    return Program("".join(parts), origin, problems, cells)


def myst_program(text: str) -> Program:
    """A MyST notebook's code cells at their own file lines; every other line blank."""
    lines = [""] * (text.count("\n") + 1)
    problems: list[str] = []
    cells: dict[int, Cell] = {}
    for cell in myst_cells(text):
        cells[cell.number] = cell
        code = _cell_program(cell.source.rstrip("\n"), cell.number, problems)
        for offset, line in enumerate(code.split("\n")):
            if cell.first_line - 1 + offset < len(lines):
                lines[cell.first_line - 1 + offset] = line
    problems = [p.replace("cell ", "code cell ", 1) for p in problems]
    return Program("\n".join(lines), None, problems, cells)


def program_for(path: str, data: bytes) -> Program:
    if is_ipynb(path):
        return ipynb_program(data)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"cannot decode: {exc}; save it as UTF-8") from None
    return myst_program(text)


def locate(origin: list[tuple[int, int]], line: int) -> tuple[int, int]:
    """(cell, line in cell) of a program line."""
    return origin[min(max(line, 1), len(origin)) - 1]


def scan_notebook(data: bytes, path: str, rules: Iterable, ignored_codes: Iterable[str],
                  scan_source: ScanSource) -> FileResult:
    """scan_source over the notebook's program, findings and errors mapped back to cells."""
    try:
        program = program_for(path, data)
    except NotebookError as exc:
        return FileResult(path, [], ScanError(path, str(exc)), 0)
    result = scan_source(program.text, path, rules, ignored_codes, cells=_cell_by_line(program))
    origin = program.origin
    error = result.error
    if error is not None and origin:
        match = _SYNTAX.match(error.message)
        if match:
            cell, line = locate(origin, int(match.group(1)))
            error = error._replace(message=f"cell {cell}: syntax error at {line}:{match.group(2)}: "
                                           + error.message[match.end():])
    if error is None and program.problems:
        error = ScanError(path, "; ".join(program.problems))
    findings = result.findings
    by_code = {rule.CODE: rule for rule in rules}
    if origin:
        mapped = []
        for f in findings:
            cell, line = locate(origin, f.line)
            shown = program.cells.get(cell) if program.cells else None
            rule = by_code.get(f.code)
            if shown is not None and rule is not None and rule.demonstrated(f, shown):
                continue  # the notebook shows this mistake on purpose
            end_cell, end_line = locate(origin, f.end_line)
            end_column = f.end_column
            if end_cell != cell:  # never spans cells in practice; clamp to the cell
                end_line, end_column = line, f.column + 1
            if shown is not None and end_line == line:  # a magic read as longer Python: stay on its text
                end_column = min(end_column, len(shown.source.split("\n")[line - 1]) + 1)
            mapped.append(f._replace(line=line, end_line=end_line, end_column=end_column, cell=cell,
                                     message=_cell_lines(f.message, origin, cell),
                                     fix=_cell_lines(f.fix, origin, cell),
                                     impact=f.impact._replace(why=_cell_lines(f.impact.why, origin, cell))
                                     if f.impact is not None else None))
        findings = mapped
    elif program.cells:  # MyST: findings keep their file lines; the cell is found by line
        findings = [f for f in findings if not _demonstrated(f, by_code.get(f.code), program.cells.values())]
    return result._replace(findings=findings, error=error)


_LINE_REFERENCE = re.compile(r"\bline (\d+)\b")


def _cell_lines(text: str, origin: list[tuple[int, int]], cell: int) -> str:
    """A message's `line N` (a line of the notebook's program, as the rules see it) as the reader
    finds it: `line M` in the finding's own cell, `cell C, line M` in another."""
    def where(match: re.Match) -> str:
        other, line = locate(origin, int(match.group(1)))
        return f"line {line}" if other == cell else f"cell {other}, line {line}"

    return _LINE_REFERENCE.sub(where, text)


def _cell_by_line(program: Program) -> list[int]:
    """The cell number of each program line (0 between MyST cells)."""
    if program.origin:
        return [cell for cell, _ in program.origin]
    lines = [0] * (program.text.count("\n") + 1)
    for cell in (program.cells or {}).values():
        for line in range(cell.first_line, cell.first_line + cell.source.count("\n") + 1):
            if 0 < line <= len(lines):
                lines[line - 1] = cell.number
    return lines


def _demonstrated(finding: Finding, rule: Rule | None, cells: Iterable[Cell]) -> bool:
    """A MyST finding whose code cell shows its mistake on purpose."""
    for cell in cells:
        if cell.first_line <= finding.line < cell.first_line + cell.source.count("\n") + 1:
            return rule is not None and rule.demonstrated(finding, cell)
    return False
