"""JAX701 unsynchronized-timing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import cast

import libcst as cst

from jaxopt_audit.static import (
    Function,
    Invalid,
    Loop,
    Report,
    Rule,
    SemanticModel,
    TimedRegion,
    Valid,
    apis,
    block_until_ready,
    callee_name,
    calls_in_order,
    describe,
    drives_steps,
    int_value,
    literal_texts,
    marked_wrong,
    read_names,
    runs_compiled_loops,
    shows_async_dispatch,
    string_value,
    syncing_functions,
    timed_regions,
    timeit_block_until_ready,
    unsynchronized_work,
    walk,
    work_results,
)

TIMEIT_RUNNERS = frozenset({"timeit.timeit", "timeit.repeat", "timeit.Timer"})
# Words that say a measurement knowingly includes compilation.
_SAYS_COMPILE = re.compile(r"compil|first|warm|cold|trac|startup|lower", re.IGNORECASE)
# ... or that it times a first call on purpose ("Initial step time"): its compilation is what it
# means to include, though the run it queued still needs a wait
_SAYS_FIRST_CALL = re.compile(_SAYS_COMPILE.pattern + "|initial", re.IGNORECASE)


class UnsynchronizedTiming(Rule):
    """
    ## What it does
    Finds timers (`time.time`, `time.perf_counter`, `time.monotonic`, `timeit`) around JAX work
    whose result is not waited for before the second reading: no `.block_until_ready()`,
    `jax.block_until_ready(...)`, or host conversion (`float(x)`, `np.asarray(x)`, `x.item()`)
    after the last JAX call of the timed region. Also finds timed regions that contain the first
    call of a function jitted in the same scope without saying so (the number then includes
    tracing and compilation).

    ## Why is this bad?
    JAX dispatches asynchronously: a call returns as soon as the work is queued, and the device
    computes in the background. A timer read right after the call measures the dispatch — often
    microseconds — not the computation (the "JAX Basics" post: `%time jnp.dot(x, x.T)` versus
    `%timeit jnp.dot(x, x.T).block_until_ready()`). The first call of a jitted function traces and
    compiles it, which can take seconds; mixed into a steady-state figure it makes the compiled
    code look slow.

    ## How to fix
    Wait for the result before reading the timer: `out = f(x); out.block_until_ready()` or
    `jax.block_until_ready(out)` for a pytree. Call the function once before starting the timer
    (a warm-up) and report compile time separately — or name the number for what it is
    (`compile_and_run_s`).

    In notebooks, `%timeit f(x)` and `%time f(x)` are read as the `timeit` call they amount to:
    `%timeit f(x).block_until_ready()` is quiet, `%timeit f(x)` of a jitted `f` is reported.

    ## Automatic fix
    Safe: `scan --fix` wraps the last JAX call before the reading in `jax.block_until_ready(...)`
    (which returns its argument unchanged, for any pytree), and the body of a timed
    `lambda: f(x)` likewise. A first (compiling) call in the timed region is not fixed: where the
    warm-up belongs is yours to say, and neither is a `%timeit` line (add the wait by hand).

    The first-call check is made on one-shot measurements of small programs only: a reading
    inside a loop is a per-iteration or windowed figure (steps per second), whose first window
    everyone knows includes compilation, and a whole training run timed end to end
    (`jax.jit(jax.vmap(make_train(config)))`, a function that scans, or a loop threading state
    through a jitted step) is a legitimate wall time.

    The rule stays quiet when a sync (or a host conversion of the result) follows the last JAX
    call before the second reading, when a function called in between may sync (an unknown
    function given the result; appending it to a list the function made reads nothing), after
    a call that writes arrays out (`eqx.tree_serialise_leaves`, `pickle.dump`, `np.save`: each
    leaf is copied to the host first), when the timed function syncs itself, when an f-string formats a
    device value or an `if`/`while` tests one before the second reading
    (`print(f"{loss} {time.time() - t0}")`, `if all_done(mask): break`), on an eager helper of
    the file unless its own body ends with work nothing waits for and it returns that work (one
    that plots, prints or hands its result to another library may have waited), on an eager
    function of another scanned module (its summary does not say whether it waits), after a
    call named for waiting (`executable.sync()`, `sync_func()`, `barrier()`) or a multihost
    `process_allgather` or `broadcast_one_to_all` (each returns host arrays), on copies, casts
    and keys (`jax.device_put`, `jax.make_array_from_*`, `.astype`, `jax.random.split`: loading
    and serving code times them as dispatch metrics, and a copy's cost lands in the wait for
    the computation that reads it; the computation before them is still followed), on pytree
    bookkeeping (`tree_flatten`, `tree_structure`: no device work), on jitted functions that
    compute nothing (dispatch-overhead benchmarks), on a reading every k steps of a loop (a
    throughput window), on a first call warmed up ahead of time (`f.lower(x).compile()`), on
    arrays made for a lowering (`jax.jit(f).lower(x, jnp.arange(n)).compile()` times
    compilation: lowering reads only their shapes), on a one-off first call of a small jitted
    function (a script's top level, or a function it calls once, timing `f(x)` of a loop-free
    jitted `f`: the figure is compilation, which no wait changes; a whole run, or a first call
    timed as the "initial step", is still reported), and on a
    measurement that says it is a compile time (`compile_s`, "first call", "warm-up",
    "compiling eval_step... done in"): tracing and compilation run synchronously inside the call,
    so such a figure is what it says, whether or not the run after it was waited for. A first call
    timed on purpose ("Initial step time") is not said to include compilation, though a missing
    wait after it is still reported: the run it queued spills into the next figure. It also
    stays quiet on a loop inside the timed region that feeds each step a new item of a host
    stream (`for x, y in loader:`, `next(it)`): the host cannot run more than a few steps ahead
    of a device fed batch by batch, so an epoch time is right to within its last steps. In
    notebooks, a cell whose comments or the prose around it call what it does wrong (`# WRONG:
    measures dispatch time`, "the most common profiling mistake") is a tutorial showing the
    mistake on purpose, and is quiet, as is one under or above prose about asynchronous dispatch
    (`%time f(x)` under "JAX is asynchronous", then `%time f(x).block_until_ready()`; a timing
    followed by "the above timing is the time taken to dispatch the work"); so is a
    region timing another library's tensor
    (`loss.backward()`: no JAX array has that method).

    ## Measured
    `jit_basics` pipeline (after the "JAX Basics" post): the async-dispatch benchmark times the
    same call with and without `block_until_ready`.
    """

    CODE = "JAX701"
    NAME = "unsynchronized-timing"
    SEVERITY = "warning"
    SUMMARY = "Timer around JAX work without block_until_ready, or including the first (compiling) call"
    IMPACT = "measurement"
    FIX = ("Call `.block_until_ready()` on the result (or `jax.block_until_ready(out)`) before reading "
           "the timer, and time a warm-up call separately.")

    INVALID = [
        Invalid("""
            import time
            import jax
            import jax.numpy as jnp

            x = jax.random.normal(jax.random.key(0), (3000, 3000))
            start = time.time()
            y = jnp.dot(x, x.T)
            print("dot:", time.time() - start)  # <- JAX701

            selu = jax.jit(lambda v: 1.05 * jnp.where(v > 0, v, 1.67 * jnp.exp(v) - 1.67))
            t0 = time.perf_counter()
            selu(x).block_until_ready()
            elapsed = time.perf_counter() - t0  # <- JAX701
            print(f"selu: {elapsed * 1e3:.2f} ms")
        """, note="dispatch timed, not compute; a first call timed as steady state"),
        Invalid("""
            import time
            import timeit
            import jax
            import jax.numpy as jnp

            @jax.jit
            def train_step(w, x):
                return w - 0.1 * jnp.mean(x @ w) * w

            def benchmark(w, x, steps=100):
                w = train_step(w, x).block_until_ready()  # warm-up
                start = time.perf_counter()
                for _ in range(steps):
                    out = train_step(w, x)
                end = time.perf_counter()  # <- JAX701
                per_call = timeit.timeit(lambda: train_step(w, x), number=steps)  # <- JAX701
                return (end - start) / steps, per_call
        """),
    ]
    VALID = [
        Valid("""
            import time
            import jax
            import jax.numpy as jnp

            @jax.jit
            def train_step(w, x):
                return w - 0.1 * jnp.mean(x @ w) * w

            def benchmark(w, x, steps=100):
                t0 = time.perf_counter()
                w = train_step(w, x).block_until_ready()
                compile_s = time.perf_counter() - t0
                start = time.perf_counter()
                for _ in range(steps):
                    out = train_step(w, x)
                out.block_until_ready()
                steady_s = (time.perf_counter() - start) / steps
                return compile_s, steady_s

            def timed_loss(w, x):
                start = time.perf_counter()
                loss = float(jnp.mean(train_step(w, x)))
                return loss, time.perf_counter() - start
        """),
    ]

    def demonstrated(self, finding, cell) -> bool:
        """A tutorial cell that calls its timing wrong on purpose (`# WRONG: measures dispatch`)
        beside the right one, or that shows asynchronous dispatch."""
        return marked_wrong(cell) or shows_async_dispatch(cell)

    def fix(self, model: SemanticModel, report: Report):
        if isinstance(report.node, cst.Call) and model.resolve(report.node.func) in TIMEIT_RUNNERS:
            if _magic(report.node) is not None:
                return None  # the cell holds `%timeit f(x)`, not this reading of it: not rewritten
            return timeit_block_until_ready(model, report.node)
        for fn in model.functions:
            if fn.traced:
                continue
            for region in timed_regions(model, fn):
                if region.end is report.node:
                    pending = unsynchronized_work(model, fn, region.calls, work_results(model, fn))
                    return block_until_ready(model, pending) if pending is not None else None
        return None

    def check(self, model: SemanticModel) -> Iterator[Report]:
        for fn in model.functions:
            if fn.traced:
                continue
            results = work_results(model, fn)
            order: list[cst.Call] | None = None
            windowed = {id(s.node) for s in fn.calls if s.guarded and s.loop is not None}
            for region in timed_regions(model, fn):
                pending = unsynchronized_work(model, fn, region.calls, results)
                # a reading every k steps of a loop is a throughput window: the device cannot run
                # more than a few steps ahead, so steady-state windows measure the computation
                if pending is not None and id(region.end) not in windowed:
                    if _says_compile(model, fn, region):
                        continue  # a compile time: tracing and compiling run synchronously in the call
                    if not region.in_loop and not any(_loops_in_region(model, fn, pending, region)) \
                            and _entered_once(model, fn) \
                            and _first_jitted(model, fn, region.start, pending, known=True) \
                            and not _says_compile(model, fn, region, _SAYS_FIRST_CALL):
                        # a one-off first run: the figure is its compilation, which no wait changes;
                        # one timed as the "initial step" is a real step whose run leaks into the next
                        # figure without a wait
                        continue
                    if _streamed(model, fn, pending, region):
                        continue  # an epoch over a data loader: only the last few steps escape
                    yield Report(region.end, f"`{describe(region.end)}` is read after `{describe(pending)}` "
                                             "without waiting for its result: JAX dispatches asynchronously, "
                                             "so the timer can stop before the device finishes that work")
                    continue
                if order is None:
                    order = calls_in_order(fn)
                first = None if region.in_loop else _first_jitted_call(model, fn, region, order)
                if first is not None and not _says_compile(model, fn, region, _SAYS_FIRST_CALL) \
                        and not _whole_run(model, fn, first, region):
                    yield Report(region.end, f"the timed region ending at `{describe(region.end)}` contains the "
                                             f"first call of `{describe(first.func)}`, so it includes tracing and "
                                             "compilation; warm up before starting the timer or report it as "
                                             "compile time")
            for site in fn.calls:
                call: cst.Call = site.node
                if model.resolve(call.func) in TIMEIT_RUNNERS:
                    timed = _timeit_statement_pending(model, fn, call)
                    if timed is not None:
                        yield Report(call, f"`{_magic(call) or describe(call.func)}` times `{timed}` without "
                                           "`.block_until_ready()`: JAX dispatches asynchronously, so the "
                                           "timer can stop before the device finishes that work")


def _jitted_here(model: SemanticModel, fn: Function) -> dict[str, cst.CSTNode]:
    """Names bound in `fn` to a jit wrapper (`f = jax.jit(g)`); at module level also the
    module's jit-decorated functions."""
    out: dict[str, cst.CSTNode] = {}
    for a in fn.assignments:
        value = a.value
        if isinstance(value, cst.Call) and len(a.targets) == 1:
            q = model.resolve(value.func)
            partial = value.func if isinstance(value.func, cst.Call) else None
            inner = model.resolve(partial.func) if partial is not None else None
            if q in apis.JIT_WRAPPERS or (partial is not None and inner == "functools.partial" and partial.args
                                          and model.resolve(partial.args[0].value) in apis.JIT_WRAPPERS):
                out[a.targets[0]] = value
    if fn.is_module:
        for other in model.functions:
            if other.parent is fn and other.direct_jit and isinstance(other.node, cst.FunctionDef):
                out.setdefault(other.name, other.node)
    return out


