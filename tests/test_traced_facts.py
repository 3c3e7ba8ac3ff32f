"""Which values are tracers (tracers.py), seen through JAX401-404: arguments static in fact stay
quiet, their traced twins are reported. Each pair differs only in what makes the value static."""

from __future__ import annotations

from jaxopt_audit.static.pipeline.registry import load_rules

from conftest import scan_text

RULES = [r for r in load_rules() if r.CODE in ("JAX401", "JAX402", "JAX403", "JAX404")]


def found(source: str) -> list[tuple[int, str]]:
    return sorted((f.line, f.code) for f in scan_text(source, RULES))


def test_argument_bound_by_partial_before_jit_is_static():
    source = """
        from functools import partial
        import jax
        import jax.numpy as jnp

        def rollout(steps, x):
            for _ in range(steps):
                x = jnp.tanh(x)
            return x

        run = jax.jit({wrapped})
    """
    assert found(source.replace("{wrapped}", "partial(rollout, 5)")) == []
    assert found(source.replace("{wrapped}", "rollout")) == [(6, "JAX402")]


def test_vmap_in_axes_none_is_not_traced_by_vmap():
    source = """
        import jax
        import jax.numpy as jnp

        def scale(x, flip):
            return -x if flip else x

        def run(xs, flags):
            return jax.vmap(scale, in_axes={axes})(xs, flags)
    """
    assert found(source.replace("{axes}", "(0, None)")) == []
    assert found(source.replace("{axes}", "(0, 0)")) == [(5, "JAX402")]


def test_grad_alone_runs_on_concrete_values_but_jit_of_grad_traces():
    source = """
        import jax
        import jax.numpy as jnp

        def loss(w, x):
            if x > 0:
                return jnp.sum(w * x)
            return jnp.sum(w)

        {transform}
    """
    assert found(source.replace("{transform}", "g = jax.grad(loss)(1.0, 2.0)")) == []
    assert found(source.replace("{transform}", "g = jax.jit(jax.grad(loss))(1.0, 2.0)")) == [(5, "JAX402")]


def test_equinox_filter_jit_keeps_python_numbers_static():
    source = """
        import equinox as eqx
        import jax
        import jax.numpy as jnp

        @eqx.filter_jit
        def smooth(x: jax.Array, n{annotation}):
            for _ in range(n):
                x = jnp.tanh(x)
            return x[x > 0]
    """
    assert found(source.replace("{annotation}", "")) == [(9, "JAX401")]
    assert found(source.replace("{annotation}", ": jax.Array")) == [(7, "JAX402"), (9, "JAX401")]


def test_size_axis_size_and_numpy_on_shapes_are_static():
    assert found("""
        import jax
        import jax.numpy as jnp
        import numpy as np

        @jax.jit
        def pool(x):
            dims = jnp.size(x)
            if dims % 2:
                x = x[:-1]
            order = np.argsort(x.shape)
            return x.reshape(dims // 2, 2).transpose(tuple(order)[:1] + (1,))

        @jax.jit
        def ring(x):
            size = jax.lax.psum(1, "i")
            perm = [(i, (i + 1) % size) for i in range(size)]
            return jax.lax.ppermute(x, "i", perm).reshape(size, -1)
    """) == []


