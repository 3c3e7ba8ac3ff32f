"""Deprecated and removed JAX APIs, each with its replacement: the data behind JAX601.

Two parts. `CURATED`: the API changes users meet in real code and tutorials (docs/rules.md's list:
the `jax.tree_*` aliases, typed keys, `pmap`, `pjit`, `xmap`, `host_callback`, `DeviceArray`,
...). `JAX_TABLES`: a snapshot of the `_deprecations` tables that JAX modules keep for
`__getattr__` (jax 0.10.2), where an entry whose function is None raises AttributeError
("removed") and the others warn ("deprecated"). `tests/test_rules_jax601.py` checks both
against the installed JAX, so the list cannot silently rot: every table entry of the installed
JAX must be here with the same status, every "removed" name must fail to resolve, every
"deprecated" or "legacy" one must still resolve, and every replacement must exist.

Statuses: "removed" (AttributeError/ImportError on current JAX: reported as a warning),
"deprecated" (still works, warns), "legacy" (works without a warning, but JAX recommends the
replacement: reported once per file, as advice). Data only: `scan` never imports JAX.

The wording of the advice about an entry (`deprecation_message`, `deprecation_fix`) lives here,
with the data it reads: JAX601 and JAX602 both say it.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Deprecation(NamedTuple):
    name: str  # fully qualified: a module, a function, a class or a constant
    replacement: str  # what to use instead; "" when JAX plans none
    status: str  # "removed" | "deprecated" | "legacy"
    # What changes beyond the name, when the replacement is a migration and not a rename
    # (arguments renamed or keyword-only, a mesh needed in context, results of another shape).
    caveat: str = ""


STATUSES = ("removed", "deprecated", "legacy")

CURATED: tuple[Deprecation, ...] = (
    # pytree utilities: the top-level aliases are gone; jax.tree.* is the current API
    Deprecation("jax.tree_map", "jax.tree.map", "removed"),
    Deprecation("jax.tree_multimap", "jax.tree.map", "removed"),
    Deprecation("jax.tree_util.tree_multimap", "jax.tree.map", "removed"),
    Deprecation("jax.tree_flatten", "jax.tree.flatten", "removed"),
    Deprecation("jax.tree_unflatten", "jax.tree.unflatten", "removed"),
    Deprecation("jax.tree_leaves", "jax.tree.leaves", "removed"),
    Deprecation("jax.tree_structure", "jax.tree.structure", "removed"),
    Deprecation("jax.tree_transpose", "jax.tree.transpose", "removed"),
    Deprecation("jax.tree_reduce", "jax.tree.reduce", "removed"),
    Deprecation("jax.tree_all", "jax.tree.all", "removed"),
    # keys: raw uint32 keys still work; typed keys carry their implementation and catch misuse
    Deprecation("jax.random.PRNGKey", "jax.random.key", "legacy"),
    Deprecation("jax.random.KeyArray", "jax.Array", "removed"),
    Deprecation("jax.random.shuffle", "jax.random.permutation", "removed",
                "pass `independent=True` to shuffle each slice along the axis on its own, as `shuffle` did"),
    Deprecation("jax.random.PRNGKeyArray", "jax.Array", "removed"),
    Deprecation("jax.random.threefry_2x32", "jax.random.key(seed, impl='threefry2x32')", "removed"),
    Deprecation("jax.random.default_prng_impl", "jax.random.key_impl", "removed"),
    # parallelism
    Deprecation("jax.pmap", "jax.jit with shardings, or jax.shard_map", "legacy"),
    Deprecation("jax.experimental.maps", "jax.shard_map, or jax.jit with shardings", "removed"),
    Deprecation("jax.experimental.PartitionSpec", "jax.sharding.PartitionSpec", "removed"),
    Deprecation("jax.experimental.global_device_array", "jax.Array", "removed"),
    # host callbacks
    Deprecation("jax.experimental.host_callback",
                "jax.debug.callback, jax.pure_callback or jax.experimental.io_callback", "removed"),
    # array types
    Deprecation("jax.abstract_arrays", "jax.core.ShapedArray", "removed"),
    Deprecation("jax.ShapedArray", "jax.core.ShapedArray", "removed"),
    Deprecation("jax.numpy.DeviceArray", "jax.Array", "removed"),
    Deprecation("jax.interpreters.xla.DeviceArray", "jax.Array", "removed"),
    Deprecation("jaxlib.xla_extension.DeviceArray", "jax.Array", "removed"),
    # the whole module is gone (its contents moved to the private `jaxlib._jax`)
    Deprecation("jaxlib.xla_extension", "the public jax APIs (`jax.Array`, `jax.Device`)", "removed",
                "its internals (`PjitFunction`, `Client`, ...) have no public replacement: drop those uses"),
    Deprecation("jax.interpreters.pxla.ShardedDeviceArray", "jax.Array", "removed"),
    # indexed updates and other long-gone helpers
    Deprecation("jax.ops.index", "x.at[idx]", "removed"),
    Deprecation("jax.ops.index_update", "x.at[idx].set(y)", "removed"),
    Deprecation("jax.ops.index_add", "x.at[idx].add(y)", "removed"),
    Deprecation("jax.ops.index_mul", "x.at[idx].multiply(y)", "removed"),
    Deprecation("jax.ops.index_min", "x.at[idx].min(y)", "removed"),
    Deprecation("jax.ops.index_max", "x.at[idx].max(y)", "removed"),
    Deprecation("jax.lax.tie_in", "nothing: drop the call, it has been a no-op since omnistaging", "removed"),
    # moved, same API (optax, and flax or equinox, are the maintained libraries for new code)
    Deprecation("jax.experimental.optimizers", "jax.example_libraries.optimizers", "removed"),
    Deprecation("jax.experimental.stax", "jax.example_libraries.stax", "removed"),
    Deprecation("jax.experimental.enable_x64", "jax.enable_x64", "removed"),
    Deprecation("jax.experimental.disable_x64", "jax.enable_x64(False)", "removed"),
    Deprecation("jax.linear_util", "jax.extend.linear_util", "removed"),
    Deprecation("jax.api", "the same names at the top level of jax", "removed"),
    Deprecation("jax.partial", "functools.partial", "removed"),
    # the `jax.config` module is gone (`jax.config` is now the configuration object itself)
    Deprecation("jax.config.config", "jax.config", "removed",
                "write `from jax import config`: `jax.config` is the configuration object, not a module"),
    Deprecation("jax.xla_computation", "jax.jit(f).lower(*args)", "removed"),
    # the module is gone; its device queries have top-level equivalents
    Deprecation("jax.lib.xla_bridge", "jax.extend.backend", "removed"),
    Deprecation("jax.lib.xla_bridge.device_count", "jax.device_count", "removed"),
    Deprecation("jax.lib.xla_bridge.local_device_count", "jax.local_device_count", "removed"),
    Deprecation("jax.lib.xla_bridge.process_index", "jax.process_index", "removed"),
    Deprecation("jax.lib.xla_bridge.process_count", "jax.process_count", "removed"),
    Deprecation("jax.lib.xla_bridge.devices", "jax.devices", "removed"),
    Deprecation("jax.lib.xla_bridge.local_devices", "jax.local_devices", "removed"),
    Deprecation("jax.lib.xla_bridge.default_backend", "jax.default_backend", "removed"),
    Deprecation("jax.lib.xla_client", "jax.extend or the public jax APIs", "removed",
                "much of it, the XLA builder and the `_xla` internals such as `is_optimized_build`, has no "
                "public replacement: drop those calls"),
    Deprecation("jax.dlpack.to_dlpack", "pass the array itself to the consumer's from_dlpack", "removed"),
    # NumPy aliases NumPy 2 removed, and jnp with it
    Deprecation("jax.numpy.in1d", "jax.numpy.isin", "removed",
                "`in1d` flattened its result; `isin` keeps the shape of its first argument "
                "(add `.ravel()` where the flat result is needed)"),
    Deprecation("jax.numpy.trapz", "jax.numpy.trapezoid", "removed"),
    Deprecation("jax.numpy.round_", "jax.numpy.round", "removed"),
    Deprecation("jax.numpy.row_stack", "jax.numpy.vstack", "removed"),
    Deprecation("jax.numpy.product", "jax.numpy.prod", "removed"),
    Deprecation("jax.numpy.cumproduct", "jax.numpy.cumprod", "removed"),
    Deprecation("jax.numpy.alltrue", "jax.numpy.all", "removed"),
    Deprecation("jax.numpy.sometrue", "jax.numpy.any", "removed"),
    Deprecation("jax.numpy.msort", "jax.numpy.sort(x, axis=0)", "removed"),
    Deprecation("jax.numpy.asfarray", "jax.numpy.asarray(x, dtype=float)", "removed"),
    Deprecation("jax.numpy.NINF", "-jax.numpy.inf", "removed"),
    Deprecation("jax.numpy.PINF", "jax.numpy.inf", "removed"),
    Deprecation("jax.numpy.NZERO", "-0.0", "removed"),
    Deprecation("jax.numpy.Inf", "jax.numpy.inf", "removed"),
    Deprecation("jax.numpy.NaN", "jax.numpy.nan", "removed"),
    Deprecation("jax.nn.normalize", "jax.nn.standardize", "removed"),
    # sharding: the positional and pmap shardings are gone; a mesh with named axes replaces both
    Deprecation("jax.sharding.PositionalSharding", "jax.sharding.NamedSharding", "removed",
                "build a `jax.sharding.Mesh` of the devices and say how each axis is split with a "
                "`PartitionSpec`; `.reshape()` and `.replicate()` become mesh shapes and `PartitionSpec()` axes"),
    Deprecation("jax.sharding.PmapSharding", "jax.sharding.NamedSharding", "removed",
                "describe the layout with a `jax.sharding.Mesh` and a `PartitionSpec` over its axes"),
    Deprecation("jax.experimental.pjit.with_sharding_constraint", "jax.lax.with_sharding_constraint", "removed"),
    Deprecation("jax.interpreters.pxla.Mesh", "jax.sharding.Mesh", "removed"),
    Deprecation("jax.experimental.maps.Mesh", "jax.sharding.Mesh", "removed"),
    Deprecation("jax.interpreters.pxla.PartitionSpec", "jax.sharding.PartitionSpec", "removed"),
    Deprecation("jax.interpreters.sharded_jit.PartitionSpec", "jax.sharding.PartitionSpec", "removed"),
    Deprecation("jax.interpreters.sharded_jit", "jax.jit", "removed",
                "give `jax.jit` the layouts as `in_shardings`/`out_shardings` (`NamedSharding`s over a "
                "`jax.sharding.Mesh`)"),
    Deprecation("jax.clear_backends", "jax.clear_caches", "removed",
                "`clear_caches` drops compiled programs only; to re-initialise the backend itself, "
                "`jax.extend.backend.clear_backends` remains"),
    # Colab's TPU-node runtime, which `setup_tpu()` connected to, is gone; TPU VMs need no setup
    Deprecation("jax.tools.colab_tpu", "nothing: drop the import and the `setup_tpu()` call", "removed",
                "the TPU VM runtimes that Colab, Kaggle and Cloud TPU offer now need no setup: JAX finds the "
                "TPU itself"),
    Deprecation("jax.experimental.compilation_cache.compilation_cache.initialize_cache",
                "jax.experimental.compilation_cache.compilation_cache.set_cache_dir", "removed",
                "`set_cache_dir(path)` takes the directory only; or set "
                "`jax.config.update(\"jax_compilation_cache_dir\", path)`"),
    Deprecation("jax.config.enable_omnistaging", "nothing: drop the call, omnistaging is always on", "removed"),
    # jaxpr internals moved to `jax.extend.core` (the same classes)
    Deprecation("jax.core.Var", "jax.extend.core.Var", "removed"),
    Deprecation("jax.core.Literal", "jax.extend.core.Literal", "removed"),
    Deprecation("jax.core.Jaxpr", "jax.extend.core.Jaxpr", "removed"),
    Deprecation("jax.core.ClosedJaxpr", "jax.extend.core.ClosedJaxpr", "removed"),
    Deprecation("jax.core.JaxprEqn", "jax.extend.core.JaxprEqn", "removed"),
    Deprecation("jax.core.Primitive", "jax.extend.core.Primitive", "removed"),
    # modules long gone
    Deprecation("jax.util", "Python's `zip(..., strict=True)`, `map` and `functools`", "removed",
                "it was JAX's internal helper module (`safe_zip`, `safe_map`, `wraps`), with no public "
                "successor"),
    Deprecation("jax.experimental.loops", "jax.lax.fori_loop or jax.lax.scan", "removed",
                "write the loop body as a function of the carried state"),
    Deprecation("jax.experimental.optix", "optax", "removed"),
    Deprecation("jax.experimental.gda_serialization", "jax.experimental.array_serialization", "removed",
                "it saves and restores `jax.Array`s, which replaced the global device arrays"),
    Deprecation("jax.experimental.export", "jax.export", "removed",
                "`jax.export.export` takes a jitted function (`export(jax.jit(f))`)"),
    Deprecation("jax.custom_transforms", "jax.custom_jvp or jax.custom_vjp", "removed",
                "define the rule with `@f.defjvp` or `f.defvjp(fwd, bwd)` on the decorated function"),
    Deprecation("jax.defvjp", "jax.custom_vjp", "removed",
                "decorate the function with `@jax.custom_vjp` and give `f.defvjp(fwd, bwd)`"),
    Deprecation("jax.defvjp_all", "jax.custom_vjp", "removed",
                "decorate the function with `@jax.custom_vjp` and give `f.defvjp(fwd, bwd)`"),
)

# Snapshot of the `_deprecations` tables of jax 0.10.2 (public modules), replacements taken
# from their messages.
JAX_TABLES: tuple[Deprecation, ...] = (
    Deprecation("jax.device_put_replicated", "jax.device_put", "removed",
                "`device_put_replicated(x, devices)` stacked one copy per device on a new leading axis "
                "(the layout `pmap` expects): to keep it, stack the copies (`jnp.stack([x] * len(devices))`) "
                "and give `device_put` a sharding that splits the leading axis over the devices; for `jit` "
                "code, `NamedSharding(mesh, PartitionSpec())` replicates `x` without the new axis"),
    Deprecation("jax.device_put_sharded", "jax.device_put", "removed",
                "`device_put_sharded(shards, devices)` took a list of per-device arrays; stack them "
                "and give `device_put` a sharding that splits the leading axis over the devices"),
    Deprecation("jax.ad_checkpoint.checkpoint", "jax.checkpoint", "removed"),
    Deprecation("jax.ad_checkpoint.remat", "jax.remat", "removed"),
    Deprecation("jax.cloud_tpu_init.cloud_tpu_init", "nothing: drop the call, JAX calls it automatically", "removed"),
    Deprecation("jax.core.get_aval", "jax.typeof", "removed"),
    Deprecation("jax.core.mapped_aval", "jax.extend.core.mapped_aval", "removed"),
    Deprecation("jax.core.unmapped_aval", "jax.extend.core.unmapped_aval", "removed"),
    Deprecation("jax.core.set_current_trace", "jax.extend.core.set_current_trace", "removed"),
    Deprecation("jax.core.take_current_trace", "jax.extend.core.take_current_trace", "removed"),
    Deprecation("jax.core.traverse_jaxpr_params", "", "removed"),
    Deprecation("jax.core.TraceTag", "jax.extend.core.TraceTag", "removed"),
    Deprecation("jax.core.call_impl", "jax.extend.core.call_impl", "removed"),
    Deprecation("jax.core.subjaxprs", "jax.extend.core.subjaxprs", "removed"),
    Deprecation("jax.core.AbstractToken", "jax.extend.core.AbstractToken", "removed"),
    Deprecation("jax.core.CallPrimitive", "jax.extend.core.CallPrimitive", "deprecated"),
    Deprecation("jax.core.DebugInfo", "jax.extend.core.DebugInfo", "deprecated"),
    Deprecation("jax.core.DropVar", "jax.extend.core.DropVar", "deprecated"),
    Deprecation("jax.core.Effect", "jax.extend.core.Effect", "deprecated"),
    Deprecation("jax.core.Effects", "jax.extend.core.Effects", "deprecated"),
    Deprecation("jax.core.InconclusiveDimensionOperation", "jax.errors.InconclusiveDimensionOperation", "deprecated"),
    Deprecation("jax.core.JaxprTypeError", "jax.errors.JaxprTypeError", "deprecated"),
    Deprecation("jax.core.check_jaxpr", "jax.extend.core.check_jaxpr", "deprecated"),
    Deprecation("jax.core.concrete_or_error", "jax.extend.core.concrete_or_error", "deprecated"),
    Deprecation("jax.core.find_top_trace", "jax.extend.core.find_top_trace", "deprecated"),
    Deprecation("jax.core.gensym", "jax.extend.core.gensym", "deprecated"),
    Deprecation("jax.core.get_opaque_trace_state", "jax.extend.core.get_opaque_trace_state", "deprecated"),
    Deprecation("jax.core.jaxprs_in_params", "jax.extend.core.jaxprs_in_params", "deprecated"),
    Deprecation("jax.core.new_jaxpr_eqn", "jax.extend.core.new_jaxpr_eqn", "deprecated"),
    Deprecation("jax.core.no_effects", "jax.extend.core.no_effects", "deprecated"),
    Deprecation("jax.core.nonempty_axis_env_DO_NOT_USE", "", "deprecated"),
    Deprecation("jax.core.primal_dtype_to_tangent_dtype",
                "jax.extend.core.primal_dtype_to_tangent_dtype", "deprecated"),
    Deprecation("jax.core.unsafe_am_i_under_a_jit_DO_NOT_USE", "", "deprecated"),
    Deprecation("jax.core.unsafe_am_i_under_a_vmap_DO_NOT_USE", "", "deprecated"),
    Deprecation("jax.core.unsafe_get_axis_names_DO_NOT_USE", "", "deprecated"),
    Deprecation("jax.core.valid_jaxtype", "jax.extend.core.valid_jaxtype", "deprecated"),
    Deprecation("jax.core.JaxprPpContext", "", "deprecated"),
    Deprecation("jax.core.JaxprPpSettings", "", "deprecated"),
    Deprecation("jax.core.OutputType", "", "deprecated"),
    Deprecation("jax.core.abstract_token", "", "deprecated"),
    Deprecation("jax.core.aval_mapping_handlers", "", "deprecated"),
    Deprecation("jax.core.call", "", "deprecated"),
    Deprecation("jax.core.concretization_function_error", "", "deprecated"),
    Deprecation("jax.core.custom_typechecks", "", "deprecated"),
    Deprecation("jax.core.is_concrete", "", "deprecated"),
    Deprecation("jax.core.is_constant_dim", "", "deprecated"),
    Deprecation("jax.core.is_constant_shape", "", "deprecated"),
    Deprecation("jax.core.literalable_types", "", "deprecated"),
    Deprecation("jax.core.no_axis_name", "", "deprecated"),
    Deprecation("jax.core.pytype_aval_mappings", "", "deprecated"),
    Deprecation("jax.core.trace_ctx", "", "deprecated"),
    Deprecation("jax.experimental.pallas.dot",
                "jax.experimental.pallas.triton.dot (or jax.numpy.dot in a TPU/MGPU kernel)", "deprecated"),
    Deprecation("jax.experimental.pallas.debug_checks_enabled",
                "jax.experimental.pallas.enable_debug_checks.value", "deprecated"),
    Deprecation("jax.experimental.pallas.tpu.HOST", "jax.experimental.pallas.HOST", "deprecated"),
    Deprecation("jax.experimental.pallas.tpu.semaphore", "jax.experimental.pallas.semaphore", "deprecated"),
    Deprecation("jax.experimental.pallas.tpu.DeviceIdType", "jax.experimental.pallas.DeviceIdType", "deprecated"),
    Deprecation("jax.experimental.pallas.tpu.semaphore_read", "jax.experimental.pallas.semaphore_read", "deprecated"),
    Deprecation("jax.experimental.pallas.tpu.semaphore_signal",
                "jax.experimental.pallas.semaphore_signal", "deprecated"),
    Deprecation("jax.experimental.pallas.tpu.semaphore_wait", "jax.experimental.pallas.semaphore_wait", "deprecated"),
    Deprecation("jax.experimental.pjit.pjit", "jax.jit", "deprecated",
                "`jax.jit` takes the same `in_shardings`/`out_shardings`; a bare `PartitionSpec` needs a "
                "mesh in context (`jax.set_mesh(mesh)`) or a `NamedSharding(mesh, spec)`"),
    Deprecation("jax.experimental.shard_map.shard_map", "jax.shard_map", "deprecated",
                "`jax.shard_map` takes `mesh`, `in_specs` and `out_specs` as keywords only, and "
                "`check_rep=` is now `check_vma=`"),
    Deprecation("jax.interpreters.ad.reducing_transposes", "", "removed"),
    Deprecation("jax.interpreters.batching.NotMapped", "", "removed"),
    Deprecation("jax.interpreters.pxla.Index", "", "deprecated"),
    Deprecation("jax.interpreters.pxla.MeshAxisName", "jax.sharding.Mesh axis names", "deprecated"),
    Deprecation("jax.interpreters.pxla.MeshComputation", "", "deprecated"),
    Deprecation("jax.interpreters.pxla.MeshExecutable", "", "deprecated"),
    Deprecation("jax.interpreters.pxla.global_aval_to_result_handler", "", "deprecated"),
    Deprecation("jax.interpreters.pxla.global_avals_to_results_handler", "", "deprecated"),
    Deprecation("jax.interpreters.pxla.global_result_handlers", "", "deprecated"),
    Deprecation("jax.interpreters.pxla.thread_resources",
                "jax.set_mesh(mesh) and jax.sharding.get_abstract_mesh()", "deprecated",
                "`with mesh:` becomes `with jax.set_mesh(mesh):`; code that needs the devices of the "
                "current mesh (`thread_resources.env.physical_mesh.devices`) reads "
                "`jax.sharding.get_mesh()`, the abstract mesh has axis names and sizes only"),
    Deprecation("jax.interpreters.pxla.are_hlo_shardings_equal", "", "deprecated"),
    Deprecation("jax.interpreters.pxla.is_hlo_sharding_replicated", "", "deprecated"),
    Deprecation("jax.interpreters.pxla.op_sharding_to_indices", "", "deprecated"),
    Deprecation("jax.interpreters.pxla.ArrayMapping", "", "deprecated"),
    Deprecation("jax.interpreters.pxla._UNSPECIFIED", "", "deprecated"),
    Deprecation("jax.interpreters.pxla.array_mapping_to_axis_resources", "", "deprecated"),
    Deprecation("jax.interpreters.pxla.MapTracer", "", "removed"),
    Deprecation("jax.interpreters.pxla.PmapExecutable", "", "removed"),
    Deprecation("jax.interpreters.pxla.parallel_callable", "", "removed"),
    Deprecation("jax.interpreters.pxla.shard_args", "", "removed"),
    Deprecation("jax.interpreters.pxla.Chunked", "jax.shard_map", "removed"),
    Deprecation("jax.interpreters.pxla.NoSharding", "jax.shard_map", "removed"),
    Deprecation("jax.interpreters.pxla.Replicated", "jax.shard_map", "removed"),
    Deprecation("jax.interpreters.pxla.ShardedAxis", "jax.shard_map", "removed"),
    Deprecation("jax.interpreters.pxla.ShardingSpec", "jax.shard_map", "removed"),
    Deprecation("jax.interpreters.pxla.Unstacked", "jax.shard_map", "removed"),
    Deprecation("jax.interpreters.pxla.spec_to_indices", "jax.shard_map", "removed"),
    Deprecation("jax.lax.pvary", "jax.lax.pcast(..., to='varying')", "removed"),
    Deprecation("jax.numpy.fix", "jax.numpy.trunc", "removed"),
    Deprecation("jax.scipy.special.lpmn", "", "deprecated"),
    Deprecation("jax.scipy.special.lpmn_values", "", "deprecated"),
    Deprecation("jax.scipy.special.sph_harm", "jax.scipy.special.sph_harm_y", "removed"),
)

DEPRECATIONS: tuple[Deprecation, ...] = CURATED + JAX_TABLES
BY_NAME: dict[str, Deprecation] = {d.name: d for d in DEPRECATIONS}


class Keyword(NamedTuple):
    """A keyword argument of a current function that JAX removed or deprecated."""

    function: str  # fully qualified
    keyword: str
    replacement: str  # the keyword to pass instead (a plain name: a safe rename), or advice
    status: str  # "removed" (TypeError on current JAX) | "deprecated" (warns)


# Checked against the installed JAX by tests/test_rules_jax601.py: a removed keyword raises
# TypeError, a deprecated one warns, and a plain-name replacement is accepted.
KEYWORDS: tuple[Keyword, ...] = (
    Keyword("jax.numpy.clip", "a_min", "min", "removed"),
    Keyword("jax.numpy.clip", "a_max", "max", "removed"),
    Keyword("jax.numpy.reshape", "newshape", "shape", "removed"),
    Keyword("jax.scipy.linalg.solve", "sym_pos", "`assume_a=\"pos\"`", "removed"),
    Keyword("jax.jit", "device", "nothing: put the arguments on the device with `jax.device_put` (a "
            "function of no arguments: call it under `with jax.default_device(device):`)", "deprecated"),
    Keyword("jax.jit", "backend", "nothing: put the arguments on the backend's device with `jax.device_put` "
            "(a function of no arguments: call it under `with jax.default_device(...)`)", "deprecated"),
)
KEYWORDS_BY_FUNCTION: dict[str, dict[str, Keyword]] = {}
for _k in KEYWORDS:
    KEYWORDS_BY_FUNCTION.setdefault(_k.function, {})[_k.keyword] = _k


# The `jax.tree` module arrived in JAX 0.4.25; its `jax.tree_util` twins work on every version,
# which matters to code that still supports an older JAX.
TREE_MODULE_SINCE = "0.4.25"


def older_spelling(replacement: str) -> str | None:
    """`jax.tree.map` -> `jax.tree_util.tree_map`: the replacement's name before `jax.tree`."""
    if replacement.startswith("jax.tree."):
        return "jax.tree_util.tree_" + replacement[len("jax.tree."):]
    return None


