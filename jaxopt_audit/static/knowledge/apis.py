"""What the analyzer knows about JAX-ecosystem APIs: which calls jit, trace, do device work,
produce arrays, or pull values to the host. Data, not logic."""

from __future__ import annotations

import re

# Calls that compile their function argument. Value: index of the function argument.
JIT_WRAPPERS = frozenset({
    "jax.jit", "jax.pmap", "jax.experimental.pjit.pjit", "jax.pjit",
    "equinox.filter_jit", "equinox.filter_pmap", "flax.nnx.jit", "flax.linen.jit",
    "flax.nnx.pmap", "haiku.jit", "objax.Jit", "objax.Parallel",
})
# Of those, the pmap wrappers: a fresh one around a cached function costs little (JAX102, Measured).
PMAPS = frozenset({"jax.pmap", "equinox.filter_pmap", "flax.nnx.pmap"})

# Transforms whose function argument is traced (but not compiled by the transform itself).
# Value: positions of function arguments.
TRACING_TRANSFORMS: dict[str, tuple[int, ...]] = {
    "jax.vmap": (0,), "jax.grad": (0,), "jax.value_and_grad": (0,), "jax.jacfwd": (0,),
    "jax.jacrev": (0,), "jax.hessian": (0,), "jax.jvp": (0,), "jax.vjp": (0,),
    "jax.linearize": (0,), "jax.checkpoint": (0,), "jax.remat": (0,), "jax.custom_jvp": (0,),
    "jax.custom_vjp": (0,), "jax.named_call": (0,), "jax.make_jaxpr": (0,), "jax.eval_shape": (0,),
    "jax.shard_map": (0,), "jax.experimental.shard_map.shard_map": (0,), "jax.xmap": (0,),
    "jax.lax.scan": (0,), "jax.lax.fori_loop": (2,), "jax.lax.while_loop": (0, 1),
    "jax.lax.cond": (1, 2), "jax.lax.switch": (1,), "jax.lax.map": (0,),
    "jax.lax.associative_scan": (0,), "jax.lax.reduce": (2,), "jax.lax.custom_root": (1, 2),
    "jax.lax.select_n": (), "equinox.filter_vmap": (0,), "equinox.filter_grad": (0,),
    "equinox.filter_value_and_grad": (0,), "flax.nnx.vmap": (0,), "flax.nnx.grad": (0,),
    "flax.nnx.value_and_grad": (0,), "flax.nnx.scan": (0,), "flax.linen.scan": (0,),
    "flax.linen.vmap": (0,), "flax.linen.remat": (0,), "flax.nnx.remat": (0,),
    "jax.numpy.vectorize": (0,),
}

# Of those, the ones that run their function now and hand back its arrays (not a wrapper).
RUNS_ITS_FUNCTION = frozenset(q for q in TRACING_TRANSFORMS if q.startswith("jax.lax."))
# ... and the ones that hand back a function computing what theirs does, batched,
# differentiated or rematerialised: `batched = jax.vmap(f)`, then `batched(x)` runs `f`.
WRAPPING_TRANSFORMS = frozenset(q for q in TRACING_TRANSFORMS if q not in RUNS_ITS_FUNCTION and q not in {
    "jax.make_jaxpr", "jax.eval_shape", "jax.jvp", "jax.vjp", "jax.linearize", "flax.nnx.scan",
    "flax.linen.scan", "flax.linen.vmap", "flax.linen.remat"})
# Compiled loops: their body function runs once per iteration, each iteration a step.
COMPILED_LOOPS = frozenset({"jax.lax.scan", "jax.lax.fori_loop", "jax.lax.while_loop"})
SCAN_LIKE = COMPILED_LOOPS | frozenset({"jax.lax.map", "flax.nnx.scan", "flax.linen.scan"})
# Transforms that return a function computing gradients of their argument.
GRADIENT_TRANSFORMS = frozenset({"jax.grad", "jax.value_and_grad", "equinox.filter_grad",
                                 "equinox.filter_value_and_grad", "flax.nnx.grad",
                                 "flax.nnx.value_and_grad"})
