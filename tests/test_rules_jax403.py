"""JAX403 side-effect-in-jit: shapes reported and quiet clauses beyond the rule's examples."""

from __future__ import annotations

from conftest import rules_with_code, scan_text

RULE = rules_with_code("JAX403")


def found(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.severity) for f in scan_text(source, RULE)]


def test_prints_inside_jit():
    findings = scan_text("""
        import jax
        import numpy as np

        @jax.jit
        def f(x, y):
            print("Running f():")
            print(f" x = {x}")
            print(f" y = {y}")
            result = jax.numpy.dot(x + 1, y + 1)
            print(f" result = {result}")
            return result

        x = np.random.randn(3, 4)
        y = np.random.randn(4)
        print(f(x, y))  # first call traces the function
        print(f(x, y))  # second call: the cached program, no prints
    """, RULE)
    assert [(f.line, f.severity) for f in findings] == [(6, "info"), (7, "warning"), (8, "warning"),
                                                         (10, "warning")]
    assert "runs only when JAX traces it" in findings[0].message
    assert "tracer for `x`" in findings[1].message
    assert "jax.debug.print" in findings[1].fix


def test_outer_writes_of_traced_values():
    assert found("""
        import logging
        import jax
        import jax.numpy as jnp

        cache = {}
        seen = []
        last = None

        class Trainer:
            def __init__(self):
                self.history = []

            @jax.jit
            def step(self, params, batch):
                loss = jnp.mean((batch @ params) ** 2)
                self.history.append(loss)
                return loss

        def make_counter():
            total = jnp.zeros(())

            @jax.jit
            def add(x):
                nonlocal total
                total = total + x
                return total
            return add

        @jax.jit
        def f(x):
            global last
            logging.info("value %s", x)
            cache["x"] = x * 2
            seen.extend([x])
            last = jnp.sum(x)
            return x
    """) == [(16, "warning"), (25, "warning"), (33, "warning"), (34, "warning"), (35, "warning")]


def test_logging_a_traced_value_is_a_trace_time_log_and_print_is_not():
    # `logging.info("step(batch=%s)", batch)` in a pmapped step logs each compilation's shapes on
    # purpose; `print(loss)` shows a tracer where the author wanted values
    source = """
        import logging
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(params, batch):
            {call}("step(batch=%s)", batch)
            return jnp.mean((batch @ params) ** 2)
    """
    assert found(source.replace("{call}", "logging.info")) == []
    assert found(source.replace("{call}", "print")) == [(7, "warning")]


def test_item_assignment_on_jax_arrays_is_an_error_everywhere():
    assert found("""
        import jax
        import jax.numpy as jnp

        def build(n):
            y = jnp.zeros(n)
            y[0] = 1.0
            return y

        @jax.jit
        def clip(x, lo):
            x[x < lo] = lo
            z = x * 2
            z[0] += 1
            return z

        def annotated(v: jax.Array):
            v[1] = 0.0
            return v
    """) == [(6, "error"), (11, "error"), (13, "error"), (17, "error")]


def test_quiet_on_static_logs_local_containers_callbacks_and_numpy():
    assert found("""
        import jax
        import jax.numpy as jnp
        import numpy as np
        import optax

        traces = [0]
        optimizer = optax.adam(1e-3)

        def host_print(x):
            print("loss", x)

        @jax.jit
        def step(params, opt_state, batch, state):
            print("compiling step for", batch.shape, batch.dtype)
            traces[0] += 1
            loss, grads = jax.value_and_grad(lambda p: jnp.mean((batch @ p) ** 2))(params)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            metrics = {"loss": loss}
            metrics["grad_norm"] = optax.global_norm(grads)
            outputs = []
            outputs.append(loss)
            table = np.zeros(3)
            table[0] = 1.0
            state["step"] = state["step"] + 1
            jax.debug.print("loss {l}", l=loss)
            jax.debug.callback(host_print, loss)
            params = params.at[0].set(0.0)
            return optax.apply_updates(params, updates), opt_state, metrics, jnp.stack(outputs), state

        def evaluate(params, xs):
            losses = []
            for x in xs:
                loss = jnp.mean(x @ params)
                print("loss", loss)
                losses.append(loss)
            return losses
    """) == []


def test_constant_prints_reported_only_where_the_function_is_jitted():
    assert found("""
        import jax
        import jax.numpy as jnp

        def warn(message):
            print("warning:", message)

        def helper(x):
            print("value", x)
            return x * 2

        @jax.jit
        def f(x):
            warn("slow path")
            return helper(jnp.sin(x))
    """) == [(8, "warning")]


