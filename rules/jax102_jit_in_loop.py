"""JAX102 jit-in-loop."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    Invalid,
    Report,
    Rule,
    SemanticModel,
    Site,
    Valid,
    ahead_of_time,
    apis,
    builds_functions,
    called_per_iteration,
    callers_of,
    closes_over_configuration,
    describe,
    factory_of_varying_values,
    fresh_function,
    is_jit_decorator,
    jit_target,
    jit_wrapper,
    per_outer_pass,
    rebuilt_alike,
    returned_per_configuration,
    runs_once,
    stable_function,
    sweeps_written_out,
    under_memo_guard,
    where,
    why_every_step,
    wrapper_reuse,
)


class JitInLoop(Rule):
    """
    ## What it does
    Finds `jax.jit(...)` (also `jax.pmap`, `equinox.filter_jit`, `flax.nnx.jit`,
    `functools.partial(jax.jit, ...)(f)` and a `@jax.jit` decorator on a nested `def`) evaluated
    on every step: in the body of a step loop, or in an un-jitted function that the loop calls
    every step. That includes `jax.jit(f)(x)` called inline and jitting a lambda, a closure, a
    `functools.partial` or a bound method built in the loop, and a jitted nested function (or a
    jit of a closure) built in a method that a loop of the file calls on every iteration, even
    an epoch loop (the message names that loop; quiet when the nested function reads what a
    `for` loop walks: one program per item). Also `jax.lax.scan`, `fori_loop` and
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
            if fn.traced or runs_once(model, fn):
                continue
            for site in fn.calls:
                target = jit_target(model, site.node)
                if target is None:
                    continue
                context = why_every_step(model, site) or per_outer_pass(model, site)
                if under_memo_guard(fn, site.node, site.loop) or ahead_of_time(fn, site.node) \
                        or fn.binds_unread(site.node):  # a wrapper never called never compiles
                    continue
                if context is None:
                    caller = called_per_iteration(model, site, model.function_ref(target, fn))
                    if caller is not None and wrapper_reuse(fn, site.node, None) is None \
                            and not builds_functions(model, site) and fresh_function(model, target, site):
                        yield Report(site.node, f"`{describe(site.node)}` is evaluated {_via(model, fn, caller)}: "
                                                f"{_target_consequence(model, target, site)}")
                    continue
                reuse = wrapper_reuse(fn, site.node, site.loop)
                if factory_of_varying_values(model, target, site) \
                        or returned_per_configuration(site, context.step_call) \
                        or reuse == "kept" or builds_functions(model, site) \
                        or closes_over_configuration(model, model.function_ref(target, fn), site):
                    continue
                if reuse == "inner loop":
                    schedule = rebuilt_alike(model, target, site)
                    if schedule is not None:
                        yield Report(site.node, f"`{describe(site.node)}` is evaluated {where(model, site, context)}"
                                                f"{_rebuilt_consequence(schedule)}")
                    continue
                if jit_wrapper(model, site.node) in apis.PMAPS and not fresh_function(model, target, site) \
                        and stable_function(model, target, fn):
                    continue  # a fresh pmap of a cached function: ~20 us of dispatch per step (Measured)
                what = _target_consequence(model, target, site)
                yield Report(site.node, f"`{describe(site.node)}` is evaluated {where(model, site, context)}: "
                                        f"{what}")
        yield from _eager_control_flow(model)
        for fn in model.functions:
            parent = fn.parent
            if parent is None or not isinstance(fn.node, cst.FunctionDef) or parent.traced \
                    or runs_once(model, parent):
                continue
            decorator = next((d for d in fn.node.decorators if is_jit_decorator(model, d.decorator)), None)
            if decorator is None:
                continue
            def_site = next((a.site for a in parent.assignments if a.site.node is fn.node), None)
            if def_site is None:
                continue
            context = why_every_step(model, def_site) or per_outer_pass(model, def_site)
            if under_memo_guard(parent, fn.node, def_site.loop) \
                    or closes_over_configuration(model, fn, def_site) or builds_functions(model, def_site):
                continue
            if context is None:
                caller = called_per_iteration(model, def_site, fn)
                if caller is not None and wrapper_reuse(parent, fn.node, None) is None:
                    yield Report(decorator, f"`@{describe(decorator.decorator)}` on `def {fn.name}` is applied "
                                            f"{_via(model, parent, caller)}: each time a new function is defined, "
                                            "so it is traced and compiled again on every iteration")
                continue
            reuse = wrapper_reuse(parent, fn.node, def_site.loop)
            schedule = rebuilt_alike(model, fn.node.name, def_site) if reuse == "inner loop" else None
            if schedule is not None:
                yield Report(decorator, f"`@{describe(decorator.decorator)}` on `def {fn.name}` is applied "
                                        f"{where(model, def_site, context)}{_rebuilt_consequence(schedule)}")
            if reuse is not None:
                continue
            yield Report(decorator, f"`@{describe(decorator.decorator)}` on `def {fn.name}` is applied "
                                    f"{where(model, def_site, context)}: each time a new function is "
                                    "defined, so it is traced and compiled again on every iteration")


