"""Train an MLP classifier with dropout on two interleaved spirals, in epochs of minibatches."""

import os

import jax
import jax.numpy as jnp
import numpy as np

EPOCHS = 9
BATCH = 64
SIZES = [2, 64, 64, 2]


def spirals(n):
    t = jnp.linspace(0.5, 3.5 * jnp.pi, n)
    a = jnp.stack([t * jnp.cos(t), t * jnp.sin(t)], axis=1) / 10.0
    x = jnp.concatenate([a, -a])
    y = jnp.concatenate([jnp.zeros(n, jnp.int32), jnp.ones(n, jnp.int32)])
    order = jax.random.permutation(jax.random.key(8), 2 * n)
    return x[order], y[order]


def init(key):
    params = []
    for m, n in zip(SIZES[:-1], SIZES[1:]):
        params.append((jax.random.normal(key, (m, n)) * np.sqrt(2.0 / m), jnp.zeros(n)))  # <- JAX501
    return params


def loss_fn(params, x, y, key):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    keep = jax.random.bernoulli(key, 0.9, x.shape)
    x = jnp.where(keep, x / 0.9, 0.0)
    logits = x @ params[-1][0] + params[-1][1]
    return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(y.shape[0]), y])


def train_step(params, x, y):  # <- JAX101 major
    key = jax.random.PRNGKey(0)  # <- JAX502
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y, key)
    return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads)], loss


def accuracy(params, x, y):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    return jnp.mean(jnp.argmax(x @ params[-1][0] + params[-1][1], axis=1) == y)


def main():
    x, y = spirals(512)
    params = init(jax.random.key(0))
    n_batches = x.shape[0] // BATCH
    for epoch in range(EPOCHS):
        for i in range(n_batches):  # <- JAX201
            xb, yb = x[i * BATCH : (i + 1) * BATCH], y[i * BATCH : (i + 1) * BATCH]
            params, loss = train_step(params, xb, yb)
            if i == n_batches - 1:
                print(f"epoch {epoch} last batch loss {float(loss):.4f}")

    acc = accuracy(params, x, y)
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, acc=np.asarray(acc), **{f"w{i}": np.asarray(w) for i, (w, _) in enumerate(params)})
    print(f"final accuracy {float(acc):.3f}")


if __name__ == "__main__":
    main()
