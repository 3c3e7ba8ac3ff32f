"""equinox's filter_jit (it jits a wrapper of its own) called every step, loss read per step."""

import equinox as eqx
import jax
import jax.numpy as jnp


@eqx.filter_jit
def loss(model, x):
    return jnp.mean(model(x) ** 2)


model = eqx.nn.Linear(4, 2, key=jax.random.PRNGKey(0))
x = jnp.ones((4,))
history = []
for _ in range(5):
    value = loss(model, x)
    history.append(float(value))
