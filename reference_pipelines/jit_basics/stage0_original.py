"""Original: eager selu, the Gram matrix brought back to the host, boolean-mask indexing.

As a user first writes it: every function runs op by op (JAX101), `np.array` copies each 3000x3000
result to the host and waits for it (JAX301 once the functions are jitted: in this eager loop it
waits only for the matmul just queued), and `x[x < 0]` has a value-dependent shape, which works
eagerly but cannot be jitted (JAX401 once jitted).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .workload import Workload, make_workload


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def gram(x):
    return jnp.dot(x, x.T)


def get_negatives(x):
    return x[x < 0]  # shape depends on values


def run(workload: Workload) -> dict[str, list]:
    activations, products, negative_sums = [], [], []
    inputs = jnp.asarray(workload.inputs)  # already on the device: no copy
    for x in inputs:
        activations.append(selu(x))
        products.append(np.array(gram(x)))  # the result is copied to the host
        negative_sums.append(jnp.sum(get_negatives(x)))
    return {"selu": activations, "gram": products, "negative_sum": negative_sums}


if __name__ == "__main__":
    outputs = run(make_workload("small"))
    print(f"jit_basics.stage0_original: {len(outputs['gram'])} matrices, "
          f"sum of negatives {[round(float(s), 2) for s in outputs['negative_sum']]}")
