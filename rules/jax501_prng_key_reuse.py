"""JAX501 prng-key-reuse."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from jaxopt_audit.static import (
    Invalid,
    Report,
    Reuse,
    Rule,
    SemanticModel,
    Valid,
    apart_at_top_level,
    describe,
    example_inputs_for_init,
    exclusive_cases,
    flax_inits,
    input_for_init,
    key_reuses,
    measurement_inputs,
    named_stand_in,
    one_splits_first,
    result_unread,
    shows_same_draw,
    site_of,
    walk,
)


class PrngKeyReuse(Rule):
    """
    ## What it does
    Tracks each PRNG key (old-style `jax.random.PRNGKey` and new-style `jax.random.key`) along
    every path through a function, loops included, and reports a call that consumes a key that
    was already consumed: a second sampling call (`normal`, `uniform`, `bernoulli`,
    `categorical`, `permutation`, ...) or `split` on the same key without a split or rebinding
    in between; a key consumed in a loop body (or comprehension) that is never re-split in the
    loop; a key captured from the enclosing scope and consumed in the body of `lax.scan`,
    `fori_loop`, `while_loop` or `lax.map`. Passing a key to a function of the same module
    that samples with it counts as consuming it, and so does a flax linen module's
    `init(key, x)` or `apply(..., rngs={"dropout": key})`; calling a nested function or lambda
    consumes the keys it captured (`noise = lambda s: jax.random.normal(key, s)`, then
    `noise(shape)` and `jax.random.uniform(key)`). A key drawn with once before a loop and then
    on every iteration is reported as the loop's reuse, naming the loop and the earlier draw.

    ## Why is this bad?
    JAX random functions are pure: the same key gives the same numbers. Two draws from one
    key are identical (the "JAX Basics" post: `print(jax.random.normal(key))` twice prints the
    same value),
    draws of different shapes or distributions from one key are correlated, and a key reused
    on every iteration adds the same "noise" to every step. Nothing fails; results are
    silently less random than they look.

    ## How to fix
    Split before each use and rebind the key you keep: `key, sub = jax.random.split(key)`,
    then draw with `sub`. For a fixed number of draws split once (`k1, k2 = jax.random.split(key)`
    or `keys = jax.random.split(key, n)` and use `keys[i]`). In loops, split in the loop body or
    derive a per-iteration key with `jax.random.fold_in(key, step)` or take a different element
    of one split each iteration (`jax.random.split(key, n)[i]`, quiet); in a `lax.scan`, carry
    the key and split it in the body. A key split afresh at the top of each iteration and then
    used twice in it is judged as two uses in a row, not as reuse across iterations.

    The rule stays quiet on keys rebound before each use, distinct elements of a split (`keys[0]`,
    `keys[1]`, `for k in keys`), `fold_in`, a fixed key used under a periodic guard (`if step %
    eval_every == 0:` draws the same evaluation samples each time, on purpose; `if step % cycle ==
    0: key = saved_key` replays the same batches), draws under two `if`s testing one name against
    different literals or disjoint ranges (`if noise == "uniform":`, `if noise == "gaussian":`; `if
    self.D == 1:`, `if self.D > 1:`: never both run), draws on the two sides of one flag (`if
    use_tpu:` and the `else:` of another `if use_tpu:`), a fixed evaluation key each epoch
    (`evaluate(params, valid_key)`, a key named `test_key`: comparable scores), a key an evaluation
    or a plot shares with training (`evaluate_loss(params, key, test_batch)` every k steps, then
    the training step splits `key`: a logged score's noise, no result changes), the same key in
    each repetition of a timed benchmark loop, stand-in inputs of a measurement (draws stored as
    they are in a function that reads a timer, lowers a program without running it
    (`jax.jit(f).lower(x)`: only shapes count) or is named for a benchmark or mock data, in a
    `__main__` block or notebook cell that reads a timer, or in a `__main__` block without loops: a
    smoke test), a draw stored under a name that says it is a stand-in (`dummy_indices =
    randint(key, ...)` for a warm-up call), two draws compared in one assertion (a determinism
    test), a deliberate replay of the same function on the same key: a model initialised twice to
    get an equal copy (`params=init(k, x)`, `target_params=init(k, x)`: an online and a target
    network that must start equal), or candidates compared on common random numbers (`train(key,
    setting_a)` then `train(key, setting_b)`, or `for setting in settings: train(key, setting)` in
    a loop that carries no state; a loop or comprehension over a model's layers, `zip(sizes[:-1],
    sizes[1:])` or a sequence named for layers or sizes, builds one model and is reported), draws
    that only make example inputs for a model's `init` (`x =
    normal(key, shape)`, then `model.init(key, x)`: initialisation reads their shapes), a flax
    `init` and any other use of its key (flax folds each submodule's path into the key rather than
    drawing with it: an actor and a critic initialised from one key are independent), two different
    samplers one of which splits the key before drawing (`uniform(key, ...)` and `randint(key,
    ...)`: randint, permutation and choice without `p` draw from `split(key)`, so the two share no
    bits), a split after a draw (`x = normal(key, s)`, then `key, sub = split(key)`, or `key =
    split(key)[0]` at the top of each iteration: the split derives new keys; a loop splitting the
    same, never rebound key every iteration is still reported), keys split off into a local name
    nothing reads (`subkeys = split(key, n)` left over, then `normal(key, ...)`: the one real use),
    a use whose statement discards its result (`_ = warm_up(split(key, n), x)` before a timed run),
    a notebook cell redoing an earlier cell's demonstration with the global key (its result not
    kept, or kept under the same name), a notebook cell whose comments or preceding prose say one
    key gives the same numbers ("reusing the same key gives the SAME numbers", `# No no no!`: a
    tutorial showing it on purpose), and keys it cannot follow: attributes (`state.rng`) and keys
    passed to other libraries' functions (`env.reset(key, params)`). A replay is still reported
    when the second call feeds on the first one's result (`h = dropout(key, x)`, then `dropout(key,
    h)`), when the two calls are identical (`a = noise(key, x)`, `b = noise(key, x)`: the same draw
    twice), and in a loop that carries state (a training loop).

    Off in test files by default (README, "The rules"): tests reuse keys on purpose (identical
    inputs, determinism, caching) or where correlated test data does not matter.
    """

    CODE = "JAX501"
    NAME = "prng-key-reuse"
    SEVERITY = "error"
    SUMMARY = "PRNG key used twice without being split"
    IMPACT = "correctness"
    FIX = "Split the key before each use: `key, sub = jax.random.split(key)`, then draw with `sub`."

    INVALID = [
        Invalid("""
            import jax

            key = jax.random.key(42)
            print(jax.random.normal(key))
            print(jax.random.normal(key))  # <- JAX501
        """, note="the 'JAX Basics' post: the same key gives the same number"),
        Invalid("""
            import jax
            import jax.numpy as jnp

            def add_noise(key, x):
                return x + 0.1 * jax.random.normal(key, x.shape)

            def augment(key, images):
                flipped = jnp.where(jax.random.bernoulli(key, 0.5), images[:, ::-1], images)
                return add_noise(key, flipped)  # <- JAX501

            def rollout(key, policy_logits, steps):
                actions = []
                for _ in range(steps):
                    actions.append(jax.random.categorical(key, policy_logits))  # <- JAX501
                return jnp.stack(actions)
        """),
        Invalid("""
            import jax
            from jax import random

            def simulate(key, x0, n):
                def step(x, _):
                    x = x + random.normal(key, x.shape)  # <- JAX501
                    return x, x
                return jax.lax.scan(step, x0, None, length=n)

            def init(seed):
                rng = random.key(seed)
                if seed > 0:
                    w = random.normal(rng, (3, 3))
                else:
                    w = random.uniform(rng, (3, 3))
                b = random.normal(rng, (3,))  # <- JAX501
                return w, b
        """),
        Invalid("""
            import jax
            import jax.numpy as jnp

            def init_layer(key, n_in, n_out):
                return jax.random.normal(key, (n_in, n_out)) / jnp.sqrt(n_in), jnp.zeros(n_out)

            def init_mlp(key, sizes):
                return [init_layer(key, m, n) for m, n in zip(sizes[:-1], sizes[1:])]  # <- JAX501

            def noisy_walk(key, x, n):
                start = x + jax.random.normal(key, x.shape)
                for _ in range(n):
                    x = 0.9 * x + jax.random.normal(key, x.shape)  # <- JAX501
                return start, x
        """, note="every layer from one key; a loop's reuse after a one-off draw, reported as the loop's"),
    ]
    VALID = [
        Valid("""
            import jax

            key = jax.random.key(42)
            key, subkey = jax.random.split(key)
            print(jax.random.normal(subkey))
            key, subkey = jax.random.split(key)
            print(jax.random.normal(subkey))
        """),
        Valid("""
            import jax
            import jax.numpy as jnp

            def init_layer(key, n_in, n_out):
                w_key, b_key = jax.random.split(key)
                return jax.random.normal(w_key, (n_in, n_out)), jax.random.normal(b_key, (n_out,))

            def init_mlp(key, sizes):
                keys = jax.random.split(key, len(sizes))
                first = init_layer(keys[0], sizes[0], sizes[1])
                second = init_layer(keys[1], sizes[1], sizes[2])
                rest = [init_layer(k, a, b) for k, a, b in zip(keys[2:], sizes[1:], sizes[2:])]
                return [first, second, *rest]

            def train(key, params, steps):
                noise = []
                for step in range(steps):
                    step_key = jax.random.fold_in(key, step)
                    noise.append(jax.random.normal(step_key, params.shape))
                return jnp.stack(noise)

            def make_env_step(key, x0, n):
                def step(carry, _):
                    k, x = carry
                    k, sub = jax.random.split(k)
                    x = x + jax.random.normal(sub, x.shape)
                    return (k, x), x
                return jax.lax.scan(step, (key, x0), None, length=n)
        """),
        Valid("""
            import jax

            def sample(key, n, kind):
                if kind == "normal":
                    return jax.random.normal(key, (n,))
                elif kind == "uniform":
                    return jax.random.uniform(key, (n,))
                return jax.random.bernoulli(key, 0.5, (n,))

            def epochs(key, params, data, n_epochs, train_epoch, save_checkpoint):
                for epoch in range(n_epochs):
                    key, perm_key = jax.random.split(key)
                    order = jax.random.permutation(perm_key, data.shape[0])
                    params = train_epoch(params, data[order])
                    save_checkpoint(params, epoch)
                return params
        """),
    ]

    def demonstrated(self, finding, cell) -> bool:
        """A tutorial cell drawing twice from one key to show the same numbers come back."""
        return shows_same_draw(cell)

    def check(self, model: SemanticModel) -> Iterator[Report]:
        for reuse in key_reuses(model):
            previous, node = reuse.previous, reuse.node
            # a second use in sequence that is harmless or deliberate (model/key_pairs.py)
            if reuse.kind == "sequence" and previous is not None \
                    and (apart_at_top_level(model, reuse)
                         or example_inputs_for_init(model, previous, node)
                         or one_splits_first(model, previous, node)
                         or input_for_init(model, previous, node)
                         or flax_inits(model, previous, node)
                         or exclusive_cases(model, previous, node)
                         or measurement_inputs(model, previous, node)
                         or named_stand_in(model, previous) or named_stand_in(model, node)
                         or result_unread(model, previous) or result_unread(model, node)):
                continue
            yield Report(node, _message(model, reuse))


def _loop_named(model: SemanticModel, node: cst.Call) -> str:
    """`the loop at line N` or `the comprehension at line N` around `node` (the innermost)."""
    site = site_of(model, node)
    fn = site.function if site is not None else None
    comprehension = next((c.node for c in reversed(fn.comprehensions) if any(n is node for n in walk(c.node))),
                         None) if fn is not None else None
    if comprehension is not None and (site is None or site.loop is None
                                      or any(n is comprehension for n in walk(site.loop.node))):
        return f"the comprehension at line {model.line_of(comprehension)}"
    if site is not None and site.loop is not None:
        return f"the loop at line {model.line_of(site.loop.node)}"
    return "the loop"


def _message(model: SemanticModel, reuse: Reuse) -> str:
    call = f"`{describe(reuse.node)}`"
    key = f"`{reuse.key}`"
    if reuse.kind == "iteration":
        transform = (reuse.transform or "lax.scan").replace("jax.", "", 1)
        return (f"{call} consumes {key}, captured from the enclosing scope, in the body of {transform}: "
                f"every iteration draws the same numbers")
    if reuse.kind == "loop" and reuse.previous is not None and reuse.previous is not reuse.node:
        # `key, sub = split(key)`, then `use(key)`: the loop re-splits `key`, but a use after the
        # split hands the next iteration a key already consumed
        return (f"{call} consumes {key}, which `{describe(reuse.previous)}` already consumed in the previous "
                f"iteration after {key} was last split: both draw the same (or correlated) random numbers")
    if reuse.kind == "loop":
        where = _loop_named(model, reuse.node)
        before = f" (after `{describe(reuse.before)}` at line {model.line_of(reuse.before)} consumed it first)" \
            if reuse.before is not None else ""
        return (f"{call} consumes {key} on every iteration of {where}{before} and {key} is never re-split in the "
                f"loop: every iteration draws the same numbers (correlated ones, where the shapes differ)")
    previous = f"`{describe(reuse.previous)}`" if reuse.previous is not None else "an earlier call"
    return (f"{call} consumes {key}, which {previous} already consumed with no split in between: "
            f"both draw the same (or correlated) random numbers")
