"""The jit_basics workload: a few square float32 matrices already on the device.

The seed benchmarks selu, `jnp.dot(x, x.T)` and boolean-mask indexing on a 3000x3000 matrix created
on the device with `jax.random.normal` ("inputs are pre-loaded on device"). Here a short stream of
such matrices is processed, one microbenchmark call per matrix, as a user's loop over inputs would.
"""

from __future__ import annotations

from typing import NamedTuple

import jax

SIZES = {"small": (256, 3), "full": (3000, 4)}  # (matrix side, number of matrices)


class Workload(NamedTuple):
    inputs: jax.Array  # (n_matrices, side, side) float32, device-resident

    @property
    def n_matrices(self) -> int:
        return int(self.inputs.shape[0])


def make_workload(size: str, seed: int = 42) -> Workload:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r} for jit_basics; choose from {', '.join(SIZES)}")
    side, n_matrices = SIZES[size]
    inputs = jax.random.normal(jax.random.key(seed), (n_matrices, side, side), dtype="float32")
    return Workload(inputs=jax.block_until_ready(inputs))


def work_units(workload: Workload) -> float:
    """Matrices processed (each: selu, Gram matrix, sum of negatives)."""
    return float(workload.n_matrices)