def test_traced_sum_is_not_static():
    assert found("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def pool(x):
            total = jnp.sum(x)
            if total % 2:
                x = x[:-1]
            return x
    """) == [(7, "JAX402")]


def test_print_in_eager_shard_map_runs_every_call():
    source = """
        from functools import partial
        import jax
        from jax.sharding import PartitionSpec as P

        mesh = jax.make_mesh((1,), ("i",))

        @partial(jax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
        def local(x):
            print("block", x)
            return x * 2

        {call}
    """
    assert found(source.replace("{call}", "y = local(jax.numpy.ones(4))")) == []
    assert found(source.replace("{call}", "y = jax.jit(local)(jax.numpy.ones(4))")) == [(9, "JAX403")]


def test_callee_parameter_traced_only_from_call_sites_passing_a_tracer():
    source = """
        import jax
        import jax.numpy as jnp

        def huber(delta, threshold):
            if threshold > 0:
                return jnp.where(jnp.abs(delta) < threshold, 0.5 * delta ** 2, threshold * jnp.abs(delta))
            return 0.5 * delta ** 2

        @jax.jit
        def loss(pred, target):
            return huber(pred - target, {threshold}).mean()
    """
    assert found(source.replace("{threshold}", "1.0")) == []
    assert found(source.replace("{threshold}", "jnp.std(target)")) == [(5, "JAX402")]


def test_defaulted_parameter_is_static_unless_a_traced_caller_passes_it():
    assert found("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def attend(q, k, causal=False):
            logits = q @ k.T
            if causal:
                logits = jnp.where(jnp.tri(q.shape[0]) > 0, logits, -1e9)
            return logits
    """) == []


def test_pmap_static_broadcasted_argnums_and_dict_keys_are_static():
    source = """
        import jax
        import jax.numpy as jnp

        def step(batch, mode):
            out = {}
            for name, value in batch.items():
                if name.startswith("img"):
                    value = value / 255.0
                out[name] = value
            if mode == 1:
                out = {k: -v for k, v in out.items()}
            return out

        p_step = jax.pmap(step{static})
    """
    assert found(source.replace("{static}", ", static_broadcasted_argnums=(1,)")) == []
    assert found(source.replace("{static}", "")) == [(10, "JAX402")]


def test_isinstance_dispatch_handles_python_values():
    assert found("""
        import jax
        import jax.numpy as jnp
        import numpy as np

        def wrap(index, size):
            if isinstance(index, int):
                return index + size if index < 0 else index
            return jnp.where(index < 0, index + size, index)

        @jax.jit
        def gather(x, i):
            return x[wrap(i, x.shape[0])]
    """) == []


def test_local_alias_shadows_a_module_function_of_the_same_name():
    assert found("""
        from functools import partial
        import jax
        import jax.numpy as jnp

        @jax.jit
        def rotate(x):
            shift = partial(jnp.roll, shift=1)
            return shift(x)

        def shift(i, x):
            if i % 2 == 0:
                return x
            return -x
    """) == []


def test_next_on_a_host_iterator_inside_fori_loop_body():
    source = """
        import jax
        import jax.numpy as jnp

        def train(w, batches, n):
            def body(i, w):
                x = {read}
                return w - 0.1 * jnp.mean(x) * w
            return jax.lax.fori_loop(0, n, body, w)

        @jax.jit
        def first(tree):
            return next(iter(tree.values())) * 2
    """
    assert found(source.replace("{read}", "next(batches)")) == [(6, "JAX403")]
    assert found(source.replace("{read}", "batches[i]")) == []


def test_array_computed_eagerly_and_captured_by_a_traced_closure_is_concrete():
    source = """
        import jax
        import jax.numpy as jnp

        def train(total, n_evals):
            per_epoch = {per_epoch}

            @jax.jit
            def epoch(w):
                return jax.lax.scan(lambda c, i: (c * 0.9, i), w, jnp.arange(per_epoch))

            return epoch(jnp.ones(3))
    """
    assert found(source.replace("{per_epoch}", "jnp.round(total / n_evals)")) == []

    assert found(source.replace("{per_epoch}", "total").replace("def epoch(w):", "def epoch(w, total=total):")
                 .replace("epoch(jnp.ones(3))", "epoch(jnp.ones(3), total)")) == []


def test_tuple_annotated_parameter_tests_its_length():
    source = """
        from typing import Tuple
        import jax
        import jax.numpy as jnp

        def clamp(x, limit{annotation}):
            if limit:
                return jnp.clip(x, limit[0], limit[1])
            return x

        run = jax.vmap(clamp)
    """
    assert found(source.replace("{annotation}", ": Tuple[jax.Array, jax.Array]")) == []
    assert found(source.replace("{annotation}", ": jax.Array")) == [(6, "JAX402")]


def test_numpy_on_a_dict_of_tracers_is_not_an_array_conversion():
    source = """
        import jax
        import jax.numpy as jnp
        import numpy as np

        @jax.jit
        def metrics(loss, acc):
            out = {value}
            return np.sum(out, -1)
    """
    assert found(source.replace("{value}", "{'loss': loss, 'acc': acc}")) == []
    assert found(source.replace("{value}", "[loss, acc]")) == [(8, "JAX404")]


def test_deliberate_trace_time_logs_are_quiet_but_a_plain_message_is_reported():
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(w, x):
            print({message})
            return w - 0.1 * jnp.mean(x)
    """
    assert found(source.replace("{message}", "'jitting step'")) == []
    assert found(source.replace("{message}", "f'{w.shape=}'")) == []
    assert found(source.replace("{message}", "'params:', sum(p.size for p in [w])")) == []
    assert found(source.replace("{message}", "'Running step'")) == []  # alone: a trace-time progress log
    # beside a print of a traced value, it reads as a message expected on every call
    assert found(source.replace("{message}", "'Running step'").replace(
        "return w", "print(w)\n            return w")) == [(6, "JAX403"), (7, "JAX403")]


def test_item_assignment_into_a_python_list_of_slices():
    assert found("""
        import jax
        import jax.numpy as jnp

        def axis_slice(ndim, index, axis):
            slices = [slice(None)] * ndim
            slices[axis] = index
            return tuple(slices)

        @jax.jit
        def diff(x):
            return x[axis_slice(x.ndim, slice(1, None), 0)] - x[axis_slice(x.ndim, slice(None, -1), 0)]
    """) == []


def test_module_that_enables_dynamic_shapes_may_size_arrays_by_tracers():
    source = """
        import jax
        import jax.numpy as jnp
        {config}

        @jax.jit
        def ramp(n):
            return jnp.arange(n)
    """
    assert found(source.replace("{config}", "jax.config.update('jax_dynamic_shapes', True)")) == []
    assert found(source.replace("{config}", "")) == [(7, "JAX401")]


def test_static_arguments_of_remat_and_computed_static_specs():
    source = """
        from functools import partial
        import jax
        import jax.numpy as jnp

        @partial(jax.checkpoint, static_argnums={static})
        def block(n, x):
            for _ in range(n):
                x = jnp.tanh(x)
            return x
    """
    assert found(source.replace("{static}", "(0,)")) == []
    assert found(source.replace("{static}", "()")) == [(7, "JAX402")]
    assert found("""
        import jax
        import jax.numpy as jnp

        def make(static):
            def f(x, flag):
                return -x if flag else x
            return jax.jit(f, static_argnums=static)
    """) == []


def test_notebook_redefinition_jits_the_latest_def():
    assert found("""
        import jax
        import jax.numpy as jnp

        def f(x):
            if x > 0:
                return 2 * x
            return -x

        print(jax.grad(f)(1.0))

        def f(x):
            return jnp.tanh(x) * 3

        g = jax.jit(f)
    """) == []


def test_jit_of_vmap_keeps_the_jit_static_arguments():
    assert found("""
        import jax
        import jax.numpy as jnp

        def decode(x, length):
            return jnp.zeros((x.shape[0], length)) + x[:, :1]

        fast = jax.jit(jax.vmap(decode, in_axes=(0, None)), static_argnums=(1,))
    """) == []


def test_numpy_on_a_name_rebound_from_a_dict():
    assert found("""
        import jax
        import jax.numpy as jnp
        import numpy as np

        @jax.jit
        def metrics(loss, acc):
            out = {"loss": loss, "acc": acc}
            out = np.sum(out, -1)
            return out
    """) == []


def test_branch_messages_and_variable_updates_are_quiet():
    assert found("""
        import jax
        import jax.numpy as jnp
        from flax import nnx

        @jax.jit
        def step(x, mode_is_train):
            if x.ndim == 2:
                print("matrix path")
            return x * 2

        @jax.jit
        def update(momentum: nnx.Variable[jax.Array], grad: nnx.Variable[jax.Array]):
            momentum[...] = 0.9 * momentum + 0.1 * grad
            return momentum
    """) == []


def test_pallas_kernel_refs_accept_item_assignment():
    source = """
        import functools
        import jax
        import jax.numpy as jnp
        from jax.experimental import pallas as pl

        @jax.jit
        def double(x):
            @functools.partial(pl.pallas_call, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))
            def kernel(x_ref, o_ref):
                o_ref[...] = x_ref[...] * 2 + jnp.zeros((), o_ref.dtype)
            return kernel(x)

        @jax.jit
        def bad(x):
            x[0] = 1.0
            return x * 2
    """
    assert found(source) == [(15, "JAX403")]


def test_vmap_decorator_with_in_axes_none():
    source = """
        from functools import partial
        import jax
        import jax.numpy as jnp

        @partial(jax.vmap, in_axes={axes})
        def scale(x, flip):
            return -x if flip else x
    """
    assert found(source.replace("{axes}", "(0, None)")) == []
    assert found(source.replace("{axes}", "0")) == [(7, "JAX402")]


def test_a_value_asserted_to_be_a_variable_accepts_item_assignment():
    source = """
        import unittest
        import jax
        from flax import nnx

        class T(unittest.TestCase):
            def test_set(self):
                @jax.jit
                def put(v, a):
                    {check}
                    v[...] = a
                    return v
    """
    assert found(source.replace("{check}", "self.assertIsInstance(v, nnx.Param)")) == []
    assert found(source.replace("{check}", "a = a * v")) == [(10, "JAX403")]


def test_unpacking_a_helpers_tuple_takes_each_element_on_its_own():
    # `n, total = summarise(x)`: n is a shape (static), total an array (traced)
    source = """
        import jax
        import jax.numpy as jnp

        def summarise(x):
            return x.shape[0], jnp.sum(x)

        @jax.jit
        def step(x):
            n, total = summarise(x)
            out = jnp.zeros(n)
            if total > 0:
                out = out + 1
            return out
    """
    assert found(source) == [(11, "JAX402")]


def test_a_lax_class_built_in_traced_code_is_not_a_tracer():
    # a helper returning a shape beside a `lax.ConvDimensionNumbers`: neither is traced
    source = """
        import jax
        import jax.numpy as jnp
        from jax import lax

        def parse(kernel, layout):
            return tuple(kernel), lax.ConvDimensionNumbers(layout, layout, layout)

        @jax.jit
        def moments(x):
            kernel, numbers = parse((3, 3), (0, 3, 1, 2))
            return jnp.zeros(kernel) + jnp.sum(x)
    """
    assert found(source) == []


def test_assigning_into_a_list_parameter_before_it_is_rebound_to_an_array():
    # `x` arrives as a list of arrays and becomes one array only after the loop
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def merge(x: list, scale):
            for i in range(1, len(x)):
                x[i] = x[i] * scale
            x = jnp.mean(jnp.stack(x), axis=0)
            return x

        @jax.jit
        def bad(y):
            z = jnp.zeros(3)
            z[0] = y
            return z
    """
    assert found(source) == [(14, "JAX403")]


