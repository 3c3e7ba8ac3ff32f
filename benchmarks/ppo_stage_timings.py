"""Quick stage-by-stage timing of the ppo_cartpole pipeline, and the data-parallel stage's scaling.

Not the harness (`jaxopt-audit bench` is): a standalone check that prints, per stage, the first
call (compile + run) and the median of synchronised steady-state calls, env steps/s, the speedup
over stage 0 and the validation, at `small` or `full` size (stages that declare a
`full_size_prefix` run that prefix at full size, as the harness does).

    python benchmarks/ppo_stage_timings.py --size full [--stages 0,3] [--repeats 3]
    python benchmarks/ppo_stage_timings.py --scaling 1,2,4 --size full --fraction 0.0625

`--scaling` re-runs this script in subprocesses with N simulated CPU devices
(XLA_FLAGS=--xla_force_host_platform_device_count=N) and reports the data-parallel stage's
throughput and scaling efficiency (throughput_N / (N * throughput_1)).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, NamedTuple


class StageTiming(NamedTuple):
    module: str
    fraction: float
    first_s: float
    steady_s: float
    steps_per_s: float
    validation: str


def time_call(run: Any, workload: Any) -> tuple[Any, float]:
    import jax

    start = time.perf_counter()
    out = jax.block_until_ready(run(workload))
    return out, time.perf_counter() - start


def time_stages(size: str, stage_indices: list[int] | None, repeats: int,
                fraction: float | None) -> list[StageTiming]:
    from jaxopt_audit.runtime.bench.pipeline import load_pipeline

    pipeline = load_pipeline("ppo_cartpole")
    full = pipeline.make_workload(size)
    assert pipeline.prefix is not None, "ppo_cartpole defines no prefix"
    stages = [s for i, s in enumerate(pipeline.stages) if stage_indices is None or i in stage_indices]
    results, reference = [], None
    for stage in stages:
        part = fraction if fraction is not None else (stage.full_size_prefix if size == "full" else None)
        workload = pipeline.prefix(full, part) if part else full
        run = pipeline.stage_module(stage).run
        out, first = time_call(run, workload)
        steady = statistics.median(time_call(run, workload)[1] for _ in range(repeats))
        reference = out if reference is None and stage.module == "stage0_original" else reference
        # without stage 0 in the run, stages that change the math still validate by learning
        basis = reference if reference is not None else (out if stage.changes_math else None)
        check = pipeline.validate(basis, out, workload, stage) if basis is not None else None
        results.append(StageTiming(stage.module, part or 1.0, first, steady,
                                   pipeline.work_units(workload) / steady,
                                   f"{check.metric}={check.value:.4g} ok={check.ok}" if check else "-"))
        print(format_row(results[-1], results[0]), flush=True)
    return results


def format_row(row: StageTiming, first: StageTiming) -> str:
    return (f"{row.module:22s} fraction={row.fraction:<8.4g} first={row.first_s:8.2f}s "
            f"steady={row.steady_s:8.3f}s {row.steps_per_s:12.4g} env steps/s "
            f"x{row.steps_per_s / first.steps_per_s:9.1f}  {row.validation}")


def scaling(counts: list[int], size: str, fraction: float, repeats: int) -> None:
    throughput: dict[int, float] = {}
    for n in counts:
        env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n}", JAX_PLATFORMS="cpu")
        cmd = [sys.executable, __file__, "--size", size, "--stages", "4", "--fraction", str(fraction),
               "--repeats", str(repeats), "--json"]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        throughput[n] = row["steps_per_s"]
        efficiency = throughput[n] / (n * throughput[counts[0]] / counts[0])
        print(f"devices={n}: steady={row['steady_s']:.3f}s {throughput[n]:.4g} env steps/s, "
              f"scaling efficiency {efficiency:.0%}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="small")
    parser.add_argument("--stages", default=None, help="comma-separated stage indices")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fraction", type=float, default=None, help="run this prefix for every stage")
    parser.add_argument("--scaling", default=None, help="comma-separated simulated CPU device counts")
    parser.add_argument("--json", action="store_true", help="print the last stage's timing as JSON")
    args = parser.parse_args()
    if args.scaling:
        scaling([int(n) for n in args.scaling.split(",")], args.size, args.fraction or 1.0, args.repeats)
        return
    indices = [int(i) for i in args.stages.split(",")] if args.stages else None
    rows = time_stages(args.size, indices, args.repeats, args.fraction)
    if args.json:
        print(json.dumps(rows[-1]._asdict()))


if __name__ == "__main__":
    main()
