"""An un-jitted step called in a loop by a training function run once per learning rate, with
a one-time initialisation, and in the loop a function that reads a value on the host and
one that prints."""

import jax
import jax.numpy as jnp


def init_params(key):
    k1, k2, k3 = jax.random.split(key, 3)
    w1 = jax.random.normal(k1, (4, 16)) * 0.5
    w2 = jax.random.normal(k2, (16, 1)) * 0.5
    b = jnp.zeros(16) + 0.1 * jax.random.normal(k3, (16,))
    return {"w1": w1, "w2": w2, "b": b}


def loss(params, x, y):
    hidden = jnp.tanh(x @ params["w1"] + params["b"])
    return jnp.mean((hidden @ params["w2"] - y) ** 2)


def train_step(params, x, y, lr):
    grads = jax.grad(loss)(params, x, y)
    return {k: params[k] - lr * grads[k] for k in params}


def train(params, x, y, lr, steps):
    history = []
    for _ in range(steps):
        params = train_step(params, x, y, lr)
        history.append(host_metric(params, x, y))
        chatty_norm(params)
    return params, history


def host_metric(params, x, y):
    value = loss(params, x, y) * 2.0
    return value.item()  # a host read: jax.jit of this function fails


def chatty_norm(params):
    total = jnp.sum(params["w1"] ** 2) + jnp.sum(params["w2"] ** 2)
    print("norm computed")
    return jnp.sqrt(total)


x = jax.random.normal(jax.random.key(1), (32, 4))
y = jnp.sin(x[:, :1])
params = init_params(jax.random.key(0))
for lr in (0.1, 0.05, 0.02):
    trained, history = train(params, x, y, lr, 20)
print(f"done {history[-1]:.4f}")
