"""+ vmap: one compiled call over the stacked matrices instead of a Python loop over them (JAX202).

The matrices are independent, so the loop of per-matrix calls becomes `jax.vmap` of the same
functions inside one jit: one dispatch per run instead of three per matrix.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .workload import Workload, make_workload


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def gram(x):
    return jnp.dot(x, x.T)


def negative_sum(x):
    return jnp.sum(jnp.where(x < 0, x, 0.0))


@jax.jit
def process_all(inputs: jax.Array) -> dict[str, jax.Array]:
    return {"selu": jax.vmap(selu)(inputs), "gram": jax.vmap(gram)(inputs),
            "negative_sum": jax.vmap(negative_sum)(inputs)}


def run(workload: Workload) -> dict[str, jax.Array]:
    return process_all(workload.inputs)


if __name__ == "__main__":
    outputs = run(make_workload("small"))
    print(f"jit_basics.stage4_vmap: {outputs['gram'].shape[0]} matrices, "
          f"sum of negatives {[round(float(s), 2) for s in outputs['negative_sum']]}")
