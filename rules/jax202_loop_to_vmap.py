"""JAX202 loop-to-vmap."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import cast

import libcst as cst

from jaxopt_audit.static import (
    SHORT_LOOP,
    Function,
    Invalid,
    Loop,
    Report,
    Rule,
    SemanticModel,
    Site,
    Valid,
    apis,
    carried_names,
    describe,
    host_bound_call,
    host_side,
    iterates_structure,
    literal_trip_count,
    mutated_params,
    read_names,
    reads_timer,
    records_for_rendering,
    target_names,
    traces_as_written,
    walk,
)

# Making or deriving keys is bookkeeping around the work, not the work being repeated.
KEY_FUNCTIONS = apis.KEY_CONSTRUCTORS | apis.KEY_DERIVATIONS | frozenset({"jax.random.key_data",
                                                                        "jax.random.wrap_key_data"})
SEED_TO_KEY = apis.KEY_CONSTRUCTORS | frozenset({"jax.random.fold_in"})
# Array constructors whose listed positional arguments (or keywords) are shapes or sizes.
SHAPE_ARGUMENTS: dict[str, tuple[int, ...]] = {
    "jax.numpy.zeros": (0,), "jax.numpy.ones": (0,), "jax.numpy.empty": (0,), "jax.numpy.full": (0,),
    "jax.numpy.arange": (0, 1, 2), "jax.numpy.linspace": (2,), "jax.numpy.eye": (0, 1),
    "jax.numpy.identity": (0,), "jax.numpy.tri": (0, 1), "jax.numpy.reshape": (1,),
    "jax.numpy.broadcast_to": (1,), "jax.numpy.tile": (1,), "jax.numpy.repeat": (1,),
    "builtins.range": (0, 1, 2),
}
SHAPE_KEYWORDS = frozenset({"shape", "num", "size", "length", "newshape", "repeats", "axis"})
# A keyword named like a size (`token_len=`, `num_layers=`, `hidden_dim=`): the item sets a shape.
_SIZE_KEYWORD = re.compile(r"(^|_)(len|length|size|dim|shape|width|depth|count)s?($|_)|^(n|num)_", re.IGNORECASE)
GRID_FUNCTIONS = frozenset({"numpy.linspace", "numpy.logspace", "numpy.geomspace", "numpy.arange",
                            "jax.numpy.linspace", "jax.numpy.logspace", "jax.numpy.geomspace",
                            "jax.numpy.arange"})
# Loop variables named like independent replicates or hyper-parameters.
# (`key` is not among them: `for key in d` iterates a dict; keys are recognised by their use.)
_ITEM_NAME = re.compile(r"(^|_)(seed|seeds|lr|learning_rate|step_size|temperature|trial|replicate)($|_)",
                        re.IGNORECASE)


class LoopToVmap(Rule):
    """
    ## What it does
    Finds Python `for` loops over independent items — seeds, PRNG keys, hyper-parameter values,
    rows of an array — whose body calls the same JAX function with each item, carries no state
    from one iteration to the next, and collects the results (`results.append(...)`,
    `results[i] = ...`).

    An item is independent when it is a PRNG key (`for k in jax.random.split(key, n)`) or a seed
    turned into one, a value from a grid (`np.logspace(...)`), a row of a JAX array built in the
    same function, or a loop variable named like one (`seed`, `key`, `lr`).

    ## Why is this bad?
    Each iteration is a separate dispatch of a small computation: the device runs one replicate
    at a time and mostly waits for Python. `jax.vmap` turns the function of one item into a
    function of a stacked batch of items, which XLA runs as one wide computation. A blog post on
    an online learner ran 30 seeds in one vmapped call instead of 30 sequential runs: ~30x.

    ## How to fix
    Stack the items (`keys = jax.random.split(key, 30)`, `lrs = jnp.array([...])`) and call
    `jax.vmap(run)(keys)` (use `in_axes` to say which arguments are batched), jitted once.
    Results come back stacked along axis 0.

    The repeated call must be a function: a jitted callable, a function of the same module that
    does JAX work, or a model's method; a loop around a single `jax.numpy` / `jax.random`
    primitive is left alone (give the primitive the batch shape instead).

    The rule stays quiet on loops that carry state (that is JAX201), also in place (a called
    function that updates an object passed every iteration: `train_step(model, optimizer, batch)`
    calling `optimizer.update(grads)`, the NNX idiom), on loops whose items change the static
    structure of the call (a different function per item, an item used as a shape, a keyword
    named like a size such as `token_len=`, a static argument, or to build a model or
    optimizer), on loops over dict items and files, on loops that do host I/O each iteration,
    on loops that do not collect their results, and in functions that read a timer (a benchmark
    measures the loop of calls as it is written). Nor does it report a handful of cases written
    out in the file (at most 8: `for lr in [1e-3, 1e-2, 1e-1]`, `for hand in TEST_HANDS` with
    the list spelled out): batching that few items gains next to nothing, and such cases often
    differ in shape.

    A function of the file that is not jitted is suggested for `jax.vmap` only if it can be
    vmapped as it is written: it does no host work (prints, reads values back with `float()`
    or `.item()`, plots), and, for a module-level def, jitting it with the parameters the item
    does not reach marked static gives the trace rules (JAX401-JAX404) nothing new to report (no
    Python `if` on a mapped value, no NumPy on it, no value-dependent shape). A loop whose only
    candidate fails this is left alone. A setting bound into the function with `partial` and
    jitted per item (`objective = jax.jit(partial(nll, scale=s))`, then `objective(x, y)`) is
    the same function called with `s`: reported when `nll` can be vmapped over `scale` as
    written (not when the setting is a size or shape).

    ## Measured
    A blog post on a multi-seed online learner: 4 conditions x 30 seeds, ~63 min sequential,
    ~2.1 min batched (~30x); see the `batched_learner` pipeline's vmap stage for this machine's
    figure.
    """

    CODE = "JAX202"
    NAME = "loop-to-vmap"
    SEVERITY = "warning"
    SUMMARY = "Python loop over independent items calling the same JAX function; use jax.vmap"
    FIX = "Stack the items and call `jax.vmap(fn)(items)` once (jitted); results come back stacked."

    INVALID = [
        Invalid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def run_learning_loop(key, observations):
                weights = jax.random.normal(key, (observations.shape[1],))
                return jnp.mean((observations @ weights) ** 2)

            def run_seeds(observations, num_seeds=30):
                results = []
                for seed in range(num_seeds):  # <- JAX202
                    results.append(run_learning_loop(jax.random.key(seed), observations))
                return jnp.stack(results)
        """, note="an online learner's 30 seeds run one after the other"),
        Invalid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def fit(lr, xs, ys):
                w = jnp.linalg.solve(xs.T @ xs + lr * jnp.eye(xs.shape[1]), xs.T @ ys)
                return jnp.mean((xs @ w - ys) ** 2)

            def sweep(xs, ys, key, lrs):
                errors = {}
                for lr in lrs:  # <- JAX202
                    errors[lr] = fit(lr, xs, ys)
                keys = jax.random.split(key, 16)
                noisy = []
                for k in keys:  # <- JAX202
                    noisy.append(fit(0.1, xs + jax.random.normal(k, xs.shape), ys))
                return errors, noisy
        """),
    ]
    VALID = [
        Valid("""
            import jax
            import jax.numpy as jnp

            def run(key, n):
                x = jax.random.normal(key, (n,))
                if x.sum() > 0:  # a Python branch on the drawn value: vmap fails on it
                    return x
                return -x

            def sweep(n_seeds):
                outs = []
                for seed in range(n_seeds):
                    outs.append(run(jax.random.key(seed), 100))
                return outs
        """),
        Valid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def run_batched(keys, observations):
                def single_seed_run(key):
                    weights = jax.random.normal(key, (observations.shape[1],))
                    return jnp.mean((observations @ weights) ** 2)
                return jax.vmap(single_seed_run)(keys)

            @jax.jit
            def update(w, x):
                return w - 0.01 * jnp.dot(w, x) * x

            def run(observations, key):
                results = run_batched(jax.random.split(key, 30), observations)
                w = jnp.zeros(observations.shape[1])
                for x in observations:
                    w = update(w, x)
                return results, w
        """, note="already vmapped; and a loop that carries `w` (JAX201's case)"),
        Valid("""
            import jax
            import jax.numpy as jnp
            from functools import partial

            @partial(jax.jit, static_argnames="width")
            def init_model(key, width):
                return jax.random.normal(key, (width, width))

            def build(key):
                models = []
                for k, width in zip(jax.random.split(key, 4), (64, 128, 256, 512)):
                    models.append(init_model(k, width))
                grids = []
                for n in [8, 16, 32]:
                    grids.append(jnp.zeros((n, n)) + models[0].mean())
                return models, grids
        """, note="items that change shapes or static arguments"),
    ]

    def check(self, model: SemanticModel) -> Iterator[Report]:
        for fn in model.functions:
            if fn.traced:
                continue
            for loop in fn.loops:
                # epoch-like loops count too: one seed's whole run (its own loop or scan) per item
                if not isinstance(loop.node, cst.For) or not loop.is_step:
                    continue
                found = self._independent_call(model, fn, loop)
                if found is not None:
                    header = describe(loop.node.iter)
                    bound = _bound_with_the_item(model, fn, loop, found.node, _item_names(fn, loop))
                    via = f" (`{bound[0].name}` with {', '.join(f'`{p}`' for p in sorted(bound[1]))} from the " \
                          "item, bound by `partial`)" if bound is not None else ""
                    yield Report(loop.node, f"this loop over `{header}` calls `{describe(found.node, 50)}`{via} once "
                                            "per independent item, carrying no state between iterations; "
                                            "`jax.vmap` over the stacked items runs them in one call")

        for fn in model.functions:
            if fn.traced:
                continue
            for site in fn.comprehensions:
                call = _seeded_comprehension_call(model, fn, site.node)
                if call is not None:
                    yield Report(site.node, f"this comprehension calls `{describe(call, 50)}` once per seed or "
                                            "setting, each independent of the others; `jax.vmap` over the "
                                            "stacked items runs them in one call")

    def _independent_call(self, model: SemanticModel, fn: Function, loop: Loop) -> Site | None:
        if iterates_structure(model, loop):  # for-loops only reach here
            return None
        count = literal_trip_count(loop, model.resolve)
        if count is not None and count <= SHORT_LOOP:
            return None  # a handful of written-out cases (`for hand in test_hands`): vmap gains nothing
        if carried_names(model, loop) or host_bound_call(model, loop) is not None \
                or records_for_rendering(model, loop) is not None:
            return None
        if reads_timer(model, fn.calls):
            return None  # a benchmark: the loop of calls is the workload it measures
        items = _item_names(fn, loop)
        if not items or not _collects_results(model, fn, loop, items):
            return None
        if not _independent_items(model, fn, loop, items):
            return None
        candidates = []
        for site in fn.calls:
            if not loop.encloses(site.loop):
                continue
            call: cst.Call = site.node
            bound = _bound_with_the_item(model, fn, loop, call, items)
            if bound is not None:  # `objective = jax.jit(partial(nll, scale=s))`, then `objective(x, y)`
                if _vmappable_as_written(model, *bound):
                    candidates.append(site)
                continue
            if not _mentions(call.args, items):
                continue
            if _builds_a_called_partial(model, fn, loop, call, items):
                continue  # judged at the call of what it builds, above
            if _structural_use(model, fn, call, items):
                return None
            if read_names(call.func) & items:
                return None  # a different function per item
            if _updates_shared_object(model, fn, call, items):
                return None  # `train_step(model, optimizer, batch)` under nnx.jit: state carried in place
            q = model.resolve(call.func)
            if q in KEY_FUNCTIONS or model.call_work(call, fn) is None:
                continue
            callee = model.callee(call, fn)
            # a function of the user's (jitted or not, or a model's method), not one primitive
            if callee.function is not None or callee.jitted or model.receiver_kind(call, fn) == "object":
                if callee.function is not None and not callee.jitted and not _vmappable(model, call, callee.function,
                                                                                        items):
                    continue  # vmap would fail on it as written (a branch or a read on the item)
                candidates.append(site)
        return candidates[0] if candidates else None


