"""JAX201 loop-to-scan on loops whose carry changes rank each pass: a tensor-product evaluation
contracts one axis per dimension (`acc = einsum('pm,mp...->m...', b[k], acc)`), a reduction or an
integer index drops one. No `scan`/`fori_loop` carry may change shape, so none is suggested; a
contraction that keeps the rank is still a loop to scan."""

from __future__ import annotations

import pytest

from jaxopt_audit.rules.jax201_loop_to_scan import LoopToScan

from conftest import scanners

findings, lines = scanners([LoopToScan])

# a spline surface evaluated eagerly (its caller prints), one basis per parameter dimension
SURFACE = """
    import jax.numpy as jnp

    class Surface:
        def __init__(self, bases, weights):
            self.bases = bases
            self.weights = weights
            self.dims = len(bases)

        def __call__(self, y):
            jac = self.jacobian(y)
            print("jacobian", jac.shape)
            return jac

        def evaluate(self, y, axis):
            values = [self.bases[k](y[:, k], axis == k) for k in range(self.dims)]
            acc = jnp.einsum('pm,p...->m...', values[0], self.weights)
            for k in range(1, self.dims):
                acc = {update}
            return acc

        def jacobian(self, y):
            cols = []
            for k in range(self.dims):
                cols.append(self.evaluate(y, k)[:, :, None])
            return jnp.concatenate(cols, -1)
"""


@pytest.mark.parametrize("update", [
    "jnp.einsum('pm,mp...->m...', values[k], acc)",  # the tensor product: one axis fewer each pass
    "acc.sum(1)",
    "jnp.mean(acc, 1)",
    "acc[0]",
])
def test_a_carry_that_loses_an_axis_each_pass_is_not_a_loop_to_scan(update):
    assert lines(SURFACE.replace("{update}", update)) == []


@pytest.mark.parametrize("update", [
    "jnp.einsum('qm,mp...->mq...', values[k], acc)",  # one index contracted, one added
    "jnp.sum(acc, axis=1, keepdims=True) * values[k]",
])
def test_a_carry_that_keeps_its_rank_is_still_reported(update):
    found = findings(SURFACE.replace("{update}", update))
    assert [f.line for f in found] == [17]
    assert "`acc`" in found[0].message and "jax.lax.scan" in found[0].message
