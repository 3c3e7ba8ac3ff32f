"""flax.nnx.jit on a function of a module, called every step, result read per step."""

import jax.numpy as jnp
from flax import nnx


@nnx.jit
def apply(model, x):
    return model(x).sum()


model = nnx.Linear(4, 2, rngs=nnx.Rngs(0))
history = []
for _ in range(5):
    history.append(float(apply(model, jnp.ones((3, 4)))))