def _vmappable(model: SemanticModel, call: cst.Call, target: Function, items: set[str]) -> bool:
    """The un-jitted function of this file can run under `jax.vmap` as it is written: it does no
    host work (prints, reads values back, plots), and, for a module-level def, jitting it with
    the parameters the loop's item does not reach marked static adds no trace-rule finding (no
    Python branch, NumPy call or value-dependent shape on a mapped value). Nested functions and
    methods are judged by the first test alone."""
    params = list(target.params)
    mapped: set[str] = set()
    for index, arg in enumerate(call.args):
        if arg.star:
            return False  # `f(*args)`: which parameters are mapped is unknown
        name = arg.keyword.value if arg.keyword is not None else (params[index] if index < len(params) else None)
        if name is not None and read_names(arg.value) & items:
            mapped.add(name)
    return _vmappable_as_written(model, target, mapped)


def _vmappable_as_written(model: SemanticModel, target: Function, mapped: set[str]) -> bool:
    """`_vmappable` for a function and the parameters the items reach."""
    if host_side(model, target):
        return False
    if not isinstance(target.node, cst.FunctionDef) or target.parent is None or not target.parent.is_module:
        return True
    return traces_as_written(model, target.node, static=set(target.params) - mapped)


def _builds_a_called_partial(model: SemanticModel, fn: Function, loop: Loop, call: cst.Call, items: set[str]) -> bool:
    """`objective = jax.jit(partial(nll, scale=s))` (or the `partial` inside it), where the loop
    then calls `objective(...)`: the item is an argument of `nll` bound early, not a new program."""
    names = {t for a in fn.assignments if loop.encloses(a.site.loop) and isinstance(a.value, cst.Call)
             and (a.value is call or any(arg.value is call for arg in a.value.args)) for t in a.targets}
    return any(isinstance(s.node.func, cst.Name) and s.node.func.value in names
               and _bound_with_the_item(model, fn, loop, s.node, items) is not None
               for s in fn.calls if loop.encloses(s.loop))


