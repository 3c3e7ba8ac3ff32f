"""The arguments `run` records for an un-jitted function: what a jitted version of it would be
specialised on, for concrete arrays and for the tracers it meets under a transform."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_audit.runtime.run.arguments import ArraySpec, signature_of


def test_arrays_are_kept_by_shape_and_dtype_and_host_data_is_marked():
    seen = []

    def loss(w, x, scale):
        seen.append(signature_of(inspect.currentframe()))
        return jnp.sum((x @ w) * scale)

    loss(jnp.ones(3), np.ones((4, 3), np.float32), 2.0)
    _, sample = seen[0]
    assert sample.leaves == [ArraySpec((3,), jnp.float32, False), ArraySpec((4, 3), np.float32, True), 2.0]


def test_a_tracer_under_grad_is_kept_as_the_array_it_stands_for():
    seen = []

    def loss(w, x):
        seen.append(signature_of(inspect.currentframe()))
        return jnp.sum((x @ w) ** 2)

    jax.grad(loss)(jnp.ones(3), jnp.ones((4, 3)))
    _, sample = seen[0]
    assert sample.leaves == [ArraySpec((3,), jnp.float32, False), ArraySpec((4, 3), jnp.float32, False)]
    assert not any(isinstance(leaf, jax.core.Tracer) for leaf in sample.leaves)


def test_numpy_scalars_are_kept_as_zero_dimensional_host_arrays_not_by_value():
    seen = []

    def update(h, u):
        seen.append(signature_of(inspect.currentframe()))
        return jnp.tanh(h + u)

    series = np.linspace(0.0, 1.0, 5)
    for t in range(3):
        update(jnp.zeros(2), series[t])
    keys = {key for key, _ in seen}
    # a jitted update traces each element of the series as a 0-d array: one signature, one compilation
    assert len(keys) == 1
    assert seen[0][1].leaves == [ArraySpec((2,), jnp.float32, False), ArraySpec((), np.float64, True)]
