"""JAX401 dynamic-shape."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    Function,
    Invalid,
    Report,
    Rule,
    SemanticModel,
    Valid,
    describe,
    is_traced_value,
    shows_tracing_error,
    teaches_pitfall,
    traced_functions,
)

# Functions whose output size depends on the values; `size=` makes them static.
VALUE_SIZED = frozenset({
    "jax.numpy.nonzero", "jax.numpy.argwhere", "jax.numpy.flatnonzero", "jax.numpy.unique",
    "jax.numpy.unique_values", "jax.numpy.unique_counts", "jax.numpy.unique_inverse",
    "jax.numpy.unique_all", "jax.numpy.setdiff1d", "jax.numpy.union1d", "jax.numpy.intersect1d",
    "jax.numpy.extract", "jax.numpy.compress",
})
# Function -> positions of arguments that are shapes or sizes (None: every positional argument).
SHAPE_ARGUMENTS: dict[str, tuple[int, ...] | None] = {
    "jax.numpy.zeros": (0,), "jax.numpy.ones": (0,), "jax.numpy.empty": (0,), "jax.numpy.full": (0,),
    "jax.numpy.arange": None, "jax.numpy.eye": (0, 1), "jax.numpy.identity": (0,),
    "jax.numpy.reshape": (1,), "jax.numpy.broadcast_to": (1,), "jax.numpy.tile": (1,),
    "jax.numpy.linspace": (2,), "jax.numpy.tri": (0, 1), "jax.numpy.resize": (1,),
    "jax.random.normal": (1,), "jax.random.uniform": (1,), "jax.random.bernoulli": (2,),
    "jax.random.randint": (1,), "jax.random.categorical": (), "jax.random.truncated_normal": (3,),
    "jax.lax.iota": (1,), "jax.lax.broadcast": (1,), "jax.lax.reshape": (1,),
}
SHAPE_KEYWORDS = frozenset({"shape", "new_shape", "newshape", "num", "reps"})
SHAPE_METHODS = frozenset({"reshape", "broadcast_to"})
BOOLEAN_FUNCTIONS = frozenset({
    "jax.numpy.logical_and", "jax.numpy.logical_or", "jax.numpy.logical_not", "jax.numpy.logical_xor",
    "jax.numpy.isnan", "jax.numpy.isinf", "jax.numpy.isfinite", "jax.numpy.isclose", "jax.numpy.isin",
    "jax.numpy.signbit", "jax.numpy.greater", "jax.numpy.less", "jax.numpy.equal",
    "jax.numpy.not_equal", "jax.numpy.greater_equal", "jax.numpy.less_equal",
})


class DynamicShape(Rule):
    """
    ## What it does
    Finds operations in traced code whose output shape depends on array values: boolean-mask
    indexing (`x[x < 0]`), `jnp.nonzero`/`argwhere`/`flatnonzero`/`unique`/one-argument
    `jnp.where` without `size=`, and shapes built from traced values (`jnp.zeros(n)`,
    `x.reshape(jnp.array(x.shape).prod())`, `jnp.arange(n)` with `n` a traced argument).

    ## Why is this bad?
    XLA compiles for static shapes. Under `jit` these fail with `NonConcreteBooleanIndexError`,
    `ConcretizationTypeError` or "Shapes must be 1D sequences of concrete values" (the "JAX
    Basics" post's JIT pitfalls 1 and 3).

    ## How to fix
    Keep the shape fixed and mask the values: `jnp.where(mask, x, 0)` instead of `x[mask]`;
    pass `size=` (and `fill_value=`) to `nonzero`/`unique`; build shapes from `x.shape` (static
    Python ints) or make the size a static argument (`static_argnames=("n",)`).

    In a notebook, a cell that shows this mistake on purpose is not reported: its saved output
    holds the tracing error, or the prose just before it or its own comments say the code fails
    or explain tracing ("The following fails", `# This will fail!`). That is read from the
    notebook's words because the code alone cannot show that the author is teaching the pitfall;
    a `.py` file's findings always stand.

    ## References
    JAX docs, "Dynamic shapes" and "🔪 JAX - The Sharp Bits"; "JAX Basics - Framework
    Benchmarks & JIT Compilation" (the `jit_basics` reference pipeline's source).
    """

    CODE = "JAX401"
    NAME = "dynamic-shape"
    IMPACT = "correctness"
    SEVERITY = "error"
    SUMMARY = "Value-dependent shape inside jit"
    FIX = ("Use `jnp.where(mask, x, 0)`, pass `size=`/`fill_value=`, "
           "or build shapes from static ints (`x.shape`, static args).")

    INVALID = [
        Invalid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def get_negatives(x):
                return x[x < 0]  # <- JAX401

            @jax.jit
            def flatten(x):
                return x.reshape(jnp.array(x.shape).prod())  # <- JAX401
        """),
        Invalid("""
            import jax
            import jax.numpy as jnp

            def active_mean(x, n):
                mask = jnp.isfinite(x)
                idx = jnp.nonzero(mask)  # <- JAX401
                pad = jnp.zeros(n)  # <- JAX401
                return jnp.concatenate([x[mask], pad]).mean()  # <- JAX401

            step = jax.jit(active_mean)
        """),
    ]
    VALID = [
        Valid("""
            from functools import partial
            import numpy as np
            import jax
            import jax.numpy as jnp

            @jax.jit
            def relu_negatives(x):
                return jnp.where(x < 0, x, 0.0)

            @jax.jit
            def flatten(x):
                return x.reshape((np.prod(x.shape),))

            @partial(jax.jit, static_argnames=("n",))
            def padded(x, n):
                idx = jnp.nonzero(x > 0, size=n, fill_value=0)
                return jnp.concatenate([x[idx], jnp.zeros(n)]), x.at[x < 0].set(0.0)

            def host_filter(x):
                return x[x < 0]  # not traced: runs eagerly
        """),
        Valid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def attention_mask(q):
                seq = q.shape[-2]
                causal = jnp.tril(jnp.ones((seq, seq), dtype=bool))
                return jnp.where(causal, q @ q.swapaxes(-1, -2), -1e9).reshape(-1, seq, seq)
        """),
    ]

    def demonstrated(self, finding, cell) -> bool:
        # the cell failed tracing when last run, or the notebook teaches this pitfall there
        return shows_tracing_error(cell) or teaches_pitfall(cell)

    def check(self, model: SemanticModel) -> Iterator[Report]:
        if model.source is not None and "jax_dynamic_shapes" in model.source:
            return  # the module opts in to JAX's (experimental) dynamic shapes
        for fn in traced_functions(model):
            for site in fn.subscripts:
                node: cst.Subscript = site.node
                if isinstance(node.value, cst.Attribute) and node.value.attr.value == "at":
                    continue
                if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) \
                        and is_traced_value(model, node.value, fn) \
                        and _is_boolean(model, node.slice[0].slice.value, fn, 0):
                    yield Report(node, f"`{describe(node)}` indexes with a boolean mask, so its shape depends on "
                                       "the values; under jit this fails with NonConcreteBooleanIndexError")
                    continue
                for element in node.slice:
                    part = element.slice
                    if isinstance(part, cst.Slice) and any(
                            bound is not None and is_traced_value(model, bound, fn)
                            for bound in (part.lower, part.upper, part.step)):
                        yield Report(node, f"`{describe(node)}` slices with a traced bound, so its length depends "
                                           "on the values; use `jax.lax.dynamic_slice` with a static size")
                        break
            for call_site in fn.calls:
                yield from self._check_call(model, fn, call_site.node)

    def _check_call(self, model: SemanticModel, fn: Function, call: cst.Call) -> Iterator[Report]:
        q = model.resolve(call.func)
        keywords = {a.keyword.value for a in call.args if a.keyword is not None}
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if q in VALUE_SIZED or (q == "jax.numpy.where" and len(positional) == 1):
            if "size" not in keywords:
                yield Report(call, f"`{describe(call)}` returns as many elements as the data has, an unknown "
                                   "shape under jit; pass `size=` (and `fill_value=`)")
            return
        if q is None and isinstance(call.func, cst.Attribute) and call.func.attr.value == "nonzero" \
                and is_traced_value(model, call.func.value, fn) and "size" not in keywords:
            yield Report(call, f"`{describe(call)}` returns a value-dependent number of indices under jit; "
                               "pass `size=`")
            return
        shape_args: list[cst.BaseExpression] = []
        if q in SHAPE_ARGUMENTS:
            positions = SHAPE_ARGUMENTS[q]
            shape_args = positional if positions is None else [positional[i] for i in positions if i < len(positional)]
        elif q is None and isinstance(call.func, cst.Attribute) and call.func.attr.value in SHAPE_METHODS \
                and is_traced_value(model, call.func.value, fn):
            shape_args = positional
        else:
            return
        shape_args += [a.value for a in call.args if a.keyword is not None and a.keyword.value in SHAPE_KEYWORDS]
        for arg in shape_args:
            for part in (arg.elements if isinstance(arg, (cst.Tuple, cst.List)) else [arg]):
                value = part.value if isinstance(part, cst.BaseElement) else part
                if is_traced_value(model, value, fn):
                    yield Report(call, f"`{describe(call)}` uses `{describe(value)}`, a traced value, as a shape; "
                                       "shapes must be static Python ints under jit")
                    return


def _is_boolean(model: SemanticModel, expr: cst.BaseExpression, fn: Function, depth: int) -> bool:
    """A traced boolean array: a comparison of arrays, `~m`, `m1 & m2`, `jnp.isnan(x)`, or a name
    bound to one."""
    if depth > 6:
        return False
    if isinstance(expr, cst.Comparison):
        return is_traced_value(model, expr, fn)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return _is_boolean(model, expr.expression, fn, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return _is_boolean(model, expr.left, fn, depth + 1) or _is_boolean(model, expr.right, fn, depth + 1)
    if isinstance(expr, cst.Call):
        return model.resolve(expr.func) in BOOLEAN_FUNCTIONS and is_traced_value(model, expr, fn)
    if isinstance(expr, cst.Name):
        values = [a.value for a in fn.bindings(expr.value) if a.value is not None]
        return bool(values) and all(_is_boolean(model, value, fn, depth + 1) for value in values)
    return False
