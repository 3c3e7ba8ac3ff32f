"""Cold versus warm `scan` with the result cache, and an edit seen on the next warm scan.

    python benchmarks/scan_cache.py ROOT [--repeats N]     (a source tree: a checkout of flax, say)

Runs the CLI as a user would (`jaxopt-audit scan ROOT --format json --cache-dir DIR`, all
cores). Cold: an empty cache directory each time. Warm: the same directory again. Then the tree
is copied to a temporary directory, one file gets a new host sync in a step loop, and the next
warm scan must report it (and the unchanged files' findings must be the same as cold).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

EDIT = """

import jax as _jax_cache_benchmark

_cache_benchmark_step = _jax_cache_benchmark.jit(lambda w: w * 0.9)


def _cache_benchmark_edit(w):
    for _ in range(10):
        w = _cache_benchmark_step(w)
        print(float(w.sum()))
    return w
"""


def scan(root: str, cache_dir: str) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "jaxopt_audit.cli", "scan", root, "--format", "json",
                           "--cache-dir", cache_dir], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"scan failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed, json.loads(proc.stdout)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", help="the tree to scan")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cold, warm = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            cache_dir = os.path.join(tmp, f"cache{i}")
            t, cold_data = scan(args.root, cache_dir)
            cold.append(t)
            t, warm_data = scan(args.root, cache_dir)
            warm.append(t)
            assert warm_data["findings"] == cold_data["findings"], "warm scan differs from cold"
        files = cold_data["files_scanned"]
        print(f"{args.root}: {files} files, {len(cold_data['findings'])} findings")
        print(f"cold: median {statistics.median(cold):.2f} s  {[round(t, 2) for t in cold]}")
        print(f"warm: median {statistics.median(warm):.2f} s  {[round(t, 2) for t in warm]}")
        print(f"warm / cold: {statistics.median(warm) / statistics.median(cold):.1%}")

        copy = os.path.join(tmp, "tree")
        shutil.copytree(args.root, copy, symlinks=True)
        cache_dir = os.path.join(tmp, "edit-cache")
        _, before = scan(copy, cache_dir)
        target = next(os.path.join(d, f) for d, _, fs in sorted(os.walk(copy)) for f in sorted(fs)
                      if f.endswith(".py"))
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(EDIT)
        t, after = scan(copy, cache_dir)
        new = [f for f in after["findings"] if f not in before["findings"]]
        print(f"after editing {os.path.relpath(target, copy)}: warm scan {t:.2f} s, new findings: "
              f"{[(f['code'], f['line']) for f in new]}")
        assert any(f["path"] == target and f["code"] == "JAX301" for f in new), "the edit was not seen"
    return 0


if __name__ == "__main__":
    sys.exit(main())
