"""The same jitted call waited for every step: once to time it (a benchmark), once for nothing."""

import time

import jax
import jax.numpy as jnp


@jax.jit
def work(x):
    return jnp.tanh(x @ x.T).sum()


x = jnp.ones((64, 64))
times = []
for _ in range(10):
    start = time.perf_counter()
    work(x).block_until_ready()
    times.append(time.perf_counter() - start)
total = 0.0
for _ in range(10):
    y = work(x)
    y.block_until_ready()
    total = total + y
print(f"{min(times) >= 0} {float(total):.1f}")
