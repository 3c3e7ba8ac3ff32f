"""What the measurement harness itself costs, so its numbers can be trusted (or corrected).

    python benchmarks/harness_overhead.py [--samples 2000]

Prints, per timed call: a bare clock pair; the harness's timed loop on a no-op (clock, call,
`jax.block_until_ready`, compile-count bookkeeping); the same on a tiny jitted function against
a hand-written loop; and, for the instrumented warm-up call, the cost of a TransferMonitor window
and of each counted transfer in each direction. Nothing here is asserted: it is a benchmark.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_audit.runtime.bench.machine import machine_info
from jaxopt_audit.runtime.bench.measure import harness_overhead, measure
from jaxopt_audit.runtime.monitors import CompileMonitor, TransferMonitor


def per_call(fn: Callable[[], object], samples: int) -> float:
    """Median seconds of fn() over samples calls, each timed alone."""
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args()
    n = args.samples
    print(machine_info().one_line())
    rows: list[tuple[str, float]] = []

    rows.append(("clock pair (perf_counter twice)", per_call(lambda: None, n)))
    rows.append(("harness timed loop on a no-op", harness_overhead(n)))

    tiny = jax.jit(lambda v: v + 1.0)
    x = jnp.ones(4)
    tiny(x).block_until_ready()
    hand = per_call(lambda: tiny(x).block_until_ready(), n)
    rows.append(("hand loop: tiny jitted call + block_until_ready", hand))
    m = measure(tiny, x, repeats=n, count_transfers=False, analyse_cost=False)
    rows.append(("measure(): same call, steady median", m.steady.median))
    rows.append(("  difference (harness cost per sample)", m.steady.median - hand))

    with CompileMonitor() as monitor:
        rows.append(("tiny call inside an active CompileMonitor", per_call(lambda: tiny(x).block_until_ready(), n)))
    del monitor

    def open_close() -> None:
        with TransferMonitor():
            pass

    rows.append(("TransferMonitor window open+close (fd redirect, hooks, probe once)",
                 per_call(open_close, max(20, n // 50))))

    host = np.ones(4, np.float32)
    k = 200
    plain_h2d = per_call(lambda: [jnp.asarray(host) for _ in range(k)], 20) / k
    with TransferMonitor():
        counted_h2d = per_call(lambda: [jnp.asarray(host) for _ in range(k)], 20) / k
    rows.append(("h2d transfer, plain", plain_h2d))
    rows.append(("h2d transfer, counted (guard log line)", counted_h2d))

    scalar = jax.jit(lambda v: jnp.sum(v))
    outs = [scalar(x + i) for i in range(k)]  # distinct device scalars: each read is a transfer
    jax.block_until_ready(outs)
    plain_d2h = per_call(lambda: [float(o) for o in outs], 50) / k
    with TransferMonitor():
        counted_d2h = per_call(lambda: [float(o) for o in outs], 50) / k
    rows.append(("d2h read float(scalar), plain", plain_d2h))
    rows.append(("d2h read float(scalar), counted (Python hook)", counted_d2h))

    width = max(len(label) for label, _ in rows)
    for label, seconds in rows:
        print(f"{label:<{width}}  {seconds * 1e6:10.2f} µs")


if __name__ == "__main__":
    main()
