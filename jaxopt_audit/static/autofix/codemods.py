"""The codemods behind the rules' `fix` hooks (one function per kind of fix; see fixes.py).

Each returns a Fix or None; None whenever the rewrite cannot be shown to be right on this code
(precision first: a fix that is not offered costs nothing, a wrong one breaks a user's file).
"""

from __future__ import annotations

import re

import libcst as cst

from ..framework.fix import SAFE, Fix, dotted_expression, module_alias
from ..knowledge.deprecations import DEPRECATIONS, lookup
from ..syntax.walk import describe

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


def rename_deprecated(model, node: cst.CSTNode) -> Fix | None:
    """JAX601: `jax.tree_map(...)` -> `jax.tree.map(...)`, `jnp.trapz` -> `jnp.trapezoid`:
    the attribute as spelled, re-spelled to the current name of the same function. Imports
    (`from jax import tree_map`) are left alone: renaming them means renaming every use."""
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


def rename_keyword(arg: cst.Arg, keyword) -> Fix | None:
    """JAX601: `jnp.clip(x, a_min=0)` -> `jnp.clip(x, min=0)`: a removed keyword whose
    replacement takes the same value. None when the replacement is not a plain keyword."""
    if keyword is None or arg.keyword is None or not keyword.replacement.isidentifier():
        return None
    new = arg.with_changes(keyword=cst.Name(keyword.replacement))
    return Fix(SAFE, ((arg, new),), f"`{arg.keyword.value}=` -> `{keyword.replacement}=`")


# Modules that `import jax` loads, so `jax.<module>.<name>` works with no import of its own.
_LOADED_BY_JAX = frozenset({"jax", "jax.tree", "jax.tree_util", "jax.numpy", "jax.random", "jax.lax",
                            "jax.core", "jax.errors", "jax.sharding", "jax.nn"})


def _module_spelling(model, spelled: cst.BaseExpression, module: str) -> cst.BaseExpression | None:
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


