"""Scan throughput on a real code base, beside the bare libcst parse of the same files.

    python benchmarks/scan_throughput.py [DIR ...] [--jobs N] [--repeats R] [--preview]

Default DIR: the installed `flax` package. Reports lines per second (wall) for: libcst parse
alone, on one core and on N processes; the scan `jaxopt-audit scan DIR` runs (the default rules;
with `--preview`, every preview rule too, so the full model analysis and the project-wide pass),
on one core and on N processes; and the ratio of scan time to parse time, the number the project
holds to 1.5x. Median of R repeats.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import libcst as cst

from jaxopt_audit.static.pipeline.config import Config
from jaxopt_audit.static.pipeline.discovery import discover
from jaxopt_audit.static.pipeline.engine import scan_paths


def _parse_file(path: str) -> int:
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        cst.parse_module(data)
    except Exception:  # noqa: BLE001 - the scan reports these as errors; count them the same
        pass
    return data.count(b"\n")


def parse_all(files: list[str], jobs: int) -> float:
    start = time.perf_counter()
    if jobs == 1:
        for f in files:
            _parse_file(f)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(_parse_file, files, chunksize=max(1, len(files) // (jobs * 8))))
    return time.perf_counter() - start


def scan_all(dirs: list[str], jobs: int, preview: bool) -> tuple[float, int, int]:
    start = time.perf_counter()
    result = scan_paths(dirs, config=Config(), jobs=jobs, extend_select=["PREVIEW"] if preview else None)
    return time.perf_counter() - start, len(result.findings), result.lines_scanned


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="*")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--preview", action="store_true", help="scan with the preview rules on too")
    args = parser.parse_args()
    dirs = args.dirs
    if not dirs:
        spec = importlib.util.find_spec("flax")
        if spec is None or not spec.submodule_search_locations:
            print("flax is not installed; pass a directory to scan", file=sys.stderr)
            return 2
        dirs = list(spec.submodule_search_locations)
    files = discover(dirs, []).files
    lines = sum(open(f, "rb").read().count(b"\n") for f in files)
    print(f"{len(files)} files, {lines} lines under {', '.join(dirs)}; jobs={args.jobs}, "
          f"median of {args.repeats}; rules: {'default and preview' if args.preview else 'default'}")
    rows = []
    for jobs in sorted({1, args.jobs}):
        parse = statistics.median(parse_all(files, jobs) for _ in range(args.repeats))
        scans = [scan_all(dirs, jobs, args.preview) for _ in range(args.repeats)]
        scan = statistics.median(s[0] for s in scans)
        rows.append((jobs, parse, scan, scans[0][1]))
    print(f"{'jobs':>4} {'parse s':>8} {'parse lines/s':>14} {'scan s':>8} {'scan lines/s':>13} "
          f"{'scan/parse':>10} {'findings':>8}")
    for jobs, parse, scan, findings in rows:
        print(f"{jobs:>4} {parse:>8.2f} {lines / parse:>14,.0f} {scan:>8.2f} {lines / scan:>13,.0f} "
              f"{scan / parse:>10.2f} {findings:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