def test_an_iterator_the_same_trace_builds_is_structure_not_host_data():
    # one key per leaf: the jitted init splits its key and a tree-mapped lambda draws them in turn
    source = """
        import jax
        from jax import random

        def make_init(shapes):
            @jax.jit
            def init(key):
                keys = iter(random.split(key, len(shapes)))
                return jax.tree.map(lambda s: random.normal(next(keys), s), shapes)
            return init

        def train(step, params, loader):
            batches = iter(loader)

            @jax.jit
            def update(p):
                return step(p, next(batches))
            return update(params)
    """
    # only the host iterator; the shapes tree the trace closes over gives Python leaves (no JAX401)
    assert found(source) == [(16, "JAX403")]


def test_static_argnums_of_a_jitted_bound_method_do_not_count_self():
    source = """
        import jax
        import jax.numpy as jnp

        class Sampler:
            def __init__(self):
                self._fast = jax.jit(self._run, static_argnums=(1,))

            def _run(self, tokens, echo):
                if echo:
                    return tokens
                return jnp.zeros_like(tokens)
    """
    assert found(source) == []
    assert found(source.replace("static_argnums=(1,)", "static_argnums=(0,)")) == [(9, "JAX402")]


def test_a_local_variable_named_like_its_function_is_what_jit_wraps():
    # `def square(n): square = table(n); return jax.jit(square)` jits the closure `table` built,
    # not the def: the local name shadows it (Python scoping), so `table` runs eagerly on ints
    source = """
        import jax
        import jax.numpy as jnp

        def table(n: int):
            grid = jnp.zeros((2 * n, 2 * n))
            rows = jnp.arange(n)

            def lookup(x):
                return grid[rows] * x

            return lookup

        def square(n: int):
            {name} = table(n)
            return jax.jit({name})
    """
    assert found(source.replace("{name}", "square")) == []
    # a reading through the def itself: `square` is jitted, so `table` is traced from it
    assert found(source.replace("{name} = table(n)", "table(n)").replace("{name}", "square")) \
        == [(5, "JAX401"), (6, "JAX401")]


