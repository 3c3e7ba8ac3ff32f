"""How close training_loop's last stage is to its FLOP floor on this machine.

floor = (FLOPs of the whole run, from XLA's cost analysis of one compiled training step times the
number of steps: a `lax.scan` body is counted once, not per iteration) / (this machine's measured
float32 matmul rate, the best of a few large square matmuls). Also reports the matmul rate at the
step's own shapes (batch 32 against the hidden width), which is what actually limits the scan.

    python benchmarks/training_loop_flop_floor.py [--size full|small] [--repeats 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxopt_audit.reference_pipelines.training_loop import stage5_scan as stage
from jaxopt_audit.reference_pipelines.training_loop.workload import HIDDEN_DIM, make_workload


class FloorReport(NamedTuple):
    device: str
    steps: int
    flops_per_step: float  # XLA cost analysis of one full-batch step (preprocess + grad + update)
    total_flops: float
    peak_matmul_flops_per_s: float  # best large square float32 matmul
    step_shape_matmul_flops_per_s: float  # (batch, hidden) @ (hidden, hidden), the step's largest
    floor_s: float
    compile_and_first_run_s: float
    steady_s: float  # median of the repeats
    ratio_to_floor: float


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def matmul_rate(m: int, k: int, n: int, calls: int = 1) -> float:
    """float32 FLOP/s of `calls` chained (m,k)@(k,n) matmuls in one jitted program."""
    a, b = jnp.ones((m, k), jnp.float32), jnp.full((k, n), 1.0 / k, jnp.float32)

    @jax.jit
    def chain(a: jax.Array) -> jax.Array:
        return jax.lax.fori_loop(0, calls, lambda _, acc: acc @ b, a)

    seconds = median_seconds(lambda: chain(a), repeats=5)
    return 2.0 * m * k * n * calls / seconds


def step_flops(batch_size: int, workload) -> float:
    """XLA's FLOP count for one training step of stage 5 on a batch of `batch_size` samples."""
    params = {k: jnp.asarray(v) for k, v in workload.init_params.items()}
    opt_state = stage.optimizer.init(params)
    batch = {"x": jnp.asarray(workload.x[:batch_size]), "y": jnp.asarray(workload.y[:batch_size])}

    def one_step(params, opt_state, key, batch):
        key, noise_key = jax.random.split(key)
        batch = stage.preprocess_batch(batch, noise_key)
        return stage.train_step(params, opt_state, batch)

    compiled = jax.jit(one_step).lower(params, opt_state, jax.random.key(0), batch).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost  # older JAX returns a list
    assert cost is not None, "XLA returned no cost analysis"
    return float(cost["flops"])


def measure(size: str, repeats: int) -> FloorReport:
    workload = make_workload(size)
    n_full, tail = divmod(workload.n_samples, workload.batch_size)
    flops_full = step_flops(workload.batch_size, workload)
    total = workload.n_epochs * (n_full * flops_full + (step_flops(tail, workload) if tail else 0.0))
    peak = max(matmul_rate(n, n, n) for n in (1024, 2048))
    step_rate = matmul_rate(workload.batch_size, HIDDEN_DIM, HIDDEN_DIM, calls=1000)
    start = time.perf_counter()
    jax.block_until_ready(stage.run(workload))
    first = time.perf_counter() - start
    steady = median_seconds(lambda: stage.run(workload), repeats)
    floor = total / peak
    return FloorReport(device=f"{jax.devices()[0].platform}: {jax.devices()[0].device_kind}, "
                              f"{os.cpu_count()} CPUs", steps=workload.n_epochs * workload.steps_per_epoch,
                       flops_per_step=flops_full, total_flops=total, peak_matmul_flops_per_s=peak,
                       step_shape_matmul_flops_per_s=step_rate, floor_s=floor,
                       compile_and_first_run_s=first, steady_s=steady, ratio_to_floor=steady / floor)


def write_json_atomically(path: str, data: dict) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, suffix=".tmp") as handle:
        json.dump(data, handle, indent=2)
    os.replace(handle.name, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("small", "full"), default="full")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the numbers to FILE")
    args = parser.parse_args()
    report = measure(args.size, args.repeats)
    print(f"training_loop stage5_scan on {report.device}, {report.steps} steps")
    print(f"  FLOPs: {report.flops_per_step / 1e6:.2f} MFLOP/step (XLA cost analysis), "
          f"{report.total_flops / 1e9:.1f} GFLOP in all")
    print(f"  matmul rate: {report.peak_matmul_flops_per_s / 1e9:.1f} GFLOP/s peak (square), "
          f"{report.step_shape_matmul_flops_per_s / 1e9:.1f} GFLOP/s at the step's shapes")
    print(f"  floor {report.floor_s:.3f} s; measured {report.steady_s:.3f} s steady "
          f"({report.compile_and_first_run_s:.3f} s first call): {report.ratio_to_floor:.2f}x the floor")
    if args.json:
        write_json_atomically(args.json, report._asdict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
