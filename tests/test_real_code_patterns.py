"""Patterns met in public JAX code, each as a minimal repro: what the default rules report on it
and what they state about it (messages and impact that claim only what the code shows)."""

from __future__ import annotations

import textwrap

from jaxopt_audit.static.pipeline.registry import load_rules

from conftest import scan_text

RULES = load_rules()


def found(source: str, code: str) -> list:
    return [f for f in scan_text(source, RULES) if f.code == code]


def line(source: str, fragment: str) -> int:
    """The line of `source` (as scan_text numbers it) holding `fragment`."""
    lines = textwrap.dedent(source).strip("\n").splitlines()
    return next(i for i, text in enumerate(lines, start=1) if fragment in text)


def test_reads_one_after_another_in_a_per_step_helper_are_one_stall():
    source = """
    import jax
    import numpy as np

    step = jax.jit(lambda s: (s * 0.5, s + 1.0, s.sum()))

    def to_host(a, b, c):
        ha = jax.device_get(a)
        hb = jax.device_get(b)
        hc = jax.device_get(c)
        return ha, hb, hc

    def run(s, steps):
        for t in range(steps):
            a, b, c = step(s)
            s = a
            log = to_host(a, b, c)
            np.save("log.npy", log[0])
        return s
    """
    reads = found(source, "JAX301")
    assert [f.line for f in reads] == [line(source, "ha = jax.device_get(a)")]
    assert "the 2 reads right after it, with no new device work between, wait no longer" in reads[0].message


def test_a_loop_that_draws_a_frame_each_iteration_needs_its_values_on_the_host():
    source = """
    import jax

    step = jax.jit(lambda s: s * 0.5)

    def film(s, renderer, steps):
        for t in range(steps):
            s = step(s)
            frame = renderer.render_frame(jax.device_get(s))
            renderer.save_frame(frame)
        return s
    """
    assert found(source, "JAX301") == []


def test_a_read_under_a_condition_says_when_it_runs():
    source = """
    import jax

    step = jax.jit(lambda s: s * 0.5)

    def train(s, steps, verbose):
        for t in range(steps):
            s = step(s)
            if verbose:
                print(float(s.sum()))
            else:
                print(s.sum().item())
        return s
    """
    messages = [f.message for f in found(source, "JAX301")]
    assert any("when `verbose` holds" in m for m in messages)
    loop = line(source, "for t in range(steps)")
    assert messages and all(f"every iteration of the loop at line {loop}, when" in m for m in messages)


def test_numpy_data_passed_to_two_helpers_is_reported_once_per_loop():
    source = """
    import jax.numpy as jnp
    import numpy as np

    X = np.random.randn(1000, 8)

    def forward(w, x):
        return jnp.tanh(x @ w)

    def backward(w, x, h):
        return x.T @ (1.0 - h ** 2)

    def train(w, steps):
        for t in range(steps):
            xb = X[(t % 10) * 100:(t % 10) * 100 + 100]
            h = forward(w, xb)
            w = w - 0.01 * backward(w, xb, h)
        return w
    """
    copies = found(source, "JAX302")
    assert [f.line for f in copies] == [line(source, "h = forward(w, xb)")]


def test_a_data_set_from_a_keras_loader_rebound_from_itself_stays_numpy():
    source = """
    import jax
    import jax.numpy as jnp
    from tensorflow.keras.datasets import mnist

    (x_train, y_train), (x_test, y_test) = mnist.load_data()
    x_train = x_train / 255.0
    key = jax.random.key(0)
    w = jnp.zeros((784, 10))

    def forward(w, x):
        return jnp.tanh(x.reshape(x.shape[0], -1) @ w)

    for e in range(10):
        x_train = x_train[jax.random.permutation(jax.random.fold_in(key, e), 60000)]
        for i in range(60):
            batch = x_train[i * 1000:(i + 1) * 1000]
            w = w - 0.01 * forward(w, batch)
    """
    assert [f.line for f in found(source, "JAX302")] == [line(source, "forward(w, batch)")]


def test_an_optimizer_walking_layers_with_zip_does_not_make_the_training_loop_an_epoch():
    source = """
    import jax
    import jax.numpy as jnp

    def loss(params, x):
        (w, b), = params
        return jnp.mean((x @ w + b) ** 2)

    def rmsprop(params, grads, r):
        new_params, new_r = [], []
        for (w, b), (gw, gb), (rw, rb) in zip(params, grads, r):
            rw = 0.9 * rw + 0.1 * gw ** 2
            rb = 0.9 * rb + 0.1 * gb ** 2
            new_params.append((w - 0.01 * gw / jnp.sqrt(rw + 1e-6), b - 0.01 * gb / jnp.sqrt(rb + 1e-6)))
            new_r.append((rw, rb))
        return new_params, new_r

    def train(params, r, xs, steps):
        for t in range(steps):
            grads = jax.grad(loss)(params, xs[t])
            params, r = rmsprop(params, grads, r)
        return params
    """
    assert line(source, "def rmsprop") in {f.line for f in found(source, "JAX101")}


def test_impact_of_code_jax_traces_does_not_claim_a_count():
    source = """
    import jax

    def body(carry, x):
        key = carry
        a = jax.random.normal(key, (3,))
        b = jax.random.normal(key, (3,))
        return key, a + b

    def run(key, xs):
        return jax.lax.scan(body, key, xs)
    """
    reuse = found(source, "JAX501")
    assert reuse and reuse[0].impact.runs is None
    assert "runs inside code JAX traces" in reuse[0].impact.why


def test_a_count_set_as_a_class_attribute_is_read():
    source = """
    import jax
    import jax.numpy as jnp

    class Configuration:
        epochs = 200
        lr = 0.1

    config = Configuration()

    def mse(w, x, y):
        return jnp.mean((x @ w - y) ** 2)

    def step(w, x, y):
        return w - config.lr * jax.grad(mse)(w, x, y)

    def fit(w, x, y):
        for epoch in range(config.epochs):
            w = step(w, x, y)
        return w
    """
    impact = found(source, "JAX101")[0].impact
    assert impact.runs == 200 and "`epochs` as the file configures it" in impact.why