def test_a_check_under_jax_disable_jit_runs_eagerly():
    # `if jax.config.jax_disable_jit:` holds debugging assertions that run only with jit off,
    # when the step runs eagerly on concrete arrays; the same assertion outside it fails under jit
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(x):
            y = jnp.tanh(x)
            {guard}
                assert not jnp.any(jnp.isnan(y))
            return y
    """
    assert found(source.replace("{guard}", "if jax.config.jax_disable_jit:")) == []
    assert found(source.replace("{guard}", "if not jax.config.jax_disable_jit:")) == [(8, "JAX402")]


def test_or_hands_its_last_operand_back_unconverted():
    # `lax.cond(len(prev) <= 4 or order < 3, ...)` under jit. `a or b` converts `a`
    # to a bool and returns `b` as it is, a traced predicate `lax.cond` accepts. The same
    # expression tested by an `if`, or negated, converts `b` too.
    assert found("""
        import jax
        import jax.numpy as jnp
        from jax import lax

        @jax.jit
        def step(prev, order, y):
            up = lax.cond(len(prev) <= 4 or order < 3, lambda v: v + 1.0, lambda v: v, y)
            flag = True and order > 1
            if len(prev) <= 4 or order < 3:
                up = up * 2.0
            if not (len(prev) > 1 and order > 0):
                up = up - 1.0
            return up, flag
    """) == [(9, "JAX402"), (11, "JAX402")]


def test_comparing_a_traced_array_with_none_is_a_python_bool():
    # `if encoder_out != None:` in a jitted network. A JAX array hands a comparison
    # with None back to Python, which compares identities: a plain bool, even under jit.
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def head(x, features):
            if features {op} None:
                x = x + features
            return jnp.tanh(x)
    """
    assert found(source.replace("{op}", "!=")) == []
    assert found(source.replace("{op}", "==")) == []
    assert found(source.replace("{op} None", "> 0")) == [(6, "JAX402")]
