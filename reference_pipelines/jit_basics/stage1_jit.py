"""+ jit: selu and the Gram matrix are compiled once, fusing selu's five element-wise ops into one (JAX101).

The seed's "8x from jit" on selu. The boolean-mask function cannot be jitted as written (its output
shape depends on the values); stage 2 rewrites it.
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


def get_negatives(x):  # a boolean mask cannot be jitted as written; stage 2 rewrites it
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
    print(f"jit_basics.stage1_jit: {len(outputs['gram'])} matrices, "
          f"sum of negatives {[round(float(s), 2) for s in outputs['negative_sum']]}")
