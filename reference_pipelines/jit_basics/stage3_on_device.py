"""+ results on device: the Gram matrix stays on the device, no `np.array` copy per call (JAX301).

The seed's GPU/TPU comparison: pulling the 3000x3000 result to the host costs a copy and a wait on
every call; whoever needs it on the host can copy it once, at the end.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

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
        products.append(gram(x))
        negative_sums.append(negative_sum(x))
    return {"selu": activations, "gram": products, "negative_sum": negative_sums}


if __name__ == "__main__":
    outputs = run(make_workload("small"))
    print(f"jit_basics.stage3_on_device: {len(outputs['gram'])} matrices, "
          f"sum of negatives {[round(float(s), 2) for s in outputs['negative_sum']]}")
