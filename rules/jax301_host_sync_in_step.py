"""JAX301 host-sync-in-step."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    Invalid,
    Report,
    Rule,
    SemanticModel,
    Site,
    StepReads,
    Valid,
    checks_every_result,
    compiled_training_loop,
    condition_around,
    describe,
    first_waits,
    is_wait,
    prepares_compiled_input,
    runs_at_most_once,
    runs_eagerly,
    small_compiled_steps,
    whole_history_read,
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
    finding), on reading back what the iteration just uploaded from the host (`x = jnp.array(x)`
    of a batch, then `np.array(x)`: it waits for that copy only, not for the step), on an array
    an unconditional read earlier in the iteration already brought to the
    host (`float(loss)` is the finding; a later `f"{loss:.3f}"` uses the copy the array keeps),
    on another output of a compiled call one of whose outputs was already read so (`peak.item()`
    after `float(loss)` from `w, loss, peak = step(w)`: ready by then, a transfer but no second
    stall), on reads right after a read with no new device work between them (`np.array(loss)`,
    then `np.array(aux)` from the same eager step: one stall, reported once at the first read,
    whose message counts the rest), on reads in a loop nothing of which is compiled (no jitted
    call, compiled loop or opaque method in it or in the functions of the file it calls: the
    read waits only for the last eager op before it, and the missing jit, JAX101, is what that
    loop costs), on reads in a loop whose body always leaves it (it ends in `return`, `break` or
    `raise` that no `continue` skips: one pass per call), on reads after the loop, on plain
    Python numbers, in
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

    Two of these exceptions go by names, because the file shows nothing else: a function whose
    name has the word `render`, `repr`, `str`, `string`, `plot`, `draw`, `show`, `display` or
    `visualize` in it shows values to a person, and converting them is its job; a value passed
    to a method named `step`, `send`, `act`, `step_async` or `put` goes to a host environment (a
    Gym environment, a simulator, a socket), whose type the file rarely shows.

    A read behind compiled steps that are not shown to be small (a gradient step, a step with a
    loop of its own, a jitted function of another file), with no eager work in the loop but its
    input's preparation, ranks `medium` at most however many times it runs: each step waits for
    the one before anyway, so the read adds about one dispatch latency per step.

    At run time, `jaxopt-audit run` also reports a host callback that compiled code runs on
    every step (`jax.debug.callback`, `jax.pure_callback`, `jax.experimental.io_callback`
    inside the jitted step or its scanned loop): each run stops the compiled program while
    Python runs the callable, its arguments copied to the host first. The finding is at the line
    registering the callback; its saving is the measured time inside the callable. The reads the
    callable makes are part of that time, not findings of their own.

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
        if checks_every_result(model):
            return  # with jax_debug_nans on, every jitted call already waits for its result
        for fn in model.functions:
            if fn.traced:
                continue
            reads = StepReads(model, fn)
            found: list[tuple[cst.CSTNode, Site, str]] = []  # (what to point at, where, what is read)
            waits: list[tuple[cst.CSTNode, Site, str]] = []  # deliberate waits: they sync, unreported
            for site in fn.calls:
                if not reads.per_step(site):
                    continue
                history = whole_history_read(model, site)
                if history is not None:
                    found.append((site.node, site, _WHOLE + history))
                    continue
                kind = reads.pull(site)
                if kind is None:
                    if is_wait(site.node):
                        waits.append((site.node, site, ""))
                elif reads.needed(site):
                    waits.append((site.node, site, ""))  # the host needs the value: a wait by design
                elif reads.stalls(site):
                    found.append((site.node, site, f"`{describe(site.node)}`{_READS[kind]}"))
            found += [(fstring.node, fstring, "an f-string of an array") for fstring in reads.fstring_reads()]
            found += [(operand, test_site, f"the condition `{describe(operand)}` (implicit bool())")
                      for operand, test_site in reads.condition_reads()]
            found = [f for f in found if not reads.timed(f[0]) and not _eager_step(model, f[1])
                     and not _single_pass(model, f[1])]
            for node, site, what, more in first_waits(model, found, waits):
                yield Report(node, self._message(model, site, what, more), bounded=_behind_large_step(model, site))

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


def _eager_step(model: SemanticModel, site: Site) -> bool:
    """The read is in a loop none of whose work is compiled: it waits only for the last eager op
    before it, and the loop's real cost is the missing jit, which JAX101 reports."""
    loop = model.step_loop_of(site)
    return loop is not None and runs_eagerly(model, loop)


def _behind_large_step(model: SemanticModel, site: Site) -> str | None:
    """Why the read costs little whatever the count: the loop's work is compiled steps that are
    not small (a derivative, a loop, or work the file does not size), each fed the last one's
    result, so the next step waits for this one anyway; the read adds the host's latency to
    dispatch the next, a small share of a large step. None for a small step (the stall is much
    of its time) or a loop doing eager work."""
    loop = model.step_loop_of(site)
    if loop is None or small_compiled_steps(model, loop) is not None:
        return None
    work = [(s, model.call_work(s.node, s.function)) for s in loop.function.calls
            if loop.encloses(s.loop) and not s.guarded]
    if not any(kind == "dispatch" for _, kind in work) or not compiled_training_loop(model, loop) and any(
            kind == "array" and not prepares_compiled_input(model, s) for s, kind in work):
        return None  # eager work each step besides preparing the step's input: that work stalls too
    return ("the loop's work is a compiled step not shown to be small, and the next step waits for this one "
            "anyway: the read adds about one dispatch latency per step, a small share unless the step is tiny")


def _single_pass(model: SemanticModel, site: Site) -> bool:
    """The read is in a loop whose body always leaves it (`return` at its end): it runs once
    per call, not on every iteration."""
    loop = model.step_loop_of(site)
    return loop is not None and runs_at_most_once(loop)


# `what` of a read of a whole device history list: the marker, then the list's name.
_WHOLE = "whole list "

# What a message adds after the call for each kind of read (host_reads.ReadKind).
_READS = {"call": "", "each": " (bool() of each device value)", "fstring": " (an f-string of an array)"}
