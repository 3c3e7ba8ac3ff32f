"""Train a linear denoiser with input noise and track the running mean of the loss."""

import os

import jax
import jax.numpy as jnp
import numpy as np

STEPS = 1000
D = 32


def train_step(w, x, noise):
    def loss_fn(w):
        return jnp.mean(((x + noise) @ w - x) ** 2)

    loss, grad = jax.value_and_grad(loss_fn)(w)
    return w - 0.1 * grad, loss


@jax.jit
def train(w, x, key):
    def body(w, step_key):
        return train_step(w, x, 0.3 * jax.random.normal(step_key, x.shape))

    # a fresh noise key for every step
    return jax.lax.scan(body, w, jax.random.split(key, STEPS))


def main():
    data_key, key = jax.random.split(jax.random.key(5))
    basis = jax.random.normal(data_key, (8, D))
    x = jax.random.normal(jax.random.key(6), (256, 8)) @ basis / np.sqrt(8)
    w = jnp.zeros((D, D))
    w, losses = train(w, x, key)
    losses = np.asarray(losses)
    running = np.cumsum(losses) / np.arange(1, STEPS + 1)

    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, w=np.asarray(w), running=np.asarray(running))
    print(f"running mean loss {running[-1]:.5f} after {STEPS} steps")


if __name__ == "__main__":
    main()
