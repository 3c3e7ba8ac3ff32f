"""JAX601 deprecated-api."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    DEPRECATIONS,
    SAFE,
    Fix,
    Invalid,
    Keyword,
    Report,
    Rule,
    SemanticModel,
    Valid,
    deprecated_keyword_uses,
    deprecated_uses,
    deprecation_fix,
    deprecation_message,
    describe,
    dotted_expression,
    lookup,
    module_alias,
    unevaluated_nodes,
)


class DeprecatedApi(Rule):
    """
    ## What it does
    Finds uses of JAX APIs that current JAX removed or deprecates, and names the replacement:
    the `jax.tree_map` family (→ `jax.tree.map`, `jax.tree.leaves`, ...),
    `jax.experimental.pjit.pjit` (→ `jax.jit`), `jax.experimental.maps.xmap`,
    `jax.experimental.host_callback` (→ `jax.debug.callback` / `jax.pure_callback`),
    `jax.abstract_arrays`, `jax.ShapedArray`, `DeviceArray` (→ `jax.Array`), the `jax.ops.index_*`
    updates, and every entry of the `_deprecations` tables JAX itself keeps. Reported where the
    name is spelled: at the import (`from jax import tree_map`) or the attribute
    (`jax.tree_map(...)`). Also keyword arguments that current functions dropped:
    `jnp.clip(x, a_min=..., a_max=...)` (now `min=`, `max=`), `jnp.reshape(x, newshape=...)`
    (now `shape=`), `jax.scipy.linalg.solve(..., sym_pos=True)`, and `jax.jit(..., device=...,
    backend=...)` given a value (deprecated), reported at the argument.

    ## Why is this bad?
    A removed API fails with `AttributeError` or `ImportError` (a removed keyword with
    `TypeError`) on current JAX, so the code does
    not run after an upgrade (reported as a warning). A deprecated one warns today and will be
    removed (info). In an annotation that `from __future__ import annotations` leaves
    unevaluated, or in an `if TYPE_CHECKING:` block, a removed name fails no run; type checkers
    and documentation tools still reject it (info, and the message says so).

    APIs that still work without a warning but have a modern replacement (`jax.random.PRNGKey`,
    `jax.pmap`) are not deprecated: they are JAX602 legacy-api, which is off by default.
    JAX601 is the one family still reported in test files by default: a removed API breaks a
    test suite on upgrade like any other code.

    ## How to fix
    Use the replacement the message names. Where it is a migration rather than a rename, the
    message says what else changes: `jax.shard_map` takes `mesh`, `in_specs` and `out_specs` as
    keywords and calls `check_rep` `check_vma`; `jax.jit` replacing `pjit` needs a mesh in
    context (`jax.set_mesh`) for bare `PartitionSpec`s; `device_put` takes a sharding where
    `device_put_sharded`/`device_put_replicated` stacked per-device arrays. The list is data
    (`jaxopt_audit/static/knowledge/deprecations.py`) and is checked against the installed JAX in the
    test suite.

    Version-compatibility code is left alone: an `if` on the JAX version or `hasattr(jax, ...)`,
    and a `try` that imports one spelling with the other in its `except ImportError` /
    `AttributeError` handler (or any handler, when the `try` holds nothing but imports).

    ## Automatic fix
    Safe: `scan --fix` re-spells a use of a renamed function, class or constant as its current
    name where it is a drop-in replacement (`jax.tree_map` -> `jax.tree.map`, `jnp.trapz` ->
    `jnp.trapezoid`, `jnp.DeviceArray` -> `jax.Array`), and renames a removed keyword whose
    replacement takes the same value (`a_min=` -> `min=`, `newshape=` -> `shape=`). Imports,
    legacy APIs (`PRNGKey`, `pmap`)
    and replacements with another signature or meaning (`in1d`, `device_put_replicated`) are left
    for you.
    """

    CODE = "JAX601"
    NAME = "deprecated-api"
    ANALYSIS = False  # names and imports only
    SEVERITY = "info"
    IMPACT = "api"
    SUMMARY = "Use of a JAX API that is deprecated or removed"
    FIX = "Use the replacement API named in the message."

    INVALID = [
        Invalid("""
            import jax
            from jax import tree_map  # <- JAX601
            from jax.experimental import host_callback as hcb  # <- JAX601

            def scale(params, factor):
                return jax.tree_map(lambda p: p * factor, params)  # <- JAX601

            def report(x):
                hcb.id_print(x)
                return tree_map(lambda v: v + 1, x)

            key = jax.random.PRNGKey(0)  # <- JAX602
            other = jax.random.PRNGKey(1)
            leaves = jax.tree_util.tree_multimap(lambda a, b: a + b, key, other)  # <- JAX601
        """, fixed="""
            import jax
            from jax import tree_map  # <- JAX601
            from jax.experimental import host_callback as hcb  # <- JAX601

            def scale(params, factor):
                return jax.tree.map(lambda p: p * factor, params)  # <- JAX601

            def report(x):
                hcb.id_print(x)
                return tree_map(lambda v: v + 1, x)

            key = jax.random.PRNGKey(0)  # <- JAX602
            other = jax.random.PRNGKey(1)
            leaves = jax.tree.map(lambda a, b: a + b, key, other)  # <- JAX601
        """),
        Invalid("""
            import jax.numpy as jnp
            from jax.experimental.pjit import pjit  # <- JAX601

            def is_array(x):
                return isinstance(x, jnp.DeviceArray)  # <- JAX601

            step = pjit(lambda x: jnp.trapz(x))  # <- JAX601
        """, fixed="""
            import jax.numpy as jnp
            from jax.experimental.pjit import pjit  # <- JAX601

            def is_array(x):
                return isinstance(x, jnp.DeviceArray)  # <- JAX601

            step = pjit(lambda x: jnp.trapezoid(x))  # <- JAX601
        """),
        Invalid("""
            import jax.numpy as jnp

            def nonnegative_rows(x):
                bounded = jnp.clip(x, a_min=0.0)  # <- JAX601
                return jnp.reshape(bounded, newshape=(x.shape[0], -1))  # <- JAX601
        """, fixed="""
            import jax.numpy as jnp

            def nonnegative_rows(x):
                bounded = jnp.clip(x, min=0.0)  # <- JAX601
                return jnp.reshape(bounded, shape=(x.shape[0], -1))  # <- JAX601
        """, note="removed keywords whose replacement takes the same value: renamed by --fix"),
    ]
    VALID = [
        Valid("""
            import jax
            import jax.numpy as jnp
            from jax import tree_util
            from jax.sharding import Mesh, PartitionSpec

            key = jax.random.key(0)
            params = {"w": jnp.ones(3)}
            scaled = jax.tree.map(lambda p: p * 2, params)
            leaves = tree_util.tree_leaves(scaled)
            total = jax.tree_util.tree_reduce(lambda a, b: a + b, scaled)
            checked = isinstance(scaled["w"], jax.Array)
            area = jnp.trapezoid(jnp.arange(4.0))
            spec = PartitionSpec("data")
        """),
    ]

    def fix(self, model: SemanticModel, report: Report) -> Fix | None:
        if isinstance(report.node, cst.Arg):
            keyword = next((k for a, k in deprecated_keyword_uses(model) if a is report.node), None)
            return _rename_keyword(report.node, keyword)
        return _rename_deprecated(model, report.node)

    def check(self, model: SemanticModel) -> Iterator[Report]:
        for node, entry, spelled in deprecated_uses(model):
            if entry.status == "legacy":  # legacy advice is JAX602's, opt-in
                continue
            # under `from __future__ import annotations` an annotation is never evaluated: a
            # removed name there fails no run, though type checkers and doc tools still read it
            # (only files with a removed name pay that walk)
            unevaluated = unevaluated_nodes(model).get(id(node)) if entry.status == "removed" else None
            imported = isinstance(node, (cst.ImportAlias, cst.ImportFrom))
            yield Report(node, deprecation_message(entry, spelled, unevaluated),
                         fix=deprecation_fix(entry, imported),
                         severity="warning" if entry.status == "removed" and unevaluated is None else "info")
        for arg, keyword in deprecated_keyword_uses(model):
            yield Report(arg, _keyword_message(keyword), fix=_keyword_fix(keyword),
                         severity="warning" if keyword.status == "removed" else "info")


def _keyword_message(keyword: Keyword) -> str:
    subject = f"the `{keyword.keyword}=` argument of `{keyword.function}`"
    if keyword.status == "removed":
        what = "was removed from JAX: the call fails with TypeError on current versions"
    else:
        what = "is deprecated in JAX and will be removed"
    if keyword.replacement.isidentifier():
        return f"{subject} {what}; pass `{keyword.replacement}=` instead (same meaning)"
    if keyword.replacement.startswith("nothing: "):
        return f"{subject} {what}; drop it and {keyword.replacement[len('nothing: '):]}"
    return f"{subject} {what}; pass {keyword.replacement} instead"


def _keyword_fix(keyword: Keyword) -> str:
    if keyword.replacement.isidentifier():
        return f"Rename the keyword: `{keyword.keyword}=` -> `{keyword.replacement}=`."
    if keyword.replacement.startswith("nothing: "):
        return f"Drop `{keyword.keyword}=` and {keyword.replacement[len('nothing: '):]}."
    return f"Replace `{keyword.keyword}=` with {keyword.replacement}."


# ---------------------------------------------------------------------------------- the fixes

_DOTTED = re.compile(r"jax(?:\.\w+)+")
# Listed replacements that are not drop-in renames: the migrations the data describes (a
# `caveat`: in1d flattens, device_put_replicated stacks, shard_map's keywords), and the others
# below (sph_harm's argument order, a module replaced by a class, a flag turned into a context
# manager).
_NOT_DROP_IN = frozenset({
    "jax.experimental.enable_x64", "jax.lib.xla_bridge", "jax.linear_util", "jax.core.get_aval",
    "jax.abstract_arrays", "jax.experimental.global_device_array", "jax.random.default_prng_impl",
    "jax.scipy.special.sph_harm", "jax.experimental.pallas.debug_checks_enabled",
}) | {entry.name for entry in DEPRECATIONS if entry.caveat}


def _rename_deprecated(model: SemanticModel, node: cst.CSTNode) -> Fix | None:
    """`jax.tree_map(...)` -> `jax.tree.map(...)`, `jnp.trapz` -> `jnp.trapezoid`: the attribute
    as spelled, re-spelled to the current name of the same function. Imports (`from jax import
    tree_map`) are left alone: renaming them means renaming every use."""
    if not isinstance(node, cst.Attribute):
        return None
    qualified = model.resolve(node)
    entry = lookup(qualified) if qualified else None
    if entry is None or entry.status == "legacy" or entry.name in _NOT_DROP_IN \
            or not _DOTTED.fullmatch(entry.replacement) or entry.name.startswith("jax.interpreters.pxla."):
        return None
    # The reported chain may go on past the listed name (`pltpu.DeviceIdType.MESH`): rewrite the
    # part that spells it.
    while isinstance(node, cst.Attribute) and model.resolve(node) != entry.name:
        node = node.value
    if not isinstance(node, cst.Attribute):
        return None
    module, _, last = entry.replacement.rpartition(".")
    spelled = _module_spelling(model, node.value, module)
    if spelled is None:
        return None
    new = node.with_changes(value=spelled, attr=cst.Name(last))
    return Fix(SAFE, ((node, new),), f"`{describe(node)}` -> `{describe(new)}`")


def _rename_keyword(arg: cst.Arg, keyword: Keyword | None) -> Fix | None:
    """`jnp.clip(x, a_min=0)` -> `jnp.clip(x, min=0)`: a removed keyword whose replacement takes
    the same value. None when the replacement is not a plain keyword."""
    if keyword is None or arg.keyword is None or not keyword.replacement.isidentifier():
        return None
    new = arg.with_changes(keyword=cst.Name(keyword.replacement))
    return Fix(SAFE, ((arg, new),), f"`{arg.keyword.value}=` -> `{keyword.replacement}=`")


# Modules that `import jax` loads, so `jax.<module>.<name>` works with no import of its own.
_LOADED_BY_JAX = frozenset({"jax", "jax.tree", "jax.tree_util", "jax.numpy", "jax.random", "jax.lax",
                            "jax.core", "jax.errors", "jax.sharding", "jax.nn"})


def _module_spelling(model: SemanticModel, spelled: cst.BaseExpression, module: str) -> cst.BaseExpression | None:
    """How to spell `module` here: the user's own prefix when it is that module (or a module
    it contains that `import jax` loads), else a name bound to it, else `jax.` when loaded."""
    prefix = model.resolve(spelled)
    if prefix == module:
        return spelled
    if prefix and module.startswith(prefix + ".") and module in _LOADED_BY_JAX:
        return dotted_expression(spelled, module[len(prefix) + 1:])
    alias = module_alias(model, module)
    if alias is not None:
        return cst.Name(alias)
    jax_alias = module_alias(model, "jax")
    if jax_alias is not None and module in _LOADED_BY_JAX:
        return dotted_expression(cst.Name(jax_alias), module[len("jax"):].lstrip(".")) if module != "jax" \
            else cst.Name(jax_alias)
    return None
