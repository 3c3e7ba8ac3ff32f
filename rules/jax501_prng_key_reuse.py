"""JAX501 prng-key-reuse."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import cast

import libcst as cst

from jaxopt_audit.static import (
    INIT_METHODS,
    Function,
    Invalid,
    KeyAnalysis,
    Report,
    Reuse,
    Rule,
    SemanticModel,
    Site,
    Valid,
    apis,
    children,
    describe,
    enclosing_statements,
    names_in,
    read_names,
    reads_timer,
    shows_same_draw,
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
        analysis = KeyAnalysis(model)
        module = next((fn for fn in model.functions if fn.is_module), None)
        for reuse in analysis.reuses:
            if module is not None and reuse.kind == "sequence" and reuse.previous is not None \
                    and _module_level(module, reuse.node) and not any(
                        _draws_meet(model, module, reuse.node, earlier)
                        for earlier in _earlier_draws(model, module, reuse)):
                continue
            if reuse.kind == "sequence" and reuse.previous is not None \
                    and (_example_inputs_for_init(model, reuse.previous, reuse.node)
                         or _one_splits_first(model, reuse.previous, reuse.node)
                         or _input_for_init(model, reuse.previous, reuse.node)
                         or _flax_inits(model, reuse.previous, reuse.node)
                         or _exclusive_cases(model, reuse.previous, reuse.node)
                         or _measurement_inputs(model, reuse.previous, reuse.node)
                         or _named_stand_in(model, reuse.previous) or _named_stand_in(model, reuse.node)
                         or _result_unread(model, reuse.previous) or _result_unread(model, reuse.node)):
                continue
            yield Report(reuse.node, _message(model, reuse))


# Functions whose draws are stand-in data: a benchmark's inputs, mock or dummy arrays.
_STAND_IN_NAME = re.compile(r"(^|_)(bench|benchmark|benchmarks|profile|timing|mock|dummy|fake)(_|$)")


def _measurement_inputs(model: SemanticModel, previous: cst.Call, node: cst.Call) -> bool:
    """Two draws from one key that only make stand-in inputs: each result bound to a name, in a
    function that reads a timer, lowers a program without running it, or is named for a benchmark or
    mock data (`def benchmark(...)`, `generate_mock_data`), in a `__main__` block or notebook cell
    that reads a timer, or in a `__main__` block without loops (a module's smoke test: build inputs,
    run once, print shapes). A measurement needs inputs of the right shapes; equal or correlated
    numbers change nothing it reports (mock molecules for a timed comparison, a kernel
    benchmark's inputs). Keys handed to a step or split,
    not drawn with, are still followed."""
    for call in (previous, node):
        q = model.resolve(call.func) or ""
        if not q.startswith("jax.random.") or q in apis.KEY_DERIVATIONS:
            return False
    site = _site_of(model, node)
    if site is None:
        return False
    fn = site.function
    if not all(_stored_as_data(fn, call) for call in (previous, node)) \
            or _starts_a_simulation(fn, previous, node):
        return False
    if not fn.is_module:
        return bool(_STAND_IN_NAME.search(fn.name.lower())) or reads_timer(model, fn.calls) or _lowers(model, fn)
    block = _main_block(fn, node)
    if block is not None:  # a `__main__` benchmark, or a smoke test run straight through once
        inside = {id(n) for n in walk(block)}
        return id(previous) in inside and (
            reads_timer(model, [s for s in fn.calls if id(s.node) in inside])
            or not any(isinstance(n, (cst.For, cst.While)) for n in walk(block)))
    cell = model.cell_of(node)
    return cell is not None and cell == model.cell_of(previous) \
        and reads_timer(model, [s for s in fn.calls if model.cell_of(s.node) == cell])


def _starts_a_simulation(fn: Function, *draws: cst.Call) -> bool:
    """A draw is bound to a name the function then evolves with a call that reads it (`u =
    normal(key, s)`, then `u = simulate(u, kappa)` or `for t in ...: u = diffuse(u, kappa)`):
    the initial state of a run the function times, not a stand-in input of a measurement."""
    bound = {t for a in fn.assignments if any(a.value is d for d in draws) for t in a.targets}
    return any(isinstance(a.value, cst.Call) and set(a.targets) & bound & read_names(a.value)
               for a in fn.assignments)


def _lowers(model: SemanticModel, fn: Function) -> bool:
    """The function lowers or traces a program without running it (`jax.jit(f).lower(x)`,
    `jax.make_jaxpr(f)(x)`, `jax.eval_shape`): its inputs matter only by shape and dtype (an HLO
    dump's inputs drawn from one key)."""
    return any(isinstance(s.node.func, cst.Attribute) and s.node.func.attr.value == "lower"
               or model.resolve(s.node.func) in ("jax.make_jaxpr", "jax.eval_shape") for s in fn.calls)


_STAND_IN_VALUE = re.compile(r"(^|_)(dummy|mock|placeholder)(_|$)")


def _named_stand_in(model: SemanticModel, draw: cst.Call) -> bool:
    """The draw is stored as it is under a name that says it is a stand-in (`dummy_indices =
    jax.random.randint(key, ...)` for a warm-up call whose result is thrown away): its numbers
    change nothing, so sharing its key with another draw does not
    either."""
    for fn in model.functions:
        for a in fn.assignments:
            if a.value is draw and any(_STAND_IN_VALUE.search(t.lower()) for t in a.targets):
                return True
    return False


def _stored_as_data(fn: Function, draw: cst.Call) -> bool:
    """The draw's array is stored or returned as it is, or scaled (`x = normal(key, s) / 10`,
    `return {"R": normal(key, s)}`): no other call takes it, so it is an input, not part of a
    computation whose randomness matters."""
    stack: list[tuple[cst.CSTNode, bool]] = [(fn.body, False)]
    while stack:
        node, through_call = stack.pop()
        if node is draw:
            return not through_call
        if node is not fn.body and isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.BaseSmallStatement) and not isinstance(node, (cst.Assign, cst.AnnAssign, cst.Return)):
            through_call = True  # an expression statement, `x += ...`: not a plain store
        stack.extend((child, through_call or isinstance(node, cst.Call)) for child in children(node))
    return False


def _main_block(module: Function, node: cst.Call) -> cst.If | None:
    """The `if __name__ == "__main__":` block around `node`, if any."""
    for block in enclosing_statements(module, node) or []:
        if isinstance(block, cst.If) and isinstance(block.test, cst.Comparison) \
                and isinstance(block.test.left, cst.Name) and block.test.left.value == "__name__":
            return block
    return None


def _exclusive_cases(model: SemanticModel, previous: cst.Call, node: cst.Call) -> bool:
    """`if kind == "uniform": x = uniform(key, ...)`, then `if kind == "gaussian": x = normal(key,
    ...)`: two ifs on one name equal to two different literals never both run (a
    dequantisation noise helper), though the flow walk, which keeps no values, joins them; nor
    do two ifs testing one value against disjoint ranges (`if self.D == 1:`, then `if self.D >
    1:`: a proposal drawn in one or many dimensions)."""
    fn = _function_of(model, node)
    if fn is None:
        return False
    blocks = [enclosing_statements(fn, call) or [] for call in (previous, node)]
    cases = [_literal_cases(call, around) for call, around in zip((previous, node), blocks, strict=True)]
    if any(subject == other and _disjoint(case, other_case)
           for subject, case in cases[0] for other, other_case in cases[1]):
        return True
    # one under `if use_tpu:`, the other under the `else:` of another `if use_tpu:` (a
    # notebook's device keys made for the TPU path, its batch key used on the other path)
    sides = [_branch_sides(call, around) for call, around in zip((previous, node), blocks, strict=True)]
    return any((test, not side) in sides[1] for test, side in sides[0])


def _site_of(model: SemanticModel, call: cst.Call) -> Site | None:
    """The call's site, in the function (or module) whose own calls include it."""
    return next((s for f in model.functions for s in f.calls if s.node is call), None)


def _function_of(model: SemanticModel, call: cst.Call) -> Function | None:
    site = _site_of(model, call)
    return site.function if site is not None else None


def _branch_sides(call: cst.Call, blocks: list[cst.CSTNode]) -> set[tuple[str, bool]]:
    """(test, True) for each `if test:` of the blocks around `call` whose body holds it, (test,
    False) for each whose `else:` does; the test a plain name or attribute (a flag)."""
    out: set[tuple[str, bool]] = set()
    for block in blocks:
        if isinstance(block, cst.If) and isinstance(block.test, (cst.Name, cst.Attribute)):
            test = cst.Module([]).code_for_node(block.test)
            if any(n is call for n in walk(block.body)):
                out.add((test, True))
            elif isinstance(block.orelse, cst.Else) and any(n is call for n in walk(block.orelse)):
                out.add((test, False))
    return out


_Case = tuple[str, object]  # ("==", "'uniform'") or ("range", (low, low_closed, high, high_closed))
# `1 < d` reads as `d > 1`
_FLIPPED: dict[type, type] = {cst.LessThan: cst.GreaterThan, cst.GreaterThan: cst.LessThan,
                              cst.LessThanEqual: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.LessThanEqual,
                              cst.Equal: cst.Equal}


def _literal_cases(call: cst.Call, blocks: list[cst.CSTNode]) -> list[tuple[str, _Case]]:
    """(subject, case) for each `if subject <op> <literal>:` of the blocks around `call` whose
    body holds it, the subject a name or an attribute (`self.D`)."""
    found: list[tuple[str, _Case]] = []
    for block in blocks:
        if not (isinstance(block, cst.If) and any(n is call for n in walk(block.body))):
            continue
        test = block.test
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            continue
        left, op, right = test.left, test.comparisons[0].operator, test.comparisons[0].comparator
        kind = type(op)
        if isinstance(left, (cst.SimpleString, cst.Integer)) and kind in _FLIPPED:
            left, right, kind = right, left, _FLIPPED[kind]
        if not isinstance(left, (cst.Name, cst.Attribute)):
            continue
        subject = cst.Module([]).code_for_node(left)
        if isinstance(right, cst.SimpleString) and kind is cst.Equal:
            found.append((subject, ("==", right.value)))
        elif isinstance(right, cst.Integer):
            bound = int(right.value, 0)
            interval = {cst.Equal: (bound, True, bound, True), cst.GreaterThan: (bound, False, None, False),
                        cst.GreaterThanEqual: (bound, True, None, False), cst.LessThan: (None, False, bound, False),
                        cst.LessThanEqual: (None, False, bound, True)}.get(kind)
            if interval is not None:
                found.append((subject, ("range", interval)))
    return found


def _disjoint(a: _Case, b: _Case) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "==":
        return a[1] != b[1]
    return _below(cast(tuple, a[1]), cast(tuple, b[1])) or _below(cast(tuple, b[1]), cast(tuple, a[1]))


def _below(a: tuple, b: tuple) -> bool:
    """Interval `a` ends before interval `b` starts."""
    high, high_closed = a[2], a[3]
    low, low_closed = b[0], b[1]
    if high is None or low is None:
        return False
    return high < low or (high == low and not (high_closed and low_closed))


# Samplers that split the key they are given before drawing (randint draws from both halves of
# `split(key)`; permutation and shuffle split once per sorting round; choice without `p` goes
# through randint or permutation, while choice with `p` draws `uniform(key)` directly).
SPLITTING_SAMPLERS = frozenset({"jax.random.randint", "jax.random.choice", "jax.random.permutation",
                                "jax.random.shuffle"})


def _one_splits_first(model: SemanticModel, previous: cst.Call, node: cst.Call) -> bool:
    """Two different samplers on one key, one of which splits it before drawing
    (`uniform(key, ...)` then `randint(key, ...)`): the draws share no bits (measured: no
    correlation, |r| about 0.002); the same sampler twice (`randint` and `randint`, `choice` and `choice`) draws
    the same numbers and is still reported."""
    first, second = model.resolve(previous.func), model.resolve(node.func)
    if first is None or second is None or first == second:
        return False
    if not (first.startswith("jax.random.") and second.startswith("jax.random.")) \
            or {first, second} & apis.KEY_DERIVATIONS:
        return False  # key derivations are the key analysis's business (split_after_draw)
    return _splits(first, previous) or _splits(second, node)


def _splits(sampler: str, call: cst.Call) -> bool:
    if sampler == "jax.random.choice":  # choice(key, a, shape, replace, p, axis)
        return not any(a.keyword is not None and a.keyword.value == "p" for a in call.args) \
            and len(call.args) < 5
    return sampler in SPLITTING_SAMPLERS


def _example_inputs_for_init(model: SemanticModel, previous: cst.Call, node: cst.Call) -> bool:
    """Both draws only make example inputs for a model's `init` (`x = normal(key, shape)`, then
    `model.init(key, x=x)`), or are never read in a function that calls `init`: initialisation
    reads their shapes, so equal numbers change nothing (a network builder drawing `x` and `t`
    from one key for `init`)."""
    fn = _function_of(model, node)
    if fn is None:
        return False
    init_args: list[str] = [a.value.value for s in fn.calls if _is_init(s.node)
                            for a in s.node.args if isinstance(a.value, cst.Name)]
    for draw in (previous, node):
        bound = [a for a in fn.assignments if a.value is draw and len(a.targets) == 1]
        if not bound:
            return False
        name = bound[0].targets[0]
        reads = fn.reads(name, own=True)  # a nested `def forward(x, t)` has its own `x` and `t`
        if (reads == 0 and not init_args) or (reads and init_args.count(name) != reads):
            return False  # read by something other than `init` (in a builder that calls `init`, a
            # draw never read feeds nothing)
    return True


def _result_unread(model: SemanticModel, call: cst.Call) -> bool:
    """The key derivation's result is bound to a local name nothing reads, nested functions
    included (`subkeys = split(key, n)` left over from an edit, then `sample_noise(key, n)`): dead
    code makes keys nobody uses, so the other use of the key is its only one (a dataset
    builder), or to one the next statements bind again before reading it (`keys = split(key,
    12)`, then `keys = split(key, n)`). Any use whose statement discards its result (`_ =
    warm_up(split(key, n), x)` to compile before a timed run) is one too."""
    fn = _function_of(model, call)
    if fn is None:
        return False
    if any(a.targets == ("_",) and a.value is not None and any(n is call for n in walk(a.value))
           for a in fn.assignments):
        return True
    # a draw is what the minimal examples of reuse leave unread: still reported
    return model.resolve(call.func) in apis.KEY_DERIVATIONS and (
        fn.binds_unread(call) or fn.rebound_before_read(call, model.name_seq))


def _is_init(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in INIT_METHODS


def _input_for_init(model: SemanticModel, previous: cst.Call, node: cst.Call) -> bool:
    """A draw whose result is handed to the `init` that takes the same key (`x = normal(key,
    shape)`, then `model.init(key, x)`, whatever else reads `x`): initialisation reads the
    example input's shape, so its numbers never meet the parameters."""
    draw, init = (previous, node) if _is_init(node) else (node, previous)
    if not _is_init(init) or _is_init(draw):
        return False
    fn = _function_of(model, draw)
    if fn is None:
        return False
    bound = [a.targets[0] for a in fn.assignments if a.value is draw and len(a.targets) == 1]
    return bool(bound) and any(isinstance(a.value, cst.Name) and a.value.value == bound[0] for a in init.args)


def _flax_inits(model: SemanticModel, previous: cst.Call, node: cst.Call) -> bool:
    """A flax `init` and another use of its key: flax never draws with the key it is given, it
    folds each submodule's path into it, so an actor and a critic initialised from one key get
    parameters of their own, one module twice is a deliberate copy, and a later `split(key)`
    shares no bits with the parameters. Haiku draws its keys in order from the one given, so two haiku networks with
    layers of the same shapes start equal: a file importing haiku is still reported."""
    if not (_is_init(previous) or _is_init(node)):
        return False
    roots = {full.split(".")[0] for full in model.imports.bound.values()}
    return "flax" in roots and "haiku" not in roots


def _draws_meet(model: SemanticModel, module, node: cst.Call, previous: cst.Call) -> bool:
    """At the top level of a script or notebook, one key reused for two draws matters when the
    draws meet: in one statement, or their results read together later (`x @ w` of data and
    weights drawn alike). A notebook reusing its global key for unrelated demonstrations, cells
    apart, draws numbers nobody compares: across cells, a draw whose result is not kept, or a
    cell redoing an earlier cell's draw into the same name, does not meet it. Inside functions
    every reuse counts."""
    statements: dict[int, set[str]] = {}
    for a in module.assignments:
        if a.value is None:
            continue
        inside = {id(n) for n in walk(a.value)}
        for call in (node, previous):
            if id(call) in inside:
                statements.setdefault(id(call), set()).update(a.targets)
    first, second = statements.get(id(previous), set()), statements.get(id(node), set())
    cells = model.cell_of(previous), model.cell_of(node)
    if None not in cells and cells[0] != cells[1]:
        if not first or not second or first & second:
            return False
    elif not first or not second or first & second:
        return True
    for a in module.assignments:
        if a.value is not None:
            names = set(names_in(a.value))
            if names & first and names & second:
                return True
    for site in module.calls:
        names = set(names_in(site.node))
        if names & first and names & second:
            return True
    return False


def _earlier_draws(model: SemanticModel, module, reuse: Reuse) -> list[cst.Call]:
    """Top-level calls before this one that take the same key (`reuse.previous` among them)."""
    line = model.line_of(reuse.node)
    # the argument test first: a position costs a render of the statement
    found = [s.node for s in module.calls if s.node is not reuse.node
             and any(isinstance(a.value, cst.Name) and a.value.value == reuse.key for a in s.node.args)
             and model.line_of(s.node) < line]
    return found or [reuse.previous]


def _module_level(module, node: cst.Call) -> bool:
    return any(site.node is node for site in module.calls)


def _loop_named(model: SemanticModel, node: cst.Call) -> str:
    """`the loop at line N` or `the comprehension at line N` around `node` (the innermost)."""
    site = _site_of(model, node)
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
