"""JAX202 loop-to-vmap."""

from __future__ import annotations

from collections.abc import Iterator

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
    bound_with_the_item,
    builds_a_called_partial,
    carried_names,
    collects_results,
    describe,
    host_bound_call,
    independent_items,
    is_grid,
    is_key_batch,
    item_names,
    iterates_structure,
    literal_trip_count,
    mentions,
    read_names,
    reads_timer,
    records_for_rendering,
    structural_use,
    target_names,
    updates_shared_object,
    vmappable,
    vmappable_as_written,
    walk,
)


class LoopToVmap(Rule):
    """
    ## What it does
    Finds Python `for` loops over independent items — seeds, PRNG keys, hyper-parameter values,
    rows of an array — whose body calls the same JAX function with each item, carries no state
    from one iteration to the next, and collects the results (`results.append(...)`,
    `results[i] = ...`).

    An item is independent when it is a PRNG key (`for k in jax.random.split(key, n)`, or a loop
    variable passed to `jax.random` as one) or a seed turned into one, a value from a grid
    (`np.logspace(...)`), a row of a JAX array built in the same function, or a loop variable
    named like a replicate or a setting (`seed`, `trial`, `lr`, `step_size`, `temperature`).

    Two tests read identifier names, where the file shows nothing else. A loop over a parameter
    or an attribute (`for lr in self.lrs`) iterates values the file does not show: the loop
    variable's name is the evidence that they are replicates or settings (not `key`, which as
    often iterates a dict). A keyword that an item reaches in a call of a function the file does
    not show is taken to set a shape when it is named like a size (`token_len=`, `num_layers=`,
    `hidden_dim=`): mapping over a shape fails, so such loops are left alone.

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
                found = _independent_call(model, fn, loop)
                if found is not None:
                    header = describe(loop.node.iter)
                    bound = bound_with_the_item(model, fn, loop, found.node, item_names(fn, loop))
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


def _independent_call(model: SemanticModel, fn: Function, loop: Loop) -> Site | None:
    """The call a `for` loop over independent items repeats once per item, or None."""
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
    items = item_names(fn, loop)
    if not items or not collects_results(fn, loop, items):
        return None
    if not independent_items(model, fn, loop):
        return None
    candidates = []
    for site in fn.calls:
        if not loop.encloses(site.loop):
            continue
        call: cst.Call = site.node
        bound = bound_with_the_item(model, fn, loop, call, items)
        if bound is not None:  # `objective = jax.jit(partial(nll, scale=s))`, then `objective(x, y)`
            if vmappable_as_written(model, *bound):
                candidates.append(site)
            continue
        if not mentions(call.args, items):
            continue
        if builds_a_called_partial(model, fn, loop, call, items):
            continue  # judged at the call of what it builds, above
        if structural_use(model, fn, call, items):
            return None
        if read_names(call.func) & items:
            return None  # a different function per item
        if updates_shared_object(model, fn, call, items):
            return None  # `train_step(model, optimizer, batch)` under nnx.jit: state carried in place
        q = model.resolve(call.func)
        if q in apis.KEY_BOOKKEEPING or model.call_work(call, fn) is None:
            continue
        callee = model.callee(call, fn)
        # a function of the user's (jitted or not, or a model's method), not one primitive
        if callee.function is not None or callee.jitted or model.receiver_kind(call, fn) == "object":
            if callee.function is not None and not callee.jitted \
                    and not vmappable(model, call, callee.function, items):
                continue  # vmap would fail on it as written (a branch or a read on the item)
            candidates.append(site)
    return candidates[0] if candidates else None


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
    if not items or not mentions(call.args, items) or read_names(call.func) & items:
        return None
    callee = model.callee(call, fn)
    if not (callee.jitted or (callee.function is not None and callee.function.does_jax_work)):
        return None
    if structural_use(model, fn, call, items):
        return None
    seeded = any(isinstance(n, cst.Call) and model.resolve(n.func) in apis.SEED_TO_KEY and read_names(n) & items
                 for a in call.args for n in walk(a.value))
    if seeded or is_key_batch(model, fn, iterable) or is_grid(model, fn, iterable):
        return call
    return None
