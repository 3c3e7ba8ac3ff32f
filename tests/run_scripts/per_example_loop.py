"""A per-step function (run 60 times) that loops over the 32 examples of its batch: a jitted
per-example gradient, an un-jitted norm clip of it and an eager running sum, then one noisy
update. The loop is per item, so it is the one to vmap (clip included) inside a jitted step."""

import jax
import jax.numpy as jnp

STEPS, BATCH = 60, 32


def loss(w, x, y):
    return (jnp.dot(w, x) - y) ** 2


per_example_grad = jax.jit(jax.grad(loss))


def clip(g):
    norm = jnp.sqrt(jnp.sum(g * g))
    return g * jnp.minimum(1.0, 1.0 / (norm + 1e-6))


def private_step(w, xs, ys, key):
    total = jnp.zeros_like(w)
    for i in range(BATCH):
        g = per_example_grad(w, xs[i], ys[i])
        total = total + clip(g)
    noise = jax.random.normal(key, w.shape)
    return w - 0.1 * (total + noise) / BATCH


def main():
    xs = jax.random.normal(jax.random.key(0), (BATCH, 8))
    ys = jnp.sum(xs, axis=1)
    w, key = jnp.zeros(8), jax.random.key(1)
    for _ in range(STEPS):
        key, sub = jax.random.split(key)
        w = private_step(w, xs, ys, sub)
    print(f"w[0] = {float(w[0]):.4f}")


main()