# PRNG keys: made from a seed, or derived from another key.
KEY_CONSTRUCTORS = frozenset({"jax.random.PRNGKey", "jax.random.key"})
KEY_DERIVATIONS = frozenset({"jax.random.split", "jax.random.fold_in", "jax.random.clone"})
# Making, deriving or converting keys: bookkeeping around the work, not the work being repeated.
KEY_BOOKKEEPING = KEY_CONSTRUCTORS | KEY_DERIVATIONS | frozenset({"jax.random.key_data",
                                                                  "jax.random.wrap_key_data"})
# Calls that turn a seed or counter into a key.
SEED_TO_KEY = KEY_CONSTRUCTORS | frozenset({"jax.random.fold_in"})
# NumPy functions that read only static metadata (or accept tracers without converting them).
NUMPY_METADATA = frozenset({
    "numpy.shape", "numpy.ndim", "numpy.size", "numpy.result_type", "numpy.dtype", "numpy.isscalar",
    "numpy.iterable", "numpy.issubdtype", "numpy.promote_types", "numpy.can_cast", "numpy.finfo",
    "numpy.iinfo", "numpy.broadcast_shapes", "numpy.min_scalar_type", "numpy.obj2sctype",
})

# NumPy functions that, given an array that is not a NumPy array, call its own method of the
# same name (`np.sum(x)` is `x.sum()`): on a tracer they trace like `jnp`. Checked against the
# installed NumPy and JAX by tests/test_rules_jax404.py.
NUMPY_METHOD_DISPATCH = frozenset({
    "numpy.sum", "numpy.mean", "numpy.max", "numpy.min", "numpy.amax", "numpy.amin", "numpy.prod",
    "numpy.std", "numpy.var", "numpy.any", "numpy.all", "numpy.argmax", "numpy.argmin",
    "numpy.transpose", "numpy.squeeze", "numpy.cumsum", "numpy.cumprod", "numpy.round", "numpy.around",
    "numpy.reshape", "numpy.repeat", "numpy.swapaxes", "numpy.searchsorted",
})

JAX_ROOTS = frozenset({"jax", "jaxlib", "optax", "flax", "equinox", "haiku", "distrax", "chex",
                       "rlax", "jraph", "orbax", "diffrax", "lineax", "optimistix", "brax", "gymnax"})

# jax.* calls that return host or static values, or do no device work.
JAX_HOST_RESULTS = frozenset({
    "jax.devices", "jax.local_devices", "jax.device_count", "jax.local_device_count",
    "jax.process_index", "jax.process_count", "jax.default_backend", "jax.device_get",
    "jax.tree.structure", "jax.tree_util.tree_structure", "jax.tree.flatten_with_path",
    "jax.tree_util.tree_flatten_with_path", "jax.tree_util.keystr", "jax.eval_shape",
    "jax.ShapeDtypeStruct", "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size",
    "jax.numpy.dtype", "jax.numpy.finfo", "jax.numpy.iinfo", "jax.numpy.issubdtype",
    "jax.numpy.result_type", "jax.numpy.promote_types", "jax.numpy.isscalar",
    "jax.debug.print", "jax.debug.callback", "jax.debug.visualize_array_sharding",
    "jax.config.update", "jax.make_mesh", "jax.sharding.Mesh", "jax.sharding.NamedSharding",
    "jax.sharding.PartitionSpec", "jax.profiler.trace", "jax.profiler.start_trace",
    "jax.profiler.stop_trace", "jax.profiler.TraceAnnotation", "jax.profiler.StepTraceAnnotation",
    "jax.random.key_data", "jax.lax.axis_size", "jax.lax.axis_index_groups",
    "jax.host_id", "jax.host_count", "jax.process_indices", "jax.tree_util.treedef_is_leaf",
    "jax.tree_util.all_leaves", "jax.tree_util.tree_all", "jax.tree.all", "jax.set_mesh",
})
# Calls that ask JAX not to wait: code issuing them manages the asynchrony on purpose.
ASYNC_REQUESTS = frozenset({"jax.copy_to_host_async"})
ASYNC_REQUEST_METHODS = frozenset({"copy_to_host_async"})
# Their function argument runs on the host with NumPy values, not on tracers.
HOST_CALLBACKS = frozenset({"jax.pure_callback", "jax.debug.callback", "jax.experimental.io_callback",
                            "jax.experimental.host_callback.call", "jax.experimental.host_callback.id_tap",
                            "jax.experimental.host_callback.id_print"})
