"""Fit a degree-5 polynomial by minibatch SGD with a learning rate decayed every epoch."""

import os

import jax
import jax.numpy as jnp
import numpy as np

EPOCHS = 15
BATCHES = 8
BATCH_SIZE = 64
DEGREE = 5


def features(x):
    return jnp.stack([x**k for k in range(DEGREE + 1)], axis=-1)


def loss_fn(coef, x, y):
    return jnp.mean((features(x) @ coef - y) ** 2)


def sgd_update(coef, x, y, lr):
    loss, grad = jax.value_and_grad(loss_fn)(coef, x, y)
    return coef - lr * grad, loss


@jax.jit
def train(coef, xs, ys):
    def epoch_body(coef, lr):
        def batch_body(coef, batch):
            return sgd_update(coef, batch[0], batch[1], lr)

        return jax.lax.scan(batch_body, coef, (xs, ys))

    lrs = 0.5 * 0.95 ** jnp.arange(EPOCHS, dtype=jnp.float32)
    return jax.lax.scan(epoch_body, coef, lrs)


def main():
    key_x, key_noise = jax.random.split(jax.random.key(1))
    xs = jax.random.uniform(key_x, (BATCHES, BATCH_SIZE), minval=-1.0, maxval=1.0)
    ys = 0.5 - xs + 2.0 * xs**3 + 0.05 * jax.random.normal(key_noise, xs.shape)
    coef = jnp.zeros(DEGREE + 1)

    coef, losses = train(coef, xs, ys)
    # the per-batch losses come back once and are printed from host memory
    for epoch, row in enumerate(np.asarray(losses)):
        for b, loss in enumerate(row):
            print(f"epoch {epoch} batch {b} loss {loss}")

    final_loss = loss_fn(coef, xs.reshape(-1), ys.reshape(-1))
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, coef=np.asarray(coef), final_loss=np.asarray(final_loss))
    print(f"coefficients {np.round(np.asarray(coef), 3)} loss {float(final_loss):.5f}")


if __name__ == "__main__":
    main()
