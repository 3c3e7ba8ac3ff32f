"""Reading notebook files into their cells: Jupyter `.ipynb` (nbformat 3 and 4) and MyST markdown
notebooks (```{code-cell} fences). Cell sources are read, and of a code cell's saved outputs
only what they show as text (printed text, error names), never images or other data.

A leaf module with no analysis in it, shared by the scanner (static/pipeline/notebooks.py) and the
terminal renderer (code frames show the cell's own text).
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

NOTEBOOK_SUFFIXES = (".ipynb",)
MYST_SUFFIXES = (".md", ".myst", ".mystnb")

# A MyST code cell: ```{code-cell} [kernel] (three or more backticks or tildes).
_MYST_OPEN = re.compile(r"^(?P<fence>`{3,}|~{3,})\{code-cell\}")


class NotebookError(ValueError):
    """The file is not a notebook this tool can read; the message says why."""


class Cell(NamedTuple):
    number: int  # 1-based, counting every cell as Jupyter numbers them
    kind: str  # "code", "markdown", "raw"
    source: str
    first_line: int = 1  # MyST: the file line of the cell's first source line
    # what the cell's saved outputs show (.ipynb code cells): printed and plain text, and the names
    # of the exceptions it raised when last run
    shown_text: str = ""
    shown_errors: tuple[str, ...] = ()
    # code cells: the prose a reader sees just before the cell (the markdown cells since the
    # previous code cell; in MyST, the text since the previous code block)
    prose: str = ""
    # ... and just after it (up to the next code cell), where tutorials explain what it showed
    after: str = ""


def is_ipynb(path: str) -> bool:
    return path.lower().endswith(NOTEBOOK_SUFFIXES)


def is_myst(path: str) -> bool:
    return path.lower().endswith(MYST_SUFFIXES)


def _joined(source) -> str:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    raise NotebookError("a cell's source is neither a string nor a list of strings")


def ipynb_cells(data: bytes | str) -> list[Cell]:
    """Every cell of a .ipynb file, in order. Raises NotebookError on anything malformed."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise NotebookError(f"not a valid notebook (JSON): {exc}") from exc
    if not isinstance(document, dict):
        raise NotebookError("not a valid notebook: the top level is not a JSON object")
    if "cells" in document:  # nbformat 4
        raw_cells, source_key = document["cells"], "source"
    elif isinstance(document.get("worksheets"), list):  # nbformat 3
        raw_cells = [c for sheet in document["worksheets"] if isinstance(sheet, dict)
                     for c in sheet.get("cells", [])]
        source_key = "input"
    else:
        raise NotebookError("not a valid notebook: no 'cells' list")
    if not isinstance(raw_cells, list):
        raise NotebookError("not a valid notebook: 'cells' is not a list")
    cells = []
    prose: list[str] = []
    for number, raw in enumerate(raw_cells, start=1):
        if not isinstance(raw, dict) or not isinstance(raw.get("cell_type"), str):
            raise NotebookError(f"not a valid notebook: cell {number} has no cell_type")
        key = source_key if raw["cell_type"] == "code" else "source"
        try:
            source = _joined(raw.get(key, ""))
        except NotebookError as exc:
            raise NotebookError(f"not a valid notebook: cell {number}: {exc}") from None
        if raw["cell_type"] != "code":
            cells.append(Cell(number, raw["cell_type"], source))
            prose.append(source)
            continue
        shown_text, shown_errors = _shown(raw.get("outputs"))
        cells.append(Cell(number, "code", source, shown_text=shown_text, shown_errors=shown_errors,
                          prose="\n".join(prose)))
        prose = []
    return _with_prose_after(cells, "\n".join(prose))


def _with_prose_after(cells: list[Cell], trailing: str) -> list[Cell]:
    """Each code cell with the prose the next code cell has before it (the trailing prose for the last)."""
    code = [i for i, cell in enumerate(cells) if cell.kind == "code"]
    for n, here in enumerate(code):
        after = cells[code[n + 1]].prose if n + 1 < len(code) else trailing
        cells[here] = cells[here]._replace(after=after)
    return cells


def _shown(outputs) -> tuple[str, tuple[str, ...]]:
    """The text a code cell's saved outputs show and the exception names among them; anything
    malformed there is ignored (outputs never stop a scan)."""
    if not isinstance(outputs, list):
        return "", ()
    texts: list[str] = []
    errors: list[str] = []
    for output in outputs:
        if not isinstance(output, dict):
            continue
        if output.get("output_type") == "error" and isinstance(output.get("ename"), str):
            errors.append(output["ename"])
        data = output.get("data")
        for text in (output.get("text"), data.get("text/plain") if isinstance(data, dict) else None):
            if text is None:
                continue
            try:
                texts.append(_joined(text))
            except NotebookError:
                continue
    return "".join(texts), tuple(errors)


def myst_cells(text: str) -> list[Cell]:
    """The code cells of a MyST markdown notebook, each with the file line it starts on.
    Option lines (`:tags: [...]`, or a `---` YAML block) right after the fence are not code."""
    cells: list[Cell] = []
    lines = text.splitlines()
    index, number, prose_start = 0, 0, 0
    while index < len(lines):
        match = _MYST_OPEN.match(lines[index])
        if not match:
            index += 1
            continue
        number += 1
        prose = "\n".join(lines[prose_start:index])
        fence = match.group("fence")
        index += 1
        if index < len(lines) and lines[index].strip() == "---":  # YAML options block
            index += 1
            while index < len(lines) and lines[index].strip() != "---":
                index += 1
            index += 1
        while index < len(lines) and lines[index].startswith(":") and not lines[index].startswith("::"):
            index += 1
        start = index
        close = re.compile(re.escape(fence[0]) + f"{{{len(fence)},}}\\s*$")
        while index < len(lines) and not close.match(lines[index]):
            index += 1
        cells.append(Cell(number, "code", "\n".join(lines[start:index]) + ("\n" if index > start else ""),
                          first_line=start + 1, prose=prose))
        index += 1
        prose_start = index
    return _with_prose_after(cells, "\n".join(lines[prose_start:]))


def cell_lines(path: str, cell: int) -> list[str]:
    """The source lines of one cell of a notebook file ([] when it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            cells = ipynb_cells(handle.read())
    except (OSError, NotebookError):
        return []
    return cells[cell - 1].source.splitlines() if 0 < cell <= len(cells) else []