JAX_HOST_PREFIXES = ("jax.config.", "jax.profiler.", "jax.debug.", "jax.sharding.",
                     "jax.experimental.compilation_cache", "jax.monitoring.", "jax.export.",
                     "jax.distributed.", "jax.dtypes.", "orbax.")

TREE_MAPS_WITH_PATH = frozenset({"jax.tree.map_with_path", "jax.tree_util.tree_map_with_path"})
TREE_MAPS = frozenset({"jax.tree.map", "jax.tree_util.tree_map", "jax.tree_map", "jax.tree_multimap",
                       "jax.tree_util.tree_multimap"}) | TREE_MAPS_WITH_PATH
# Attributes of an array that are arrays themselves.
ARRAY_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "at"})
# Predicates on types, not values: `jnp.iscomplexobj(x)` is a Python bool even under jit.
STATIC_PREDICATES = frozenset({"iscomplexobj", "isrealobj", "isscalar", "issubdtype", "isdtype",
                               "is_weakly_typed", "typeof"})


def ecosystem_result(q: str) -> str | None:
    """What a call into the JAX ecosystem returns: "array", "object" (a model, an optimizer,
    a module constructor) or None (a library utility: unknown). `jax.*` returns arrays unless
    listed as host/static; elsewhere only known array APIs do."""
    root = q.split(".")[0]
    parts = q.split(".")
    last = parts[-1]
    if last in STATIC_PREDICATES:
        return None
    if root in ("jax", "jaxlib"):
        # jax's internals (`jax._src.traceback_util`, `jax.extend.core`) are machinery, not math
        return None if q.startswith(("jax._src.", "jax.extend.", "jaxlib.", "jax.experimental.mosaic.")) else "array"
    if root == "optax":
        if q in OPTAX_ARRAY_FUNCTIONS or any(h in last for h in OPTAX_ARRAY_HINTS):
            return "array"
        return "object" if len(parts) == 2 or last[:1].isupper() else None
    if last[:1].isupper():
        return "object"  # a module, model or distribution constructor
    if last == "create" and parts[-2][:1].isupper():
        return "array"  # `TrainState.create(...)`: a classmethod building a state pytree
    if last.startswith(("is_", "assert")):
        return None
    if root == "flax":
        # `nn.relu`, `nn.softmax`, `nn.one_hot`: flax.linen's top-level functions
        return "array" if len(parts) == 3 and parts[1] == "linen" else None
    if root in ("equinox", "haiku", "rlax", "distrax"):
        return "array" if len(parts) == 2 else None
    return None


# Array attributes that are static metadata, not device values.
STATIC_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "size", "sharding", "device", "devices",
                               "itemsize", "nbytes", "weak_type", "aval", "committed"})
# Array methods whose result lives on the host.
HOST_METHODS = frozenset({"item", "tolist", "tobytes", "__array__", "copy_to_host_async"})
SYNC_METHODS = frozenset({"block_until_ready"})
# Methods of `str` that no array has: a value they are called on is text (a dict's key), and
# what they return is a Python value.
STRING_METHODS = frozenset({"startswith", "endswith", "split", "rsplit", "splitlines", "strip", "lstrip",
                            "rstrip", "lower", "upper", "casefold", "title", "format", "join", "encode",
                            "isdigit", "isalpha", "isalnum", "isspace", "partition", "rpartition",
                            "removeprefix", "removesuffix", "zfill", "ljust", "rjust", "center"})
# Names old JAX re-exported from the standard library, read as the originals they were: a
# `@partial(jit, static_argnums=...)` kernel under `from jax import partial` is already jitted.
REEXPORTED = {"jax.partial": "functools.partial"}
# Methods of PyTorch/TensorFlow tensors that no JAX array has: the value is another library's
# tensor (`loss.backward()` in a torch-vs-JAX comparison), so the call is not JAX work.
FOREIGN_TENSOR_METHODS = frozenset({"backward", "detach", "cpu", "cuda", "numpy", "requires_grad_", "zero_",
                                    "retain_grad", "register_hook"})
