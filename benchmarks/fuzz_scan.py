"""The long fuzzing run of `scan` (issue 12): the properties of tests/test_fuzz_scan.py (generated
Python, generated notebooks, mutated real files) with many more examples than the test suite's
short budget.

    python benchmarks/fuzz_scan.py                 # 1000 examples per property
    python benchmarks/fuzz_scan.py --examples 5000

Prints hypothesis's statistics per property (inputs tried, time) and pytest's verdict; a failure
shows the smallest input that breaks the scan. Exit status: pytest's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000, help="examples per property (default 1000)")
    parser.add_argument("-k", default=None, help="only the properties matching this pytest -k expression")
    args = parser.parse_args()
    env = {**os.environ, "JAXOPT_AUDIT_FUZZ_PROFILE": "long", "JAXOPT_AUDIT_FUZZ_EXAMPLES": str(args.examples)}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-p", "no:cacheprovider",
           str(REPO / "tests" / "test_fuzz_scan.py"), "--hypothesis-show-statistics"]
    if args.k:
        cmd += ["-k", args.k]
    start = time.perf_counter()
    status = subprocess.call(cmd, cwd=REPO, env=env)
    print(f"fuzz_scan: {args.examples} examples per property, {time.perf_counter() - start:.0f} s in all, "
          f"pytest exit status {status}")
    return status


if __name__ == "__main__":
    sys.exit(main())
