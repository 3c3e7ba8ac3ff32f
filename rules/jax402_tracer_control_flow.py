"""JAX402 tracer-control-flow."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    ArrayEvidence,
    Function,
    Invalid,
    Report,
    Rule,
    SemanticModel,
    Valid,
    container_annotation,
    describe,
    enclosing_statements,
    is_traced_value,
    really_traced,
    shows_tracing_error,
    teaches_pitfall,
    traced_functions,
    tracers,
    walk,
)


class TracerControlFlow(Rule):
    """
    ## What it does
    Finds Python control flow on traced values inside jitted or otherwise traced code: `if`,
    `elif` and `while` tests, `and`/`or`/`not`, `bool(x)`, conditional expressions
    (`a if x else b`), and `range(n)` with a traced `n`.

    ## Why is this bad?
    Under `jit`, arguments are abstract tracers with a shape and dtype but no value. Python needs
    a concrete `True`/`False` to choose a branch, so tracing fails with
    `TracerBoolConversionError` or `ConcretizationTypeError` (the "JAX Basics" post's
    `-x if neg else x`).

    ## How to fix
    Branch on device with `jnp.where(cond, a, b)`, `jax.lax.select`, or `jax.lax.cond` (both
    branches traced, one executed); loop with `jax.lax.while_loop`/`fori_loop`; or, when the
    value is really configuration, mark the argument static (`static_argnames=("neg",)`).

    The rule stays quiet on tests of shapes, dtypes and `ndim`, `is None` and `!= None` (an array
    compared with None gives a Python bool), `isinstance`, static arguments, attributes set at
    construction (`self.training`), and module-level constants.
    It reports only values it can show are tracers: arguments bound by `functools.partial`
    before `jit`, given `in_axes=None` by `vmap`, left to their defaults, Python numbers under
    `equinox.filter_jit`, `jnp.size(x)` and `lax.psum(1, axis)` are static; `grad`-only and
    `custom_jvp` bodies run on concrete values outside `jit`. Checks under
    `if jax.config.jax_disable_jit:` are quiet too: that branch runs only with jit disabled, when
    the function runs eagerly on concrete arrays (a debugging assertion). The last operand of an
    `and`/`or` used as a value (`lax.cond(n <= 4 or order < 3, ...)`, `True and flag`) is handed
    back unconverted; it is reported only when the whole expression is tested (`if a or b:`).

    In a notebook, a cell that shows this mistake on purpose is not reported: its saved output
    holds the tracing error, or the prose just before it or its own comments say the code fails
    or explain tracing ("The following fails", `# This will fail!`). That is read from the
    notebook's words because the code alone cannot show that the author is teaching the pitfall;
    a `.py` file's findings always stand.

    ## References
    JAX docs, "Control flow and logical operators with JIT"; "JAX Basics - Framework
    Benchmarks & JIT Compilation", JIT pitfall 2.
    """

    CODE = "JAX402"
    NAME = "tracer-control-flow"
    IMPACT = "correctness"
    SEVERITY = "error"
    SUMMARY = "Python control flow on a traced value inside jit"
    FIX = "Use `jnp.where`/`jax.lax.cond`/`lax.while_loop`, or mark the argument static with `static_argnames`."

    INVALID = [
        Invalid("""
            import jax

            @jax.jit
            def f(x, neg):
                return -x if neg else x  # <- JAX402
        """),
        Invalid("""
            from functools import partial
            import jax
            import jax.numpy as jnp

            def clip_grads(g, max_norm):
                norm = jnp.linalg.norm(g)
                if norm > max_norm:  # <- JAX402
                    g = g * max_norm / norm
                return g

            @partial(jax.jit, static_argnames=("training",))
            def step(w, g, n, training):
                g = clip_grads(g, 1.0)
                for _ in range(n):  # <- JAX402
                    w = w - 0.1 * g
                if training and jnp.any(jnp.isnan(w)):  # <- JAX402
                    w = jnp.zeros_like(w)
                return w
        """),
    ]
    VALID = [
        Valid("""
            from functools import partial
            import jax
            import jax.numpy as jnp

            DEBUG = False

            @partial(jax.jit, static_argnames=["neg"])
            def f(x, neg=True):
                return -x if neg else x

            @jax.jit
            def g(x, mask=None):
                if mask is None:
                    mask = jnp.ones_like(x)
                if x.ndim == 2 and x.shape[0] > 1:
                    x = x.sum(axis=0)
                if isinstance(x, tuple) or DEBUG:
                    x = x[0]
                for i in range(x.shape[0]):
                    x = x.at[i].multiply(2.0)
                return jnp.where(x > 0, x, 0.0) * mask
        """),
        Valid("""
            import jax
            import jax.numpy as jnp

            class Dropout:
                def __init__(self, rate, training):
                    self.rate = rate
                    self.training = training

                def __call__(self, x, key):
                    if not self.training or self.rate == 0.0:
                        return x
                    keep = jax.random.bernoulli(key, 1.0 - self.rate, x.shape)
                    return jnp.where(keep, x / (1.0 - self.rate), 0.0)

            def loss(layer, x, key):
                return jnp.sum(layer(x, key))

            step = jax.jit(loss, static_argnums=0)
        """),
    ]

    def demonstrated(self, finding, cell) -> bool:
        # the cell failed tracing when last run, or the notebook teaches this pitfall there
        return shows_tracing_error(cell) or teaches_pitfall(cell)

    def check(self, model: SemanticModel) -> Iterator[Report]:
        for fn, report in self._reports(model):
            if not _only_without_jit(fn, report.node):
                yield report

    def _reports(self, model: SemanticModel) -> Iterator[tuple[Function, Report]]:
        evidence = ArrayEvidence(model, really_traced(model))
        facts = tracers(model)

        def is_traced(expr: cst.BaseExpression, fn) -> bool:
            # a bare name's truth is static unless it is a single array (`if params:` on a dict)
            bare = expr.expression if isinstance(expr, cst.UnaryOperation) else expr
            if isinstance(bare, cst.Name) and (
                    container_annotation(fn, bare.value) or (
                        bare.value not in facts.root_params.get(id(fn), ())
                        and not evidence.name(bare.value, fn, use=bare))):
                return False
            return is_traced_value(model, expr, fn)

        for fn in traced_functions(model):
            tested = _tested_operations(fn)
            for site in fn.tests:
                node = site.node
                if isinstance(node, (cst.If, cst.While, cst.IfExp)):
                    test = node.test
                    if is_traced(test, fn) and not _is_boolean_op(test) and not _container_test(model, test, fn):
                        kind = {cst.If: "an `if`", cst.While: "a `while`",
                                cst.IfExp: "a conditional expression"}[type(node)]
                        yield fn, Report(test, f"{kind} tests `{describe(test)}`, a traced value, so tracing "
                                               "fails with TracerBoolConversionError under jit")
                elif isinstance(node, cst.BooleanOperation):
                    # `a or b` converts `a` only and hands `b` back as it is: `b` is converted
                    # when the whole expression is tested (`if a or b:`), not when it is a value
                    # (`lax.cond(n <= 4 or order < 3, ...)`)
                    operands = (node.left, node.right) if id(node) in tested else (node.left,)
                    for operand in operands:
                        if is_traced(operand, fn) and not _is_boolean_op(operand):
                            op = "and" if isinstance(node.operator, cst.And) else "or"
                            yield fn, Report(operand, f"`{op}` converts `{describe(operand)}`, a traced value, to a "
                                                      "Python bool, which fails under jit; use `jnp.logical_and`/"
                                                      "`jnp.logical_or`")
                elif isinstance(node, cst.UnaryOperation):
                    if is_traced(node.expression, fn) and not model.is_container(node.expression, fn):
                        yield fn, Report(node, f"`{describe(node)}` converts a traced value to a Python bool, which "
                                               "fails under jit; use `jnp.logical_not`")
            for call_site in fn.calls:
                call = call_site.node
                q = model.resolve(call.func)
                if q == "builtins.bool" and call.args and is_traced(call.args[0].value, fn):
                    yield fn, Report(call, f"`{describe(call)}` needs a concrete value, but its argument is traced "
                                           "under jit")
                elif q == "builtins.range":
                    for arg in call.args:
                        if is_traced(arg.value, fn):
                            yield fn, Report(arg.value, f"`range({describe(arg.value)})` needs a concrete integer, "
                                                        "but it is traced under jit; use `jax.lax.fori_loop` or "
                                                        "make it a static argument")
                            break


def _tested_operations(fn: Function) -> set[int]:
    """The `and`/`or` expressions whose result Python converts to a bool: the test of an `if`,
    `while` or conditional expression, the operand of `not`, the left operand of another `and`/
    `or`, and, inside a tested one, both operands."""
    tested: set[int] = set()

    def mark(expr: cst.BaseExpression) -> None:
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            mark(expr.expression)
        elif isinstance(expr, cst.BooleanOperation):
            tested.add(id(expr))
            mark(expr.left)
            mark(expr.right)

    for site in fn.tests:
        node = site.node
        if isinstance(node, (cst.If, cst.While, cst.IfExp)):
            mark(node.test)
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            mark(node.expression)
        elif isinstance(node, cst.BooleanOperation):
            mark(node.left)
    return tested


def _only_without_jit(fn: Function, node: cst.CSTNode) -> bool:
    """`node` is in the body of `if jax.config.jax_disable_jit:` (alone or in an `and`): it runs
    only when jit is disabled, when the function runs eagerly on concrete arrays."""
    for stmt in enclosing_statements(fn, node) or []:
        if not isinstance(stmt, cst.If) or not any(n is node for n in walk(stmt.body)):
            continue
        test = stmt.test
        operands = [test.left, test.right] if isinstance(test, cst.BooleanOperation) \
            and isinstance(test.operator, cst.And) else [test]
        if any(isinstance(o, cst.Attribute) and o.attr.value == "jax_disable_jit" for o in operands):
            return True
    return False


def _container_test(model: SemanticModel, test: cst.BaseExpression, fn) -> bool:
    """`if masks:` / `if not leaves:` on a Python list of arrays tests its length: static."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    return model.is_container(test, fn)


def _is_boolean_op(node: cst.BaseExpression) -> bool:
    """`a and b` as a test is reported operand by operand, not twice."""
    return isinstance(node, cst.BooleanOperation)