def _bound_with_the_item(model: SemanticModel, fn: Function, loop: Loop, call: cst.Call,
                         items: set[str]) -> tuple[Function, set[str]] | None:
    """`objective(x, y)` where the loop binds `objective = jax.jit(partial(nll, scale=s))` (or
    `partial(nll, s)`) with `s` from the item: the function of this file it calls, and the
    parameters the item reaches through the partial."""
    if not isinstance(call.func, cst.Name):
        return None
    bindings = [a for a in fn.bindings(call.func.value) if loop.encloses(a.site.loop)]
    if len(bindings) != 1 or not isinstance(bindings[0].value, cst.Call):
        return None
    value = bindings[0].value
    if model.resolve(value.func) in apis.JIT_WRAPPERS and value.args and isinstance(value.args[0].value, cst.Call):
        value = value.args[0].value
    if model.resolve(value.func) != "functools.partial" or not value.args:
        return None
    target = model.function_ref(value.args[0].value, fn)
    if target is None:
        return None
    mapped: set[str] = set()
    for index, arg in enumerate(value.args[1:]):
        name = arg.keyword.value if arg.keyword is not None else (
            target.params[index] if index < len(target.params) else None)
        if name is not None and read_names(arg.value) & items:
            mapped.add(name)
    return (target, mapped) if mapped else None