def _first_jitted_call(model: SemanticModel, fn: Function, region: TimedRegion,
                       order: list[cst.Call]) -> cst.Call | None:
    """A call in the region of a callable jitted in this scope that was not called before."""
    jitted = _jitted_here(model, fn)
    if not jitted:
        return None
    position = {id(c): i for i, c in enumerate(order)}
    start = position.get(id(region.start))
    if start is None:
        return None
    called_before = {c.func.value for c in order[:start] if isinstance(c.func, cst.Name)}
    # `f.lower(x).compile()` before the timer is an ahead-of-time warm-up of `f`
    called_before |= {c.func.value.value for c in order[:start] if isinstance(c.func, cst.Attribute)
                      and c.func.attr.value in ("lower", "compile") and isinstance(c.func.value, cst.Name)}
    for call in region.calls:
        if type(call) is cst.Call and isinstance(call.func, cst.Name) and call.func.value in jitted \
                and call.func.value not in called_before \
                and _small_program(model, fn, jitted[call.func.value]) and not _plain_def_here(model, fn, call):
            return call
    return None


def _whole_run_program(target: Function) -> bool:
    """The function loops or scans: a whole run (a rollout, a training loop), not a small program."""
    return bool(target.loops) or target.uses_scan or target.contains_step_loop


