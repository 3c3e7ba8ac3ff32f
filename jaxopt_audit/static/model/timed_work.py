"""What a timed region measures, beyond whether its work is waited for (timing.py).

A figure can include tracing and compilation: the region holds the first call of a function
jitted in the same scope, and a one-off measurement of a small program's first call is mostly
that compilation. A region can time a whole run (a training loop threading state, a loop of
compiled loops) or an epoch over a host data stream, where the missing wait costs only the last
few steps. A `timeit` call times a statement (a lambda, or a string it parses). And the names and
printed text around a figure say what its author meant it to be (`measurement_labels`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import callee_name, int_value, literal_texts, read_names, string_value, walk
from .core import SemanticModel
from .eager import drives_steps
from .host_loops import runs_compiled_loops
from .index import Function, Loop
from .timing import TimedRegion, calls_in_order, is_sync, syncing_functions, unsynchronized_work, work_results


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


def first_jitted_call(model: SemanticModel, fn: Function, region: TimedRegion,
                      order: list[cst.Call]) -> cst.Call | None:
    """Which call in the region is the first call of a small program jitted in this scope (a
    lambda, a loop-free def, a library function; `order` is `calls_in_order(fn)`): one not
    called before the timer starts, nor warmed up ahead of time (`f.lower(x).compile()`)."""
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


def measurement_labels(model: SemanticModel, fn: Function, region: TimedRegion) -> Iterator[str]:
    """What the code calls the figure a timed region measures: the names its second reading is
    bound to (and the names computed from them: `end = time.time(); first_ms = end - start`),
    then the literal text of each call given one of them or the reading itself, of each print or
    log call the region makes ("Testing and compiling eval_step..."), and of those made just
    before it starts ("Compiling and running...") or just after it ends ("compilation
    complete!"). Lazily: a caller looking for a word stops at the first text that has it."""
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
    yield from labels
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
        if id(call) in announced or any(
                read_names(arg.value) & labels or any(n is region.end for n in walk(arg.value)) for arg in call.args):
            yield from literal_texts(call)


_ANNOUNCED_WITHIN = 3  # lines before the timer starts


def _announces(call: cst.Call) -> bool:
    """A print or a logging call (`print(...)`, `logging.info(...)`, `LOGGER.info(...)`)."""
    return callee_name(call) in ("print", "info", "debug", "warning", "log")


def timing_magic(call: cst.Call) -> str | None:
    """`%timeit` / `%time` when the call is a notebook's timing magic as the scan reads it."""
    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        return apis.IPYTHON_TIMING_MAGICS.get(func.value.value)
    return None


def _runs_once(call: cst.Call) -> bool:
    """`%time f(x)` or `timeit.timeit(stmt, number=1)`: the statement runs once."""
    return timing_magic(call) == "%time" or any(
        a.keyword is not None and a.keyword.value == "number" and int_value(a.value) == 1 for a in call.args)


def first_call_compiles(model: SemanticModel, fn: Function, timer: cst.Call, pending: cst.Call,
                        known: bool = False) -> bool:
    """Whether a measurement made once (`%time f(x)`, or a region outside any loop) of `pending`
    is of the first call of a jitted `f` that is no whole run (no loop or scan inside): the
    figure is tracing and compilation, which run synchronously, so no wait would change it (a
    notebook's one-off timing of a function it jitted a cell earlier, a module's demo timing
    `jax.jit(model.apply)` once before timing it again warm). With `known`, only a jitted
    function of this file counts (`jax.jit(vmapped_train)` may be a whole run)."""
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


def entered_once(model: SemanticModel, fn: Function) -> bool:
    """Whether the code runs once per program: a script's or notebook's top level, or a function
    called from there once, outside any loop (`if __name__ == "__main__": test()`). A function
    called from elsewhere (a server's `serve`) runs its first call of a jitted function every time."""
    if fn.is_module:
        return True
    sites = [s for other in model.functions for s in other.calls if model.callee(s.node, other).function is fn]
    return len(sites) == 1 and sites[0].function.is_module and sites[0].loop is None


def one_off_first_run(model: SemanticModel, fn: Function, region: TimedRegion, pending: cst.Call) -> bool:
    """Whether the region, outside any loop and in code entered once, times `pending` as the
    first call of a small jitted function of this file with no loop of its own around it: a
    one-off first run, whose figure is its compilation."""
    return not region.in_loop and not any(loops_in_region(model, fn, pending, region)) \
        and entered_once(model, fn) and first_call_compiles(model, fn, region.start, pending, known=True)


def timeit_statement(call: cst.Call) -> cst.BaseExpression | None:
    """The statement a `timeit.timeit` / `repeat` / `Timer` call runs: its first positional
    argument or `stmt=`."""
    return next((a.value for a in call.args if a.keyword is None or a.keyword.value == "stmt"), None)


def timed_lambda_work(model: SemanticModel, fn: Function, call: cst.Call, stmt: cst.Lambda) -> cst.Call | None:
    """Which JAX call `timeit.timeit(lambda: f(x), ...)` leaves running when the lambda's body
    never waits for it; None also when the statement runs once (`number=1`, `%time`) and is the
    first call of a jitted function that is no whole run (the figure is its compilation)."""
    body = model.lambdas.get(stmt)
    if body is None:
        return None
    pending = unsynchronized_work(model, body, calls_in_order(body), set())
    if pending is None or _runs_once(call) and first_call_compiles(model, fn, call, pending):
        return None
    return pending


def timed_text_work(model: SemanticModel, fn: Function, stmt: cst.BaseExpression) -> cst.Call | None:
    """Which JAX call a `timeit` statement given as a string (`timeit.timeit("f(x)", ...)`)
    makes: a `jax.numpy`, `jax.lax` or `jax.random` function, or a jitted function of this file
    that does not wait itself; None when the text says `block_until_ready` or does not parse.
    The call belongs to the parsed text, not to the file's tree."""
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
                return node
    return None


def fed_by_host_stream(model: SemanticModel, fn: Function, pending: cst.Call, region: TimedRegion) -> bool:
    """Whether the unsynchronized work runs in a loop inside the timed region that takes its
    data from a host stream each iteration (`for x, y in loader:`, `next(it)`): the host cannot
    run more than a few steps ahead of a device fed batch by batch, so only the last steps
    escape the reading: an epoch timer over 470 steps of a data loader is right to within a
    negligible error. A single large dispatch timed without a wait is not."""
    return any(_data_stream(model, loop, pending) for loop in loops_in_region(model, fn, pending, region))


def times_whole_run(model: SemanticModel, fn: Function, first: cst.Call, region: TimedRegion) -> bool:
    """Whether the first call sits in a training or simulation loop inside the region, one that
    threads state from step to step: the region times a whole run end to end, compilation
    included, a legitimate wall time ("Training time" over a PINN's epochs), or one each
    iteration of which runs a compiled loop (`jax.lax.fori_loop(0, n, step, carry)`: a molecular
    dynamics run's "Total simulation time" over 5 cycles of compiled steps), or that hands it a
    new item of what it iterates each time (an NNX model trained in place over 10 epochs of a
    batch generator, "Training completed in"). A loop repeating the same call (a benchmark
    averaging over repetitions) is not."""
    return any(drives_steps(model, loop) or runs_compiled_loops(model, loop) or _over_items(model, loop, first)
               for loop in loops_in_region(model, fn, first, region))


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


def loops_in_region(model: SemanticModel, fn: Function, call: cst.Call, region: TimedRegion) -> Iterator[Loop]:
    """The loops around `call` that start inside the timed region, innermost first."""
    site = next((s for s in fn.calls if s.node is call), None)
    start = model.line_of(region.start)
    for loop in site.loop.outward() if site is not None and site.loop is not None else ():
        if model.line_of(loop.node) <= start:
            return
        yield loop


def _data_stream(model: SemanticModel, loop: Loop, pending: cst.Call) -> bool:
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


def waited_next_iteration(model: SemanticModel, fn: Function, pending: cst.Call, region: TimedRegion) -> bool:
    """Both readings run in every iteration of one loop, and before `pending` the region reads
    to the host a value computed from what `pending` rebinds (`params = optax.apply_updates(...)`
    last in an episode; `int(jax.random.categorical(key, apply_fn(params, s)))` early in the
    next): the next iteration's figure waits for this one's unfinished work, so a sum of the
    figures (`time_taken += time.time() - start`) misses only the last iteration's tail."""
    sites = {id(s.node): s for s in fn.calls}
    start, end = sites.get(id(region.start)), sites.get(id(region.end))
    if start is None or end is None or end.loop is None:
        return False
    loop = next((outer for outer in end.loop.outward() if outer.encloses(start.loop)), None)
    if loop is None:
        return False
    rebound = {t for a in fn.assignments if a.value is not None and loop.encloses(a.site.loop)
               and any(n is pending for n in walk(a.value)) for t in a.targets}
    if not rebound:
        return False
    results = work_results(model, fn)
    for item in region.calls:
        if item is pending:
            return False
        if isinstance(item, cst.Call) and is_sync(model, item, fn, results) \
                and _computed_from(fn, loop, set(read_names(item))) & rebound:
            return True
    return False


def _computed_from(fn: Function, loop: Loop, names: set[str]) -> set[str]:
    """`names` and every name the loop computes them from, through its assignments."""
    grown = True
    while grown:
        grown = False
        for a in fn.assignments:
            if a.value is not None and loop.encloses(a.site.loop) and set(a.targets) & names:
                more = set(read_names(a.value)) - names
                if more:
                    names |= more
                    grown = True
    return names
