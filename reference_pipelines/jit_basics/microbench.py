"""Times each jit_basics microbenchmark alone, before and after its rewrite, and the async-dispatch pitfall.

The pipeline's stages run all microbenchmarks together (the harness times whole stages, and on CPU
the 3000x3000 matmul dominates). This script times each one on its own, as the post does with
%timeit, reusing the stages' own functions. It also shows the timing pitfall (JAX701): JAX returns
from a call as soon as the work is dispatched, so a timer stopped when the call returns measures
dispatch, not compute; `jax.block_until_ready` before stopping it measures the real cost.

    python -m jaxopt_audit.reference_pipelines.jit_basics.microbench [--size small|full] [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import stage0_original, stage1_jit, stage2_where, stage3_on_device
from .workload import SIZES, make_workload


class BeforeAfter(NamedTuple):
    """Median synchronized seconds per call of one microbenchmark, before and after its rewrite."""

    name: str
    rule: str
    before_s: float
    after_s: float


class DispatchTiming(NamedTuple):
    """One jitted call timed two ways: timer stopped when the call returns, and after it finishes."""

    name: str
    returned_s: float  # what an unsynchronized timer reports: dispatch only
    synchronized_s: float  # after jax.block_until_ready: the real cost


def synchronized_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of `fn()` including its completion, after one warm-up (compiling) call."""
    jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def dispatch_timing(name: str, fn: Callable[[], jax.Array], repeats: int) -> DispatchTiming:
    """Times the same calls with the timer stopped as `fn` returns and again once its result is ready."""
    jax.block_until_ready(fn())
    returned, synchronized = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        returned.append(time.perf_counter() - start)  # noqa: JAX701  unsynchronized on purpose: the pitfall
        jax.block_until_ready(result)
        synchronized.append(time.perf_counter() - start)
    return DispatchTiming(name, statistics.median(returned), statistics.median(synchronized))


def measure(size: str, repeats: int) -> tuple[list[BeforeAfter], list[DispatchTiming]]:
    x = make_workload(size).inputs[0]
    pairs = [
        BeforeAfter("selu: eager -> jit", "JAX101",
                    synchronized_seconds(lambda: stage0_original.selu(x), repeats),
                    synchronized_seconds(lambda: stage1_jit.selu(x), repeats)),
        BeforeAfter("sum of negatives: eager x[x < 0] -> jitted jnp.where", "JAX401",
                    synchronized_seconds(lambda: jnp.sum(stage0_original.get_negatives(x)), repeats),
                    synchronized_seconds(lambda: stage2_where.negative_sum(x), repeats)),
        BeforeAfter("x @ x.T: np.array to host -> stays on device", "JAX301",
                    synchronized_seconds(lambda: np.array(stage1_jit.gram(x)), repeats),
                    synchronized_seconds(lambda: stage3_on_device.gram(x), repeats)),
    ]
    dispatches = [dispatch_timing("x @ x.T (jit)", lambda: stage3_on_device.gram(x), repeats),
                  dispatch_timing("selu (jit)", lambda: stage1_jit.selu(x), repeats)]
    return pairs, dispatches


def format_report(size: str, pairs: Sequence[BeforeAfter], dispatches: Sequence[DispatchTiming]) -> str:
    side = SIZES[size][0]
    lines = [f"jit_basics microbenchmarks, {side}x{side} float32 on {jax.devices()[0].device_kind} "
             f"(median seconds per call)",
             f"{'microbenchmark':55} {'rule':7} {'before':>10} {'after':>10} {'speedup':>8}"]
    lines += [f"{p.name:55} {p.rule:7} {p.before_s:10.5f} {p.after_s:10.5f} "
              f"{p.before_s / p.after_s:7.1f}x" for p in pairs]
    lines += ["", "async dispatch (JAX701): a timer stopped when the call returns vs after block_until_ready",
              f"{'call':55} {'returned':>10} {'finished':>10} {'under-report':>12}"]
    lines += [f"{d.name:55} {d.returned_s:10.5f} {d.synchronized_s:10.5f} "
              f"{d.synchronized_s / d.returned_s:11.1f}x" for d in dispatches]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    pairs, dispatches = measure(args.size, args.repeats)
    print(format_report(args.size, pairs, dispatches))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