def lookup(qualname: str) -> Deprecation | None:
    """The entry for `qualname` or for the module or class it lies in (`jax.experimental.maps.xmap`)."""
    found = BY_NAME.get(qualname)
    if found is not None:
        return found
    parts = qualname.split(".")
    for end in range(len(parts) - 1, 1, -1):
        found = BY_NAME.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None


_NOTHING = "nothing: "


def deprecation_message(entry: Deprecation, spelled: str, unevaluated: str | None = None) -> str:
    """What a use of `entry`, spelled `spelled`, does on current JAX and what to use instead.
    `unevaluated` says where the use sits when no run evaluates it (a removed name there fails
    no run)."""
    subject = f"`{entry.name}`" if spelled == entry.name else f"`{spelled}` (from `{entry.name}`)"
    if entry.status == "removed" and unevaluated is not None:
        what = (f"was removed from JAX; {unevaluated} it fails no run, but type checkers and documentation "
                "tools reject it")
    elif entry.status == "removed":
        what = "was removed from JAX: it fails with AttributeError or ImportError on current versions"
    elif entry.status == "deprecated":
        what = "is deprecated in JAX and will be removed"
    else:
        what = "is a legacy API that JAX recommends replacing"
    if not entry.replacement:
        return f"{subject} {what}; JAX plans no replacement"
    if entry.replacement.startswith(_NOTHING):
        # "nothing: drop the call": what to do, not an API to use instead
        why = f" ({entry.caveat})" if entry.caveat else ""
        return f"{subject} {what}; nothing replaces it: {entry.replacement[len(_NOTHING):]}{why}"
    if entry.caveat:
        return f"{subject} {what}; use {_code(entry.replacement)} instead (not a rename: {entry.caveat})"
    older = older_spelling(entry.replacement)
    if older is not None:
        return (f"{subject} {what}; use {_code(entry.replacement)} instead (JAX {TREE_MODULE_SINCE} or newer; "
                f"`{older}` works on older versions too)")
    return f"{subject} {what}; use {_code(entry.replacement)} instead"


