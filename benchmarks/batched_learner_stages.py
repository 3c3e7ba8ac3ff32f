"""Quick full-size timing of the batched_learner stages (a throwaway check, not the harness).

Times each stage's first call (compile + run) and its steady-state calls separately, with
`jax.block_until_ready`, on a prefix of the observations where a stage is too slow for the whole
experiment, and reports throughput in obs*seed/s and the extrapolated full-size time. Also
prints process CPU time, which is less disturbed than wall time on a shared machine.

    python benchmarks/batched_learner_stages.py [--repeats 3] [--stages 0,1,2,3]
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

from jaxopt_audit.runtime.bench.pipeline import load_pipeline

# Fraction of the full experiment each stage is timed on (stage 0 is ~1-3 ms per step).
FRACTIONS = {0: 0.0002, 1: 0.05, 2: 1.0, 3: 1.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stages", default="0,1,2,3")
    args = parser.parse_args()
    pipeline = load_pipeline("batched_learner")
    full = pipeline.make_workload("full")
    full_units = pipeline.work_units(full)
    assert pipeline.prefix is not None, "batched_learner defines no prefix"
    for index in (int(s) for s in args.stages.split(",")):
        stage = pipeline.stages[index]
        fraction = FRACTIONS[index]
        workload = full if fraction == 1.0 else pipeline.prefix(full, fraction)
        units = pipeline.work_units(workload)
        run = pipeline.stage_module(stage).run
        start = time.perf_counter()
        jax.block_until_ready(run(workload))
        first = time.perf_counter() - start
        walls, cpus = [], []
        for _ in range(args.repeats if index else 1):
            start, cpu = time.perf_counter(), time.process_time()
            jax.block_until_ready(run(workload))
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
        wall, cpu = float(np.min(walls)), float(np.min(cpus))
        print(f"{stage.module:16s} on {fraction:7.2%} of full: first call {first:7.2f}s, "
              f"steady {wall:7.3f}s wall / {cpu:7.3f}s cpu -> {units / wall / 1e6:6.2f} M obs*seed/s "
              f"(cpu {units / cpu / 1e6:6.2f} M); full experiment ~{full_units / (units / wall):8.1f}s",
              flush=True)


if __name__ == "__main__":
    main()
