"""An eager momentum update over a parameter pytree: two `jax.tree.map` lambdas per call, so each
lambda runs once per leaf; the function to jit is the update, not its lambdas."""

import jax
import jax.numpy as jnp

BETA, LR = 0.9, 0.01


@jax.jit
def grads_of(params, x):
    return jax.grad(lambda p: sum(jnp.sum((x @ w) ** 2) for w in p))(params)


def momentum_update(params, velocity, grads):
    velocity = jax.tree.map(lambda v, g: BETA * v + g, velocity, grads)
    params = jax.tree.map(lambda p, v: p - LR * v, params, velocity)
    return params, velocity


def main():
    params = [jnp.full((4, 4), 0.1 * (i + 1)) for i in range(8)]
    velocity = [jnp.zeros((4, 4)) for _ in range(8)]
    x = jnp.ones((2, 4))
    for _ in range(30):
        params, velocity = momentum_update(params, velocity, grads_of(params, x))
    print(float(sum(jnp.sum(p) for p in params)))


main()