def deprecation_fix(entry: Deprecation, imported: bool = False) -> str:
    """The one-line fix advice for a use of `entry`; `imported` when the use is an import (then
    the name bound there is used elsewhere in the file)."""
    if not entry.replacement:
        return f"Remove the use of `{entry.name}`; JAX offers no replacement."
    if entry.replacement.startswith(_NOTHING):
        step = entry.replacement[len(_NOTHING):]
        return f"{step[0].upper()}{step[1:]}" + (f": {entry.caveat}." if entry.caveat else ".")
    if imported and not entry.caveat and re.fullmatch(r"[\w.]+", entry.replacement):
        # `from jax import tree_map`: the name is bound here and used elsewhere in the file
        return (f"Change the import to `{entry.replacement}` (instead of `{entry.name}`); where the "
                "imported name changes, update its uses in the file.")
    if entry.caveat:
        return f"Migrate from `{entry.name}` to {_code(entry.replacement)}: {entry.caveat}."
    return f"Replace `{entry.name}` with {_code(entry.replacement)}."


def _code(replacement: str) -> str:
    """Backticks around API names, not around prose ("nothing: drop the call")."""
    if replacement.startswith(("nothing", "the same", "pass ")):
        return replacement
    parts = replacement.split(", or ") if ", or " in replacement else replacement.split(" or ")
    if len(parts) > 1:
        return " or ".join(_code(p) for p in parts)
    if "," in replacement and "(" not in replacement:
        return ", ".join(_code(p.strip()) for p in replacement.split(","))
    if replacement.startswith(("jax", "x.", "-", "optax", "flax")) and " with " not in replacement \
            and " and " not in replacement and " in " not in replacement:
        return f"`{replacement}`"
    return replacement
