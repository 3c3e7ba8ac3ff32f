"""JAX102 jit-in-loop."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    SINGLE_PASS,
    Function,
    Invalid,
    Loop,
    Report,
    Rule,
    SemanticModel,
    Site,
    StepContext,
    Valid,
    apis,
    callers_of,
    children,
    describe,
    enclosing_statements,
    literal_trip_count,
    read_names,
    walk,
    where,
    why_every_step,
)

# Methods that run once per object: jitting there is the recommended place.
SETUP_METHODS = frozenset({"__init__", "__post_init__", "setup", "__call_once__", "build"})
# pmap wrappers: a fresh one around a cached function costs little (Measured), unlike jit's.
PMAPS = frozenset({"jax.pmap", "equinox.filter_pmap", "flax.nnx.pmap"})
# Decorators that memoise a function's result: a jit inside runs once per distinct argument.
MEMOISING_DECORATORS = frozenset({"functools.cache", "functools.lru_cache", "functools.cached_property",
                                  "builtins.property"})


class JitInLoop(Rule):
    """
    ## What it does
    Finds `jax.jit(...)` (also `jax.pmap`, `equinox.filter_jit`, `flax.nnx.jit`,
    `functools.partial(jax.jit, ...)(f)` and a `@jax.jit` decorator on a nested `def`) evaluated
    on every step: in the body of a step loop, or in an un-jitted function that the loop calls
    every step. That includes `jax.jit(f)(x)` called inline and jitting a lambda, a closure, a
    `functools.partial` or a bound method built in the loop. Also `jax.lax.scan`, `fori_loop` and
    `while_loop` called outside jit in a loop with such a function: outside jit they trace and
    compile their body on each call, found in JAX's cache only when it is the same object.

    ## Why is this bad?
    `jax.jit` returns a new wrapper each time it is evaluated. When the wrapped function is a new
    object each time (a lambda or closure defined in the loop, `partial(...)`, `self.method`,
    `jax.grad(f)`), JAX cannot find it in its caches: it traces and compiles again on every step
    (measured on CPU: 40-140 ms per step for a one-line function, against 7 us for a call of
    a hoisted wrapper). When the function is the same module-level `def`, the compiled code
    is found in JAX's cache but every call of a fresh wrapper misses the C++ fast path and costs
    about 15x the dispatch time of a hoisted one (a fresh `jax.pmap` wrapper: under 2x).

    ## How to fix
    Jit once, outside the loop: decorate the function with `@jax.jit`, or build the wrapper at
    module level, in `__init__`, or in a factory called once, and call that wrapper in the loop.
    Values that change per step (a learning rate, a flag) become arguments of the jitted function
    (`static_argnames` for Python values that select code paths).

    The rule stays quiet on jit at module level, in `__init__`/`setup`, in a factory called once,
    under a memoisation guard (`if self._step is None:`) or in a `functools.cache`d function, on
    ahead-of-time compilation (`jax.jit(f).lower(x).compile()`, one executable per shape), under
    a periodic guard (`if step % k == 0`) or a divergence test (`if np.isnan(loss):`, a
    recovery), inside traced code (a `jax.jit` while tracing is inlined), and on
    `jax.jit(make_fn(config))` where the factory's arguments change with the loop (each
    configuration needs its own compilation). It also stays quiet when each wrapper serves many
    calls: handed to another function (a benchmark's timer), returned, stored, captured by a
    nested function or called in a loop of its own (unless, built on each pass of an outer loop
    such as an epoch loop, it wraps a new lambda, `partial` or def made from nothing that
    changes between passes: the same program compiled again on each pass, which is reported),
    and on a jit in a builder that returns a
    function (one build per configuration of a sweep, a benchmark or a server), and on a
    wrapper bound to a name nothing reads (never called, it never compiles). Real code
    rebuilds wrappers that way once per case; the step loops that rebuild one call it directly.
    A fresh `jax.pmap` around a function made once is not reported: its compiled code is cached
    and the new wrapper adds about 20 us per call (Measured), noise beside a pmapped step.

    ## Measured
    Same function (a SELU on 1,000 floats), 50 calls on CPU (jax 0.10.2, 2026-11-25): hoisted
    `jax.jit` wrapper 5-18 us per call, `jax.jit(f)(x)` in the loop 84-90 us (no recompilation);
    hoisted `jax.pmap` wrapper 28-31 us, `jax.pmap(f)(x)` in the loop 44-52 us;
    `jax.jit(lambda ...)`, a closure, `partial(...)` or `self.method` in the loop 40-140 ms
    (trace + lower + compile every call).
    """

    CODE = "JAX102"
    NAME = "jit-in-loop"
    SEVERITY = "warning"
    SUMMARY = "jax.jit evaluated on every step: a new wrapper (and often a new compilation) per step"
    FIX = "Jit once outside the loop (decorator, module level, `__init__`) and call the wrapper in the loop."

    INVALID = [
        Invalid("""
            import jax
            import jax.numpy as jnp

            def smooth(series, steps, rate):
                c = jnp.zeros(())
                for i in range(steps):
                    c, _ = jax.lax.scan(lambda a, x: (a * rate + x, a), c, series)  # <- JAX102
                return c
        """, note="an eager `lax.scan` of a lambda made anew each iteration: traced and compiled every time"),
        Invalid("""
            import jax
            import jax.numpy as jnp

            def selu(x, alpha=1.67, lmbda=1.05):
                return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

            x = jnp.ones((1000,))
            outputs = []
            for scale in jnp.linspace(0.5, 2.0, 16):
                outputs.append(jax.jit(selu)(x * scale))  # <- JAX102
                shifted = jax.jit(lambda v: selu(v) + scale)(x)  # <- JAX102
        """, note="a 'JAX basics' post's `jax.jit(selu)(x)` inline, and a lambda closing over the loop variable"),
        Invalid("""
            import jax
            import jax.numpy as jnp

            class Trainer:
                def __init__(self, lr):
                    self.lr = lr

                def loss(self, w, x):
                    return jnp.mean((x @ w) ** 2)

                def step(self, w, x):
                    grads = jax.jit(jax.grad(self.loss))(w, x)  # <- JAX102

                    @jax.jit  # <- JAX102
                    def apply(w, g):
                        return w - self.lr * g

                    return apply(w, grads)

            def fit(trainer: Trainer, w, batches):
                for batch in batches:
                    w = trainer.step(w, batch)
                return w
        """, note="jit inside an un-jitted method called every step"),
        Invalid("""
            import functools
            import jax
            import jax.numpy as jnp

            def update(p, x, lr):
                return p - lr * jnp.mean(x) * p

            def train(params, batches, lr, epochs):
                for epoch in range(epochs):
                    step = jax.jit(functools.partial(update, lr=lr))  # <- JAX102
                    for x in batches:
                        params = step(params, x)
                return params
        """, note="the same program rebuilt, traced and compiled once per epoch"),
    ]
    VALID = [
        Valid("""
            import jax
            import jax.numpy as jnp

            def decay(c, x):
                return c * 0.9 + x, c

            def smooth(series, steps):
                c = jnp.zeros(())
                for i in range(steps):
                    c, _ = jax.lax.scan(decay, c, series)  # one function object: traced once
                return c
        """, note="an eager `lax.scan` of a module-level function: JAX's cache finds it on every call"),
        Valid("""
            import jax
            import jax.numpy as jnp

            def selu(x, alpha=1.67, lmbda=1.05):
                return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

            selu_jit = jax.jit(selu)

            class Trainer:
                def __init__(self, lr):
                    self.lr = lr
                    self._step = jax.jit(self._update)
                    self._eval = None

                def _update(self, w, x):
                    return w - self.lr * jnp.mean(x) * w

                def evaluate(self, w, x):
                    if self._eval is None:
                        self._eval = jax.jit(lambda w, x: jnp.mean(x @ w))
                    return self._eval(w, x)

                def fit(self, w, batches):
                    for batch in batches:
                        w = self._step(w, selu_jit(batch))
                    return w
        """),
        Valid("""
            import jax
            import jax.numpy as jnp

            def make_train(config):
                def train(key):
                    return jax.random.normal(key, (config["n"],)).sum()
                return jax.jit(train)

            def sweep(configs, key):
                results = []
                for config in configs:
                    train = jax.jit(make_train(config))
                    results.append(train(key))
                return results

            @jax.jit
            def outer(x):
                return jax.jit(jnp.sin)(x) * 2
        """, note="one compilation per configuration is needed; jit while tracing is inlined"),
    ]

    def check(self, model: SemanticModel) -> Iterator[Report]:
        for fn in model.functions:
            if fn.traced or fn.name in SETUP_METHODS or _memoised_function(model, fn):
                continue
            for site in fn.calls:
                target = _jit_target(model, site.node)
                if target is None:
                    continue
                context = why_every_step(model, site) or _outer_pass(model, site)
                if context is None or _under_memo_guard(fn, site.node, site.loop) or _ahead_of_time(fn, site.node) \
                        or fn.binds_unread(site.node):  # a wrapper never called never compiles
                    continue
                reuse = _reuse(fn, site.node, site.loop)
                if _factory_of_varying_values(model, target, site) \
                        or _returned_per_configuration(model, site, context.step_call) \
                        or reuse == "kept" or _builds_functions(model, site) \
                        or _closes_over_configuration(model, model.function_ref(target, fn), site):
                    continue
                if reuse == "inner loop":
                    schedule = _rebuilt_alike(model, target, site)
                    if schedule is not None:
                        yield Report(site.node, f"`{describe(site.node)}` is evaluated {where(model, site, context)}"
                                                f"{_rebuilt_consequence(schedule)}")
                    continue
                if _wrapper(model, site.node) in PMAPS and not _fresh_function(model, target, site) \
                        and _stable_function(model, target, fn):
                    continue  # a fresh pmap of a cached function: ~20 us of dispatch per step (Measured)
                what = self._target_consequence(model, target, site)
                yield Report(site.node, f"`{describe(site.node)}` is evaluated {where(model, site, context)}: "
                                        f"{what}")
        yield from _eager_control_flow(model)
        for fn in model.functions:
            parent = fn.parent
            if parent is None or not isinstance(fn.node, cst.FunctionDef) or parent.traced \
                    or parent.name in SETUP_METHODS or _memoised_function(model, parent):
                continue
            decorator = next((d for d in fn.node.decorators if _is_jit_decorator(model, d.decorator)), None)
            if decorator is None:
                continue
            def_site = next((a.site for a in parent.assignments if a.site.node is fn.node), None)
            if def_site is None:
                continue
            context = why_every_step(model, def_site) or _outer_pass(model, def_site)
            if context is None or _under_memo_guard(parent, fn.node, def_site.loop) \
                    or _closes_over_configuration(model, fn, def_site) or _builds_functions(model, def_site):
                continue
            reuse = _reuse(parent, fn.node, def_site.loop)
            schedule = _rebuilt_alike(model, fn.node.name, def_site) if reuse == "inner loop" else None
            if schedule is not None:
                yield Report(decorator, f"`@{describe(decorator.decorator)}` on `def {fn.name}` is applied "
                                        f"{where(model, def_site, context)}{_rebuilt_consequence(schedule)}")
            if reuse is not None:
                continue
            yield Report(decorator, f"`@{describe(decorator.decorator)}` on `def {fn.name}` is applied "
                                    f"{where(model, def_site, context)}: each time a new function is "
                                    "defined, so it is traced and compiled again on every iteration")

    def _target_consequence(self, model: SemanticModel, target: cst.BaseExpression, site: Site) -> str:
        if _fresh_function(model, target, site):
            return ("the function it wraps is a new object each time, so it is traced and compiled "
                    "again on every iteration")
        if _stable_function(model, target, site.function):
            return ("a new wrapper each iteration; the compiled code comes from JAX's cache, but every call "
                    "of a fresh wrapper takes the slow dispatch path (about 15x a hoisted wrapper's)")
        return ("a new wrapper each iteration: slow dispatch at best, and a new trace and compilation "
                "whenever the wrapped function is a new object")


# Control-flow primitives that trace and compile their function arguments when called outside
# jit, and the positions of those arguments. The cache holds on to the function object: a
# bound method, lambda or closure is a new object on every evaluation.
EAGER_CONTROL_FLOW = {"jax.lax.scan": (0,), "jax.lax.fori_loop": (2,), "jax.lax.while_loop": (0, 1)}


def _eager_control_flow(model: SemanticModel) -> Iterator[Report]:
    """`jax.lax.scan(self.step, ...)` outside jit, every step, with a body that is a new object
    each time: traced and compiled again on every call, like a fresh `jax.jit` of it."""
    for fn in model.functions:
        if fn.traced:
            continue
        for site in fn.calls:
            positions = EAGER_CONTROL_FLOW.get(model.resolve(site.node.func) or "")
            if positions is None:
                continue
            args = [a.value for a in site.node.args if a.keyword is None]
            fresh = [args[i] for i in positions if i < len(args) and _fresh_function(model, args[i], site)]
            if not fresh:
                continue
            place = _repeated_at(model, site)
            if place is None or _under_memo_guard(fn, site.node, site.loop):
                continue
            primitive = describe(site.node.func)
            yield Report(site.node, f"`{primitive}` runs outside jit {place} with "
                                    f"`{describe(fresh[0])}`, a new function object each time, so JAX traces and "
                                    "compiles it again on every call (tens of milliseconds each, on CPU); pass a "
                                    "function defined once at module level, or jit the function that calls "
                                    f"`{primitive}`")


def _repeated_at(model: SemanticModel, site: Site) -> str | None:
    """Where the file shows the call repeated: in a loop of its own function (not under an `if`
    that picks iterations), or in a function that a loop of this file calls; None otherwise."""
    if site.loop is not None:
        if site.guarded or _sweeps_written_out(site.loop):
            return None
        return f"on every iteration of the loop at line {model.line_of(site.loop.node)}"
    fn = site.function
    for call in callers_of(model, fn):
        if call.loop is not None and not call.guarded and not _sweeps_written_out(call.loop):
            return (f"each time `{fn.name}` runs, and the loop at line {model.line_of(call.loop.node)} "
                    "calls it on every iteration")
    return None


def _sweeps_written_out(loop: Loop) -> bool:
    """`for lr in [1e-4, 1e-3, 1e-2]`: a sweep over settings written out, each a different program
    that compiles once whatever the function object."""
    return isinstance(loop.node, cst.For) and isinstance(loop.node.iter, (cst.List, cst.Tuple, cst.Set))


def _jit_target(model: SemanticModel, call: cst.Call) -> cst.BaseExpression | None:
    """The function a jit call wraps: `jax.jit(f, ...)`, `partial(jax.jit, ...)(f)`."""
    if not call.args or call.args[0].keyword is not None:
        return None
    return call.args[0].value if _wrapper(model, call) in apis.JIT_WRAPPERS else None


def _wrapper(model: SemanticModel, call: cst.Call) -> str | None:
    """The wrapper a jit call evaluates: `jax.pmap` for `jax.pmap(f)` and `partial(jax.pmap, ...)(f)`."""
    func = call.func
    if isinstance(func, cst.Call) and model.resolve(func.func) == "functools.partial" and func.args:
        return model.resolve(func.args[0].value)
    return model.resolve(func)


def _ahead_of_time(fn: Function, call: cst.Call) -> bool:
    """`jax.jit(f).lower(x).compile()`: compiling per item on purpose (AOT, one per shape)."""
    return any(isinstance(s.node.func, cst.Attribute) and s.node.func.value is call
               and s.node.func.attr.value in ("lower", "trace", "eval_shape") for s in fn.calls)


def _is_jit_decorator(model: SemanticModel, decorator: cst.BaseExpression) -> bool:
    if model.resolve(decorator) in apis.JIT_WRAPPERS:
        return True
    if isinstance(decorator, cst.Call):
        inner = model.resolve(decorator.func)
        if inner in apis.JIT_WRAPPERS:
            return True
        if inner == "functools.partial" and decorator.args \
                and model.resolve(decorator.args[0].value) in apis.JIT_WRAPPERS:
            return True
    return False


def _memoised_function(model: SemanticModel, fn: Function) -> bool:
    for d in fn.decorators:
        expr = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        if model.resolve(expr) in MEMOISING_DECORATORS:
            return True
    return False


def _is_memo_test(test: cst.BaseExpression) -> bool:
    """`x is None`, `key not in cache`, `not hasattr(self, "_f")`, `not self._compiled`."""
    for node in walk(test):
        if isinstance(node, cst.Comparison) and any(
                isinstance(c.operator, (cst.Is, cst.IsNot, cst.NotIn, cst.In)) for c in node.comparisons):
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("hasattr", "getattr"):
            return True
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not) \
                and isinstance(node.expression, (cst.Name, cst.Attribute, cst.Subscript)):
            return True
    return False


def _under_memo_guard(fn: Function, node: cst.CSTNode, loop: Loop | None = None) -> bool:
    """The jit sits under a memoisation test or in an `except` (cache miss) block. With a loop,
    only tests inside it count: `if not FLAG:` around the whole loop is configuration."""
    statements = enclosing_statements(fn, node) or []
    if loop is not None and loop.node in statements:
        statements = statements[statements.index(loop.node) + 1:]
    for stmt in statements:
        if isinstance(stmt, cst.If) and _is_memo_test(stmt.test):
            return True
        if isinstance(stmt, cst.ExceptHandler):
            return True
    return False


def _reuse(fn: Function, node: cst.CSTNode, loop: Loop | None) -> str | None:
    """How the wrapper built at `node` serves more than one call: "kept" (handed on, returned,
    stored, captured) or "inner loop" (called in a loop of its own); None when it does not."""
    if any(r is node for r in fn.returns) or any(
            a.value is node for s in fn.calls for a in s.node.args):
        return "kept"
    if isinstance(node, cst.FunctionDef):
        name = node.name.value
    else:
        bound = [a for a in fn.assignments if a.value is node]
        if not bound:
            return None
        if any(a.attribute_target is not None or len(a.targets) != 1 for a in bound):
            return "kept"  # `self._fn = jax.jit(...)`, `fns[k] = ...`: kept for later calls
        name = bound[0].targets[0]
    called_in = {id(s.node.func): s.loop for s in fn.calls if isinstance(s.node.func, cst.Name)}
    bound_names = {id(t) for t in _binding_names(fn.body)}
    stack: list[tuple[cst.CSTNode, bool]] = [(fn.body, False)]
    found: str | None = None
    while stack:
        current, nested = stack.pop()
        if isinstance(current, cst.Name) and current.value == name and id(current) not in bound_names:
            if nested or id(current) not in called_in:
                return "kept"  # captured by a nested function, or used as a value
            use_loop = called_in[id(current)]
            if use_loop is not None and use_loop is not loop and (loop is None or loop.encloses(use_loop)):
                found = "inner loop"  # called in a loop of its own: many calls per build
        if isinstance(current, cst.Attribute):  # `obj.name` and `name=` are not reads of name
            stack.append((current.value, nested))
        elif isinstance(current, cst.Arg):
            stack.append((current.value, nested))
        elif not isinstance(current, cst.Param):  # a parameter of that name shadows it
            inner = nested or isinstance(current, (cst.FunctionDef, cst.Lambda)) and current is not node
            stack.extend((child, inner) for child in children(current)
                         if not (isinstance(current, cst.FunctionDef) and child is current.name))
    return found


def _rebuilt_consequence(schedule: list[str]) -> str:
    """What a wrapper rebuilt on each pass of an outer loop costs, and the fix."""
    if not schedule:
        return (", though it wraps the same code each time: the function it wraps is a new object on each "
                "iteration, so it is traced and compiled again on each one (the calls in its inner loop reuse "
                "it); build it once, before the loop")
    names = ", ".join(f"`{n}`" for n in schedule)
    return (f": the function it wraps is a new object on each iteration, with {names} baked in as a constant, so "
            "it is traced and compiled again on each one (the calls in its inner loop reuse it); build it "
            f"once, before the loop, with {names} as an argument")


def _outer_pass(model: SemanticModel, site: Site) -> StepContext | None:
    """The site runs once per pass of an untraced loop around a loop over steps (an epoch loop),
    unguarded: a wrapper built there and called in its inner loop is rebuilt once per pass."""
    loop = site.loop
    if loop is None or site.guarded or site.function.traced or not loop.is_epoch:
        return None
    count = literal_trip_count(loop, model.resolve)
    return StepContext(site, None) if count is None or count > SINGLE_PASS else None


def _rebuilt_alike(model: SemanticModel, target: cst.BaseExpression, site: Site) -> list[str] | None:
    """The wrapper, called in a loop of its own, wraps a function made anew on each iteration of
    the loop that builds it (a lambda, a `partial`, a def in the loop) from nothing that changes
    between iterations but Python numbers of a schedule (`jax.jit(lambda p, x: update(p, x, lr))`
    once per epoch, `lr = 0.5 * 0.95 ** epoch`): each build traces and compiles the same program
    again. Returns those schedule names ([] when none), or None when the function reads another
    value of the loop (a configuration of a sweep, a size: a program per value)."""
    if site.loop is None or not _fresh_function(model, target, site):
        return None
    fn = site.function
    defined = model.function_ref(target, fn)
    if defined is not None and not defined.is_module:
        read = read_names(defined.body) - set(defined.params)
    else:
        read = read_names(target)
    varying = read & _varying_names(site)
    if not all(_schedule_value(model, fn, site.loop, name) for name in varying):
        return None
    return sorted(varying)


def _schedule_value(model: SemanticModel, fn: Function, loop: Loop, name: str) -> bool:
    """`name` is the counter of a `range` loop around the site, or bound in the loop only to
    arithmetic on numbers and such counters (`lr = 0.5 * 0.95 ** epoch`): a Python number that
    could be an argument of the function instead of a constant baked into it."""
    counters: set[str] = set()
    current: Loop | None = loop
    while current is not None:
        node = current.node
        if isinstance(node, cst.For) and isinstance(node.iter, cst.Call) \
                and model.resolve(node.iter.func) == "builtins.range":
            counters.update(current.targets)
        current = current.parent
    if name in counters:
        return True
    bindings = [a for a in fn.bindings(name) if loop.encloses(a.site.loop)]
    return bool(bindings) and all(
        a.value is not None and len(a.targets) == 1 and all(
            isinstance(n, (cst.BinaryOperation, cst.UnaryOperation, cst.Integer, cst.Float, cst.Name,
                           cst.BaseBinaryOp, cst.BaseUnaryOp, cst.LeftParen, cst.RightParen))
            for n in walk(a.value))
        and read_names(a.value) <= counters for a in bindings)


def _binding_names(body: cst.CSTNode) -> list[cst.Name]:
    """The names an assignment, a `for` or a `with ... as` binds (their uses are elsewhere)."""
    targets: list[cst.BaseExpression] = []
    for node in walk(body):
        if isinstance(node, cst.Assign):
            targets.extend(t.target for t in node.targets)
        elif isinstance(node, (cst.AnnAssign, cst.For, cst.CompFor)):
            targets.append(node.target)
        elif isinstance(node, cst.AsName):
            targets.append(node.name)
    return [n for t in targets for n in walk(t) if isinstance(n, cst.Name)]


def _builds_functions(model: SemanticModel, site: Site) -> bool:
    """The jit sits, outside any loop of its own, in a function that returns a function (a
    lambda, a nested def, a jitted wrapper): a builder, called once per configuration."""
    fn = site.function
    if site.loop is not None or fn.is_module:
        return False
    for r in fn.returns:
        if isinstance(r, cst.Lambda):
            return True
        if isinstance(r, cst.Name) and (r.value in fn.nested or any(
                isinstance(a.value, cst.Call) and _jit_target(model, a.value) is not None
                for a in fn.bindings(r.value))):
            return True
        if isinstance(r, cst.Call) and _jit_target(model, r) is not None:
            return True
    return False


def _varying_names(site: Site) -> set[str]:
    """Names that change from one step to the next: loop targets and names bound in the loop
    (or, in a per-step function, its parameters and locals)."""
    loops = list(site.loop.outward()) if site.loop is not None else []
    fn = site.function
    if not loops:
        return set(fn.params) | {t for a in fn.assignments for t in a.targets}
    names: set[str] = set()
    for loop in loops:
        names.update(loop.targets)
        names.update(t for a in fn.assignments if loop.encloses(a.site.loop) for t in a.targets)
    return names


def _factory_of_varying_values(model: SemanticModel, target: cst.BaseExpression, site: Site) -> bool:
    """`jax.jit(make_train(config))` with `config` changing per iteration: one compilation per
    configuration is the point (a sweep), not a mistake."""
    if not isinstance(target, cst.Call):
        return False
    q = model.resolve(target.func)
    if q == "functools.partial" or q in apis.TRACING_TRANSFORMS or q in apis.JIT_WRAPPERS:
        return False
    varying = _varying_names(site)
    return any(name in varying for arg in target.args for name in read_names(arg.value))


def _returned_per_configuration(model: SemanticModel, site: Site, step_call: Site | None) -> bool:
    """A factory (`make_train(config)`) that returns the jitted function, called from the loop
    with arguments that change per iteration: one compilation per configuration is needed."""
    fn = site.function
    if step_call is None or step_call is site or step_call.node is site.node:
        return False
    returned = {id(r) for r in fn.returns}
    names = {t for a in fn.assignments if a.value is site.node for t in a.targets}
    if id(site.node) not in returned and not any(
            isinstance(r, cst.Name) and r.value in names for r in fn.returns):
        return False
    varying = _varying_names(step_call)
    return any(name in varying for arg in step_call.node.args for name in read_names(arg.value))


def _closes_over_configuration(model: SemanticModel, target: Function | None, site: Site) -> bool:
    """A lambda or def in a loop over configurations (`for blocks, tile in itertools.product(...)`)
    that reads the configuration: a different program per configuration, compiled once each."""
    if target is None or target.is_module or site.loop is None:
        return False
    read = read_names(target.body) - set(target.params)
    varying = _varying_names(site) & read
    if not varying:
        return False
    loop: Loop | None = site.loop
    config_targets: set[str] = set()
    while loop is not None:
        if isinstance(loop.node, cst.For) and _configuration_iterable(model, loop.node.iter, site.function):
            config_targets.update(loop.targets)
        loop = loop.parent
    return varying <= config_targets


def _configuration_iterable(model: SemanticModel, expr: cst.BaseExpression, fn: Function) -> bool:
    """Literal tuples/lists, `itertools.product(...)`, `range(...)`, or a name bound to one."""
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return True
    if isinstance(expr, cst.Call):
        q = model.resolve(expr.func) or ""
        if q.startswith("itertools.") or q == "builtins.range":
            return True
        if q in ("builtins.zip", "builtins.enumerate"):
            return all(_configuration_iterable(model, a.value, fn) for a in expr.args)
        return False
    if isinstance(expr, cst.Name):
        bindings = fn.bindings(expr.value)
        return len(bindings) == 1 and bindings[0].value is not None \
            and _configuration_iterable(model, bindings[0].value, fn)
    return False


def _fresh_function(model: SemanticModel, target: cst.BaseExpression, site: Site) -> bool:
    """The wrapped function is a new object at every evaluation."""
    fn = site.function
    if isinstance(target, cst.Lambda):
        return True
    if isinstance(target, cst.Call):
        return True  # partial(...), jax.grad(f), a factory: a new callable per call
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
        owner = target.value.value
        # `self.method` / `obj.method`: a new bound method object each time
        return model.function_ref(target, fn) is not None and owner not in model.classes
    if isinstance(target, cst.Name):
        defined = model.lookup_function(target.value, fn)
        if defined is not None and defined.parent is fn:
            if not fn.is_module and site.loop is None:
                return True  # a closure defined in the per-step function: redefined per call
            def_site = next((a.site for a in fn.assignments if a.site.node is defined.node), None)
            # a def in the loop body is redefined every iteration
            return def_site is not None and site.loop is not None and site.loop.encloses(def_site.loop)
    return False


def _stable_function(model: SemanticModel, target: cst.BaseExpression, fn: Function) -> bool:
    """A def made once (module level, or a closure defined before the loop), a class's function,
    or a library function: the same object every time."""
    if isinstance(target, cst.Name):
        defined = model.lookup_function(target.value, fn)
        if defined is not None:
            return defined.parent is not None  # not fresh (checked first): defined once
        return model.resolve(target) is not None and target.value not in fn.params
    if isinstance(target, cst.Attribute):
        if isinstance(target.value, cst.Name) and target.value.value in model.classes:
            return True
        return model.resolve(target) is not None
    return False

