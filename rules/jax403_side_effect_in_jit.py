"""JAX403 side-effect-in-jit."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    ArrayEvidence,
    Assignment,
    Function,
    Invalid,
    Report,
    Rule,
    SemanticModel,
    Valid,
    apis,
    catches_type_error,
    describe,
    is_traced_value,
    literal_texts,
    outer_container,
    outer_iterator,
    printed_tracer,
    really_traced,
    same_trace,
    string_value,
    teaches_pitfall,
    top_level_call,
    walk,
)

PRINT_FUNCTIONS = frozenset({"builtins.print"})
# `print("Running f():")` at the start of a finding's message: the constant text it printed
_PRINTED_LITERAL = re.compile(r"""`print\((["'])([^"'{}]*)\1\)`""")
LOGGING_PREFIXES = ("logging.", "absl.logging.")
# Container methods that store their arguments in the container.
STORING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault",
                             "appendleft", "put", "put_nowait"})


class SideEffectInJit(Rule):
    """
    ## What it does
    Finds Python side effects in code that JAX traces (a jitted function, the body of
    `lax.scan` / `fori_loop` / `cond` / `vmap` / `grad`, and the same-module functions these
    call): `print(...)` (of a traced value, or of a constant message); storing a traced value in a list, dict or
    set that lives outside the function (`history.append(loss)`, `cache[k] = x`,
    `self.log.append(x)`); writing a traced value to a `global` or `nonlocal` name; and
    in-place item assignment on a JAX array (`x[i] = v`), inside or outside traced code; and
    `next(batches)` on a host iterator from outside a traced body (a `fori_loop` body reads it
    once, at trace time, so every iteration sees the same element).

    ## Why is this bad?
    JAX runs the Python body once, at trace time, with abstract tracers; later calls run the
    compiled program and skip the Python entirely. A `print` therefore prints
    `Traced<ShapedArray(float32[3])>` once and never again (as the "JAX Basics" post shows); a
    stored tracer leaks
    out of its trace and raises `UnexpectedTracerError` when used; a global written under jit
    keeps its trace-time value. JAX arrays are immutable: `x[i] = v` raises `TypeError`.

    ## How to fix
    Use `jax.debug.print("x={x}", x=x)` (runs every call, prints values), return values instead
    of storing them (stack them in the outputs of a `lax.scan`), and update arrays with
    `x = x.at[i].set(v)`.

    A print of a constant message is reported as info, only beside a print of a traced value in the
    same function (the "JAX Basics" post's "Running f():" before the values it expects every
    call; constant
    messages alone, "Computed gradient.", are a trace-time progress log), only as a top-level
    statement of the function that is jitted or transformed (not in helpers it calls or in
    branches), and not when it or another print of the function talks about compiling, jitting or
    tracing (then the trace-time log is the point). The rule stays quiet on prints that format
    static values (`print(f"{x.shape=}")`: a deliberate trace-time log) and on prints of arrays in
    a function that also prints a shape (the same log: `print("params", p)` beside `print("shape",
    p.shape)`), on prints of arrays whose own text says they run at trace time (`print("[f.trace]
    a:", a)`: a tracer shown on purpose), on prints in `grad`-only or eager `shard_map` bodies
    (they run on every call), on stores of static values (a trace counter), on containers created
    inside the traced function or in an enclosing function of the same trace, on host callbacks
    (`jax.debug.callback(f, ...)`), on item assignment into dicts, lists and NumPy arrays, and on
    an in-place assignment inside a `try` whose handler catches its TypeError (a tutorial showing
    that arrays are immutable). It stays quiet on logging calls
    (`logging.info("train_step(batch=%s)", batch)`): in traced code they are the common trace-time
    log, written once per compilation on purpose to show each trace's shapes.

    In a notebook, a cell that shows this mistake on purpose is not reported: its saved output
    holds the tracing error, or the prose just before it or its own comments say the code fails
    or explain tracing ("The following fails", `# This will fail!`). That is read from the
    notebook's words because the code alone cannot show that the author is teaching the pitfall;
    a `.py` file's findings always stand.
    """

    CODE = "JAX403"
    NAME = "side-effect-in-jit"
    IMPACT = "correctness"
    SEVERITY = "warning"
    SUMMARY = "Python side effect (print, outer mutation, in-place update) in traced code"
    FIX = "Use jax.debug.print, return values instead of storing them, and x.at[i].set(v)."

    INVALID = [
        Invalid("""
            import jax
            import numpy as np

            @jax.jit
            def f(x, y):
                print("Running f():")  # <- JAX403
                print(f"  x = {x}")  # <- JAX403
                print(f"  y = {y}")  # <- JAX403
                result = jax.numpy.dot(x + 1, y + 1)
                print(f"  result = {result}")  # <- JAX403
                return result

            x = np.random.randn(3, 4)
            y = np.random.randn(4)
            f(x, y)
        """, note="the 'JAX Basics' post's print: once, at trace time, showing tracers"),
        Invalid("""
            import jax
            import jax.numpy as jnp

            losses = []
            best = None

            def loss_fn(params, batch):
                global best
                loss = jnp.mean((batch @ params) ** 2)
                losses.append(loss)  # <- JAX403
                best = loss  # <- JAX403
                return loss

            grad_fn = jax.jit(jax.grad(loss_fn))

            @jax.jit
            def zero_diagonal(m):
                for i in range(m.shape[0]):
                    m[i, i] = 0.0  # <- JAX403
                return m
        """),
    ]
    VALID = [
        Valid("""
            import jax
            import jax.numpy as jnp

            trace_count = [0]

            @jax.jit
            def f(x, y):
                print("compiling f for", x.shape)  # trace-time log of static values
                trace_count[0] += 1
                result = jnp.dot(x + 1, y + 1)
                jax.debug.print("result = {r}", r=result)
                x = x.at[0].set(0.0)
                return result, x

            def host_log(metrics):
                print(metrics)  # runs on the host, on every call

            @jax.jit
            def step(state):
                metrics = {"norm": jnp.linalg.norm(state)}
                metrics["max"] = jnp.max(state)  # a local dict
                outputs = []
                outputs.append(state * 2)  # a local list
                jax.debug.callback(host_log, metrics)
                return jnp.stack(outputs), metrics
        """),
        Valid("""
            import jax.numpy as jnp
            import numpy as np

            history = []

            def evaluate(params, x):
                loss = jnp.mean((x @ params) ** 2)
                history.append(loss)  # plain Python: not traced
                table = np.zeros(4)
                table[0] = 1.0  # NumPy arrays are mutable
                return loss
        """),
    ]

    def demonstrated(self, finding, cell) -> bool:
        """The notebook teaches a tracing pitfall there (side effects, trace time), or the cell's
        saved output shows a print's effect: a tracer where values were expected, or the printed
        text itself (printed once, at trace time, however often the function ran)."""
        if teaches_pitfall(cell):
            return True
        if not finding.message.startswith("`print("):
            return False
        if apis.TRACER_REPR in cell.shown_text:
            return True
        literal = _PRINTED_LITERAL.match(finding.message)
        return literal is not None and literal.group(2).strip() != "" and literal.group(2) in cell.shown_text

    def check(self, model: SemanticModel) -> Iterator[Report]:
        traced_ids = really_traced(model)
        evidence = ArrayEvidence(model, traced_ids)
        for fn in model.functions:
            traced = id(fn) in traced_ids
            yield from self._item_assignments(model, fn, evidence)
            if not traced:
                continue
            for site in fn.calls:
                report = self._call(model, site.node, fn)
                if report is not None:
                    yield report
            for assignment in fn.assignments:
                yield from self._outer_write(model, assignment, fn)

    def _call(self, model: SemanticModel, call: cst.Call, fn: Function) -> Report | None:
        q = model.resolve(call.func)
        if q == "builtins.next":
            return _host_iterator_read(model, call, fn)
        if q is not None and q.startswith(LOGGING_PREFIXES):
            return None  # a trace-time log of shapes, once per compilation: the usual intent
        if q in PRINT_FUNCTIONS:
            traced = printed_tracer(model, call, fn)
            fix = "Use `jax.debug.print(\"x={x}\", x=x)`, which prints the values on every call."
            if traced is not None and _logs_shapes(model, fn):
                return None  # the function prints `.shape`s too: a trace-time shape log, on purpose
            if traced is not None and _labelled_trace_time(call):
                return None  # `print("[f.trace] a:", a)`: it says it prints at trace time
            if traced is not None:
                return Report(call, f"`{describe(call)}` in `{_name(fn)}`, which JAX traces, runs once at trace "
                                    f"time and shows a tracer for `{describe(traced)}`, not its values", fix=fix)
            # a constant message: reported where the user jitted or transformed the function,
            # not in helpers it calls (a shared `warn(msg)` helper is meant for trace time too),
            # and only beside prints of traced values (a "Running f():" before the values it
            # expects each call). Alone, constant messages are a trace-time progress log
            # ("Computed gradient."), written to print once
            direct = fn.jitted or bool(fn.transform_roots)
            if q in PRINT_FUNCTIONS and direct and _plain_message(call) and top_level_call(call, fn) \
                    and not _announces_tracing(model, fn) and _prints_tracers(model, fn):
                # advice, not a warning: a trace-time "compiling..." message is sometimes the point
                return Report(call, f"`{describe(call)}` in `{_name(fn)}`, which JAX traces, runs only when JAX "
                                    "traces it (once per compilation), not on every call", fix=fix,
                              severity="info")
            return None
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in STORING_METHODS:
            return None
        container = outer_container(model, func.value, fn)
        if container is None:
            return None
        stored = next((a.value for a in call.args if is_traced_value(model, a.value, fn)), None)
        if stored is None:
            return None
        return Report(call, f"`{describe(call)}` stores the traced value `{describe(stored)}` in `{container}`, "
                            f"which lives outside traced `{_name(fn)}`: it runs once at trace time and leaks a tracer",
                      fix="Return the value (or stack it in the outputs of lax.scan) instead of storing it.")

    def _outer_write(self, model: SemanticModel, assignment: Assignment, fn: Function) -> Iterator[Report]:
        node = assignment.site.node
        value = assignment.value
        if value is None or not is_traced_value(model, value, fn):
            return
        declared = fn.global_names | {n for n in fn.nonlocal_names if fn.parent is not None
                                      and not same_trace(model, fn, fn.parent.binding_scope(n))}
        written = [t for t in assignment.targets if t in declared]
        if written:
            kind = "global" if written[0] in fn.global_names else "nonlocal"
            yield Report(node, f"assigning traced `{describe(value)}` to {kind} `{written[0]}` in traced "
                               f"`{_name(fn)}` runs once at trace time and leaks a tracer out of the trace",
                         fix="Return the value from the function instead of writing it to an outer name.")
            return
        if isinstance(node, cst.Subscript):
            container = outer_container(model, node.value, fn)
            if container is not None:
                yield Report(node, f"`{describe(node)} = ...` stores the traced value `{describe(value)}` in "
                                   f"`{container}`, which lives outside traced `{_name(fn)}`: it runs once at "
                                   "trace time and leaks a tracer",
                             fix="Return the value (or stack it in the outputs of lax.scan) instead of storing it.")

    def _item_assignments(self, model: SemanticModel, fn: Function,
                          evidence: ArrayEvidence) -> Iterator[Report]:
        for assignment in fn.assignments:
            node = assignment.site.node
            if assignment.targets or not isinstance(node, cst.Subscript) or not isinstance(node.value, cst.Name):
                continue
            name = node.value.value
            if name not in fn.params and not fn.bindings(name):
                continue  # an outer container: handled as an outer write
            if evidence.name(name, fn, use=node.value) and not catches_type_error(fn, node):
                yield Report(node, f"`{describe(node)} = ...` assigns into JAX array `{name}` in place: JAX arrays "
                                   "are immutable, so this raises TypeError",
                             fix=f"Use `{name} = {name}.at[...].set(value)` (or `.add`, `.min`, ...).",
                             severity="error")


def _host_iterator_read(model: SemanticModel, call: cst.Call, fn: Function) -> Report | None:
    """`next(batches)` on an iterator from outside the traced function: read once, at trace time."""
    name = outer_iterator(model, call, fn)
    if name is None:
        return None
    return Report(call, f"`{describe(call)}` in `{_name(fn)}`, which JAX traces, reads the host iterator "
                        f"`{name}` once, at trace time: every iteration and every later call of the compiled "
                        "code sees that same element",
                  fix="Read the data outside the traced function and pass it in (stacked, for lax.scan/fori_loop).")


def _logs_shapes(model: SemanticModel, fn: Function) -> bool:
    """Another print of the function reads a static attribute (`print("omega", w.shape)`): its
    author is logging shapes at trace time, and the prints of arrays beside it are part of that
    log (a series of 'params in 1..4' prints around a reshape)."""
    for site in fn.calls:
        if model.resolve(site.node.func) in PRINT_FUNCTIONS and any(
                isinstance(n, cst.Attribute) and n.attr.value in apis.STATIC_ATTRIBUTES
                for arg in site.node.args for n in walk(arg.value)):
            return True
    return False


def _plain_message(call: cst.Call) -> bool:
    """`print("Running f():")`: a literal message the author may expect on every call. Formatted
    output of static values (`print(f"{x.shape=}")`, parameter counts at init) and messages about
    tracing itself (`print("jitting")`) are deliberate trace-time logs."""
    text = _literal_text(call)
    return text is not None and not _says_tracing(text)


def _literal_text(call: cst.Call) -> str | None:
    """The text a print of string literals only writes (lowercased), or None."""
    texts = []
    for arg in call.args:
        if arg.keyword is not None:
            continue
        if not isinstance(arg.value, (cst.SimpleString, cst.ConcatenatedString)):
            return None
        texts.append(string_value(arg.value) if isinstance(arg.value, cst.SimpleString) else "")
    return " ".join(t for t in texts if isinstance(t, str)).lower() if texts else None


def _labelled_trace_time(call: cst.Call) -> bool:
    """A print whose own text says it runs while tracing or compiling (`print(" [f.trace] a:",
    a)`, `print(f"tracing step: {x}")`): it shows a tracer on purpose (a course's lessons
    printing tracers beside `jax.debug.print` for contrast)."""
    return any(word in text.lower() for text in literal_texts(call) for word in ("trac", "compil"))


def _says_tracing(text: str) -> bool:
    return any(word in text for word in ("compil", "jit", "trac"))


def _prints_tracers(model: SemanticModel, fn: Function) -> bool:
    """Another print of the function shows a traced value (`print(f" x = {x}")`)."""
    return any(model.resolve(s.node.func) in PRINT_FUNCTIONS and printed_tracer(model, s.node, fn) is not None
               for s in fn.calls)


def _announces_tracing(model: SemanticModel, fn: Function) -> bool:
    """Another print of the function says it is being traced (`print("integrate recompiled")`):
    its other constant messages ("verified", "scanned") are the same trace-time log."""
    for site in fn.calls:
        if model.resolve(site.node.func) in PRINT_FUNCTIONS:
            text = _literal_text(site.node)
            if text is not None and _says_tracing(text):
                return True
    return False


def _name(fn: Function) -> str:
    return "a traced lambda" if fn.name == "<lambda>" else fn.name