def _updates_shared_object(model: SemanticModel, fn: Function, call: cst.Call, items: set[str]) -> bool:
    """The called function updates in place an object that every iteration passes again (a model
    and optimizer updated by `optimizer.update(grads)`, `self` through a method): one step
    depends on the last, so the items are not independent."""
    callee = model.callee(call, fn).function
    if callee is None:
        return False
    mutated = mutated_params(model).get(callee, frozenset())
    if not mutated:
        return False
    params = callee.params[1:] if callee.cls is not None and isinstance(call.func, cst.Attribute) else callee.params
    if callee.cls is not None and callee.params and callee.params[0] in mutated \
            and isinstance(call.func, cst.Attribute):
        return True
    for index, arg in enumerate(call.args):
        name = arg.keyword.value if arg.keyword is not None else (params[index] if index < len(params) else None)
        if name in mutated and not read_names(arg.value) & items:
            return True
    return False


def _mentions(args, names: set[str]) -> bool:
    return any(read_names(a.value) & names for a in args)


def _item_names(fn: Function, loop: Loop) -> set[str]:
    """The loop variables and the names computed from them in the body (the per-item values)."""
    items = set(loop.targets)
    for _ in range(3):
        for a in fn.assignments:
            if a.value is not None and loop.encloses(a.site.loop) and read_names(a.value) & items:
                items.update(a.targets)
    return items


