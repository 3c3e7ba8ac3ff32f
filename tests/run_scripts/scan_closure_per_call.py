"""An un-jitted function that runs `lax.scan` eagerly over a body it defines inside itself:
a new function object on every call, so each call traces and compiles the scan again. A second
function scans a module-level body: compiled once."""

import jax
import jax.numpy as jnp


def halve(c, _):
    c = c * 0.5 + 1.0
    return c, c


def sample(x0, n):
    def step(c, _):
        c = c * 0.5 + 1.0
        return c, c
    _, ys = jax.lax.scan(step, x0, xs=None, length=n)
    print(f"mean={ys.mean():.3f}")
    return ys


def sample_shared(x0, n):
    _, ys = jax.lax.scan(halve, x0, xs=None, length=n)
    return ys


if __name__ == "__main__":
    for seed in range(3):
        chain = sample(jnp.ones(3) * seed, 10)
        print(seed, float(chain.sum()))
    for seed in range(3):
        chain = sample_shared(jnp.ones(3) * seed, 10)
        print(seed, float(chain.sum()))
