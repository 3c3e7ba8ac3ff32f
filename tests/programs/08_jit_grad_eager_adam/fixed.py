"""Train a three-layer MLP with a hand-written Adam and report how long training took."""

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

STEPS = 500
B1, B2, LR, EPS = 0.9, 0.999, 3e-3, 1e-8


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "w1": jax.random.normal(k1, (16, 64)) / 4.0,
        "b1": jnp.zeros(64),
        "w2": jax.random.normal(k2, (64, 64)) / 8.0,
        "b2": jnp.zeros(64),
        "w3": jax.random.normal(k3, (64, 1)) / 8.0,
        "b3": jnp.zeros(1),
    }


def loss(params, x, y):
    h = jax.nn.gelu(x @ params["w1"] + params["b1"])
    h = jax.nn.gelu(h @ params["w2"] + params["b2"])
    return jnp.mean((h @ params["w3"] + params["b3"] - y) ** 2)


def adam_update(params, grads, m, v, t):
    new_params, new_m, new_v = {}, {}, {}
    for name in params:
        new_m[name] = B1 * m[name] + (1 - B1) * grads[name]
        new_v[name] = B2 * v[name] + (1 - B2) * grads[name] ** 2
        m_hat = new_m[name] / (1 - B1**t)
        v_hat = new_v[name] / (1 - B2**t)
        new_params[name] = params[name] - LR * m_hat / (jnp.sqrt(v_hat) + EPS)
    return new_params, new_m, new_v


@jax.jit
def train(params, m, v, x, y):
    # gradient and Adam update fused into one compiled step, all steps in one call
    def step(carry, t):
        params, m, v = carry
        return adam_update(params, jax.grad(loss)(params, x, y), m, v, t), None

    (params, m, v), _ = jax.lax.scan(step, (params, m, v), jnp.arange(1, STEPS + 1, dtype=jnp.float32))
    return params


def main():
    kx, kp = jax.random.split(jax.random.key(11))
    x = jax.random.normal(kx, (512, 16))
    y = jnp.sum(jnp.sin(x[:, :4]), axis=1, keepdims=True)
    params = init(kp)
    m = jax.tree.map(jnp.zeros_like, params)
    v = jax.tree.map(jnp.zeros_like, params)

    start = time.perf_counter()
    params = jax.block_until_ready(train(params, m, v, x, y))
    elapsed = time.perf_counter() - start

    final = loss(params, x, y)
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, final=np.asarray(final), **{k: np.asarray(p) for k, p in params.items()})
    print(f"final loss {float(final):.3e}, training took {elapsed:.2f} s")


if __name__ == "__main__":
    main()
