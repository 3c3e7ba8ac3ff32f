"""A main function called once that initialises parameters op by op, then calls a jitted step
in a loop that does no eager work of its own: the initialisation is setup, not per step."""

import jax
import jax.numpy as jnp


def init_params(key):
    k1, k2 = jax.random.split(key)
    w = jax.random.normal(k1, (64, 64)) / 8.0
    b = jnp.zeros(64) + 0.1
    scale = jnp.ones(64) * 0.5
    shift = jax.random.uniform(k2, (64,)) - 0.5
    return {"w": w, "b": b, "scale": scale, "shift": shift}


@jax.jit
def step(params, x):
    return jnp.tanh(x @ params["w"] + params["b"]) * params["scale"] + params["shift"]


def main():
    params = init_params(jax.random.key(0))
    x = jnp.ones(64)
    for _ in range(300):
        x = step(params, x)
    print(f"done {float(x.sum()):.4f}")


main()