def _via(model: SemanticModel, fn, caller: Site) -> str:
    """Where a wrapper built on every call of `fn` is built again: the loop that calls `fn`."""
    assert caller.loop is not None
    return (f"each time `{fn.name}` runs, and `{fn.name}` is called on every iteration of the loop at line "
            f"{model.line_of(caller.loop.node)}")


def _target_consequence(model: SemanticModel, target: cst.BaseExpression, site: Site) -> str:
    """What a jit evaluated every step costs, by what it wraps."""
    if fresh_function(model, target, site):
        return ("the function it wraps is a new object each time, so it is traced and compiled "
                "again on every iteration")
    if stable_function(model, target, site.function):
        return ("a new wrapper each iteration; the compiled code comes from JAX's cache, but every call "
                "of a fresh wrapper takes the slow dispatch path (about 15x a hoisted wrapper's)")
    return ("a new wrapper each iteration: slow dispatch at best, and a new trace and compilation "
            "whenever the wrapped function is a new object")


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


def _eager_control_flow(model: SemanticModel) -> Iterator[Report]:
    """`jax.lax.scan(self.step, ...)` outside jit, every step, with a body that is a new object
    each time: traced and compiled again on every call, like a fresh `jax.jit` of it. Outside jit
    the compiled loops trace and compile their function arguments on each call, found in JAX's
    cache only when the function is the same object."""
    for fn in model.functions:
        if fn.traced:
            continue
        for site in fn.calls:
            primitive_name = model.resolve(site.node.func)
            if primitive_name not in apis.COMPILED_LOOPS:
                continue
            args = [a.value for a in site.node.args if a.keyword is None]
            positions = apis.TRACING_TRANSFORMS[primitive_name]  # where the function arguments are
            fresh = [args[i] for i in positions if i < len(args) and fresh_function(model, args[i], site)]
            if not fresh:
                continue
            place = _repeated_at(model, site)
            if place is None or under_memo_guard(fn, site.node, site.loop):
                continue
            primitive = describe(site.node.func)
            yield Report(site.node, f"`{primitive}` runs outside jit {place} with "
                                    f"`{describe(fresh[0])}`, a new function object each time, so JAX traces and "
                                    "compiles it again on every call (tens of milliseconds each, on CPU); pass a "
                                    "function defined once at module level, or jit the function that calls "
                                    f"`{primitive}`")


def _repeated_at(model: SemanticModel, site: Site) -> str | None:
    """Where the file shows the call repeated, for the message: in a loop of its own function
    (not under an `if` that picks iterations), or in a function that a loop of this file calls;
    None otherwise."""
    if site.loop is not None:
        if site.guarded or sweeps_written_out(site.loop):
            return None
        return f"on every iteration of the loop at line {model.line_of(site.loop.node)}"
    fn = site.function
    for call in callers_of(model, fn):
        if call.loop is not None and not call.guarded and not sweeps_written_out(call.loop):
            return (f"each time `{fn.name}` runs, and the loop at line {model.line_of(call.loop.node)} "
                    f"calls it on every iteration (line {model.line_of(call.node)})")
    return None
