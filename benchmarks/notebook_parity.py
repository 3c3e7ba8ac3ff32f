"""Notebook scanning against a plain-Python conversion of the same notebooks.

For every `X.ipynb` with an `X.nb.py` sibling (cells written one after another under `# cell N`
headers, IPython lines commented out), scan the directory's notebooks and the conversions and
check that each finding of the conversion is reported in the notebook at the same cell, line
and column.

    python benchmarks/notebook_parity.py ROOT     (a folder of repositories with notebooks)
"""

from __future__ import annotations

import os
import re
import sys
from collections import defaultdict

from jaxopt_audit.static.pipeline.engine import scan_paths

HEADER = re.compile(r"^# cell (\d+)\s*$")


def cell_map(path: str) -> list[tuple[int, int]]:
    """(cell, line in cell) for each line of a converted file (headers map to (0, 0))."""
    out, cell, line = [], 0, 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for text in handle.read().splitlines():
            header = HEADER.match(text)
            if header:
                cell, line = int(header.group(1)), 0
                out.append((0, 0))
                continue
            line += 1
            out.append((cell, line))
    return out


def main(root: str) -> int:
    pairs = []
    for directory, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".ipynb") and name[:-6] + ".nb.py" in files:
                pairs.append((os.path.join(directory, name), os.path.join(directory, name[:-6] + ".nb.py")))
    notebooks = scan_paths([nb for nb, _ in pairs], config=None)
    converted = scan_paths([py for _, py in pairs], config=None)
    by_nb = defaultdict(set)
    for f in notebooks.findings:
        by_nb[f.path].add((f.code, f.cell, f.line, f.column))
    by_py = defaultdict(list)
    for f in converted.findings:
        by_py[f.path].append(f)
    total_py = total_nb = missing = 0
    for nb, py in pairs:
        nb, py = os.path.normpath(nb), os.path.normpath(py)
        mapping = cell_map(py)
        expected = {(f.code, *mapping[f.line - 1], f.column) for f in by_py[py]}
        lost = expected - by_nb[nb]
        total_py += len(expected)
        total_nb += len(by_nb[nb])
        missing += len(lost)
        if lost or len(by_nb[nb]) != len(expected):
            print(f"{nb}: conversion {len(expected)}, notebook {len(by_nb[nb])}, missing {sorted(lost)}")
    errors = [e for e in notebooks.errors]
    for e in errors:
        print(f"error: {e.path}: {e.message}")
    print(f"{len(pairs)} notebooks: {total_py} findings in the conversions, {total_nb} in the notebooks, "
          f"{missing} of the conversions' findings missing; {len(errors)} notebook errors")
    return 1 if missing else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/notebook_parity.py ROOT")
    sys.exit(main(sys.argv[1]))
