"""JAX301 host-sync-in-step."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import cast

import libcst as cst

from jaxopt_audit.static import (
    Invalid,
    Loop,
    Report,
    Rule,
    SemanticModel,
    Site,
    Statements,
    Valid,
    accepts_or_rejects,
    apis,
    condition_around,
    describe,
    device_history,
    dispatch_loop,
    drives_steps,
    enclosing_statements,
    exits_on_device,
    fed_back,
    is_wait,
    measured_call,
    over_structure,
    read_names,
    records_for_rendering,
    renders_each_iteration,
    runs_compiled_loops,
    timed_regions,
    walk,
    walks_device_rows,
    whole_list_read,
)


class HostSyncInStep(Rule):
    """
    ## What it does
    Finds device-to-host transfers that run on every step of a training or simulation loop:
    `float(x)`, `int(x)`, `bool(x)`, `x.item()`, `x.tolist()`, `np.asarray(x)`, `np.array(x)`,
    `jax.device_get(x)`, `print(x)` or an f-string of an array, an `if` on an array, and
    `x.block_until_ready()`, where `x` is a JAX array; in the loop body or in a function the loop
    calls every step. A read of a whole list that the loop grows by a device value every
    iteration (`jax.device_get(history)`, `np.mean(jnp.stack(history))`) is reported as such:
    its traffic grows with the square of the iteration count.

    ## Why is this bad?
    JAX dispatches work asynchronously: the Python loop runs ahead while the device computes.
    Reading a value back stalls the loop until the device has finished everything queued, then
    copies the value. Done every step, it serialises host and device and the device idles while
    Python prepares the next step (in a published training-loop case study, CPU↔GPU traffic was
    65% of the run time).

    ## How to fix
    Keep metrics on the device and read them every k steps (`if step % k == 0`), after the loop,
    or accumulate them in the carry of a `lax.scan`. Use `jax.debug.print` inside jitted code.

    The rule stays quiet in a loop that leaves on a value it computes on the device each
    iteration (`if token == eos: break`, `while not done:`, `while gap > tol:`): it must learn
    that value every step, so the fix is `lax.while_loop`, not fewer reads (a `while step < n`
    on a device counter is still reported). It stays quiet on reads guarded by a periodic
    condition (also under `tqdm(range(n))`, `track(range(n))`, `zip(range(n), loader)`,
    `range_fn(n)` with `range_fn` bound to `range` or `partial(trange, ...)`, and on a step
    number computed from the counter:
    `step = update + 1`, then `if step % k == 0`, and on a flag bound to such a test: `show =
    epoch % k == 0 or epoch == last`, then `if show:`; in a step function, `if i % k == 0` on
    the step number it is given) or under a divergence test (`if np.isnan(loss):`,
    a recovery), on a value an `if` above it in the loop already read (that test is the
    finding), on an array an unconditional read earlier in the iteration already brought to the
    host (`float(loss)` is the finding; a later `f"{loss:.3f}"` uses the copy the array keeps),
    on another output of a compiled call one of whose outputs was already read so (`peak.item()`
    after `float(loss)` from `w, loss, peak = step(w)`: ready by then, a transfer but no second
    stall), on reads right after a read with no new device work between them (`np.array(loss)`,
    then `np.array(aux)` from the same eager step: one stall, reported once at the first read,
    whose message counts the rest), on reads after the loop, on plain Python numbers, in
    rollouts recorded for a renderer (`rollout.append(state)`, then `env.render(rollout)`),
    on messages of `raise`/`assert` (formatted only on failure), on a value the loop hands back to
    JAX as the next step's input (`tok = int(jnp.argmax(logits))`, then `jnp.array([[tok]])`: a
    greedy decode loop, whose host decides each step) or to a host environment, and on reads
    after such a needed read in the same iteration (it already waited), on a test that adopts a
    candidate
    (`if loss_fn(params_new) < loss: params = params_new`: a line search's accept/reject, which
    the algorithm needs every step), in loops over a dict's entries or of one literal
    iteration, on tests of objects that merely hold arrays
    (`layer.is_stateful()`), and on `block_until_ready` in a benchmark loop (one that reads a
    timer, or waits for a result it then throws away), nor on a read between two timer readings
    of one iteration (`t0 = time()`, the step, `bar.set_postfix_str(f"{loss:.3e}")`, `t += time()
    - t0`: the read is the wait that makes the step time right). `if not all(jnp.all(...))` is reported:
    Python's `all` converts each element with bool().

    ## Measured
    `training_loop` pipeline, stage "data on device": removing the per-step conversions is part
    of the 5x that the case study behind it reports for keeping data on the device.
    """

    CODE = "JAX301"
    NAME = "host-sync-in-step"
    SEVERITY = "warning"
    SUMMARY = "Device-to-host transfer on every step of a loop"
    FIX = "Read the value every k steps (`if step % k == 0:`), after the loop, or keep it on device."

    INVALID = [
        Invalid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def train_step(params, batch):
                loss = jnp.mean((batch @ params) ** 2)
                return params - 0.1 * loss, loss

            def train(params, batches):
                history = []
                for batch in batches:
                    params, loss = train_step(params, batch)
                    history.append(float(loss))  # <- JAX301
                    print(f"loss={loss}")  # the wait above already brought `loss` to the host
                return params, history
        """),
        Invalid("""
            import jax
            import numpy as np

            step_fn = jax.jit(lambda s: s * 0.5 + 1.0)

            def log_metrics(state):
                return np.asarray(state).mean()  # <- JAX301

            state = jax.numpy.ones(4)
            for step in range(1000):
                state = step_fn(state)
                log_metrics(state)
                if state.sum() > 10:  # <- JAX301
                    state = state / 2
                state.block_until_ready()  # <- JAX301
        """),
        Invalid("""
            import jax
            import jax.numpy as jnp
            import numpy as np

            @jax.jit
            def step(x):
                return 0.99 * x + jnp.sin(x)

            def simulate(x, n_steps):
                history = []
                for t in range(n_steps):  # <- JAX201
                    x = step(x)
                    history.append(x)
                    running_mean = np.mean(jnp.stack(history))  # <- JAX301
                return x, running_mean
        """, note="a growing list of device values pulled whole every iteration: quadratic traffic"),
    ]
    VALID = [
        Valid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def train_step(params, batch):
                loss = jnp.mean((batch @ params) ** 2)
                return params - 0.1 * loss, loss

            def train(params, batches, log_every=100):
                losses = []
                for step, batch in enumerate(batches):
                    params, loss = train_step(params, batch)
                    losses.append(loss)  # stays on device
                    if step % log_every == 0:
                        print(f"step {step}: loss={float(loss):.4f}")
                return params, jnp.stack(losses)
        """),
        Valid("""
            import time
            import jax
            import jax.numpy as jnp

            f = jax.jit(lambda x: x @ x)
            x = jnp.ones((256, 256))
            times = []
            for _ in range(10):
                start = time.perf_counter()
                f(x).block_until_ready()  # the sync is the measurement
                times.append(time.perf_counter() - start)
            result = f(x)
            print(float(result.sum()))  # after the loop
            lr = 0.1
            for epoch in range(3):
                x = f(x)
                print(int(epoch), float(lr))  # plain Python numbers
        """),
        Valid("""
            import jax
            import jax.numpy as jnp
            import numpy as np

            @jax.jit
            def step(x, force):
                return 0.99 * x + jnp.sin(x) * force

            def simulate(x, forces):
                history = []
                for t, force in enumerate(forces):
                    x = step(x, force)
                    history.append(x)
                    if t % 100 == 0:
                        print(np.mean(jnp.stack(history)))  # periodic
                return x, jax.device_get(history)  # once, after the loop
        """),
    ]

    def check(self, model: SemanticModel) -> Iterator[Report]:
        if _checks_every_result(model):
            return  # with jax_debug_nans on, every jitted call already waits for its result
        for fn in model.functions:
            if fn.traced:
                continue
            timed_loops = {id(s.loop) for s in fn.calls if s.loop is not None
                           and model.resolve(s.node.func) in apis.TIMER_FUNCTIONS}
            statements = Statements(fn)
            amortised: dict[tuple[int, int], bool] = {}
            returned: dict[int, list[cst.CSTNode]] = {}  # per loop: host reads handed back to JAX

            def handed_back(loop: Loop, returned: dict[int, list[cst.CSTNode]] = returned) -> list[cst.CSTNode]:
                if id(loop) not in returned:
                    returned[id(loop)] = fed_back(model, loop)
                return returned[id(loop)]

            def per_step(site: Site, amortised: dict[tuple[int, int], bool] = amortised) -> bool:
                if not model.dispatched_per_step(site) or over_structure(site.loop, model.resolve):
                    return False
                loop = model.step_loop_of(site)
                if loop is None or _displays(site.function) or not (drives_steps(model, loop) or (
                        dispatch_loop(model, loop) and walks_device_rows(model, loop))):
                    return False  # not shown to be a hot loop over steps (a viewer, a sweep, a demo)
                key = (id(site.loop), id(loop))
                if key not in amortised:
                    # compiled inner loops amortise the read; a loop that leaves on a device value
                    # (a decode loop's end-of-sequence test) waits every step by design
                    amortised[key] = runs_compiled_loops(model, site.loop) \
                        or exits_on_device(model, loop) or records_for_rendering(model, loop) is not None \
                        or renders_each_iteration(loop) is not None
                return not amortised[key]

            timed_steps = _timed_each_iteration(model, fn)
            found: list[tuple[cst.CSTNode, Site, str]] = []  # (what to point at, where, what is read)
            waits: list[tuple[cst.CSTNode, Site, str]] = []  # deliberate waits: they sync, unreported
            for site in fn.calls:
                if not per_step(site):
                    continue
                history = _whole_history(model, site)
                if history is not None:
                    found.append((site.node, site, history))
                    continue
                what = self._host_pull(model, site, timed_loops, statements)
                if what is None and is_wait(site.node):
                    waits.append((site.node, site, ""))
                around = site.loop.outward() if site.loop is not None else ()
                # the host needs the value: `a = jax.device_get(a); env.step(a)`, or `tok =
                # int(jnp.argmax(l))` then `jnp.array([[tok]])` (the host picks the next input);
                # unreported, but a wait like a deliberate one
                if what is not None and (_feeds_host_environment(fn, site) or any(
                        node is site.node for loop in around for node in handed_back(loop))):
                    waits.append((site.node, site, ""))
                    continue
                if what is not None and not statements.on_error_path(site.node) \
                        and not _read_by_the_test_above(model, site):
                    found.append((site.node, site, what))
            strings = _concatenations(fn)
            reported_strings: set[int] = set()
            for fstring in fn.fstrings:
                whole = strings.get(id(fstring.node))
                if whole is not None and whole in reported_strings:
                    continue  # `f"a {x} " f"b {y}"`: one string, reported once
                if per_step(fstring) and any(
                        isinstance(part, cst.FormattedStringExpression) and model.is_array(part.expression, fn)
                        for part in fstring.node.parts):
                    if not _inside_printed_call(model, fstring, fn.calls) \
                            and not statements.on_error_path(fstring.node) \
                            and not _read_by_the_test_above(model, fstring):
                        found.append((fstring.node, fstring, "an f-string of an array"))
                        if whole is not None:
                            reported_strings.add(whole)
            for test_site in fn.tests:
                node = test_site.node
                test = node.test if isinstance(node, (cst.If, cst.While)) else None
                if test is None or not per_step(test_site):
                    continue
                if isinstance(node, cst.If) and test_site.loop is not None \
                        and accepts_or_rejects(model, test_site.loop, node):
                    continue  # a line search's accept/reject: the algorithm needs the answer each step
                for operand in _operands(test):
                    if _reduces_to_bool(model, operand, fn):
                        continue  # `all(jnp.all(...))` is reported as the call it is
                    if model.is_array(operand, fn) and not model.is_container(operand, fn) \
                            and _computed_on_device(model, operand, fn):
                        found.append((operand, test_site, f"the condition `{describe(operand)}` (implicit bool())"))
            # a read inside a step timed on its own (`t0 = time()`, step, `print(f"{loss}")`,
            # `dt = time() - t0` in one iteration) is the wait that makes the figure the step's
            found = [f for f in found if not any(id(n) in timed_steps for n in walk(f[0]))]
            for node, site, what, more in _first_waits(model, found, waits):
                yield Report(node, self._message(model, site, what, more))

    def _host_pull(self, model: SemanticModel, site: Site, timed_loops: set[int],
                   statements: Statements) -> str | None:
        call: cst.Call = site.node
        fn = site.function
        q = model.resolve(call.func)
        if _reduces_to_bool(model, call, fn):
            return f"`{describe(call)}` (bool() of each device value)"
        if q in apis.HOST_PULL_FUNCTIONS:
            args = [a.value for a in call.args if a.keyword is None]
            if q == "builtins.print":
                if any(model.is_array(a, fn) for a in args):
                    return f"`{describe(call)}`"
                if any(isinstance(a, cst.FormattedString) and _fstring_has_array(model, a, fn) for a in args):
                    return f"`{describe(call)}` (an f-string of an array)"
                return None
            if args and model.is_array(args[0], fn):
                if q == "jax.device_get" and measured_call(call, args[0], statements):
                    return None
                return f"`{describe(call)}`"
            return None
        if q in apis.SYNC_FUNCTIONS:
            first = call.args[0].value if call.args else None
            if id(site.loop) in timed_loops or measured_call(call, first, statements):
                return None
            if call.args and model.is_array(call.args[0].value, fn):
                return f"`{describe(call)}`"
            return None
        if isinstance(call.func, cst.Attribute) and q is None:
            method = call.func.attr.value
            if method in ("item", "tolist", "block_until_ready") and model.is_array(call.func.value, fn):
                if method == "block_until_ready" and (id(site.loop) in timed_loops
                                                      or measured_call(call, call.func.value, statements)):
                    return None
                return f"`{describe(call)}`"
        return None

    def _message(self, model: SemanticModel, site: Site, what: str, more: int = 0) -> str:
        loop = model.step_loop_of(site)
        line = f" at line {model.line_of(loop.node)}" if loop is not None else ""
        if what.startswith(_WHOLE):
            name = what[len(_WHOLE):]
            return f"`{describe(site.node)}` copies all of `{name}` to the host on every iteration of the " \
                   f"loop{line}, and `{name}` gains a device value on each: the traffic grows with the square " \
                   f"of the iteration count and each read stalls the loop; read only the newest value, or " \
                   f"stack `{name}` once after the loop"
        if site.loop is None and site.function.per_step:
            caller = site.function.step_call_sites[0] if site.function.step_call_sites else None
            via = f" (via `{describe(caller.node.func, 30)}`)" if caller is not None \
                and model.callee(caller.node, caller.function).function is not site.function else ""
            where = f"each time `{site.function.name}` runs, and the loop{line} calls it on every " \
                    f"iteration{via}"
        else:
            where = f"on every iteration of the loop{line}"
        condition = condition_around(site.function, site.node, site.loop)
        if condition is not None:  # only some iterations run it: say which
            where = f"{where}, {condition}"
        then = ""
        if more:
            then = f" (the {more} read{'s' if more > 1 else ''} right after it, with no new device work between, " \
                   f"wait{'' if more > 1 else 's'} no longer: move {'them' if more > 1 else 'it'} too)"
        return f"{what} copies a device value to the host {where}, stalling the loop until the device finishes{then}"


# `what` of a read of a whole device history list: the marker, then the list's name.
_WHOLE = "whole list "


def _whole_history(model: SemanticModel, site: Site) -> str | None:
    """`jax.device_get(history)`, `np.mean(jnp.stack(history))`, `print(history)` in a loop that
    appends a device value to `history` every iteration: each read pulls every value so far."""
    call: cst.Call = site.node
    q = model.resolve(call.func) or ""
    if site.loop is None or not (q in apis.HOST_PULL_FUNCTIONS or q.startswith("numpy.")):
        return None
    for loop in site.loop.outward():
        grown = device_history(model, loop)
        for arg in call.args if grown else ():
            name = whole_list_read(model, arg.value, grown)
            if name is not None:
                return _WHOLE + name
    return None


def _timed_each_iteration(model: SemanticModel, fn) -> set[int]:
    """ids of the calls and f-string fields between two timer readings taken in the same
    iteration of one loop: the per-step wall time needs the step's result waited for before the
    second reading, and a host read there is that wait (a benchmark script whose per-step
    progress-bar f-string is what makes the step time right)."""
    loop_of = {id(s.node): s.loop for s in fn.calls}
    loop_of.update((id(part), s.loop) for s in fn.fstrings for part in s.node.parts)
    out: set[int] = set()
    for region in timed_regions(model, fn):
        loop = loop_of.get(id(region.end))
        if loop is not None and loop_of.get(id(region.start)) is loop:
            # not a read in an inner loop (per minibatch of a timed epoch): only the last one waits
            out.update(id(c) for c in region.calls if loop_of.get(id(c)) is loop)
    return out


def _concatenations(fn) -> dict[int, int]:
    """Each f-string that is a part of an implicitly concatenated string (`f"..." f"..."` over
    several lines), mapped to the string it belongs to."""
    group: dict[int, int] = {}
    for site in fn.calls:
        for arg in site.node.args:
            if isinstance(arg.value, cst.ConcatenatedString):
                for part in _string_parts(arg.value):
                    group[id(part)] = id(arg.value)
    return group


def _string_parts(node: cst.ConcatenatedString) -> list[cst.BaseExpression]:
    parts: list[cst.BaseExpression] = []
    for side in (node.left, node.right):
        if isinstance(side, cst.ConcatenatedString):
            parts.extend(_string_parts(side))
        elif isinstance(side, cst.FormattedString):
            parts.append(side)
    return parts


# Functions whose job is to show a value to a person: converting it is the point.
_DISPLAY_NAME = re.compile(r"(^|_)(render|repr|str|string|plot|draw|show|display|visuali[sz]e)(_|$)")


def _first_waits(model: SemanticModel, found: list[tuple[cst.CSTNode, Site, str]],
                 waits: list[tuple[cst.CSTNode, Site, str]]) -> list:
    """The reads that stall: once an unconditional read in the iteration has brought an array to
    the host (`float(loss)`), reading the same array again (`f"{loss:.3f}"`, `loss.item()`) uses
    the host copy the array keeps; it is not another transfer, and another output of the same
    compiled call (`peak.item()` after `float(loss)` from `w, loss, peak = step(w)`) is ready
    by then: a transfer, not another stall. A loop that already waits for the
    step every iteration on purpose (`stats["loss"].block_until_ready()` before reading a timer)
    has stalled for it: reads after that wait add no stall of their own."""
    kept = []
    copied: dict[int, set[tuple[int, str]]] = {}  # id(loop) -> (binding, name) already waited for
    waited: set[int] = set()  # loops whose iteration has already waited on purpose
    last_wait: dict[int, cst.CSTNode] = {}  # id(loop) -> the latest unconditional read kept
    followers: dict[int, int] = {}  # id(read kept) -> reads right after it that add no wait
    silent = {id(w[0]) for w in waits}
    for entry in sorted([*found, *waits], key=lambda e: model.line_of(e[0])):
        node, site, _ = entry
        loop = site.loop
        if id(node) in silent:
            if _unconditional(site.function, node, loop):
                waited.add(id(loop))
            continue
        values = _arrays_read(model, node, site)
        done = copied.setdefault(id(loop), set())
        if id(loop) in waited or (values and values <= done):
            continue
        before = last_wait.get(id(loop))
        if before is not None and not _dispatches_between(model, site, before, node):
            followers[id(before)] = followers.get(id(before), 0) + 1
            continue  # `np.array(loss)` then `np.array(aux)`: the queue was drained by the first
        kept.append(entry)
        if (loop is not None or site.function.per_step) and _unconditional(site.function, node, loop):
            last_wait[id(loop)] = node
            if values:
                done |= values
    return [(node, site, what, followers.get(id(node), 0)) for node, site, what in kept]


def _dispatches_between(model: SemanticModel, site: Site, first: cst.CSTNode, then: cst.CSTNode) -> bool:
    """Some call after the read `first` and up to the read `then` (in the loop's body or the
    per-step function's, in source order; `w.sum().item()` computes anew) may put new work on the
    device. When none does, the first read has already waited for what was queued before it: the
    second waits for no new work (five `np.array(...)` of one eager step's loss and aux outputs). One stall,
    reported once, at the first read."""
    fn, loop = site.function, site.loop
    positions = model.positions
    start, end = positions.get(first), positions.get(then)
    if start is None or end is None:
        return True
    after, until = (start.end_line, start.end_column), (end.end_line, end.end_column)
    if after > (end.line, end.column):
        return True  # not in source order (nested or overlapping): no claim
    for call in fn.calls:  # in a per-step function's own body (no loop), every call between them
        if loop is not None and not loop.encloses(call.loop):
            continue
        span = positions.get(call.node)
        if span is None:
            return True
        if call.node is not then and after <= (span.line, span.column) \
                and (span.end_line, span.end_column) <= until and model.call_work(call.node, fn) is not None:
            return True
    return False


def _arrays_read(model: SemanticModel, node: cst.CSTNode, site: Site) -> set[tuple[int, str]] | None:
    """The arrays a read brings to the host, each as (id of the loop's assignment that bound it,
    its name), when every one is a plain name bound in the loop (in a function called per step:
    a parameter it does not rebind, as (0, name)); None otherwise (`acceptance[1]`
    or `evaluate(w)` is a new array, a name bound before the loop is not this iteration's)."""
    fn, loop = site.function, site.loop
    if loop is None and not fn.per_step:
        return None
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and model.resolve(func) is None:
            exprs = [func.value]  # `x.item()`
        else:
            exprs = [a.value for a in node.args if a.keyword is None]
    else:
        exprs = [cast(cst.BaseExpression, node)]
    # `print(f"{loss}")`: the fields of an f-string are what it reads
    exprs = [p.expression for e in exprs for p in (
        e.parts if isinstance(e, cst.FormattedString) else ()) if isinstance(p, cst.FormattedStringExpression)] \
        + [e for e in exprs if not isinstance(e, cst.FormattedString)]
    out: set[tuple[int, str]] = set()
    for expr in exprs:
        if not model.is_array(expr, fn):
            continue
        if not isinstance(expr, cst.Name):
            return None
        if loop is None:  # a per-step function: its parameters hold one value per call
            if expr.value not in fn.params or fn.bindings(expr.value):
                return None
            out.add((0, expr.value))
            continue
        binding = model.reaching_binding(expr, fn)
        if binding is None or binding.value is None or not loop.encloses(binding.site.loop):
            return None
        # the outputs of one compiled call are ready together: once one is read, reading a
        # sibling (`w, loss, peak = step(w)`: `float(loss)`, then `peak.item()`) waits no longer
        together = isinstance(binding.value, cst.Call) and len(binding.targets) > 1 \
            and model.call_work(binding.value, fn) == "dispatch"
        out.add((id(binding), "*" if together else expr.value))
    return out or None


def _inside_loop(fn, node: cst.CSTNode, loop) -> list[cst.CSTNode] | None:
    """The block statements around `node` inside `loop`, outermost first (in a per-step
    function, `loop` None: those of its body); None when the loop is not around it in `fn`'s
    own body."""
    around = enclosing_statements(fn, node) or []
    if loop is None and fn.per_step:
        return around  # a function called once per step: its body is part of one iteration
    return around[around.index(loop.node) + 1:] if loop is not None and loop.node in around else None


def _unconditional(fn, node: cst.CSTNode, loop) -> bool:
    """`node` runs on every iteration of `loop`: no `if`, `try` or inner loop between them."""
    inside = _inside_loop(fn, node, loop)
    return inside is not None and not any(
        isinstance(s, (cst.If, cst.Try, cst.For, cst.While, cst.ExceptHandler)) for s in inside)


def _read_by_the_test_above(model: SemanticModel, site: Site) -> bool:
    """`if n_bad > 0: print(f"{n_bad} bad")`: the `if` in the loop already waited for `n_bad`
    (that test is the finding); reading it again in the branch costs no second stall."""
    node = site.node
    inside = _inside_loop(site.function, node, site.loop)
    statements = inside if inside is not None else enclosing_statements(site.function, node) or []
    read = read_names(node)
    for stmt in statements:
        if not isinstance(stmt, cst.If):
            continue
        names = [n for n in walk(stmt.test) if isinstance(n, cst.Name)]
        if any(n is node for n in walk(stmt.test)):
            continue  # the site is (in) the test itself
        if any(n.value in read and model.is_array(n, site.function) for n in names):
            return True
    return False


def _displays(fn) -> bool:
    return not fn.is_module and bool(_DISPLAY_NAME.search(fn.node.name.value.lower().strip("_")))


def _feeds_host_environment(fn, site: Site) -> bool:
    """The pulled value is bound to a name that the same loop hands to a host environment's
    `step`/`send`/`act` (a Gym env, a simulator, a socket): the host needs the value each step."""
    if site.loop is None:
        return False
    target = _bound_name(fn, site.node)
    return any(site.loop.encloses(s.loop) and isinstance(s.node.func, cst.Attribute)
               and s.node.func.attr.value in _HOST_CONSUMERS
               and any(a.value is site.node or (isinstance(a.value, cst.Name) and a.value.value == target)
                       for a in s.node.args)
               for s in fn.calls)


_HOST_CONSUMERS = frozenset({"step", "send", "act", "step_async", "put"})


def _bound_name(fn, call: cst.Call) -> str | None:
    for a in fn.assignments:
        if a.value is call and len(a.targets) == 1:
            return a.targets[0]
    return None


def _operands(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`a and (b or c)` -> [a, b, c]; each is converted to bool on its own."""
    if isinstance(test, cst.BooleanOperation):
        return _operands(test.left) + _operands(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _operands(test.expression)
    return [test]


def _fstring_has_array(model: SemanticModel, node: cst.FormattedString, fn) -> bool:
    return any(isinstance(p, cst.FormattedStringExpression) and model.is_array(p.expression, fn)
               for p in node.parts)


def _inside_printed_call(model: SemanticModel, site: Site, calls: list[Site]) -> bool:
    """An f-string passed straight to print() is reported once, at the print call."""
    return any(model.resolve(c.node.func) == "builtins.print"
               and any(arg.value is site.node for arg in c.node.args) for c in calls)


def _reduces_to_bool(model: SemanticModel, expr: cst.BaseExpression, fn) -> bool:
    """`all(jnp.all(x, axis=1))`, `any(x > 0 for x in leaves)`: Python's `all`/`any` iterate a
    device array (or device values) and convert each item with bool(), a sync per item."""
    if not isinstance(expr, cst.Call) or model.resolve(expr.func) not in ("builtins.all", "builtins.any"):
        return False
    if len(expr.args) != 1 or expr.args[0].keyword is not None:
        return False
    arg = expr.args[0].value
    if isinstance(arg, (cst.GeneratorExp, cst.ListComp)):
        return model.is_array(arg.elt, fn)
    return model.is_array(arg, fn) and not model.is_container(arg, fn)


def _computed_on_device(model: SemanticModel, expr: cst.BaseExpression, fn, depth: int = 0) -> bool:
    """The tested value comes from JAX work this function does or names: a `jnp`/`jax` call, a
    compiled function's result, or a local name bound to one (also through comparisons,
    arithmetic and indexing). An attribute or method of an object the file knows only as
    "holds arrays" (`layer.is_stateful()`, `eqn.primitive.multiple_results`, an IR value's
    `.layout`) is usually a Python value: an `if` on it says nothing about a sync."""
    if depth > 6:
        return False
    if isinstance(expr, cst.Comparison):
        return _computed_on_device(model, expr.left, fn, depth + 1) or any(
            _computed_on_device(model, c.comparator, fn, depth + 1) for c in expr.comparisons)
    if isinstance(expr, cst.BinaryOperation):
        return _computed_on_device(model, expr.left, fn, depth + 1) \
            or _computed_on_device(model, expr.right, fn, depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return _computed_on_device(model, expr.expression, fn, depth + 1)
    if isinstance(expr, cst.Subscript):
        return _computed_on_device(model, expr.value, fn, depth + 1)
    if isinstance(expr, cst.Call):
        callee = model.callee(expr, fn)
        if callee.jitted or callee.transform is not None:
            return True
        if callee.function is not None:  # a same-module function the model sees computing arrays
            return callee.function.does_array_work and model.is_array(expr, fn)
        if callee.qualname is not None:
            return callee.qualname.split(".")[0] in apis.JAX_ROOTS
        # `x.sum()`, `x.any()` on a value computed on the device
        return isinstance(expr.func, cst.Attribute) and _computed_on_device(model, expr.func.value, fn, depth + 1)
    if isinstance(expr, cst.Name):
        if not model.is_array(expr, fn):
            return False
        for a in fn.bindings(expr.value):
            if a.value is not None and _computed_on_device(model, a.value, fn, depth + 1):
                return True
            node = a.site.node
            if a.value is None and isinstance(node, cst.For) and model.is_array(node.iter, fn) \
                    and _computed_on_device(model, node.iter, fn, depth + 1):
                return True
        return False
    return False


def _checks_every_result(model: SemanticModel) -> bool:
    """`jax.config.update("jax_debug_nans", True)` (or `jax_debug_infs`): every jitted call
    checks its outputs, so it waits for them before returning, and a read after it adds no stall.
    Measured: a jitted call returns in 0.1 ms without it and only after its whole 0.3 s
    computation with it."""
    module = model.module_function
    for site in module.calls:
        call: cst.Call = site.node
        q = model.resolve(call.func) or ""
        if not (q.startswith("jax.") and q.endswith("config.update")) or len(call.args) < 2:
            continue
        flag, value = call.args[0].value, call.args[1].value
        if isinstance(flag, cst.SimpleString) and flag.evaluated_value in ("jax_debug_nans", "jax_debug_infs") \
                and isinstance(value, cst.Name) and value.value == "True":
            return True
    return False
