"""JAX404 numpy-on-tracer."""

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
    apis,
    describe,
    is_traced_value,
    shows_tracing_error,
    teaches_pitfall,
    traced_functions,
)

# Host libraries that convert their arguments to NumPy arrays or Python floats.
HOST_MATH_ROOTS = ("numpy.", "math.", "scipy.")


# math.* -> the jnp / jax.scipy equivalent where the name differs or is not in jnp.
MATH_EQUIVALENTS = {
    "pow": "jnp.power", "fabs": "jnp.abs", "fsum": "jnp.sum", "atan2": "jnp.arctan2",
    "asin": "jnp.arcsin", "acos": "jnp.arccos", "atan": "jnp.arctan", "asinh": "jnp.arcsinh",
    "acosh": "jnp.arccosh", "atanh": "jnp.arctanh", "erf": "jax.scipy.special.erf",
    "erfc": "jax.scipy.special.erfc", "lgamma": "jax.scipy.special.gammaln",
    "gamma": "jnp.exp(jax.scipy.special.gammaln(x))", "factorial": "jax.scipy.special.factorial",
    "dist": "jnp.linalg.norm(a - b)", "isclose": "jnp.isclose",
}


class NumpyOnTracer(Rule):
    """
    ## What it does
    Finds NumPy, `math` and SciPy functions applied to traced values inside code that JAX traces
    (a jitted function, the body of `lax.scan` / `fori_loop` / `cond` / `vmap` / `grad`, and
    the same-module functions these call): `np.exp(x)`, `np.asarray(x)`, `np.where(m, x, 0)`,
    `math.sqrt(x)`, `scipy.special.expit(x)`, where `x` is a traced argument or an array
    computed from one.

    ## Why is this bad?
    Under tracing `x` is an abstract tracer with no value. NumPy converts its arguments with
    `__array__`, which raises `TracerArrayConversionError`; `math` converts with `float()`,
    which raises `ConcretizationTypeError`. When the value happens to be concrete (a closed-over
    constant), the call silently runs once at trace time and its result is baked into the
    compiled program as a constant.

    ## How to fix
    Use the `jax.numpy` (`jnp`) equivalent, which traces: `jnp.sum(x)`, `jnp.sqrt(x)`,
    `jnp.where(m, x, 0)`, `jax.scipy.special.expit(x)`. For genuinely host-side work, pass the
    value to `jax.pure_callback`.

    The rule stays quiet on NumPy applied to static values: shapes (`np.prod(x.shape)`), dtypes,
    Python constants, arguments named in `static_argnums` / `static_argnames`, attributes set at
    construction, and on NumPy inside host callbacks (`jax.pure_callback(f, ...)`) or inside a
    `jax.tree.map` lambda in plain Python code. It also stays quiet on the NumPy functions that
    hand a non-NumPy array to its own method of the same name (`np.sum(x)` runs `x.sum()`,
    `np.reshape(x, s)` runs `x.reshape(s)`, likewise `mean`, `max`, `argmax`, `transpose`, ...):
    on a tracer they trace like `jnp`.

    In a notebook, a cell that shows this mistake on purpose is not reported: its saved output
    holds the tracing error, or the prose just before it or its own comments say the code fails
    or explain tracing ("The following fails", `# This will fail!`). That is read from the
    notebook's words because the code alone cannot show that the author is teaching the pitfall;
    a `.py` file's findings always stand.
    """

    CODE = "JAX404"
    NAME = "numpy-on-tracer"
    IMPACT = "correctness"
    SEVERITY = "error"
    SUMMARY = "NumPy or math function applied to a traced value"
    FIX = "Use the jax.numpy equivalent (`jnp.sum`, `jnp.sqrt`, ...), which works on tracers."

    INVALID = [
        Invalid("""
            import math
            import jax
            import jax.numpy as jnp
            import numpy as np

            @jax.jit
            def normalize(x, eps):
                centered = x - np.median(x)  # <- JAX404
                scale = math.sqrt(jnp.sum(centered ** 2) + eps)  # <- JAX404
                return centered / scale
        """),
        Invalid("""
            import jax
            import numpy as onp
            from jax import lax

            def body(carry, x):
                total = carry + onp.asarray(x).sum()  # <- JAX404
                return total, onp.clip(total, 0.0, 1.0)  # <- JAX404

            def run(xs):
                return lax.scan(body, 0.0, xs)
        """),
    ]
    VALID = [
        Valid("""
            import functools
            import math
            import jax
            import jax.numpy as jnp
            import numpy as np

            @functools.partial(jax.jit, static_argnames=("num_heads",))
            def attention(q, k, num_heads):
                head_dim = q.shape[-1] // num_heads
                scale = 1.0 / math.sqrt(head_dim)  # shape arithmetic is static
                flat = q.reshape((np.prod(q.shape[:-1]), q.shape[-1]))  # static shape
                logits = jnp.einsum("...d,...d->...", q, k) * scale
                bias = np.zeros(num_heads, dtype=np.float32)  # static argument
                return jax.nn.softmax(logits) + jnp.asarray(bias).sum(), flat
        """),
        Valid("""
            import jax
            import jax.numpy as jnp
            import numpy as np

            def host_stats(x):
                return np.asarray(np.percentile(x, 90), dtype=np.float32)

            @jax.jit
            def summarize(x):
                shape = jax.ShapeDtypeStruct((), jnp.float32)
                return jax.pure_callback(host_stats, shape, x)

            def to_numpy(params):
                return jax.tree.map(lambda p: np.asarray(p), params)  # plain Python, not traced
        """),
    ]

    def demonstrated(self, finding, cell) -> bool:
        # the cell failed tracing when last run, or the notebook teaches this pitfall there
        return shows_tracing_error(cell) or teaches_pitfall(cell)

    def check(self, model: SemanticModel) -> Iterator[Report]:
        for fn in traced_functions(model):
            for site in fn.calls:
                call: cst.Call = site.node
                q = model.resolve(call.func)
                if q is None or not q.startswith(HOST_MATH_ROOTS) or q in apis.NUMPY_METADATA \
                        or _calls_own_method(call, q, fn):
                    continue
                traced_arg = next((a.value for a in call.args if is_traced_value(model, a.value, fn)
                                   and not _dict_value(model, a.value, fn)), None)
                if traced_arg is None:
                    continue
                yield Report(call, self._message(call, q, traced_arg, fn), fix=_fix(q))

    @staticmethod
    def _message(call: cst.Call, qualname: str, arg: cst.BaseExpression, fn: Function) -> str:
        library = qualname.split(".")[0]
        failure = ("`float()` conversion raises ConcretizationTypeError" if library == "math"
                   else "conversion to a NumPy array raises TracerArrayConversionError")
        where = "a traced lambda" if fn.name == "<lambda>" else f"`{fn.name}`, which JAX traces"
        return (f"`{describe(call)}` applies {library} to the traced value `{describe(arg)}` in {where}: "
                f"{failure} (or a constant is silently baked in)")


