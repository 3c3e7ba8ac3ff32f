"""JAX404 numpy-on-tracer: shapes reported and quiet clauses beyond the rule's examples."""

from __future__ import annotations

import pytest

from jaxopt_audit.static import apis

from conftest import rules_with_code, scan_text, scanners

RULE = rules_with_code("JAX404")


_, lines = scanners(RULE)


def test_static_shape_arithmetic_is_quiet():
    # The usual fix for `jnp.array(x.shape).prod()`: NumPy on the static shape is right
    assert lines("""
        import jax.numpy as jnp
        import numpy as np
        from jax import jit

        @jit
        def f(x):
            return x.reshape((np.prod(x.shape),))

        f(jnp.ones((2, 3)))
    """) == []


def test_numpy_math_and_scipy_on_tracers_through_every_spelling():
    found = scan_text("""
        import math
        import jax
        import numpy as onp
        import scipy.special as sps
        from numpy import median
        from jax import lax

        def helper(v):
            return math.sqrt(v)

        def step(x, y):
            a = onp.exp(x)
            b = median(y)
            c = sps.expit(x)
            return helper(x.mean()) + a + b + c

        step_jit = jax.jit(step)

        def body(i, carry):
            return carry + onp.tanh(carry)

        def run(x):
            return lax.fori_loop(0, 3, body, x)

        per_example = jax.vmap(lambda row: onp.linalg.norm(row))
    """, RULE)
    assert [f.line for f in found] == [9, 12, 13, 14, 20, 25]
    by_line = {f.line: f for f in found}
    assert "ConcretizationTypeError" in by_line[9].message and "jnp.sqrt" in by_line[9].fix
    assert "TracerArrayConversionError" in by_line[12].message and "jnp.exp" in by_line[12].fix
    assert "jax.scipy.special.expit" in by_line[14].fix


def test_quiet_on_static_values():
    assert lines("""
        import functools
        import math
        import jax
        import jax.numpy as jnp
        import numpy as np

        TABLE = np.linspace(0.0, 1.0, 16)

        @functools.partial(jax.jit, static_argnums=(1,))
        def f(x, n):
            idx = np.arange(n)
            eps = np.finfo(x.dtype).eps
            size = np.shape(x)[0] + len(x) + x.ndim
            scale = math.sqrt(x.shape[-1]) * np.pi * np.float32(2.0)
            lookup = jnp.asarray(np.cumsum(TABLE))
            return x[idx] * scale + eps + size + lookup[0]

        def helper(n):
            return np.ones(n)

        @jax.jit
        def g(x):
            return x + jnp.asarray(helper(3))
    """) == []


def test_quiet_outside_traced_code_and_in_host_callbacks():
    assert lines("""
        import jax
        import jax.numpy as jnp
        import numpy as np

        def summarize(params):
            leaves = jax.tree.map(lambda p: np.asarray(p).mean(), params)
            return float(np.sum(jnp.ones(3)))

        @jax.jit
        def f(x):
            shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
            y = jax.pure_callback(lambda v: np.sort(v), shape, x)
            jax.debug.callback(lambda v: print(np.mean(v)), x)
            return y
    """) == []


def test_traced_tree_map_lambda_is_reported():
    assert lines("""
        import jax
        import numpy as np

        @jax.jit
        def f(params):
            return jax.tree.map(lambda p: np.clip(p, -1, 1), params)
    """) == [6]


def test_quiet_on_numpy_functions_that_call_the_arrays_own_method():
    # `np.reshape(x, s)` is `x.reshape(s)` for a non-NumPy array: on a tracer it traces
    assert lines("""
        import math
        import jax
        import jax.numpy as jnp
        import numpy as np

        @jax.jit
        def to_square(v):
            n = v.shape[0]
            side = math.ceil(math.sqrt(n))
            padded = jnp.concatenate([v, jnp.zeros(side * side - n)])
            best = np.argmax(v)
            return np.reshape(padded, (side, -1)), best, np.sum(v) / np.max(v)

        @jax.jit
        def spread(v):
            return np.exp(v)  # <- JAX404: a ufunc converts its argument
    """) == [16]


@pytest.mark.slow
def test_the_method_dispatch_list_matches_the_installed_numpy_and_jax():
    jax = pytest.importorskip("jax")
    np = pytest.importorskip("numpy")
    x = jax.numpy.arange(6.0)
    extra = {"numpy.reshape": (2, -1), "numpy.repeat": 2, "numpy.swapaxes": None,
             "numpy.searchsorted": 2.5}
    failing = []
    for name in sorted(apis.NUMPY_METHOD_DISPATCH):
        fn = getattr(np, name.split(".", 1)[1])
        if name == "numpy.swapaxes":
            call = lambda v, fn=fn: fn(v.reshape(2, 3), 0, 1)  # noqa: E731
        elif name in extra:
            call = lambda v, fn=fn, a=extra[name]: fn(v, a)  # noqa: E731
        else:
            call = lambda v, fn=fn: fn(v)  # noqa: E731
        try:
            jax.jit(call)(x)
        except Exception as exc:  # noqa: BLE001 - any failure under tracing disproves the entry
            failing.append(f"{name}: {type(exc).__name__}")
    assert not failing, failing
    # and a function left off the list does fail on a tracer, as the rule says
    with pytest.raises(jax.errors.TracerArrayConversionError):
        jax.jit(lambda v: np.exp(v))(x)


def test_a_numpy_fallback_for_a_missing_jax_does_not_rebind_jnp():
    # `import numpy as jnp` under `except ImportError:` runs only without JAX, when nothing traces
    assert lines("""
        try:
            import jax
            import jax.numpy as jnp
            HAVE_JAX = True
        except ImportError:
            HAVE_JAX = False
            import numpy as jnp

        @jax.jit
        def wrap(x, lo, hi):
            return jnp.mod(x - lo, hi - lo) + lo
    """) == []
    # the same under an availability flag, in either order of the branches
    for header in ("""
        from .flags import JAX_AVAILABLE
        if JAX_AVAILABLE:
            try:
                import jax
                import jax.numpy as jnp
            except ImportError:
                JAX_AVAILABLE = False
        if not JAX_AVAILABLE:
            import numpy as jnp
    """, """
        from .flags import HAVE_JAX
        import jax
        if not HAVE_JAX:
            import numpy as jnp
        else:
            import jax.numpy as jnp
    """):
        assert lines(header + """
        @jax.jit
        def wrap(x, lo, hi):
            return jnp.mod(x - lo, hi - lo) + lo
        """) == []
    # the fallback still binds what the `try` did not
    assert lines("""
        try:
            import jax
        except ImportError:
            import numpy as np
        import jax.numpy as jnp

        @jax.jit
        def wrap(x):
            return np.mod(x, 2.0) + jnp.ones(())  # <- JAX404
    """) == [9]


def test_a_name_imported_as_two_modules_resolves_to_neither():
    # a notebook-style script binds `np` to jax.numpy, then to NumPy further down: which one a
    # jitted function calls depends on when it runs, so the rule stays quiet
    source = """
        import jax
        {first}

        @jax.jit
        def magnitude(x):
            return np.abs(x) + 1.0

        {second}
    """
    assert lines(source.replace("{first}", "import jax.numpy as np").replace("{second}", "import numpy as np")) == []
    assert lines(source.replace("{first}", "import numpy as np").replace("{second}", "")) == [6]