def _plain_def_here(model: SemanticModel, fn: Function, call: cst.Call) -> bool:
    """The def bound to the called name where the call runs is not jitted: a notebook that
    times one `step` and redefines `step` with `@jax.jit` in a later cell."""
    target = model.function_ref(call.func, fn)
    return target is not None and isinstance(target.node, cst.FunctionDef) and not target.direct_jit


def _small_program(model: SemanticModel, fn: Function, jitted: cst.CSTNode) -> bool:
    """The jitted function is a small one (a lambda, a loop-free def, a library function), so a
    single timed first call is mostly compilation. A whole training run (`make_train(config)`, a
    function that scans or loops) timed end to end is a different, legitimate measurement."""
    if isinstance(jitted, cst.FunctionDef):
        target = model.function_of_def.get(jitted)
    else:
        wrapped = jitted.args[0].value if isinstance(jitted, cst.Call) and jitted.args else None
        if wrapped is None or isinstance(wrapped, cst.Call):
            return False  # a factory's or a transform's product: size unknown
        if isinstance(wrapped, cst.Lambda):
            return True
        target = model.function_ref(wrapped, fn)
        if target is None:
            return (model.resolve(wrapped) or "").startswith(("jax.numpy.", "jax.lax.", "jax.nn."))
    return target is not None and not _whole_run_program(target)