# Methods of jitted wrappers and compiled objects that return host objects (AOT and introspection).
COMPILED_OBJECT_METHODS = frozenset({"lower", "compile", "cost_analysis", "memory_analysis", "as_text",
                                     "trace", "eval_shape", "_cache_size", "clear_cache"})
TREE_LEAVES = frozenset({"jax.tree.leaves", "jax.tree_util.tree_leaves", "jax.tree_leaves"})
TREE_FLATTENS = frozenset({"jax.tree.flatten", "jax.tree_util.tree_flatten", "jax.tree_flatten",
                           "jax.tree.flatten_with_path", "jax.tree_util.tree_flatten_with_path"})
# Methods that grow a list in place: a list bound once may still change (`xs.append(x)`).
LIST_GROWING_METHODS = frozenset({"append", "extend", "insert"})
# Methods of the dicts, lists and named tuples that hold arrays: bookkeeping, not device work.
CONTAINER_METHODS = frozenset({"items", "keys", "values", "get", "copy", "update", "pop", "setdefault",
                               "append", "extend", "insert", "_replace", "replace", "_asdict"})

# optax.* calls that return arrays (the rest build GradientTransformations).
OPTAX_ARRAY_FUNCTIONS = frozenset({
    "optax.apply_updates", "optax.global_norm", "optax.incremental_update", "optax.periodic_update",
    "optax.safe_norm", "optax.tree_utils.tree_l2_norm", "optax.tree_utils.tree_add",
})
OPTAX_ARRAY_HINTS = ("loss", "entropy", "norm", "divergence", "l2", "hinge", "huber", "cosine")

# Explicit device-to-host conversions: callee -> which argument is pulled to the host.
HOST_PULL_FUNCTIONS = frozenset({
    "builtins.float", "builtins.int", "builtins.bool", "builtins.complex", "builtins.str",
    "numpy.asarray", "numpy.array", "numpy.asanyarray", "numpy.ascontiguousarray",
    "jax.device_get", "builtins.print", "builtins.repr",
})
SYNC_FUNCTIONS = frozenset({"jax.block_until_ready"})

# Explicit host-to-device conversions.
DEVICE_PUT_FUNCTIONS = frozenset({
    "jax.numpy.array", "jax.numpy.asarray", "jax.device_put", "jax.device_put_replicated",
    "jax.device_put_sharded", "jax.make_array_from_process_local_data",
})

# Work a timer around is not expected to cover: copies between host and devices (the call returns
# while the copy runs, and its cost lands in the wait for the computation that reads it), dtype
# casts, and key bookkeeping. Serving and loading code times such calls as dispatch metrics.
TRANSFER_FUNCTIONS = DEVICE_PUT_FUNCTIONS | KEY_CONSTRUCTORS | KEY_DERIVATIONS | frozenset({
    "jax.make_array_from_single_device_arrays", "jax.make_array_from_callback",
})
TRANSFER_METHODS = frozenset({"astype"})
# Constant fills: an allocation, not a computation a timer is meant to cover.
FILL_FUNCTIONS = frozenset(f"jax.numpy.{name}" for name in (
    "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like"))

# Array constructors: given Python numbers or lists they upload data or fill a constant, which
# no jit fuses away (under jit the same values would be static constants).
ARRAY_CONSTRUCTORS = DEVICE_PUT_FUNCTIONS | frozenset({
    "jax.numpy.arange", "jax.numpy.zeros", "jax.numpy.ones", "jax.numpy.full", "jax.numpy.empty",
    "jax.numpy.eye", "jax.numpy.identity", "jax.numpy.linspace",
})
# Array constructors whose listed positional arguments (or these keywords) are shapes or sizes.
SHAPE_ARGUMENTS: dict[str, tuple[int, ...]] = {
    "jax.numpy.zeros": (0,), "jax.numpy.ones": (0,), "jax.numpy.empty": (0,), "jax.numpy.full": (0,),
    "jax.numpy.arange": (0, 1, 2), "jax.numpy.linspace": (2,), "jax.numpy.eye": (0, 1),
    "jax.numpy.identity": (0,), "jax.numpy.tri": (0, 1), "jax.numpy.reshape": (1,),
    "jax.numpy.broadcast_to": (1,), "jax.numpy.tile": (1,), "jax.numpy.repeat": (1,),
    "builtins.range": (0, 1, 2),
}
SHAPE_KEYWORDS = frozenset({"shape", "num", "size", "length", "newshape", "repeats", "axis"})
# Grids of numbers: a sweep over settings.
GRID_FUNCTIONS = frozenset({"numpy.linspace", "numpy.logspace", "numpy.geomspace", "numpy.arange",
                            "jax.numpy.linspace", "jax.numpy.logspace", "jax.numpy.geomspace",
                            "jax.numpy.arange"})

