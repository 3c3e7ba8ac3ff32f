"""A first training script as a newcomer writes it: an un-jitted step, a NumPy batch fed every
step, and the loss read back with `.item()` every step. `python newcomer.py STEPS SEEDS [jit]`."""

import sys

import jax
import jax.numpy as jnp
import numpy as np


def loss_fn(params, x, y):
    pred = jnp.tanh(x @ params["w1"]) @ params["w2"]
    return jnp.mean((pred - y) ** 2)


def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params = jax.tree.map(lambda p, g: p - 0.05 * g, params, grads)
    return params, loss


def main(steps, seeds, jitted):
    step = jax.jit(train_step) if jitted else train_step
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        params = {"w1": jnp.asarray(rng.normal(size=(8, 16)) * 0.3, jnp.float32),
                  "w2": jnp.asarray(rng.normal(size=(16, 1)) * 0.3, jnp.float32)}
        for i in range(steps):
            x = rng.normal(size=(32, 8)).astype(np.float32)
            y = np.sin(x.sum(axis=1, keepdims=True))
            params, loss = step(params, x, y)
            last = loss.item()
        print(f"seed {seed}: loss {last:.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100, int(sys.argv[2]) if len(sys.argv) > 2 else 2,
         len(sys.argv) > 3 and sys.argv[3] == "jit")
