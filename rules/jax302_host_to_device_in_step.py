"""JAX302 host-to-device-in-step."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    Assignment,
    Function,
    Invalid,
    Report,
    Rule,
    SemanticModel,
    Site,
    Statements,
    Valid,
    apis,
    batch_getter,
    describe,
    host_bound_call,
    is_float64_numpy,
    is_numpy_value,
    iterates_rows,
    names_in,
    over_structure,
    walk,
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
    metadata (`np.shape(x)`), on set-up loops that only convert items, and on benchmark bodies
    that only wait for their result.

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
        for fn in model.functions:
            if fn.traced:
                continue
            statements = Statements(fn)
            # per loop, the host values already reported: passed again to another call of the same
            # iteration, the same data is copied again, which the first finding's fix removes too
            passed: set[tuple[int, str]] = set()
            for site in fn.calls:
                if not model.dispatched_per_step(site) or over_structure(site.loop, model.resolve) \
                        or not _loop_computes(model, site):
                    continue
                call: cst.Call = site.node
                q = model.resolve(call.func)
                if q in apis.DEVICE_PUT_FUNCTIONS:
                    if not call.args or call.args[0].keyword is not None:
                        continue
                    value = call.args[0].value
                    already_array = (model.is_array_at(value, fn) if isinstance(value, cst.Name)
                                     else model.is_array(value, fn))
                    if already_array or _is_literal(value) or _is_prefetch(model, fn, site):
                        continue
                    # only data the file shows is on the host (NumPy built or held): a batch from
                    # an unknown loader, or a few Python scalars, may be anything
                    if not _host_data(model, fn, site, value) or _measured(fn, site, statements) \
                            or not from_data_set(model, fn, site, value, loader_batches=q != "jax.device_put"):
                        continue
                    yield Report(call, f"`{describe(call)}` copies host data to the device "
                                       f"{_each_iteration(model, site)}; move the data set to the device once "
                                       "and slice it there")
                    continue
                work = model.call_work(call, fn)
                if work is None or not _is_step_call(model, call, fn):
                    continue  # NumPy given to a single jnp/lax op is a constant, not a data set
                built: list[tuple[cst.BaseExpression, str]] = []
                held: list[cst.BaseExpression] = []
                for arg in call.args:
                    if not from_data_set(model, fn, site, arg.value):
                        continue  # generated or loaded each step by code the file does not show
                    origin = _numpy_origin(model, fn, site, arg.value)
                    if origin is not None:
                        built.append((arg.value, origin))
                    elif is_numpy_value(model, arg.value, fn) and not _static_numpy(model, arg.value):
                        held.append(arg.value)
                # a loop that reads results back to the host every iteration is host-bound by
                # design: feeding it host data it already holds is part of that design
                if held and site.loop is not None and host_bound_call(model, site.loop) is not None:
                    held = []
                if (built or held) and _measured(fn, site, statements):
                    continue
                if built:
                    names = ", ".join(f"`{describe(v)}` ({origin})" for v, origin in built)
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


def from_data_set(model: SemanticModel, fn: Function, site: Site, value: cst.BaseExpression,
                  loader_batches: bool = True, depth: int = 0, processed: bool = False) -> bool:
    """The host data is something the rule's fix removes: a NumPy data set this file holds in
    memory (a NumPy name the loop does not rebind: the same array uploaded every step; a slice or
    a row of one; a batch from a generator of this module), or this step's batch from a loader,
    preprocessed on the host in the loop (`preprocess(batch)`, `x / 255.0`: the training-loop
    case study's NumPy work every step). Data generated afresh each step (`problem =
    make_problem(dataset)`) is an input pipeline by design, and so is a loader's batch merely
    converted (`jnp.array(x)` of a torch DataLoader's batch, the JAX docs' own loop) or put with
    an explicit `jax.device_put` (`loader_batches=False`): left alone."""
    if depth > 5 or site.loop is None:
        return False
    loop = site.loop

    def follow(x: cst.BaseExpression, work: bool = False) -> bool:
        return from_data_set(model, fn, site, x, loader_batches, depth + 1, processed or work)

    if isinstance(value, cst.Subscript):
        return follow(value.value)
    if isinstance(value, cst.Call):
        q = model.resolve(value.func)
        args = [a.value for a in value.args if not a.star]
        if q in apis.DEVICE_PUT_FUNCTIONS or q in _CONVERSIONS or (
                q is None and isinstance(value.func, cst.Attribute) and value.func.attr.value in _VIEWS):
            parts = args + ([value.func.value] if q is None and isinstance(value.func, cst.Attribute) else [])
            # `np.array(x.numpy())` copies the batch on the host before the upload: work per step
            return any(follow(x, work=q == "numpy.array") for x in parts)
        if q is not None and q.startswith("numpy.") and not q.startswith("numpy.random.") \
                and q not in apis.NUMPY_METADATA and not set(names_in(value)) & _assigned_in(fn, loop):
            return True  # `np.zeros(4)`: the same array built and uploaded every step
        if batch_getter(model, value, fn):
            return any(follow(x) for x in args)  # `xb, yb = get_batch(X, Y, i)`: slices of what it is given
        # a helper or NumPy work on this step's item carries it on; anything else makes new data
        drawn = _drawn_names(fn, loop)
        return any(set(names_in(x)) & drawn and follow(x, work=True) for x in args)
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        parts = [value.left, value.right] if isinstance(value, cst.BinaryOperation) else [value.expression]
        return any(follow(x, work=True) for x in parts)
    if isinstance(value, cst.Dict):
        return any(isinstance(e, cst.DictElement) and follow(e.value) for e in value.elements)
    if isinstance(value, cst.DictComp):
        return follow(value.for_in.iter)
    if isinstance(value, cst.Attribute):
        return is_numpy_value(model, value, fn)  # `self.X`, a data set the object holds
    if not isinstance(value, cst.Name):
        return False
    inside = [a for a in fn.bindings(value.value) if loop.encloses(a.site.loop)]
    if not inside:
        return is_numpy_value(model, value, fn) and not model.is_array(value, fn)
    for a in inside:
        node = a.site.node
        if a.value is None and isinstance(node, cst.CompFor):
            if follow(node.iter):
                return True
        elif a.value is None and isinstance(node, cst.For):
            it = node.iter
            if isinstance(it, cst.Call) and (target := model.callee(it, fn).function) is not None \
                    and any(isinstance(n, cst.Yield) for n in walk(target.body)):
                return True  # `for batch in data_loader(x, y, order)`: this module's generator
            if iterates_rows(model, it, fn) and not model.is_array(it, fn):
                return True  # rows of NumPy arrays held in memory
            if loader_batches and processed and node is loop.node and not _is_counter(model, it):
                return True  # this step's batch, from whatever the loop draws it, worked on here
        elif a.value is not None and follow(a.value):
            return True
    return False


# Calls that only convert or view the data they are given: follow them to where it comes from.
_CONVERSIONS = frozenset({"jax.numpy.array", "jax.numpy.asarray", "numpy.asarray", "numpy.array"})
_VIEWS = frozenset({"items", "values", "astype", "reshape", "numpy"})


def _is_counter(model: SemanticModel, it: cst.BaseExpression) -> bool:
    return isinstance(it, cst.Call) and model.resolve(it.func) == "builtins.range"


def _assigned_in(fn: Function, loop) -> set[str]:
    return set(loop.targets) | {t for a in fn.assignments if loop.encloses(a.site.loop) for t in a.targets}


def _drawn_names(fn: Function, loop) -> set[str]:
    """The loop's item and the names computed from it in the loop body."""
    drawn = set(loop.targets)
    for a in fn.assignments:
        if loop.encloses(a.site.loop) and a.value is not None and set(names_in(a.value)) & drawn:
            drawn.update(a.targets)
    return drawn


def _is_literal(node: cst.BaseExpression) -> bool:
    return all(isinstance(n, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.List,
                              cst.Tuple, cst.Element, cst.UnaryOperation, cst.Minus, cst.Name))
               and (not isinstance(n, cst.Name) or n.value in ("True", "False", "None"))
               for n in walk(node))


def _is_prefetch(model: SemanticModel, fn: Function, site: Site) -> bool:
    """`next_batch = jax.device_put(...)` read earlier in the loop body: it feeds the next step."""
    loop = site.loop
    if loop is None:
        return False
    for a in fn.assignments:
        if a.value is site.node and a.targets:
            name = a.targets[0]
            for other in fn.assignments:
                if other is a or not loop.encloses(other.site.loop) or other.value is None:
                    continue
                if name in set(names_in(other.value)) and model.line_of(other.site.node) < model.line_of(a.site.node):
                    return True
    return False


def _numpy_origin(model: SemanticModel, fn: Function, site: Site, value: cst.BaseExpression) -> str | None:
    """How a host NumPy value passed to a JAX call was built in this loop, or None."""
    if not isinstance(value, cst.Name) or model.is_array(value, fn):
        return None
    loop = site.loop
    bindings: list[Assignment] = [a for a in fn.bindings(value.value)
                                  if a.value is not None and (loop is None or loop.encloses(a.site.loop))]
    if not bindings:
        return None
    for a in bindings:
        if not isinstance(a.value, cst.Call) or batch_getter(model, a.value, fn):
            return None  # (slices of a data set the file holds are held data, not built)
        if is_numpy_value(model, a.value, fn):
            continue
        target = model.callee(a.value, fn).function
        if target is not None and _numpy_function(model, target):
            continue
        return None
    first = bindings[0].value
    return f"`{describe(first)}`" if first is not None else None


def _numpy_function(model: SemanticModel, fn: Function) -> bool:
    """A same-module helper that computes with NumPy and no JAX (`preprocess_batch`)."""
    if fn.does_jax_work:
        return False
    return any((q := model.resolve(s.node.func)) is not None and q.startswith("numpy.") for s in fn.calls) \
        or any(isinstance(s.node.func, cst.Attribute) and s.node.func.attr.value in ("mean", "std", "astype")
               for s in fn.calls)


# NumPy functions that describe an array (its shape, size, type): static values, not data.


def _static_numpy(model: SemanticModel, value: cst.BaseExpression) -> bool:
    """`np.shape(x)`, `np.ndim(x)`: metadata, which JAX takes as static arguments."""
    return isinstance(value, cst.Call) and model.resolve(value.func) in apis.NUMPY_METADATA


def _host_data(model: SemanticModel, fn: Function, site: Site, value: cst.BaseExpression) -> bool:
    """The value converted is NumPy data: built by `np.*` (here, or in a same-module NumPy
    helper this loop calls), held in a NumPy name, or a slice of one."""
    if _static_numpy(model, value):
        return False
    return _host_expr(model, fn, site, value) or _numpy_origin(model, fn, site, value) is not None \
        or _numpy_rows(model, fn, value) or _drawn_batch(model, fn, site, value)


def _drawn_batch(model: SemanticModel, fn: Function, site: Site, value: cst.BaseExpression) -> bool:
    """`for x, y in loader: x = jnp.array(x)` (or `batch["image"]`): a batch the step loop draws
    from a host iterable and converts every step (the binding that reaches the use is the loop's)."""
    while isinstance(value, (cst.Subscript, cst.Attribute)):
        value = value.value
    if not isinstance(value, cst.Name) or site.loop is None:
        return False
    seq = model.name_seq.get(id(value))
    before = [a for a in fn.bindings(value.value) if seq is not None and a.seq < seq]
    if not before:
        return False
    last = before[-1]
    return last.value is None and isinstance(last.site.node, cst.For) \
        and last.site.loop is not None and last.site.loop.encloses(site.loop)


def _numpy_rows(model: SemanticModel, fn: Function, value: cst.BaseExpression) -> bool:
    """`v` bound by `for k, v in batch_np.items()` (a comprehension or loop) over NumPy data."""
    if not isinstance(value, cst.Name):
        return False
    for a in fn.bindings(value.value):
        node = a.site.node
        if a.value is None and isinstance(node, (cst.CompFor, cst.For)):
            it = node.iter
            if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) \
                    and it.func.attr.value in ("items", "values"):
                it = it.func.value
            if isinstance(it, cst.Name) and (is_numpy_value(model, it, fn)
                                             or _numpy_origin(model, fn, a.site, it) is not None
                                             or _from_host_helper(model, fn, it)):
                return True
    return False


def _from_host_helper(model: SemanticModel, fn: Function, name: cst.Name) -> bool:
    """`batch_np = preprocess(batch)`: every binding calls an untraced same-module helper that
    computes with NumPy and returns no JAX array."""
    bindings = [a for a in fn.bindings(name.value) if a.value is not None]
    if not bindings:
        return False
    for a in bindings:
        target = model.callee(a.value, fn).function if isinstance(a.value, cst.Call) else None
        if target is None or target.jitted or target.traced \
                or any(model.is_array(r, target) for r in target.returns) \
                or not any((model.resolve(s.node.func) or "").startswith("numpy.") for s in target.calls):
            return False
    return True


def _host_expr(model: SemanticModel, fn: Function, site: Site, value: cst.BaseExpression) -> bool:
    """`data[i] * 2`: arithmetic on NumPy data stays NumPy."""
    if isinstance(value, cst.BinaryOperation):
        return any(_host_expr(model, fn, site, side) and not model.is_array(side, fn)
                   for side in (value.left, value.right)) and not model.is_array(value, fn)
    return is_numpy_value(model, value, fn)


def _is_step_call(model: SemanticModel, call: cst.Call, fn: Function) -> bool:
    """A compiled function, a transform's product, a model or optimizer method, or a
    same-module function doing JAX work: a call that runs a step."""
    callee = model.callee(call, fn)
    if callee.jitted or callee.transform is not None:
        return True
    if callee.function is not None and callee.function.does_jax_work and callee.function is not fn:
        return not _returns_numpy(callee.function)
    return callee.qualname is None and model.receiver_kind(call, fn) == "object"


def _loop_computes(model: SemanticModel, site: Site) -> bool:
    """The step loop runs a step: a compiled function, a model or optimizer call, or a
    same-module function doing JAX work. A loop that only converts items or applies single
    `jnp`/`lax` operations to them (set-up code, library internals walking their arguments)
    copies each item once, not the same data every step."""
    loop = model.step_loop_of(site)
    if loop is None or site.loop is None:
        return True  # a per-step function: its callers' loop computes
    fn = loop.function
    for other in fn.calls:
        if not loop.encloses(other.loop):
            continue
        if _is_step_call(model, other.node, fn):
            return True
    return False


def _measured(fn: Function, site: Site, statements: Statements) -> bool:
    """The per-step call (or the call its converted value feeds) runs only to be timed: its
    result is thrown away or just waited for (`while state: f(x).block_until_ready()`)."""
    call = site.node
    outer = call
    for other in fn.calls:  # the outermost call that takes this one as an argument or receiver
        if other.loop is site.loop and any(n is call for n in walk(other.node)) and other.node is not call:
            if outer is call or any(n is outer for n in walk(other.node)):
                outer = other.node
    return statements.only_waited_for(outer) or statements.only_waited_for(call)


def _returns_numpy(fn: Function) -> bool:
    """`def forces(...) -> np.ndarray`: a helper that says it computes on the host."""
    node = fn.node
    if not isinstance(node, cst.FunctionDef) or node.returns is None:
        return False
    text = cst.Module([]).code_for_node(node.returns.annotation)
    return text.startswith(("np.", "numpy.", "onp."))