# A notebook's `%timeit f(x)` / `%time f(x)` is read as the `timeit` call it amounts to, through
# this alias of the `timeit` module (static/pipeline/notebooks.py), so JAX701 sees what is timed.
IPYTHON_TIMING_MAGICS = {"_ipython_timeit": "%timeit", "_ipython_time": "%time"}

TIMER_FUNCTIONS = frozenset({
    "time.time", "time.perf_counter", "time.monotonic", "time.process_time", "time.time_ns",
    "time.perf_counter_ns", "time.monotonic_ns", "timeit.default_timer", "timeit.timeit",
    "timeit.repeat",
})

# Functions that write arrays' values out (to a file or to bytes): each leaf is copied to the
# host first, so the call waits for every array it is given.
ARRAY_WRITERS = frozenset({
    "equinox.tree_serialise_leaves", "flax.serialization.to_bytes", "flax.serialization.msgpack_serialize",
    "pickle.dump", "pickle.dumps", "cloudpickle.dump", "joblib.dump", "numpy.save", "numpy.savez",
    "numpy.savez_compressed",
})
# Host I/O that forces a loop to stay on the host each iteration (JAX201 stays quiet).
HOST_IO_FUNCTIONS = frozenset({
    "builtins.open", "builtins.input", "numpy.save", "numpy.savez", "numpy.savez_compressed",
    "numpy.load", "numpy.loadtxt", "numpy.savetxt", "pickle.dump", "pickle.load", "json.dump",
    "json.load", "torch.save", "torch.load", "shutil.copy", "os.makedirs", "requests.get",
    "requests.post", "urllib.request.urlopen", "socket.socket",
})
HOST_IO_HINTS = ("save", "checkpoint", "write", "load", "read", "download", "upload", "render",
                 "send", "recv", "log_", "wandb", "tensorboard", "summary", "flush", "dump")

# Names of calls that turn recorded states into frames or a video (`env.render(rollout)`,
# `media.show_video(frames)`, `imageio.mimsave(path, frames)`, `wandb.Video(frames)`): a loop
# filling their input is a visualisation rollout, its cost the renderer's (JAX201/202/301 quiet).
RENDER_HINTS = ("render", "video", "mimsave", "mimwrite", "animation", "animate", "gif")

# The errors tracing raises on the mistakes JAX401/402/404 find: a notebook cell whose saved
# outputs show one of them demonstrates the mistake on purpose (Rule.demonstrated).
TRACING_ERRORS = frozenset({
    "ConcretizationTypeError", "NonConcreteBooleanIndexError", "TracerBoolConversionError",
    "TracerArrayConversionError", "TracerIntegerConversionError", "UnexpectedTracerError",
})
# How a tracer prints (`Traced<ShapedArray(float32[3])>with<DynamicJaxprTrace...>`).
TRACER_REPR = "Traced<"

# Names of containers whose entries are structure: layers, parameters, dimensions. A loop over
# one (`for (w, b), (gw, gb) in zip(params, grads)`) walks a pytree, not steps.
STRUCTURE_NAMES = re.compile(r"(^|_)(params|parameters|layers|weights|blocks|modules|leaves|children|shapes?|"
                             r"dims|axes|sizes|args|kwargs)$", re.IGNORECASE)

# Loaders that return a data set as NumPy arrays on the host (tuples of them, unpacked).
NUMPY_DATASET_LOADERS = frozenset(
    f"{prefix}.datasets.{name}.load_data" for prefix in ("keras", "tensorflow.keras", "tf.keras")
    for name in ("mnist", "fashion_mnist", "cifar10", "cifar100", "boston_housing", "imdb", "reuters"))
