"""JAX302 host-to-device-in-step."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    Invalid,
    Report,
    Rule,
    SemanticModel,
    Site,
    Statements,
    Valid,
    apis,
    describe,
    from_data_set,
    host_bound_call,
    is_float64_numpy,
    is_host_data,
    is_literal,
    is_numpy_metadata,
    is_numpy_value,
    is_prefetch,
    loop_runs_steps,
    numpy_origin,
    only_measured,
    over_structure,
    runs_a_step,
)


class HostToDeviceInStep(Rule):
    """
    ## What it does
    Finds host data converted or copied to the device inside a step loop: `jnp.array(batch)`,
    `jnp.asarray(np_arr)`, `jax.device_put(x)` of host data, and NumPy arrays built in the loop
    (`np.*` preprocessing) passed straight to a jitted function, which copies them on every call.

    NumPy data counts when the file shows where it lives: built by `np.*`, a name or tuple
    element bound to it, a `self.` attribute the class binds only to it, or a slice of one
    returned by a helper of the file (`xb, yb = get_batch(X, Y, i, bs)`). The message says when
    the data is float64 (`np.random.randn`, `np.zeros` without a dtype, `.astype(np.float64)`):
    JAX also converts it to float32 on every copy unless x64 is enabled.

    Also random numbers drawn with NumPy on every step and handed to an eager JAX operation
    (`dW = jnp.sqrt(dt) * np.random.normal(size=(m, n, d))` in a helper the loop calls each
    iteration): drawn on one CPU core and copied to the device every step, where `jax.random`
    would draw them on the device inside the compiled step. A NumPy draw of a single number is a
    few bytes and is left alone.

    ## Why is this bad?
    Every step pays a host-to-device copy, and the NumPy work before it runs on one CPU core
    while the accelerator waits. A published training-loop case study spent 65% of its run time
    in per-batch NumPy preprocessing and conversion.

    ## How to fix
    Move the data set to the device once, before the loop (`jnp.asarray(data)`), and slice
    batches on the device; do preprocessing in `jnp` inside the jitted step. For data that does
    not fit, prefetch: put the next batch on the device while the current step runs
    (`flax.jax_utils.prefetch_to_device`).

    The rule reports only data the file shows is on the host (built with NumPy, held in a NumPy
    name, or a batch the loop draws from an iterable and works on with NumPy first, as that case
    study does) and only in loops that run a step (a compiled function, a model or optimizer call, a
    same-module JAX function). A loader's batch merely converted (`x = jnp.array(x)` of what a
    torch DataLoader yields, the JAX docs' own loop) is how data reaches the device, not a
    mistake, so the rule leaves it. It stays quiet on
    a prefetching pattern (the next batch's `device_put` issued before it is used), on
    conversions outside the loop, on values that are already JAX arrays or unknown, on NumPy
    metadata (`np.shape(x)`), on set-up loops that only convert items, on benchmark bodies
    that only wait for their result, on one number of a 1-D NumPy array per step (`noise[t]` of
    `np.random.uniform(-0.1, 0.1, steps)`: a scalar, a few bytes a call), and on NumPy made in
    the step from what a host environment returned that step (`done = np.logical_or(term,
    trunc)`): the binding that reaches the call decides, not another one on a branch that skips
    it.

    Two questions go by names, because the file does not write the types down: a same-module
    helper with no JAX work counts as NumPy preprocessing when it calls `np.*` or a `.mean()`,
    `.std()` or `.astype()` method; and a same-module function whose return annotation is spelled
    `np.…`, `numpy.…` or `onp.…` computes on the host, so a loop calling it runs no step.

    ## Measured
    The training-loop case study measured 5x from a JAX-native data pipeline; see the
    `training_loop` pipeline's "data on device" stage for this machine's figure.
    """

    CODE = "JAX302"
    NAME = "host-to-device-in-step"
    SEVERITY = "warning"
    SUMMARY = "Host data copied to the device on every step"
    FIX = "Put the data set on the device once before the loop and slice batches there; preprocess with jnp inside jit."

    INVALID = [
        Invalid("""
            import numpy as np
            import jax
            import jax.numpy as jnp

            @jax.jit
            def train_step(params, batch):
                return params - 0.01 * jnp.mean(batch["x"]) * params

            def preprocess_batch(batch):
                x = (batch["x"] - batch["x"].mean()) / batch["x"].std()
                return {"x": x, "y": batch["y"]}

            def train(params, dataloader):
                for epoch in range(10):
                    for batch in dataloader:
                        batch_np = preprocess_batch(batch)
                        batch_jax = {k: jnp.array(v) for k, v in batch_np.items()}  # <- JAX302
                        params = train_step(params, batch_jax)
                return params
        """),
        Invalid("""
            import numpy as np
            import jax

            @jax.jit
            def step(w, x):
                return w + x.sum()

            w = 0.0
            data = np.random.rand(1000, 32)
            for i in range(1000):  # <- JAX201
                x = np.clip(data[i], 0.0, 1.0)
                w = step(w, x)  # <- JAX302
                y = jax.device_put(data[i] * 2)  # <- JAX302
        """),
        Invalid("""
            import jax
            import jax.numpy as jnp
            import numpy as np

            @jax.jit
            def step(w, xb, yb):
                return w - 0.01 * xb.T @ (xb @ w - yb) / xb.shape[0]

            def get_batch(X, Y, i, bs):
                return X[i * bs:(i + 1) * bs], Y[i * bs:(i + 1) * bs]

            class Regression:
                def __init__(self, n, d):
                    self.X = np.random.randn(n, d)
                    self.Y = np.random.randn(n)
                    self.w = jnp.zeros(d)

                def fit(self, n_steps, bs=256):
                    for i in range(n_steps):
                        xb, yb = get_batch(self.X, self.Y, i, bs)
                        self.w = step(self.w, xb, yb)  # <- JAX302
        """, note="a float64 data set held by the object, sliced on the host by a helper every step"),
    ]
    VALID = [
        Valid("""
            import numpy as np
            import jax
            import jax.numpy as jnp

            @jax.jit
            def train_step(params, x):
                x = (x - jnp.mean(x)) / jnp.std(x)
                return params - 0.01 * jnp.mean(x) * params

            def train(params, data: np.ndarray, batch_size: int):
                num_batches = data.shape[0] // batch_size
                # once, before the loop: the whole data set moves to the device
                batches = jnp.asarray(data[: num_batches * batch_size]).reshape(num_batches, batch_size, -1)
                for batch in batches:
                    params = train_step(params, batch)
                return params
        """),
        Valid("""
            import jax

            def train(state, train_step, batches):
                it = iter(batches)
                next_batch = jax.device_put(next(it))
                for _ in range(len(batches) - 1):
                    batch = next_batch
                    next_batch = jax.device_put(next(it))  # prefetch while the step runs
                    state = train_step(state, batch)
                return state
        """),
    ]

    def check(self, model: SemanticModel) -> Iterator[Report]:
        yield from _host_random_uploads(model)
        for fn in model.functions:
            if fn.traced:
                continue
            statements = Statements(fn)
            # per loop, the host values already reported: passed again to another call of the same
            # iteration, the same data is copied again, which the first finding's fix removes too
            passed: set[tuple[int, str]] = set()
            for site in fn.calls:
                if not model.dispatched_per_step(site) or over_structure(site.loop, model.resolve) \
                        or not loop_runs_steps(model, site):
                    continue
                call: cst.Call = site.node
                q = model.resolve(call.func)
                if q in apis.DEVICE_PUT_FUNCTIONS:
                    if not call.args or call.args[0].keyword is not None:
                        continue
                    value = call.args[0].value
                    already_array = (model.is_array_at(value, fn) if isinstance(value, cst.Name)
                                     else model.is_array(value, fn))
                    if already_array or is_literal(value) or is_prefetch(model, fn, site):
                        continue
                    # only data the file shows is on the host (NumPy built or held): a batch from
                    # an unknown loader, or a few Python scalars, may be anything
                    if not is_host_data(model, fn, site, value) or only_measured(fn, site, statements) \
                            or not from_data_set(model, fn, site, value, loader_batches=q != "jax.device_put"):
                        continue
                    yield Report(call, f"`{describe(call)}` copies host data to the device "
                                       f"{_each_iteration(model, site)}; move the data set to the device once "
                                       "and slice it there")
                    continue
                work = model.call_work(call, fn)
                if work is None or not runs_a_step(model, call, fn):
                    continue  # NumPy given to a single jnp/lax op is a constant, not a data set
                built: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
                held: list[cst.BaseExpression] = []
                for arg in call.args:
                    if not from_data_set(model, fn, site, arg.value):
                        continue  # generated or loaded each step by code the file does not show
                    origin = numpy_origin(model, fn, site, arg.value)
                    if origin is not None:
                        built.append((arg.value, origin))
                    elif is_numpy_value(model, arg.value, fn) and not is_numpy_metadata(model, arg.value):
                        held.append(arg.value)
                # a loop that reads results back to the host every iteration is host-bound by
                # design: feeding it host data it already holds is part of that design
                if held and site.loop is not None and host_bound_call(model, site.loop) is not None:
                    held = []
                if (built or held) and only_measured(fn, site, statements):
                    continue
                if built:
                    names = ", ".join(f"`{describe(v)}` (`{describe(origin)}`)" for v, origin in built)
                    yield Report(built[0][0], f"{names}: NumPy built {_each_iteration(model, site)} and passed "
                                              f"to `{describe(call.func)}`, which copies it to the device on every "
                                              "call")
                elif held:
                    key = (id(site.loop), ",".join(describe(v) for v in held))
                    if key in passed:
                        continue
                    passed.add(key)
                    names = ", ".join(f"`{describe(v)}`" for v in held)
                    wide = " (float64: also converted to float32 on each copy, unless x64 is enabled)" \
                        if all(is_float64_numpy(model, v, fn) for v in held) else ""
                    yield Report(held[0], f"{names}: NumPy data on the host passed to `{describe(call.func)}` "
                                          f"{_each_iteration(model, site)}, which copies it to the device on "
                                          f"every call{wide}; move the data set to the device once, before the "
                                          "loop, and slice it there")


def _each_iteration(model: SemanticModel, site: Site) -> str:
    """`on every iteration of the loop at line N` (the loop that makes the site run per step)."""
    loop = model.step_loop_of(site)
    return f"on every iteration of the loop at line {model.line_of(loop.node)}" if loop is not None \
        else "on every step"


# NumPy's samplers: each call draws a fresh host array (`np.random.normal(size=(m, n))`); the
# shape is given as `size=`, or as the positional dimensions of `randn(m, n)` and `rand(m, n)`.
_HOST_SAMPLERS = frozenset(f"numpy.random.{name}" for name in (
    "normal", "uniform", "standard_normal", "random", "random_sample", "randint", "choice", "binomial",
    "poisson", "exponential", "gamma", "beta", "laplace", "multivariate_normal"))
_DIMENSION_SAMPLERS = frozenset({"numpy.random.randn", "numpy.random.rand"})


def _host_random_uploads(model: SemanticModel) -> Iterator[Report]:
    """`jnp.sqrt(dt) * np.random.normal(size=(m, n, d))` in a function run every step: the
    numbers are drawn on the host each step and the eager JAX operation that takes them copies
    them to the device; `jax.random` would draw them on the device, inside the compiled step.
    A draw handed whole to a compiled step (`update(w, np.random.rand(16, 8))`) is an input
    pipeline, left to the data-set checks above."""
    for fn in model.functions:
        if fn.traced:
            continue
        uses: list[tuple[Site, cst.BaseExpression]] = []
        for op in fn.operations:
            if isinstance(op.node, cst.BinaryOperation):
                sides = (op.node.left, op.node.right)
                uses.extend((op, drawn) for drawn, other in (sides, sides[::-1])
                            if _host_draw(model, drawn) and model.is_array(other, fn))
        for site in fn.calls:
            if model.call_work(site.node, fn) == "array":
                uses.extend((site, arg.value) for arg in site.node.args if _host_draw(model, arg.value))
        for site, drawn in uses:
            if not model.dispatched_per_step(site) or over_structure(site.loop, model.resolve) \
                    or not loop_runs_steps(model, site):
                continue  # a loop that only converts what it draws (a test over shapes) runs no step
            consumer = describe(site.node.func) if isinstance(site.node, cst.Call) else describe(site.node, 30)
            yield Report(drawn, f"`{describe(drawn)}` draws random numbers on the host "
                                f"{_each_iteration(model, site)} and `{consumer}` copies them to the device "
                                "each time; draw them with `jax.random` on the device (inside the jitted step, "
                                "with a key split each step)")


def _host_draw(model: SemanticModel, expr: cst.BaseExpression) -> bool:
    """A NumPy sampler asked for an array: a single number (`np.random.uniform()`) is a few bytes
    a step, not worth a finding."""
    if not isinstance(expr, cst.Call):
        return False
    q = model.resolve(expr.func)
    if q in _DIMENSION_SAMPLERS:
        return any(arg.keyword is None for arg in expr.args)
    return q in _HOST_SAMPLERS and any(arg.keyword is not None and arg.keyword.value == "size" for arg in expr.args)