def _says_compile(model: SemanticModel, fn: Function, region: TimedRegion, words: re.Pattern = _SAYS_COMPILE) -> bool:
    """The measurement is labelled as including compilation: its variable name, the text printed
    with it, or a message the timed region itself prints or logs ("Testing and compiling
    eval_step..."), prints just before it starts or just after it ends ("compilation
    complete!") mentions compile / first / warm-up."""
    labels: set[str] = set()
    for a in fn.assignments:
        if a.value is not None and any(n is region.end for n in walk(a.value)):
            labels.update(a.targets)
    for _ in range(3):  # and the names computed from them: `end = time.time(); first_ms = end - start`
        derived = {t for a in fn.assignments if a.value is not None and read_names(a.value) & labels
                   for t in a.targets}
        if derived <= labels:
            break
        labels |= derived
    if any(words.search(name) for name in labels):
        return True
    announced = {id(c) for c in region.calls if type(c) is cst.Call and _announces(c)}
    # and a message printed just before the timer starts (`print("Compiling and running...")`):
    # it names what the region is about to time
    start = model.line_of(region.start)
    announced |= {id(s.node) for s in fn.calls if _announces(s.node)
                  and start - _ANNOUNCED_WITHIN <= model.line_of(s.node) < start}
    # or just after the second reading (`end = perf_counter()`, `print("compilation complete!")`):
    # it says what the figure was
    end = model.line_of(region.end)
    announced |= {id(s.node) for s in fn.calls if _announces(s.node)
                  and end < model.line_of(s.node) <= end + _ANNOUNCED_WITHIN}
    for site in fn.calls:
        call = site.node
        uses = id(call) in announced or any(
            read_names(arg.value) & labels or any(n is region.end for n in walk(arg.value)) for arg in call.args)
        if uses and any(words.search(text) for text in literal_texts(call)):
            return True
    return False


