"""JAX201 loop-to-scan."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    SHORT_LOOP,
    CompiledStep,
    Invalid,
    Report,
    Rule,
    SemanticModel,
    UnrolledLoop,
    Valid,
    compiled_training_loop,
    concatenated,
    describe,
    dispatch_loop,
    eager_baseline_loop,
    ends_episode,
    exits_early,
    exits_on_device,
    fed_back,
    filled_buffers,
    grows_carry,
    has_compiled_alternative,
    has_fixed_trip_count,
    host_bound_call,
    host_fed,
    iterates_structure,
    literal_trip_count,
    records_for_rendering,
    small_compiled_steps,
    step_state,
    unrolled_loop,
    wraps_compiled_scan,
)


class LoopToScan(Rule):
    """
    ## What it does
    Finds Python `for`/`while` loops over a fixed number of steps whose body carries JAX state
    from one iteration to the next (`state = step(state, x)`,
    `params, opt_state = update(params, opt_state, batch)`, `state = result.state` after a JAX
    call that took `state`). A progress bar around the steps (`tqdm(range(n))`, `trange(n)`,
    `rich.progress.track(range(n))`) yields the same steps and counts the same.

    ## Why is this bad?
    Each iteration is a separate dispatch from Python: the host pays call overhead, argument
    handling and synchronisation every step, and XLA never sees more than one step at a time, so
    it cannot fuse across steps or keep the state in registers and caches. `jax.lax.scan`
    compiles the whole loop into one program.

    ## How to fix
    Write the body as `step(carry, x) -> (carry, y)` and run it with
    `carry, ys = jax.lax.scan(step, carry, xs)` (per-step outputs come back stacked), or with
    `jax.lax.fori_loop` when nothing is collected. Jit the function that contains the scan.

    The rule stays quiet on loops that must run on the host every iteration (file or network I/O,
    checkpoint writes, `next()` on a Python data iterator, a Gym-style environment that keeps its
    state inside the object: `obs, r, done, info = envs.step(action)`, a value read to the host and
    handed back as the next step's input: `tok = int(jnp.argmax(logits))`, then
    `jnp.array([[tok]])`), loops over a pytree's structure (`range(len(layers))`, dict items), loops
    whose body already runs a compiled scan (epochs around a scanned epoch; a scan inside a
    differentiated loss is one step's rollout, not an epoch), loops of 8 or fewer
    literal iterations (`range(8)`, or `range(n)` with `n = 8` bound once: so few steps are
    better written out than scanned),
    rollouts recorded for a renderer (`rollout.append(state)` every step, then
    `env.render(rollout)`: a rollout made to be watched), a loop kept as the eager `debug` branch of
    an `if` whose other branch runs the steps in `lax.fori_loop`/`scan`, a timed loop calling eagerly a
    function the file also jits (or a copy of it): the baseline of an eager-versus-jit comparison
    (JAX101 says the same), loops that stop on a value
    derived on the device this iteration (a solver's `if norm(g) < tol: break`, a decode's end
    token: a `while_loop` at best; a done flag the step returns with the state still counts: a scan
    with a done mask runs the episode whole), loops whose only carry is a
    running total (`total_loss += loss`: a sum of the steps' outputs, not state a step reads), and
    the idiomatic training loop around a compiled step: its only JAX work is that step, or eager
    helpers preparing a batch it slices from the data (`x[j * bs:(j + 1) * bs]`) or a helper of the
    file samples (`xb = sample_batch(sub, data)` after a key split, fewer than 20 eager ops a step),
    with periodic work under `if step % k == 0` not counted. Scanning it saves one dispatch per step
    (1.1x in the training_loop pipeline). A compiled step per row of an array
    (`for t in range(n): w = update(w, xs[t])`), a rollout splitting its key eagerly around a
    jitted environment step, and a shock drawn in the loop beside a tiny jitted step are still
    reported: such steps are tiny. So is a loop whose compiled steps are all jitted functions of
    the file (or of a scanned module it imports) writing fewer than 20 array operations, with no
    derivative, no loop of their own and no slice of a data set for input (an integrator, an
    environment's dynamics): the message gives each step's operation count, the evidence that
    dispatch is most of its cost.

    A loop that carries state and fills a history array row by row (`hist = hist.at[t].set(state)`)
    is reported even where the file does not show whether a caller jits it: outside jit each write
    copies the whole array, under jit the loop unrolls, and a scan returning the rows stacked is
    the fix either way.

    Inside a function JAX compiles (jitted, a `lax.scan`/`fori_loop`/`while_loop`/`cond` body, or
    what those call or differentiate), a Python `for` loop runs at trace time: the compiled
    program holds one copy of its body per iteration, so compilation time and program size grow
    with the count, and a count that changes per call compiles the program again. Such a loop is
    reported when the file shows both the compilation (`@jax.jit`, `jax.jit(f)`,
    `jax.jit(jax.value_and_grad(f))` through a name) and either a count above 8 (a literal, a name
    bound once, a configured value, or the literal a call of the file passes for the bound:
    `epoch(params, noise, steps=40)`) or a list the caller empties and refills with `.append` in a
    `while` loop before each call of the jitted function (an episode's transitions). The nested
    loop of an unrolled loop is not reported again. It stays quiet on loops over a pytree's
    structure there (`range(len(params))`, dict items, `params[i]` in the body, counts named for
    layers, heads or blocks), on 8 or fewer iterations, on a loop with no array work, on a count
    the file does not give, and on functions only `jax.grad` or `jax.vmap` trace (nothing is
    compiled; the loop runs op by op, the case above).

    ## Measured
    A blog post on a multi-seed online learner measured 2.78x from `lax.scan` alone on its
    per-step loop; see the `batched_learner` pipeline's "scan per seed" stage for this machine's
    figure.
    """

    CODE = "JAX201"
    NAME = "loop-to-scan"
    SEVERITY = "warning"
    SUMMARY = "Python loop carrying JAX state step to step; use jax.lax.scan"
    FIX = "Turn the body into `step(carry, x) -> (carry, y)` and run it with `jax.lax.scan` (or `fori_loop`)."

    INVALID = [
        Invalid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def update(w, x, y):
                err = jnp.dot(w, x) - y
                return w - 0.01 * err * x, err ** 2

            def run(w, xs, ys, num_steps):
                errors = []
                for t in range(num_steps):  # <- JAX201
                    w, err = update(w, xs[t], ys[t])
                    errors.append(err)
                return w, errors
        """),
        Invalid("""
            import jax

            def rollout(env, policy, state, key, horizon):
                step = 0
                while step < horizon:  # <- JAX201
                    key, sub = jax.random.split(key)
                    result = env.step(state, policy(state.obs, sub))
                    state = result.state
                    step += 1
                return state
        """),
        Invalid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def physics_step(pos, vel):
                vel = vel - 0.01 * pos
                return pos + 0.01 * vel, vel

            def simulate(pos, vel, n_steps):
                for _ in range(n_steps):  # <- JAX201
                    pos, vel = physics_step(pos, vel)
                return pos, vel

            def record(state, n_steps):
                hist = jnp.zeros((n_steps, state.shape[0]))
                for t in range(n_steps):  # <- JAX201
                    state = jnp.tanh(1.1 * state + 0.1)
                    hist = hist.at[t].set(state)
                return hist
        """, note="a jitted step of four operations, and a history filled row by row"),
        Invalid("""
            import jax
            import jax.numpy as jnp

            NUM_STEPS = 500

            @jax.jit
            def diffuse(u):
                for _ in range(NUM_STEPS):  # <- JAX201
                    u = u + 0.1 * (jnp.roll(u, 1) - 2.0 * u + jnp.roll(u, -1))
                return u
        """, note="500 steps unrolled into one jitted program"),
    ]
    VALID = [
        Valid("""
            import jax
            import jax.numpy as jnp

            def update(w, xy):
                x, y = xy
                err = jnp.dot(w, x) - y
                return w - 0.01 * err * x, err ** 2

            @jax.jit
            def run(w, xs, ys):
                return jax.lax.scan(update, w, (xs, ys))

            @jax.jit
            def train_epoch(w, xs, ys):
                return jax.lax.scan(update, w, (xs, ys))

            def train(w, xs, ys, epochs):
                for epoch in range(epochs):  # each iteration is one compiled scan
                    w, errors = train_epoch(w, xs, ys)
                return w
        """),
        Valid("""
            import jax
            import jax.numpy as jnp

            def forward(layers, x):
                for i in range(len(layers)):  # structure, not steps
                    x = jnp.tanh(layers[i] @ x)
                return x

            def train(state, train_step, loader, num_steps, save):
                for step in range(num_steps):
                    batch = next(loader)  # data read from a Python iterator each step
                    state = train_step(state, batch)
                    if step % 1000 == 0:
                        save(step, state)
                return state

            def ensemble(params, x):
                for k in range(3):  # three literal iterations
                    x = jnp.dot(params[k], x)
                return x
        """),
        Valid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def train_step(w, x, y):
                loss, g = jax.value_and_grad(lambda w: jnp.mean((jnp.tanh(x @ w) - y) ** 2))(w)
                return w - 0.1 * g, loss

            def fit(w, x, y, steps):
                for _ in range(steps):  # a training step: the dispatch is small beside it
                    w, loss = train_step(w, x, y)
                return w
        """),
        Valid("""
            import jax
            import jax.numpy as jnp

            NUM_LAYERS = 12

            @jax.jit
            def forward(weights, x):
                for i in range(NUM_LAYERS):  # twelve different layers: the model's structure
                    x = jnp.tanh(weights[i] @ x)
                return x

            @jax.jit
            def smooth(u):
                for _ in range(4):  # four copies of a small body
                    u = 0.5 * (u + jnp.roll(u, 1))
                return u

            def loss(u):
                for _ in range(100):  # traced by grad alone: nothing is compiled
                    u = jnp.sin(u)
                return jnp.sum(u)

            grad_loss = jax.grad(loss)
        """),
    ]

    def check(self, model: SemanticModel) -> Iterator[Report]:
        for fn in model.functions:
            for loop in fn.loops:
                unrolled = unrolled_loop(model, loop)
                if unrolled is not None:
                    yield Report(loop.node, _unrolled_message(unrolled))
            if fn.traced:
                continue
            for loop in fn.loops:
                if not loop.is_step or loop.is_epoch:
                    continue
                # a buffer filled by the counter beside carried state wants a scan whether or not a
                # caller jits this code (outside jit: a copy per write; under jit: an unrolled loop)
                filled = filled_buffers(model, loop)
                if not dispatch_loop(model, loop) and (not filled or fn.traced or iterates_structure(model, loop)):
                    continue
                count = literal_trip_count(loop, model.resolve)
                if count is not None and count <= SHORT_LOOP:
                    continue
                if not has_fixed_trip_count(model, loop):
                    continue
                carried = step_state(model, loop)
                if not carried or host_bound_call(model, loop) is not None \
                        or wraps_compiled_scan(model, loop) or host_fed(model, loop) or fed_back(model, loop) \
                        or records_for_rendering(model, loop) is not None or has_compiled_alternative(model, loop) \
                        or eager_baseline_loop(model, loop) \
                        or (exits_on_device(model, loop) and not ends_episode(model, loop, carried)):
                    continue
                growth = grows_carry(model, loop, set(carried))
                if growth in ("starts as None", "loses an axis"):
                    # a cache filled on the first step, or a carry contracted by each step (a
                    # tensor-product evaluation, one axis per pass): no fixed-shape carry to scan
                    continue
                small = None
                if growth is None and compiled_training_loop(model, loop):
                    small = small_compiled_steps(model, loop)  # dispatch is most of a tiny step's cost
                    if small is None:
                        continue
                names = ", ".join(f"`{n}`" for n in sorted(carried))
                header = describe(loop.node.iter if isinstance(loop.node, cst.For) else loop.node.test)
                if growth == "concatenated":
                    grown, jitted = concatenated(model, loop, set(carried))
                    grown_list = ", ".join(f"`{n}`" for n in grown)
                    retraced = (f" and each call of the jitted {', '.join(jitted)} re-traces for the new length"
                                if jitted else " and copies the whole array into a longer one")
                    yield Report(loop.node, f"this loop over `{header}` grows {grown_list} by concatenation on "
                                            "every iteration, so each iteration is a separate dispatch from Python"
                                            f"{retraced}; "
                                            "preallocate the full-length buffer, fill it with "
                                            "`lax.dynamic_update_slice` and run the iterations in "
                                            "`jax.lax.fori_loop`/`scan`")
                    continue
                yield Report(loop.node, _message(header, names, sorted(filled), small, exits_early(loop)))


def _unrolled_message(found: UnrolledLoop) -> str:
    """The loop JAX unrolls: where it is traced, how many copies of its body the program holds."""
    node = found.loop.node
    header = describe(node.iter if isinstance(node, cst.For) else node.test)
    head = (f"this `for` loop over `{header}` runs inside `{found.loop.function.name}`, which JAX traces "
            f"({found.compiled})")
    if found.count is None:
        return (f"{head}: {found.varying}, so the loop is unrolled into one copy of its body per item and each "
                "new length traces and compiles the function again; stacking the items into arrays padded to one "
                "length (with a mask) and running the body with `jax.lax.scan` compiles it once")
    source = f" ({found.source})" if found.source else ""
    return (f"{head}: its {found.count:,} iterations{source} are unrolled into the compiled program, one copy "
            "of the body each, so compilation time grows with the count; `jax.lax.fori_loop` or "
            "`jax.lax.scan` traces the body once")


def _message(header: str, names: str, filled: list[str], small: list[CompiledStep] | None,
             early: bool = False) -> str:
    """What the loop carries and what each iteration costs, as far as the code shows."""
    head = f"this loop over `{header}` carries {names} from one iteration to the next"
    if early:  # the stop test has to run inside the compiled loop: `while_loop`, not `scan`
        return (f"{head} through JAX calls and may stop early (`break`), so every iteration is a separate "
                "dispatch from Python; `jax.lax.while_loop`, with the stop test in its condition, compiles "
                "the iterations into one program")
    if filled:
        buffers = ", ".join(f"`{n}`" for n in filled)
        return (f"{head} and writes a row of {buffers} with `.at[...].set` on each: outside jit every "
                "iteration is a separate dispatch from Python and each write copies the whole array (under "
                "jit, the loop unrolls into one copy of its body per iteration); `jax.lax.scan` runs the "
                "iterations as one compiled loop and returns the rows stacked")
    if small:
        steps = ", ".join(f"`{s.name}` ({s.ops} array operation{'s' if s.ops != 1 else ''})"
                          for s in small)
        return (f"{head} through the jitted {steps}: every iteration is a separate dispatch from Python, "
                "several microseconds each, around a step of only that much work; `jax.lax.scan` runs all "
                "iterations in one dispatch")
    return (f"{head} through JAX calls, so every iteration is a separate dispatch from Python; "
            "`jax.lax.scan` compiles all iterations into one program")
