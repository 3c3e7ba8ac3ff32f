"""What jit saves on a small function, by number of eager ops: the figure behind JAX101's
threshold (`jaxopt_audit.static.model.eager.WORTH_JIT`).

    python benchmarks/eager_dispatch.py [--size 64] [--calls 300]

For n = 1..12, a function of n element-wise ops (`jnp.sin`, then a multiply: 2n ops) on a
small vector is called eagerly and jitted; prints the best of five medians of the per-call time
(microseconds, after `block_until_ready`) and what one call saves. On small arrays eager
dispatch, not arithmetic, is the cost, so the saving grows with the op count; on large arrays
fusion saves memory traffic too, which this does not measure. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp


def chain(n: int) -> Callable[[jax.Array], jax.Array]:
    def f(x: jax.Array) -> jax.Array:
        for _ in range(n):
            x = jnp.sin(x) * 1.01
        return x
    return f


def per_call_us(fn: Callable[[jax.Array], jax.Array], x: jax.Array, calls: int) -> float:
    fn(x).block_until_ready()  # compile (jit) or warm the op cache (eager) outside the timing
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            y = fn(x)
        y.block_until_ready()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64, help="vector length")
    parser.add_argument("--calls", type=int, default=300, help="calls per timing")
    args = parser.parse_args()
    x = jnp.ones((args.size,))
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, vector of {args.size}")
    print(f"{'ops':>4} {'eager us':>9} {'jit us':>7} {'saved us':>9}")
    for n in (1, 2, 3, 4, 5, 6, 8, 12):
        eager = per_call_us(chain(n), x, args.calls)
        jitted = per_call_us(jax.jit(chain(n)), x, args.calls)
        print(f"{2 * n:>4} {eager:>9.1f} {jitted:>7.1f} {eager - jitted:>9.1f}")


if __name__ == "__main__":
    main()