_SEQUENCES = (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp, cst.Set)


def _calls_own_method(call: cst.Call, qualname: str, fn: Function) -> bool:
    """`np.sum(x)` on an array: NumPy calls `x.sum()`, which traces. Not on a sequence of
    tracers (`np.sum([a, b])` converts the list first)."""
    if qualname not in apis.NUMPY_METHOD_DISPATCH or not call.args or call.args[0].keyword is not None:
        return False
    first = call.args[0].value
    if isinstance(first, cst.Name):
        return not any(isinstance(a.value, _SEQUENCES) for a in fn.bindings(first.value))
    return not isinstance(first, _SEQUENCES)


def _dict_value(model: SemanticModel, expr: cst.BaseExpression, fn: Function) -> bool:
    """A dict of tracers: NumPy wraps it in an object array without converting its values."""
    if isinstance(expr, (cst.Dict, cst.DictComp)):
        return True
    if isinstance(expr, cst.Name):  # the binding that reaches this use
        seq = model.name_seq.get(id(expr))
        before = [a for a in fn.bindings(expr.value) if seq is not None and a.seq < seq]
        return bool(before) and isinstance(before[-1].value, (cst.Dict, cst.DictComp))
    return False


def _fix(qualname: str) -> str:
    library, _, name = qualname.partition(".")
    if library == "math":
        return f"Use `{MATH_EQUIVALENTS.get(name, 'jnp.' + name)}` instead of `math.{name}`; it works on tracers."
    if library == "scipy":
        return f"Use `jax.scipy.{name}` instead of `scipy.{name}`; it works on tracers."
    if name.startswith("random."):
        return "Draw random numbers with `jax.random` and a PRNG key passed in as an argument."
    return f"Use `jnp.{name}` instead of `np.{name}`; it works on tracers."
