"""JAX701 unsynchronized-timing."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    SAFE,
    Fix,
    Function,
    Invalid,
    Report,
    Rule,
    SemanticModel,
    TimedRegion,
    Valid,
    calls_in_order,
    describe,
    fed_by_host_stream,
    first_jitted_call,
    marked_wrong,
    measurement_labels,
    one_off_first_run,
    shows_async_dispatch,
    timed_lambda_work,
    timed_regions,
    timed_text_work,
    timeit_statement,
    times_whole_run,
    timing_magic,
    unsynchronized_work,
    waited_next_iteration,
    work_results,
    wrap_call,
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

    A timer read every iteration of a loop (an episode's time, summed into `time_taken`) is
    quiet when, earlier in the next iteration's timed region, the loop reads to the host a value
    computed from what the unwaited work rebinds (`int(categorical(key, apply_fn(params, s)))`
    after `params = optax.apply_updates(...)`): that read waits for the work, so the next figure
    holds it and a sum misses only the last iteration's tail. So is an epoch over a host data
    stream, where the device cannot run more than a few steps ahead.

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

    Whether a figure is meant to include compilation is read from the words the code uses for
    it: the names it is stored in and the text printed with it or around its region, matched
    against `compil|first|warm|cold|trac|startup|lower` (and `initial` for a first step timed on
    purpose). Nothing else in the code says what its author meant the number to be: the same
    timer around the same first call is a mistake in a steady-state benchmark and the right
    figure in a compile-time one. Likewise a function of another library is taken to wait when
    its name says so (`sync`, `barrier`, `wait`): its name is all the file shows of it.

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
        """, fixed="""
            import time
            import jax
            import jax.numpy as jnp

            x = jax.random.normal(jax.random.key(0), (3000, 3000))
            start = time.time()
            y = jax.block_until_ready(jnp.dot(x, x.T))
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
        """, fixed="""
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
                    out = jax.block_until_ready(train_step(w, x))
                end = time.perf_counter()  # <- JAX701
                per_call = timeit.timeit(lambda: jax.block_until_ready(train_step(w, x)), number=steps)  # <- JAX701
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
            if timing_magic(report.node) is not None:
                return None  # the cell holds `%timeit f(x)`, not this reading of it: not rewritten
            return _timeit_block_until_ready(model, report.node)
        for fn in model.functions:
            if fn.traced:
                continue
            for region in timed_regions(model, fn):
                if region.end is report.node:
                    pending = unsynchronized_work(model, fn, region.calls, work_results(model, fn))
                    return _block_until_ready(model, pending) if pending is not None else None
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
                    if _says(model, fn, region, _SAYS_COMPILE):
                        continue  # a compile time: tracing and compiling run synchronously in the call
                    if one_off_first_run(model, fn, region, pending) \
                            and not _says(model, fn, region, _SAYS_FIRST_CALL):
                        # a one-off first run: the figure is its compilation, which no wait changes;
                        # one timed as the "initial step" is a real step whose run leaks into the next
                        # figure without a wait
                        continue
                    if fed_by_host_stream(model, fn, pending, region):
                        continue  # an epoch over a data loader: only the last few steps escape
                    if waited_next_iteration(model, fn, pending, region):
                        continue  # the next iteration's figure waits for this one's tail
                    yield Report(region.end, f"`{describe(region.end)}` is read after `{describe(pending)}` "
                                             "without waiting for its result: JAX dispatches asynchronously, "
                                             "so the timer can stop before the device finishes that work")
                    continue
                if order is None:
                    order = calls_in_order(fn)
                first = None if region.in_loop else first_jitted_call(model, fn, region, order)
                if first is not None and not _says(model, fn, region, _SAYS_FIRST_CALL) \
                        and not times_whole_run(model, fn, first, region):
                    yield Report(region.end, f"the timed region ending at `{describe(region.end)}` contains the "
                                             f"first call of `{describe(first.func)}`, so it includes tracing and "
                                             "compilation; warm up before starting the timer or report it as "
                                             "compile time")
            for site in fn.calls:
                call: cst.Call = site.node
                if model.resolve(call.func) in TIMEIT_RUNNERS:
                    timed = _timed_work(model, fn, call)
                    if timed is not None:
                        yield Report(call, f"`{timing_magic(call) or describe(call.func)}` times "
                                           f"`{describe(timed)}` without `.block_until_ready()`: JAX dispatches "
                                           "asynchronously, so the timer can stop before the device finishes "
                                           "that work")


def _says(model: SemanticModel, fn: Function, region: TimedRegion, words: re.Pattern) -> bool:
    """The figure is labelled with one of `words`: its variable name, the text printed with it,
    or a message printed or logged in, just before or just after the region (the names and
    messages are the only place its author says what it is meant to include)."""
    return any(words.search(text) for text in measurement_labels(model, fn, region))


def _timed_work(model: SemanticModel, fn: Function, call: cst.Call) -> cst.Call | None:
    """The JAX work a `timeit` statement runs and never waits for; a lambda's is none when the
    figure is named for a compile time (`compile_time = timeit.timeit(lambda: f(x), number=1)`)."""
    stmt = timeit_statement(call)
    if not isinstance(stmt, cst.Lambda):
        return timed_text_work(model, fn, stmt) if stmt is not None else None
    pending = timed_lambda_work(model, fn, call, stmt)
    named = (t for a in fn.assignments if a.value is call for t in a.targets)
    return None if pending is None or any(_SAYS_COMPILE.search(t) for t in named) else pending


def _block_until_ready(model: SemanticModel, call: cst.BaseExpression) -> Fix | None:
    """Wait for the timed work's result where it is produced: `f(x)` ->
    `jax.block_until_ready(f(x))`, which returns its argument unchanged (any pytree)."""
    wrapped = wrap_call(model, "jax.block_until_ready", call)
    if wrapped is None:
        return None
    return Fix(SAFE, ((call, wrapped),), f"`{describe(call)}` -> `jax.block_until_ready({describe(call)})`")


def _timeit_block_until_ready(model: SemanticModel, timeit_call: cst.Call) -> Fix | None:
    """`timeit.timeit(lambda: f(x), ...)`: the lambda's body waits for its result."""
    if not timeit_call.args or not isinstance(timeit_call.args[0].value, cst.Lambda):
        return None
    body = timeit_call.args[0].value.body
    if not isinstance(body, cst.Call):
        return None
    return _block_until_ready(model, body)
