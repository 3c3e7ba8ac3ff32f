"""Name resolution through imports: star imports and re-exported library names (a
project whose modules get `jax` and `partial` from `from pkg.common import *`, or import
`partial` both from a sibling module and from functools)."""

from __future__ import annotations

import libcst as cst

from jaxopt_audit.rules.jax101_missing_jit import MissingJit
from jaxopt_audit.static.syntax.names import ImportTable

from conftest import scanners

findings, lines = scanners([MissingJit])


def _table(source: str) -> ImportTable:
    table = ImportTable()
    for stmt in cst.parse_module(source).body:
        for small in getattr(stmt, "body", []):
            if isinstance(small, (cst.Import, cst.ImportFrom)):
                table.add_import(small)
    return table


def test_conventional_names_under_a_star_import_name_their_library():
    table = _table("from pkg.common import *\n")
    assert table.resolve(cst.parse_expression("partial")) == "functools.partial"
    assert table.resolve(cst.parse_expression("jnp.mean")) == "jax.numpy.mean"
    assert table.resolve(cst.parse_expression("jax.jit")) == "jax.jit"
    # spellings shared by several libraries stay unknown (`import jax.numpy as np` is common)
    assert table.resolve(cst.parse_expression("np.sum")) is None
    assert table.resolve(cst.parse_expression("random.normal")) is None
    assert table.resolve(cst.parse_expression("nn.Dense")) is None
    # without a star import nothing is guessed
    assert _table("import os\n").resolve(cst.parse_expression("jnp.mean")) is None


def test_a_project_module_reexporting_a_library_name_is_that_name():
    table = _table("from pkg.models import Net, partial\nfrom functools import partial\n")
    assert table.resolve(cst.parse_expression("partial")) == "functools.partial"
    # two libraries' functions of one name stay ambiguous
    clash = _table("from jax.numpy import sum\nfrom numpy import sum\n")
    assert clash.resolve(cst.parse_expression("sum")) is None


STEP = """
    {imports}

    @partial(jax.jit, static_argnames="train")
    def model_step(state, x, train):
        logits = state.apply_fn(state.params, x, train=train)
        loss = jnp.mean(jnp.square(logits - x)) + jnp.sum(jnp.abs(logits))
        return state, jnp.sqrt(loss) * jnp.exp(-loss)

    def train(state, batches):
        for x in batches:
            state, loss = model_step(state, x, True)
        return state
"""


def test_a_step_jitted_through_names_a_star_import_binds_is_jitted():
    assert lines(STEP.replace("{imports}", "from pkg.common import *")) == []
    assert lines(STEP.replace("{imports}", "from pkg.net import partial\n    from functools import partial\n"
                                           "    import jax\n    import jax.numpy as jnp")) == []


def test_old_jax_reexport_of_partial_jits_like_functools_partial_and_is_still_deprecated():
    # MCMC kernels under `from jax import partial, jit` and `@partial(jit, ...)` were
    # told to add jit. `jax.partial` was functools.partial; JAX601 reports the import.
    old = STEP.replace("{imports}", "from jax import partial\n    import jax\n    import jax.numpy as jnp")
    assert lines(old) == []
    assert lines(old.replace("@partial(jax.jit", "@partial(jax.vmap")) == [6]  # not jitted: reported
    from jaxopt_audit.rules.jax601_deprecated_api import DeprecatedApi
    deprecated, _ = scanners([DeprecatedApi])
    assert ["jax.partial" in f.message for f in deprecated(old)] == [True]
