"""A jitted gradient beside an optimiser update left outside it: optax's update and
apply_updates run op by op every step, on the loop's own lines."""

import jax
import jax.numpy as jnp
import optax

x = jnp.linspace(-1.0, 1.0, 128)
y = 2.0 * x - 1.0


def loss(params):
    return jnp.mean((params["w"] * x + params["b"] - y) ** 2)


grad = jax.jit(jax.value_and_grad(loss))
optimiser = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(0.05))


def train(steps):
    params = {"w": jnp.float32(0.0), "b": jnp.float32(0.0)}
    state = optimiser.init(params)
    for _ in range(steps):
        value, grads = grad(params)
        updates, state = optimiser.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    return params, value


params, value = train(300)
print(f"w={float(params['w']):.3f} b={float(params['b']):.3f} loss={float(value):.4f}")
