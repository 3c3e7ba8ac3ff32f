"""`--fix` in .ipynb notebooks: fix the cells' program, put each changed line back in its cell.

The program is fixed like a .py file (fixes.py). Its lines are then matched to the original
program's (difflib): an unchanged line goes back as the cell's own original text (so magics and
skipped cells come back verbatim), a new or changed line goes to the cell of the line it
replaces or precedes (fixes insert before a statement, never after one).

The notebook is written back only when re-serialising it unchanged gives its exact bytes (the
indentation, key order and escaping that nbformat and the editors use), so a fix never
reformats a notebook; otherwise its fixable findings are left and said so.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable

from ...notebook_format import NotebookError, ipynb_cells
from ..framework.results import ScanSource
from ..pipeline.notebooks import ipynb_program, locate
from .apply import Applied, FixOutcome, fix_source


def _serialiser(document, text: str) -> Callable[[object], str] | None:
    """A json.dumps configuration that reproduces `text` exactly, or None."""
    for indent in (1, 2, 4, None):
        for sort_keys in (True, False):
            for ensure_ascii in (False, True):
                dumped = json.dumps(document, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
                for tail in ("\n", ""):
                    if dumped + tail == text:
                        def dump(doc: object, i: int | None = indent, s: bool = sort_keys, a: bool = ensure_ascii,
                                 t: str = tail) -> str:
                            return json.dumps(doc, indent=i, sort_keys=s, ensure_ascii=a) + t
                        return dump
    return None


def _cells_back(origin: list[tuple[int, int]], old: list[str], new: list[str],
                originals: dict[int, list[str]]) -> dict[int, list[str]]:
    """The new lines of every code cell in the program."""
    out: dict[int, list[str]] = {cell: [] for cell in originals}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            for k in range(min(i2, len(origin)) - i1):  # not the "" after the final newline
                cell, line = origin[i1 + k]
                out[cell].append(originals[cell][line - 1])
        elif tag in ("replace", "insert"):
            cell = origin[min(i1, len(origin) - 1)][0]
            out[cell].extend(new[j1:j2])
    return out


def fix_notebook(path: str, rules: list, ignored=(), unsafe: bool = False, *,
                 scan: ScanSource) -> tuple[FixOutcome | None, str | None]:
    """(outcome, None) when fixed, (None, reason) when the notebook is left as it is."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        text = data.decode("utf-8")
        document = json.loads(text)
        cells = ipynb_cells(data)
        program = ipynb_program(data)
    except (OSError, UnicodeDecodeError, ValueError, NotebookError) as exc:
        return None, f"cannot read it: {exc}"
    if program.problems or not program.origin:
        return None, "a cell is not Python" if program.problems else None
    serialise = _serialiser(document, text)
    if serialise is None:
        return None, "its JSON layout is not one this tool can write back unchanged"
    outcome = fix_source(program.text, path, rules, ignored, unsafe, scan=scan)
    if outcome.fixed == program.text:
        return None, None
    old, new = program.text.split("\n"), outcome.fixed.split("\n")
    origin = program.origin
    by_number = {c.number: c for c in cells}
    originals = {cell: by_number[cell].source.rstrip("\n").split("\n") for cell, _ in program.origin}
    new_cells = _cells_back(origin, old, new, originals)
    raw_cells = document["cells"] if "cells" in document else None
    if raw_cells is None:
        return None, "nbformat 3 notebooks are not rewritten"
    for number, lines in new_cells.items():
        source = by_number[number].source
        if lines and lines[-1] == "" and number == origin[-1][0] and originals[number][-1] != "":
            lines = lines[:-1]  # the "" after the program's final newline
        updated = "\n".join(lines) + source[len(source.rstrip("\n")):]
        if updated == source:
            continue
        raw = raw_cells[number - 1]
        raw["source"] = updated.splitlines(keepends=True) if isinstance(raw["source"], list) else updated
    new_text = serialise(document)
    applied = [_in_cell(a, program.origin) for a in outcome.applied]
    return FixOutcome(path, text, new_text, applied), None


def _in_cell(applied: Applied, origin) -> Applied:
    cell, line = locate(origin, applied.line)
    return applied._replace(line=line, cell=cell)
