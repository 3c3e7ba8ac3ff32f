"""Findings per thousand lines, per rule, on real code bases: how loud the scanner is.

    python benchmarks/findings_density.py [DIR ...] [--split-tests]

Default DIRs: the installed flax, optax and equinox packages (library code and their tests).
With --split-tests, files named `*_test.py` / `test_*.py` are counted apart, since speed rules on
test code are a different question from speed rules on training code.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections import Counter

from jaxopt_audit.static.pipeline.config import Config
from jaxopt_audit.static.pipeline.discovery import discover
from jaxopt_audit.static.pipeline.engine import scan_paths


def _is_test(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith("_test.py") or name.startswith("test_") or f"{os.sep}tests{os.sep}" in path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="*")
    parser.add_argument("--split-tests", action="store_true")
    args = parser.parse_args()
    dirs = args.dirs
    if not dirs:
        for name in ("flax", "optax", "equinox"):
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.submodule_search_locations:
                dirs.extend(spec.submodule_search_locations)
    if not dirs:
        print("nothing to scan: pass directories", file=sys.stderr)
        return 2
    for directory in dirs:
        files = discover([directory], []).files
        groups = {"all": files}
        if args.split_tests:
            groups = {"library": [f for f in files if not _is_test(f)], "tests": [f for f in files if _is_test(f)]}
        for label, group in groups.items():
            if not group:
                continue
            lines = sum(open(f, "rb").read().count(b"\n") for f in group)
            result = scan_paths(group, config=Config())
            counts = Counter(f.code for f in result.findings)
            per_rule = ", ".join(f"{code} {n} ({1000 * n / lines:.2f})" for code, n in sorted(counts.items()))
            print(f"{directory} [{label}]: {len(group)} files, {lines} lines, {len(result.findings)} findings "
                  f"= {1000 * len(result.findings) / max(lines, 1):.2f} per 1k lines"
                  + (f"; {per_rule}" if per_rule else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
