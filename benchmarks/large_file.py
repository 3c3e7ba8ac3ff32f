"""Scanning one very large module: time against libcst's bare parse, and peak memory (issue 12).

    python benchmarks/large_file.py [--lines 35000] [--repeats 3]

Generates a module of about --lines lines of ordinary JAX code (jitted steps, training loops
with host reads, key handling, dataclass configs; every block renamed so nothing is shared),
then measures, each in a fresh process so peak memory is that step's own: the bare
`libcst.parse_module` of the text, and `scan_paths` on the file (one job: parse, semantic
model, every rule, positions, in the per-file deep-stack thread). Prints the median seconds,
the scan/parse ratio the project holds to at most 3x, and each process's peak RSS (limit 1 GB).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

BLOCK = textwrap.dedent('''\
    @dataclasses.dataclass(frozen=True)
    class Config{i}:
        steps: int = {steps}
        lr: float = 1e-3


    @jax.jit
    def loss_{i}(params, batch):
        pred = jnp.tanh(batch["x"] @ params["w"] + params["b"])
        return jnp.mean((pred - batch["y"]) ** 2)


    def update_{i}(params, batch, lr):
        grads = jax.grad(loss_{i})(params, batch)
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


    def train_{i}(params, data, cfg: Config{i}, seed={i}):
        key = jax.random.PRNGKey(seed)
        history = []
        for step in range(cfg.steps):
            key, sub = jax.random.split(key)
            idx = jax.random.randint(sub, (32,), 0, data["x"].shape[0])
            batch = {{"x": data["x"][idx], "y": data["y"][idx]}}
            params = jax.jit(update_{i})(params, batch, cfg.lr)
            value = loss_{i}(params, batch)
            history.append(float(value))
            if value < 1e-4:
                break
        return params, np.array(history)


    def evaluate_{i}(params, xs):
        out = []
        for x in xs:
            out.append(jnp.tanh(x @ params["w"]))
        return jnp.stack(out)


''')
HEADER = "import dataclasses\n\nimport jax\nimport jax.numpy as jnp\nimport numpy as np\n\n\n"

# Each child prints wall seconds and CPU seconds (all its threads): on a shared machine the CPU
# time is the steadier number, and the ratio is given for both.
PARSE = "import libcst, sys, time\ndata = open(sys.argv[1], 'rb').read()\n" \
        "t, c = time.perf_counter(), time.process_time()\nlibcst.parse_module(data)\n" \
        "print(time.perf_counter() - t, time.process_time() - c)\n"
SCAN = "import sys, time\nfrom jaxopt_audit.static.pipeline.config import Config\n" \
       "from jaxopt_audit.static.pipeline.engine import scan_paths\nt, c = time.perf_counter(), time.process_time()\n" \
       "r = scan_paths([sys.argv[1]], config=Config(), jobs=1)\n" \
       "print(time.perf_counter() - t, time.process_time() - c)\n" \
       "assert not r.errors, r.errors\nprint(len(r.findings), file=sys.stderr)\n"


def generate(lines: int) -> str:
    per_block = BLOCK.count("\n")
    return HEADER + "".join(BLOCK.format(i=i, steps=100 + i) for i in range(lines // per_block + 1))


def measure(code: str, path: str) -> tuple[tuple[float, float], float, str]:
    """((wall s, CPU s) as the child reports them, the largest child's peak RSS in MiB, stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, check=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest child so far
    wall, cpu = (float(v) for v in proc.stdout.split()[:2])
    return (wall, cpu), max(peak, before) / 1024, proc.stderr.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=35_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "big_module.py")
        text = generate(args.lines)
        Path(path).write_text(text)
        parse_s, scan_s, findings = [], [], ""
        parse_rss = scan_rss = 0.0
        for _ in range(args.repeats):  # parse first: RUSAGE_CHILDREN keeps the largest child
            seconds, parse_rss, _ = measure(PARSE, path)
            parse_s.append(seconds)
        for _ in range(args.repeats):
            seconds, scan_rss, findings = measure(SCAN, path)
            scan_s.append(seconds)
    parse_wall, parse_cpu = (statistics.median(v) for v in zip(*parse_s, strict=True))
    scan_wall, scan_cpu = (statistics.median(v) for v in zip(*scan_s, strict=True))
    print(json.dumps({"lines": text.count("\n"), "bytes": len(text), "findings": int(findings),
                      "parse_wall_s": round(parse_wall, 2), "scan_wall_s": round(scan_wall, 2),
                      "parse_cpu_s": round(parse_cpu, 2), "scan_cpu_s": round(scan_cpu, 2),
                      "scan_over_parse_wall": round(scan_wall / parse_wall, 2),
                      "scan_over_parse_cpu": round(scan_cpu / parse_cpu, 2),
                      "parse_peak_rss_mib": round(parse_rss), "scan_peak_rss_mib": round(scan_rss),
                      "repeats": args.repeats}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