def test_outer_containers_inside_the_same_trace_are_fine_but_not_across_a_scan():
    assert found("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def unrolled(x):
            outs = []
            total = jnp.zeros(())

            def add(v):
                nonlocal total
                outs.append(v * 2)
                total = total + v

            for i in range(3):
                add(x[i])
            return jnp.stack(outs), total

        @jax.jit
        def scanned(xs):
            carries = []

            def body(c, x):
                carries.append(c)
                return c + x, None

            return jax.lax.scan(body, 0.0, xs), carries
    """) == [(23, "warning")]


def test_prints_of_arrays_beside_a_shape_print_are_a_trace_time_shape_log():
    # `print("params in 1", p)`, `print("shape", p.shape)`, `print("params in 2", q)`
    # around a reshape in a jitted step: the author checks shapes at trace time, which a tracer
    # print shows. A print of a traced value with no shape print beside it is still reported.
    assert found("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def resample(p):
            print("params in 1", p)
            q = jnp.reshape(p, (-1, 2))
            print("shape after reshape", q.shape)
            print("params in 2", q)
            return q

        @jax.jit
        def step(p):
            q = p * 2.0
            print("params", q)
            return q
    """) == [(15, "warning")]


def test_constant_prints_beside_one_that_announces_tracing_are_the_same_trace_time_log():
    # An integrator's jitted method prints "recompiled", then "verified" and "scanned"
    # as it builds the trace: a progress log of tracing, printed once per compilation on purpose.
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def integrate(q0):
            print("{first}")
            q = jnp.cumsum(q0)
            print("integrate scanned")
            return q
    """
    assert found(source.replace("{first}", "integrate recompiled")) == []
    # Constant messages alone ("Computed gradient.", "Computed laplacian.") are the same
    # trace-time progress log, whatever they say
    assert found(source.replace("{first}", "integrate started")) == []
    # beside a print of a traced value, they read as prints expected on every call
    shown = source.replace("{first}", "integrate started").replace(
        'print("integrate scanned")', 'print("integrate scanned", q)')
    assert found(shown) == [(6, "info"), (8, "warning")]


def test_a_print_whose_text_says_it_runs_at_trace_time_shows_a_tracer_on_purpose():
    # A course's lessons print `" [f.trace] a:", a` inside jitted functions beside a
    # `jax.debug.print` of the same value, to show the difference.
    source = """
        import jax

        @jax.jit
        def f(a):
            print("{label}", a)
            jax.debug.print("[f.run] a: {}", a)
            return a * 2
    """
    assert found(source.replace("{label}", " [f.trace] a:")) == []
    assert found(source.replace("{label}", " [f] a:")) == [(5, "warning")]


def test_a_print_of_an_undecodable_string_literal_is_read_without_an_internal_error(tmp_path):
    # Found reviewing the change: `print("\N{bogus} trace", a)` parses, but evaluating the literal
    # raises; the trace-time label check made JAX403 fail for the whole file.
    from jaxopt_audit.static.pipeline.engine import scan_paths

    path = tmp_path / "escapes.py"
    path.write_text('import jax\n\n@jax.jit\ndef f(a):\n    print("\\N{bogus} trace", a)\n'
                    '    print("\\N{bogus}")\n    return a * 2\n')
    result = scan_paths([str(path)], select=["JAX403"], extend_select=["PREVIEW"])
    assert result.errors == [] and result.internal_errors == 0
    assert [f.line for f in result.findings] == [5, 6]


def test_an_in_place_assignment_tried_for_its_error_shows_immutability():
    # A course notebook assigns `x[0] = 100` inside `try:` and prints the TypeError it
    # catches, then shows `x.at[0].set(100)`.
    source = """
        import jax.numpy as jnp

        x = jnp.arange(10)
        try:
            x[0] = 100
        except {caught}:
            print("This triggered an error!")
        y = x.at[0].set(100)
    """
    assert found(source.replace("{caught}", "TypeError")) == []
    assert found(source.replace("{caught}", "Exception as e")) == []
    assert found(source.replace("{caught}", "KeyError")) == [(5, "error")]


def test_what_lies_outside_a_trace_is_asked_of_the_model():
    import textwrap

    import libcst as cst

    from jaxopt_audit.static import SemanticModel, outer_container, outer_iterator, same_trace

    source = textwrap.dedent("""
        import jax

        history = []
        batches = iter(range(3))

        @jax.jit
        def outer(x):
            seen = []

            def inner(y):
                seen.append(y)
                history.append(y)
                return y + next(batches)

            @jax.jit
            def compiled(z):
                seen.append(z)
                return z

            return inner(x) + compiled(x)
    """)
    model = SemanticModel(cst.parse_module(source), source=source)
    fns = {fn.name: fn for fn in model.functions}
    inner, compiled, outer = fns["inner"], fns["compiled"], fns["outer"]
    assert same_trace(model, inner, outer)  # called in outer's trace
    assert not same_trace(model, compiled, outer)  # its own jit: its own trace
    stores = {fn.name: [s.node for s in fn.calls if isinstance(s.node.func, cst.Attribute)
                        and s.node.func.attr.value == "append"] for fn in (inner, compiled)}
    assert [outer_container(model, c.func.value, inner) for c in stores["inner"]] == [None, "history"]
    assert [outer_container(model, c.func.value, compiled) for c in stores["compiled"]] == ["seen"]
    read = next(s.node for s in inner.calls if model.resolve(s.node.func) == "builtins.next")
    assert outer_iterator(model, read, inner) == "batches"
