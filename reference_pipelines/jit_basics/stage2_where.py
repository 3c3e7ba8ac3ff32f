"""+ jnp.where: the sum of negatives without boolean-mask indexing, so it can be jitted (JAX401 under jit).

`x[x < 0]` has a value-dependent shape, which jit rejects (NonConcreteBooleanIndexError); masking
with `jnp.where(x < 0, x, 0)` keeps the shape static and gives the same sum.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .workload import Workload, make_workload


@jax.jit
def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


@jax.jit
def gram(x):
    return jnp.dot(x, x.T)


@jax.jit
def negative_sum(x):
    return jnp.sum(jnp.where(x < 0, x, 0.0))


def run(workload: Workload) -> dict[str, list]:
    activations, products, negative_sums = [], [], []
    inputs = jnp.asarray(workload.inputs)  # already on the device: no copy
    for x in inputs:
        activations.append(selu(x))
        products.append(np.array(gram(x)))  # the result is copied to the host
        negative_sums.append(negative_sum(x))
    return {"selu": activations, "gram": products, "negative_sum": negative_sums}


if __name__ == "__main__":
    outputs = run(make_workload("small"))
    print(f"jit_basics.stage2_where: {len(outputs['gram'])} matrices, "
          f"sum of negatives {[round(float(s), 2) for s in outputs['negative_sum']]}")