_ANNOUNCED_WITHIN = 3  # lines before the timer starts


def _announces(call: cst.Call) -> bool:
    """A print or a logging call (`print(...)`, `logging.info(...)`, `LOGGER.info(...)`)."""
    return callee_name(call) in ("print", "info", "debug", "warning", "log")


def _magic(call: cst.Call) -> str | None:
    """`%timeit` / `%time` when the call is a notebook's timing magic as the scan reads it."""
    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        return apis.IPYTHON_TIMING_MAGICS.get(func.value.value)
    return None


def _runs_once(call: cst.Call) -> bool:
    """`%time f(x)` or `timeit.timeit(stmt, number=1)`: the statement runs once."""
    return _magic(call) == "%time" or any(
        a.keyword is not None and a.keyword.value == "number" and int_value(a.value) == 1 for a in call.args)


def _first_jitted(model: SemanticModel, fn: Function, timer: cst.Call, pending: cst.Call, known: bool = False) -> bool:
    """A measurement made once (`%time f(x)`, or a region outside any loop) of the first call of a
    jitted `f` that is no whole run (no loop or scan inside): the figure is tracing and
    compilation, which run synchronously, so no wait would change it (a notebook's one-off timing
    of a function it jitted a cell earlier, a module's demo timing `jax.jit(model.apply)` once
    before timing it again warm)."""
    callee = model.callee(pending, fn)
    if not isinstance(pending.func, cst.Name) or not callee.jitted:
        return False
    target = callee.function
    if target is None and known:
        return False  # `jax.jit(vmapped_train)`: the program may be a whole run
    if target is not None and _whole_run_program(target):
        return False  # a whole run: its figure is mostly the run, which the missing wait leaves out
    name, line = pending.func.value, model.line_of(timer)
    return not any(isinstance(site.node.func, cst.Name) and site.node.func.value == name
                   and model.line_of(site.node) < line for other in model.functions for site in other.calls)


def _entered_once(model: SemanticModel, fn: Function) -> bool:
    """The code runs once per program: a script's or notebook's top level, or a function called
    from there once, outside any loop (`if __name__ == "__main__": test()`). A function called
    from elsewhere (a server's `serve`) runs its first call of a jitted function every time."""
    if fn.is_module:
        return True
    sites = [s for other in model.functions for s in other.calls if model.callee(s.node, other).function is fn]
    return len(sites) == 1 and sites[0].function.is_module and sites[0].loop is None


def _timeit_statement_pending(model: SemanticModel, fn: Function, call: cst.Call) -> str | None:
    """`timeit.timeit(lambda: f(x), ...)`: the statement does JAX work and never waits for it."""
    stmt = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "stmt"), None)
    if stmt is None:
        return None
    if isinstance(stmt, cst.Lambda):
        body = model.lambdas.get(stmt)
        if body is None:
            return None
        pending = unsynchronized_work(model, body, calls_in_order(body), set())
        if pending is None or _runs_once(call) and _first_jitted(model, fn, call, pending) \
                or any(_SAYS_COMPILE.search(t) for a in fn.assignments if a.value is call for t in a.targets):
            return None  # a first run's compilation, or a figure named for it (`compile_time = timeit(...)`)
        return describe(pending)
    text = string_value(stmt)
    if text is None:
        return None
    try:
        parsed = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return None
    if "block_until_ready" in text:
        return None
    for node in walk(parsed):
        if isinstance(node, cst.Call):
            q = model.resolve(node.func)
            target = model.lookup_function(node.func.value, fn) if isinstance(node.func, cst.Name) else None
            if (q or "").startswith(("jax.numpy.", "jax.lax.", "jax.random.")) or (
                    target is not None and target.jitted and target not in syncing_functions(model)):
                return describe(node)
    return None