def _collects_results(model: SemanticModel, fn: Function, loop: Loop, items: set[str]) -> bool:
    """`results.append(...)` / `results[i] = ...` on a container that lives outside the loop."""
    inside = {t for a in fn.assignments if loop.encloses(a.site.loop) for t in a.targets}
    for site in fn.calls:
        call = site.node
        if loop.encloses(site.loop) and isinstance(call.func, cst.Attribute) \
                and call.func.attr.value in ("append", "extend", "add") \
                and isinstance(call.func.value, cst.Name) and call.func.value.value not in inside \
                and _mentions(call.args, items | _call_results(fn, loop)):
            return True
    for a in fn.assignments:
        target = a.site.node
        if loop.encloses(a.site.loop) and isinstance(target, cst.Subscript) \
                and isinstance(target.value, cst.Name) and target.value.value not in inside \
                and any(isinstance(e.slice, cst.Index) and read_names(e.slice.value) & items
                        for e in target.slice):
            return True
    return False


def _call_results(fn: Function, loop: Loop) -> set[str]:
    return {t for a in fn.assignments if loop.encloses(a.site.loop) and isinstance(a.value, cst.Call)
            for t in a.targets}


def _independent_items(model: SemanticModel, fn: Function, loop: Loop, items: set[str]) -> bool:
    """The loop runs over replicates or settings, not over structure: PRNG keys or seeds turned
    into keys, a literal grid of numbers, the rows of JAX arrays, or variables named so."""
    iterable = cast(cst.For, loop.node).iter  # for-loops only reach here
    zipped = isinstance(iterable, cst.Call) and model.resolve(iterable.func) in ("builtins.enumerate",
                                                                                 "builtins.zip")
    sources = [a.value for a in iterable.args if a.keyword is None] \
        if isinstance(iterable, cst.Call) and zipped else [iterable]
    if sources and all(_is_grid(model, fn, s) or _is_key_batch(model, fn, s) or _is_jax_array(model, fn, s)
                       for s in sources):
        return True
    if any(_ITEM_NAME.search(name) for name in loop.targets):
        return True
    # a seed or counter turned into a key, or the loop variable used as a key
    targets = set(loop.targets)
    for site in fn.calls:
        call: cst.Call = site.node
        if not loop.encloses(site.loop) or not call.args:
            continue
        q = model.resolve(call.func) or ""
        if q in SEED_TO_KEY and _mentions(call.args, targets):
            return True
        first = call.args[0].value
        if q.startswith("jax.random.") and isinstance(first, cst.Name) and first.value in targets:
            return True
    return False


def _is_key_batch(model: SemanticModel, fn: Function, expr: cst.BaseExpression) -> bool:
    """`jax.random.split(key, n)` or a name bound to it."""
    if isinstance(expr, cst.Call):
        return model.resolve(expr.func) == "jax.random.split"
    if isinstance(expr, cst.Name):
        bindings = fn.bindings(expr.value)
        return len(bindings) == 1 and bindings[0].value is not None \
            and _is_key_batch(model, fn, bindings[0].value)
    return False


