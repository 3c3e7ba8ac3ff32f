"""Full-batch logistic regression on a float64 NumPy data set, with a held-out split."""

import os

import jax
import jax.numpy as jnp
import numpy as np

N, D = 36864, 128
N_TRAIN = 32768
STEPS = 150


def make_dataset():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, D)) * rng.uniform(0.5, 2.0, size=D)
    w_true = rng.normal(size=D) / np.sqrt(D)
    y = (x @ w_true + 0.5 * rng.normal(size=N) > 0).astype(np.float64)
    return x, y


def nll(params, x, y):
    logits = x @ params["w"] + params["b"]
    return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)


@jax.jit
def train(params, x, y):
    def step(params, _):
        loss, grads = jax.value_and_grad(nll)(params, x, y)
        return jax.tree.map(lambda p, g: p - 0.5 * g, params, grads), loss

    return jax.lax.scan(step, params, None, length=STEPS)


def main():
    x, y = make_dataset()
    # the training split goes to the device once, in the dtype the step computes in
    x_train = jnp.asarray(x[:N_TRAIN], dtype=jnp.float32)
    y_train = jnp.asarray(y[:N_TRAIN], dtype=jnp.float32)
    params = {"w": jnp.zeros(D), "b": jnp.zeros(())}
    params, losses = train(params, x_train, y_train)
    losses = np.asarray(losses)

    test_loss = nll(params, jnp.asarray(x[N_TRAIN:]), jnp.asarray(y[N_TRAIN:]))
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, w=np.asarray(params["w"]), losses=np.asarray(losses), test_loss=np.asarray(test_loss))
    print(f"train loss {losses[-1]:.4f} test loss {float(test_loss):.4f}")


if __name__ == "__main__":
    main()