def _streamed(model: SemanticModel, fn: Function, pending: cst.Call, region) -> bool:
    """The unsynchronized work runs in a loop inside the timed region that takes its data from
    a host stream each iteration (`for x, y in loader:`, `next(it)`): the host cannot run more
    than a few steps ahead of a device fed batch by batch, so only the last steps escape the
    reading: an epoch timer over 470 steps of a data loader is right to within a negligible
    error. A single large dispatch timed without a wait is still reported."""
    return any(_data_stream(model, loop, pending) for loop in _loops_in_region(model, fn, pending, region))


def _whole_run(model: SemanticModel, fn: Function, first: cst.Call, region) -> bool:
    """The first call sits in a training or simulation loop inside the region, one that threads
    state from step to step: the region times a whole run end to end, compilation included, a
    legitimate wall time ("Training time" over a PINN's epochs), or one each iteration of which
    runs a compiled loop (`jax.lax.fori_loop(0, n, step, carry)`: a molecular dynamics run's
    "Total simulation time" over 5 cycles of compiled steps), or that hands it a new item of
    what it iterates each time (an NNX model trained in place over 10 epochs of a batch
    generator, "Training completed in"). A loop
    repeating the same call (a benchmark averaging over repetitions) is still reported."""
    return any(drives_steps(model, loop) or runs_compiled_loops(model, loop) or _over_items(model, loop, first)
               for loop in _loops_in_region(model, fn, first, region))


def _over_items(model: SemanticModel, loop: Loop, call: cst.Call) -> bool:
    """`for x, y in batches(...): step(model, x, y)`: each iteration gives the call an item of
    what the loop iterates (not a `range` counter): a run over data, not a repetition."""
    it = loop.node.iter if isinstance(loop.node, cst.For) else None
    counted = isinstance(it, cst.Call) and model.resolve(it.func) == "builtins.range"
    return not counted and _given_items(loop, call)


def _given_items(loop: Loop, call: cst.Call) -> bool:
    """The call is given a name the `for` loop binds to each item (`for x, y in ds: step(x, y)`)."""
    if not isinstance(loop.node, cst.For):
        return False
    items = {n.value for n in walk(loop.node.target) if isinstance(n, cst.Name)}
    return any(isinstance(n, cst.Name) and n.value in items for a in call.args for n in walk(a.value))


def _loops_in_region(model: SemanticModel, fn: Function, call: cst.Call, region) -> Iterator[Loop]:
    """The loops around `call` that start inside the timed region, innermost first."""
    site = next((s for s in fn.calls if s.node is call), None)
    start = model.line_of(region.start)
    for loop in site.loop.outward() if site is not None and site.loop is not None else ():
        if model.line_of(loop.node) <= start:
            return
        yield loop


def _data_stream(model: SemanticModel, loop, pending: cst.Call) -> bool:
    """The loop hands the work a new item of a host stream each iteration: `next(it)`, or the
    items of a `for` over a loader (`for x, y in loader:`, `for x, y in get_batches():`: not an
    array, a container or a range), passed to the pending call."""
    fn = loop.function
    if any(loop.encloses(s.loop) and model.resolve(s.node.func) == "builtins.next" for s in fn.calls):
        return True
    if not _given_items(loop, pending):
        return False
    it = cast(cst.For, loop.node).iter
    while isinstance(it, cst.Call) and it.args and it.args[0].keyword is None:
        q = model.resolve(it.func)
        if q in ("builtins.enumerate", "builtins.zip") or (q is not None and not q.startswith("builtins.")):
            it = it.args[0].value  # `enumerate(loader)`, `tqdm(loader)`
            continue
        break
    if isinstance(it, cst.Call):
        # `get_train_batches()`, `ds.as_numpy_iterator()`: a host loader; not `range(n)`, and
        # not arrays the device makes (`jnp.split(x, k)`, a helper doing JAX work)
        q = model.resolve(it.func)
        target = model.callee(it, fn).function
        return not (q is not None and q.startswith("builtins.")) and not model.is_array(it, fn) \
            and not (target is not None and target.does_jax_work)
    return isinstance(it, (cst.Name, cst.Attribute)) and not model.is_array(it, fn) \
        and not model.is_container(it, fn)
