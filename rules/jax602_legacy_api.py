"""JAX602 legacy-api (opt-in)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    Deprecation,
    Invalid,
    Report,
    Rule,
    SemanticModel,
    Valid,
    deprecated_uses,
    deprecation_fix,
    deprecation_message,
)


class LegacyApi(Rule):
    """
    ## What it does
    Off by default: turn it on with `--extend-select JAX602` or `extend-select = ["JAX602"]` in
    `[tool.jaxopt-audit]`. Finds JAX APIs that still work, without a deprecation warning, but
    that JAX's documentation recommends replacing in new code: `jax.random.PRNGKey` (→ typed keys
    from `jax.random.key`) and `jax.pmap` (→ `jax.jit` with shardings, or `jax.shard_map`).
    Reported once per file, at the first use, with the number of uses.

    Why off by default: neither is deprecated, and on real code these notices drowned the rest
    (on 3,100 files of public JAX projects, the `PRNGKey` notice alone was 36% of JAX601's
    findings, one in most files that draw random numbers). Deprecated and removed APIs, which
    break on an upgrade, stay in JAX601 and on by default.

    ## Why is this bad?
    It is a modernisation, not a bug. Raw `uint32` keys from `PRNGKey` carry no implementation
    and are easy to misuse as numbers (added, indexed, passed where data goes); typed keys from
    `jax.random.key` raise on such misuse. `pmap` compiles one program per device; `jax.jit` with
    shardings compiles one program for the whole mesh and composes with the rest of JAX's
    sharding API.

    ## How to fix
    `jax.random.key(seed)` instead of `jax.random.PRNGKey(seed)`: code that only passes keys to
    `jax.random` functions works unchanged; code that reads key bits needs
    `jax.random.key_data(key)`. For `pmap`, see JAX's migration guide to `jax.shard_map`.
    """

    CODE = "JAX602"
    NAME = "legacy-api"
    ANALYSIS = False  # names and imports only
    SEVERITY = "info"
    IMPACT = "api"
    SUMMARY = "Use of a JAX API that works but has a recommended modern replacement (opt-in)"
    FIX = "Use the replacement API named in the message when you modernise the code."
    DEFAULT = False

    INVALID = [
        Invalid("""
            import functools
            import jax

            key = jax.random.PRNGKey(0)  # <- JAX602
            params = jax.random.normal(jax.random.PRNGKey(1), (3,))

            @functools.partial(jax.pmap, axis_name="devices")  # <- JAX602
            def step(x):
                return jax.lax.psum(x, "devices")
        """),
    ]
    VALID = [
        Valid("""
            import jax

            key = jax.random.key(0)
            params = jax.random.normal(jax.random.fold_in(key, 1), (3,))
            step = jax.jit(lambda x: x * 2)
        """),
    ]

    def check(self, model: SemanticModel) -> Iterator[Report]:
        uses: dict[Deprecation, list[cst.CSTNode]] = {}
        for use in deprecated_uses(model):
            if use.entry.status == "legacy":
                uses.setdefault(use.entry, []).append(use.node)
        for entry, nodes in uses.items():
            more = f" ({len(nodes)} uses in this file)" if len(nodes) > 1 else ""
            yield Report(nodes[0], deprecation_message(entry, entry.name) + more, fix=deprecation_fix(entry))
