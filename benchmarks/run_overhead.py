"""What `jaxopt-audit run`'s instruments cost: the same loops timed without and with them.

    python benchmarks/run_overhead.py [--calls 2000] [--repeats 7] [--out results.json]

Workloads, each a loop a user might write, timed end to end (block at the end) after a warm-up:

- tiny_call: a jitted elementwise op on 8 floats: pure per-call overhead (the worst case).
- params_100: a jitted update over a dict of 100 parameter arrays (the leaves are walked twice
  per call under `run`: host-leaf counting and output bookkeeping).
- read_per_step: a jitted call plus a `float()` of its result every step (hook + stack walk).
- mlp_step: a 64-256-256-1 MLP SGD step on a batch of 32 (a realistic small step).
- train_step: the newcomer's script jitted: a 64-256-256-1 MLP step fed a NumPy batch and its
  loss read with `.item()` every step (what `run`'s per-call bookkeeping costs on a real step).
- eager_step: the same step not jitted, op by op (what the eager-op attribution costs).

Three configurations: plain; `run` (the jit wrapper, compile attribution, sampled execution
timing, host-read and host-copy hooks: what `jaxopt-audit run` switches on); `run+h2d` (that
plus `runtime.monitors.TransferMonitor`, jaxlib's transfer-guard log for the exact
host-to-device total, on with JAXOPT_AUDIT_H2D_TOTAL=1). Reports the median time per step, the
microseconds `run` adds per step, and the overhead of each repeat's plain/run pair (median and
quartiles). Timings on a shared machine are noisy: read the overhead against the pairs' spread,
and rerun on a quiet machine for numbers to quote. The target is at most 10%
on a jitted training step (train_step, mlp_step); tiny_call and read_per_step show the fixed
cost per call and per host read, which no real step is small enough to hide.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_audit.runtime.monitors import TransferMonitor
from jaxopt_audit.runtime.run.instrument import Instrument
from jaxopt_audit.runtime.run.sites import UserFiles


@dataclass(frozen=True)
class Overhead:
    workload: str
    steps: int
    plain_us_per_step: float
    run_us_per_step: float
    run_h2d_total_us_per_step: float
    # run / plain - 1 of each repeat's adjacent pair (load from other processes hits both of a
    # pair alike): median and quartiles, the spread to read `relative` against
    paired: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def added_us_per_step(self) -> float:
        """What `jaxopt-audit run` adds per step (default instruments)."""
        return self.run_us_per_step - self.plain_us_per_step

    @property
    def relative(self) -> float:
        return self.added_us_per_step / self.plain_us_per_step


STATISTICS: dict[str, Callable[[list[float]], float]] = {"median": statistics.median, "min": min}


def _workloads() -> dict[str, Callable[[int], Callable[[], None]]]:
    """name -> make(steps) -> loop; `make` builds (and jits) under whatever jax.jit is current."""

    def tiny_call(steps: int) -> Callable[[], None]:
        f = jax.jit(lambda x: x * 1.0001 + 1.0)
        x0 = jnp.ones(8)

        def loop() -> None:
            x = x0
            for _ in range(steps):
                x = f(x)
            x.block_until_ready()
        return loop

    def params_100(steps: int) -> Callable[[], None]:
        update = jax.jit(lambda p, lr: jax.tree.map(lambda w: w * (1.0 - lr), p))
        p0 = {f"w{i}": jnp.ones(16) for i in range(100)}
        lr = jnp.float32(1e-3)

        def loop() -> None:
            p = p0
            for _ in range(steps):
                p = update(p, lr)
            jax.block_until_ready(p)
        return loop

    def read_per_step(steps: int) -> Callable[[], None]:
        f = jax.jit(lambda x: (x * 0.999, jnp.sum(x)))
        x0 = jnp.ones(64)

        def loop() -> None:
            x, total = x0, 0.0
            for _ in range(steps):
                x, s = f(x)
                total += float(s)
        return loop

    def mlp_step(steps: int) -> Callable[[], None]:
        rng = np.random.default_rng(0)
        dims = (64, 256, 256, 1)
        params0 = {f"w{i}": jnp.asarray(rng.standard_normal((a, b)) / np.sqrt(a), jnp.float32)
                   for i, (a, b) in enumerate(zip(dims[:-1], dims[1:], strict=True))}
        x = jnp.asarray(rng.standard_normal((32, 64)), jnp.float32)
        y = jnp.asarray(rng.standard_normal((32, 1)), jnp.float32)

        def loss(params, x, y):
            h = x
            for i in range(len(dims) - 1):
                h = h @ params[f"w{i}"]
                if i < len(dims) - 2:
                    h = jnp.tanh(h)
            return jnp.mean((h - y) ** 2)

        step = jax.jit(lambda p, x, y: jax.tree.map(lambda w, g: w - 0.01 * g, p, jax.grad(loss)(p, x, y)))

        def loop() -> None:
            p = params0
            for _ in range(steps):
                p = step(p, x, y)
            jax.block_until_ready(p)
        return loop

    def newcomer(jitted: bool) -> Callable[[int], Callable[[], None]]:
        def make(steps: int) -> Callable[[], None]:
            rng = np.random.default_rng(0)
            dims = (64, 256, 256, 1)
            params0 = {f"w{i}": jnp.asarray(rng.standard_normal((a, b)) / np.sqrt(a), jnp.float32)
                       for i, (a, b) in enumerate(zip(dims[:-1], dims[1:], strict=True))}
            batches = [(rng.standard_normal((32, 64)).astype(np.float32),
                        rng.standard_normal((32, 1)).astype(np.float32)) for _ in range(8)]

            def loss(params, x, y):
                h = x
                for i in range(len(dims) - 1):
                    h = h @ params[f"w{i}"]
                    if i < len(dims) - 2:
                        h = jnp.tanh(h)
                return jnp.mean((h - y) ** 2)

            def train_step(p, x, y):
                value, grads = jax.value_and_grad(loss)(p, x, y)
                return jax.tree.map(lambda w, g: w - 0.01 * g, p, grads), value

            step = jax.jit(train_step) if jitted else train_step

            def loop() -> None:
                p = params0
                for i in range(steps):
                    x, y = batches[i % len(batches)]
                    p, value = step(p, x, y)
                    value.item()
            return loop
        return make

    return {"tiny_call": tiny_call, "params_100": params_100, "read_per_step": read_per_step,
            "mlp_step": mlp_step, "train_step": newcomer(True), "eager_step": newcomer(False)}




# --clock cpu counts the process's CPU time (all its threads), which the time other processes
# hold the cores does not inflate: steadier on a shared machine
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def _timed(loop: Callable[[], None], clock: Callable[[], float]) -> float:
    start = clock()
    loop()
    return clock() - start


class _Configuration:
    """One way of running a workload: plain, or under `run`'s instruments (optionally with the
    transfer-guard monitor). The loop is built once, with instruments on, so its jitted
    functions are recording wrappers; the instruments are switched on around each timing."""

    def __init__(self, make: Callable[[int], Callable[[], None]], steps: int, instrumented: bool,
                 h2d_total: bool) -> None:
        self.instrumented = instrumented
        self.h2d_total = h2d_total
        self.instrument = Instrument(UserFiles((os.path.abspath(__file__),))) if instrumented else None
        with self:
            self.loop = make(steps)
            self.loop()  # warm-up: compile, caches

    def __enter__(self) -> _Configuration:
        self.monitor = TransferMonitor(forward_interval=0.1) if self.h2d_total else None
        if self.monitor is not None:
            self.monitor.__enter__()
        if self.instrument is not None:
            self.instrument.install()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.instrument is not None:
            self.instrument.uninstall()
        if self.monitor is not None:
            self.monitor.__exit__(None, None, None)

    def time_once(self, clock: Callable[[], float] = time.perf_counter) -> float:
        with self:
            return _timed(self.loop, clock)


def measure(steps: int, repeats: int, workloads: list[str] | None = None,
            statistic: Callable[[list[float]], float] = statistics.median,
            clock: Callable[[], float] = time.perf_counter) -> list[Overhead]:
    """Configurations alternate within each repeat, so load from other processes hits all alike."""
    results = []
    for name, make in _workloads().items():
        if workloads and name not in workloads:
            continue
        configurations = [_Configuration(make, steps, False, False), _Configuration(make, steps, True, False),
                          _Configuration(make, steps, True, True)]
        times: list[list[float]] = [[] for _ in configurations]
        for _ in range(repeats):
            for index, configuration in enumerate(configurations):
                times[index].append(configuration.time_once(clock))
        plain, run, run_h2d = (statistic(t) / steps * 1e6 for t in times)
        pairs = [r / p - 1 for p, r in zip(times[0], times[1], strict=True)]
        results.append(Overhead(name, steps, plain, run, run_h2d, _spread(pairs)))
    return results


def _spread(values: list[float]) -> tuple[float, float, float]:
    """(median, first quartile, third quartile); one value: itself three times."""
    if len(values) < 2:
        return (values[0],) * 3 if values else (0.0, 0.0, 0.0)
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return median, q1, q3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="steps per timed loop")
    parser.add_argument("--repeats", type=int, default=7, help="timed loops per configuration")
    parser.add_argument("--out", default=None, help="also write the results as JSON here")
    parser.add_argument("--workloads", default=None, help="comma-separated subset (default: all)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall time, or the process's CPU time (steadier on a shared machine)")
    parser.add_argument("--stat", choices=sorted(STATISTICS), default="median",
                        help="statistic over repeats (min resists other load on a shared machine)")
    args = parser.parse_args(argv)
    results = measure(args.calls, args.repeats, args.workloads.split(",") if args.workloads else None,
                      STATISTICS[args.stat], CLOCKS[args.clock])
    print(f"jaxopt-audit run overhead on {jax.devices()[0].platform} (jax {jax.__version__}), "
          f"{args.calls} steps x {args.repeats} repeats, {args.stat} of {args.clock} time")
    print(f"{'workload':<14} {'plain us/step':>14} {'run':>9} {'run+h2d':>9} {'added us':>9} {'overhead':>9}"
          f"  {'paired median [quartiles]':>26}")
    for r in results:
        median, q1, q3 = r.paired
        print(f"{r.workload:<14} {r.plain_us_per_step:>14.1f} {r.run_us_per_step:>9.1f} "
              f"{r.run_h2d_total_us_per_step:>9.1f} {r.added_us_per_step:>9.1f} {r.relative:>8.1%}"
              f"  {median:>9.1%} [{q1:.1%}, {q3:.1%}]")
    if args.out:
        rows = [asdict(r) | {"added_us_per_step": r.added_us_per_step, "relative": r.relative} for r in results]
        payload = {"platform": jax.devices()[0].platform, "jax_version": jax.__version__,
                   "calls": args.calls, "repeats": args.repeats, "statistic": args.stat, "results": rows}
        directory = os.path.dirname(os.path.abspath(args.out))
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".json")
        with os.fdopen(fd, "w") as handle:
            json.dump(payload, handle, indent=2)
        os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