def _is_jax_array(model: SemanticModel, fn: Function, expr: cst.BaseExpression) -> bool:
    """A JAX array built in this function (`xs = jnp.stack(...)`, a jitted function's output):
    iterating it yields rows. Parameters are not trusted: in library code they are often pytrees."""
    if not isinstance(expr, cst.Name) or expr.value in fn.params:
        return False
    bindings = fn.bindings(expr.value)
    return bool(bindings) and all(a.value is not None and model.is_array(a.value, fn) for a in bindings)


def _is_grid(model: SemanticModel, fn: Function, expr: cst.BaseExpression) -> bool:
    """`[1e-3, 1e-2]`, `np.logspace(-4, 0, 8)`, or a name bound to one."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return len(expr.elements) > 1 and all(
            isinstance(e.value, (cst.Integer, cst.Float)) or (
                isinstance(e.value, cst.UnaryOperation) and isinstance(e.value.expression, (cst.Integer, cst.Float)))
            for e in expr.elements)
    if isinstance(expr, cst.Call):
        return model.resolve(expr.func) in GRID_FUNCTIONS
    if isinstance(expr, cst.Name):
        bindings = fn.bindings(expr.value) or model.module_function.bindings(expr.value)
        return len(bindings) == 1 and bindings[0].value is not None and _is_grid(model, fn, bindings[0].value)
    return False


def _structural_use(model: SemanticModel, fn: Function, call: cst.Call, items: set[str]) -> bool:
    """The item picks shapes, static arguments or a model/optimizer: calls differ in structure."""
    q = model.resolve(call.func)
    positions = SHAPE_ARGUMENTS.get(q or "", ())
    for index, arg in enumerate(call.args):
        used = bool(read_names(arg.value) & items)
        if not used:
            continue
        if arg.keyword is not None and (arg.keyword.value in SHAPE_KEYWORDS
                                        or _SIZE_KEYWORD.search(arg.keyword.value)):
            return True
        if arg.keyword is None and index in positions:
            return True
        if q is not None and q.startswith("jax.random.") and q not in KEY_FUNCTIONS and (
                (arg.keyword is None and index == 1) or _inside_shape_tuple(arg.value, items)):
            return True
    callee = model.callee(call, fn)
    if callee.cls is not None:
        return True
    if callee.function is not None and callee.function.static_params:
        params = callee.function.params
        for index, arg in enumerate(call.args):
            name = arg.keyword.value if arg.keyword is not None else (params[index] if index < len(params) else None)
            if name in callee.function.static_params and read_names(arg.value) & items:
                return True
    if model.value_kind(call, fn) == "object":
        return True  # `optax.adam(lr)`, `Model(width)`: a different program per item
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("reshape", "repeat", "tile"):
        return True  # `x.reshape(n)` with an item: a different shape per item
    return False


def _inside_shape_tuple(expr: cst.BaseExpression, items: set[str]) -> bool:
    return isinstance(expr, cst.Tuple) and any(read_names(e.value) & items for e in expr.elements)


def _seeded_comprehension_call(model: SemanticModel, fn: Function, node: cst.CSTNode) -> cst.Call | None:
    """`[run(jax.random.key(s)) for s in range(n)]`, `[fit(lr, x) for lr in (1e-3, 1e-2, 1e-1)]`:
    one generator, no filter, the element a call of a jitted or same-module JAX function whose
    item is a seed turned into a key, a key from `split`, or a literal grid of numbers."""
    if not isinstance(node, cst.ListComp) or node.for_in.inner_for_in is not None or node.for_in.ifs:
        return None
    call = node.elt
    if not isinstance(call, cst.Call):
        return None
    items = set(target_names(node.for_in.target))
    iterable = node.for_in.iter
    if not items or not _mentions(call.args, items) or read_names(call.func) & items:
        return None
    callee = model.callee(call, fn)
    if not (callee.jitted or (callee.function is not None and callee.function.does_jax_work)):
        return None
    if _structural_use(model, fn, call, items):
        return None
    seeded = any(isinstance(n, cst.Call) and model.resolve(n.func) in SEED_TO_KEY and read_names(n) & items
                 for a in call.args for n in walk(a.value))
    if seeded or _is_key_batch(model, fn, iterable) or _is_grid(model, fn, iterable):
        return call
    return None
