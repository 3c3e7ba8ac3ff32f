"""Wall time of each program in tests/programs: slow, with only the major mistake fixed, and fixed.

    python benchmarks/program_suite.py [--repeats 3] [--only 03_cartpole_rollout ...]

Each variant runs as its own subprocess (JAX import and compilation included, as a user would
run it); the table gives the median of the repeats in seconds and the speedups slow/major_fixed
and slow/fixed. Clean controls (`NN_clean_*`) are timed once per repeat as a reference. The
runs alternate between variants so that a change in the machine's load spreads over all of
them. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parent.parent / "tests" / "programs"
VARIANTS = ("slow.py", "major_fixed.py", "fixed.py")


def wall_time(path: Path) -> float:
    env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
    env.pop("JAXOPT_PROGRAM_OUT", None)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{path} failed:\n{done.stderr[-1500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each variant (median taken)")
    parser.add_argument("--only", nargs="*", default=[], help="program folder names to time")
    args = parser.parse_args()

    folders = sorted(p for p in PROGRAMS.iterdir() if p.is_dir() and p.name[:2].isdigit())
    if args.only:
        folders = [p for p in folders if p.name in args.only]
    header = f"{'program':<30} {'slow s':>7} {'major s':>8} {'fixed s':>8}"
    print(f"{header} {'slow/major':>11} {'slow/fixed':>11}")
    for folder in folders:
        if "_clean_" in folder.name:
            median = statistics.median(wall_time(folder / "clean.py") for _ in range(args.repeats))
            print(f"{folder.name:<30} {'':>7} {'':>8} {median:>8.2f}   (clean control)")
            continue
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for _ in range(args.repeats):
            for name in VARIANTS:
                times[name].append(wall_time(folder / name))
        slow, major, fixed = (statistics.median(times[name]) for name in VARIANTS)
        speedups = f"{slow / major:>10.2f}x {slow / fixed:>10.2f}x"
        print(f"{folder.name:<30} {slow:>7.2f} {major:>8.2f} {fixed:>8.2f} {speedups}")


if __name__ == "__main__":
    main()
