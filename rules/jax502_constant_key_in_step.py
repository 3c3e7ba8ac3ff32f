"""JAX502 constant-key-in-step."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import cast

import libcst as cst

from jaxopt_audit.static import (
    UNSAFE,
    Fix,
    Function,
    Invalid,
    Report,
    Rule,
    SemanticModel,
    Site,
    Valid,
    apis,
    carried_names,
    describe,
    int_value,
    module_alias,
    site_of,
    where,
    why_every_step,
)

# Consumers after which a constant key still yields a different key every step.
PER_STEP_DERIVATIONS = frozenset({"jax.random.fold_in"})
# Methods that only initialise (a model's parameters): the same init key every time is deliberate.
INIT_METHODS = frozenset({"init", "init_with_output", "initialize", "init_params", "lazy_init",
                          "initialize_carry"})


class ConstantKeyInStep(Rule):
    """
    ## What it does
    Finds `jax.random.PRNGKey(<constant>)` and `jax.random.key(<constant>)` created on every step:
    in the body of a step loop, in a function the loop calls every step (jitted or not, and the
    helpers it calls), or in the body of a `lax.scan` / `fori_loop` / `while_loop`. A constant is an
    integer literal or a module-level name bound once to one.

    "Called every step" is decided from the call graph of the file: a call in a step loop that is
    not under a periodic guard (`if step % k == 0`) makes its callee per-step, whether the callee
    is jitted or not; the functions a per-step function calls are per-step too, and so is every
    function passed as the body of a compiled loop.

    ## Why is this bad?
    A JAX key is a value, not a generator with hidden state: the same key gives the same numbers.
    A key rebuilt from the same seed every step draws identical "random" numbers every step — the
    same noise on every batch (the preprocessing of a published training-loop case study), the
    same dropout mask, the same
    exploration. Nothing fails; the model just trains on less randomness than you think.

    ## How to fix
    Create the key once, before the loop, and thread it through: `key, sub = jax.random.split(key)`
    each step, passing `sub` to the function that samples (an argument of the jitted function, or
    part of the `scan` carry). `jax.random.fold_in(key, step)` also gives a distinct key per step.

    The rule stays quiet on loops whose iterations are independent (no state carried from one
    iteration to the next: a sweep over settings, candidate models or timesteps to evaluate), where
    one key for every candidate is deliberate (common random numbers make them comparable); on
    keys derived per step with `fold_in`, on indexing a constant split
    with a non-constant index, on keys used only to initialise a model (`model.init(key, x)`,
    `cell.initialize_carry(key, shape)`), on
    keys under a periodic guard (a fixed evaluation key is deliberate), on seeds that are
    arguments or loop variables, on keys created outside the loop, and on a key whose line's
    comment calls it a dummy or unused (`rng=PRNGKey(0),  # dummy key, only the value is read`).

    Off in test files by default (README, "The rules"): the loops of test files run over test
    parameters (dtypes, cases), not steps.

    ## Measured
    `training_loop` pipeline, stage "fresh noise": the fix changes the math (fresh noise per batch),
    not the speed; validation compares loss curves.

    ## Automatic fix
    Unsafe (`--unsafe-fixes`): for a key rebuilt from a constant seed as a statement of a loop
    body (`key = jax.random.key(42)`), `scan --fix` makes the key once before the loop as
    `key_carry` and splits each step's `key` from it (`key_carry, key = jax.random.split(key_carry)`).
    Unsafe because the numbers drawn change, which is the point. A constant key inside a jitted
    step needs a new argument and is left for you.
    """

    CODE = "JAX502"
    NAME = "constant-key-in-step"
    SEVERITY = "warning"
    IMPACT = "correctness"
    SUMMARY = "PRNG key built from a constant seed on every step: the same random numbers each step"
    FIX = ("Create the key once before the loop and split it each step "
           "(`key, sub = jax.random.split(key)`), passing `sub` in, or use `jax.random.fold_in(key, step)`.")

    INVALID = [
        Invalid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def train_step(w, x):
                return w - 0.1 * jnp.mean(x) * w

            @jax.jit
            def preprocess_batch(batch):
                x = (batch - jnp.mean(batch)) / jnp.std(batch)
                noise = jax.random.normal(jax.random.key(0), x.shape) * 0.01  # <- JAX502
                return x + noise

            def train(w, batches):
                for batch in batches:
                    w = train_step(w, preprocess_batch(batch))
                return w
        """, note="a training loop's identical augmentation noise on every batch"),
        Invalid("""
            import jax
            import jax.numpy as jnp

            SEED = 0

            @jax.jit
            def augment(x):
                noise = jax.random.normal(jax.random.key(SEED), x.shape)  # <- JAX502
                return x + 0.01 * noise

            @jax.jit
            def train_step(w, x):
                return w - 0.1 * jnp.mean(augment(x)) * w

            def fit(w, batches):
                for batch in batches:
                    key = jax.random.key(42)  # <- JAX502
                    mask = jax.random.bernoulli(key, 0.9, batch.shape)
                    w = train_step(w, jnp.where(mask, batch, 0.0))
                return w
        """, fixed="""
            import jax
            import jax.numpy as jnp

            SEED = 0

            @jax.jit
            def augment(x):
                noise = jax.random.normal(jax.random.key(SEED), x.shape)  # <- JAX502
                return x + 0.01 * noise

            @jax.jit
            def train_step(w, x):
                return w - 0.1 * jnp.mean(augment(x)) * w

            def fit(w, batches):
                key_carry = jax.random.key(42)
                for batch in batches:
                    key_carry, key = jax.random.split(key_carry)  # <- JAX502
                    mask = jax.random.bernoulli(key, 0.9, batch.shape)
                    w = train_step(w, jnp.where(mask, batch, 0.0))
                return w
        """, note="a jitted helper called every step, and a key rebuilt in the loop body"),
    ]
    VALID = [
        Valid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def preprocess_batch(batch, key):
                x = (batch - jnp.mean(batch)) / jnp.std(batch)
                return x + 0.01 * jax.random.normal(key, x.shape)

            @jax.jit
            def train_step(w, x):
                return w - 0.1 * jnp.mean(x) * w

            def train(w, batches, seed=0):
                key = jax.random.key(seed)
                for batch in batches:
                    key, noise_key = jax.random.split(key)
                    w = train_step(w, preprocess_batch(batch, noise_key))
                return w
        """),
        Valid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def train_step(w, x, step):
                key = jax.random.fold_in(jax.random.key(0), step)
                return w - 0.1 * jnp.mean(x + jax.random.normal(key, x.shape)) * w

            @jax.jit
            def evaluate(w, key):
                return jnp.mean(w * jax.random.normal(key, w.shape))

            def train(w, batches):
                eval_scores = []
                for step, batch in enumerate(batches):
                    w = train_step(w, batch, step)
                    if step % 100 == 0:
                        eval_scores.append(evaluate(w, jax.random.key(1234)))
                return w, eval_scores
        """),
    ]

    def fix(self, model: SemanticModel, report: Report):
        return _carried_key(model, report.node) if isinstance(report.node, cst.Call) else None

    def check(self, model: SemanticModel) -> Iterator[Report]:
        module_constants = _module_int_constants(model)
        for fn in model.functions:
            for site in fn.calls:
                call: cst.Call = site.node
                if model.resolve(call.func) not in apis.KEY_CONSTRUCTORS:
                    continue
                if not _constant_seed(call, fn, module_constants):
                    continue
                context = why_every_step(model, site)
                if context is None or _derived_per_step(model, site) or _only_initialises(model, site) \
                        or not _loop_carries_state(model, context) or _said_unused(model, call):
                    continue
                yield Report(call, f"`{describe(call)}` is created {where(model, site, context)}: "
                                   "a key from the same seed draws the same \"random\" numbers every step")


def _carried_key(model: SemanticModel, call: cst.Call) -> Fix | None:
    """For a key rebuilt from a constant seed in a loop body (`key = jax.random.key(42)` as a
    statement of the loop): the constant key is made once before the loop and carried, and each
    step splits a fresh `key` from it. Unsafe: the numbers drawn change (that is the point)."""
    site = site_of(model, call)
    if site is None:
        return None
    if site.loop is None or site.function.traced or not isinstance(site.loop.node, (cst.For, cst.While)):
        return None
    loop = site.loop.node
    statement = next((line for line in loop.body.body if isinstance(line, cst.SimpleStatementLine)
                      and len(line.body) == 1 and isinstance(line.body[0], cst.Assign)
                      and line.body[0].value is call), None)
    if statement is None:
        return None
    assign = statement.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 \
            or not isinstance(assign.targets[0].target, cst.Name):
        return None
    name = assign.targets[0].target.value
    carried = f"{name}_carry"
    split = _split_spelling(model, call)
    if split is None or (model.source is not None and re.search(rf"\b{carried}\b", model.source)):
        return None
    targets = [cst.AssignTarget(cast(cst.BaseAssignTargetExpression, cst.parse_expression(f"{carried}, {name}")))]
    step = statement.with_changes(body=[assign.with_changes(value=cst.parse_expression(f"{split}({carried})"),
                                                             targets=targets)])
    init = cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(carried))], value=call)],
                                   leading_lines=loop.leading_lines)
    new_loop = loop.deep_replace(statement, step).with_changes(leading_lines=())
    return Fix(UNSAFE, ((loop, cst.FlattenSentinel([init, new_loop])),),
               f"`{describe(call)}` made once before the loop as `{carried}`; each step splits `{name}` from it")


def _split_spelling(model: SemanticModel, call: cst.Call) -> str | None:
    """`jax.random.split` spelled like the key constructor (`jax.random.key` -> `jax.random.split`,
    `random.PRNGKey` -> `random.split`)."""
    if isinstance(call.func, cst.Attribute) and model.resolve(call.func.value) == "jax.random":
        return cst.Module(body=[]).code_for_node(call.func.value) + ".split"
    alias = module_alias(model, "jax")
    return f"{alias}.random.split" if alias else None


# A comment saying the key does not matter: `rng=PRNGKey(0),  # dummy key, only the value is used`.
_UNUSED_COMMENT = re.compile(r"\b(dummy|unused|not used|placeholder|irrelevant|does ?n[o']t matter)\b", re.IGNORECASE)


def _said_unused(model: SemanticModel, call: cst.Call) -> bool:
    """The line of the key carries a comment saying the key is a dummy (a value estimate read
    from a policy that also samples an action, `rng=PRNGKey(0)  # Dummy key since we're just
    extracting the value`). The author has said what the draws
    are for; the file cannot show it otherwise."""
    text = model.source_line(model.line_of(call))
    return "#" in text and bool(_UNUSED_COMMENT.search(text.split("#", 1)[1]))


def _seed_argument(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "seed":
            return arg.value
    return None


def _module_int_constants(model: SemanticModel) -> set[str]:
    """Module-level names bound exactly once, to an integer literal, and never rebound elsewhere."""
    module = model.module_function
    counts: dict[str, int] = {}
    literal: set[str] = set()
    for a in module.assignments:
        for name in a.targets:
            counts[name] = counts.get(name, 0) + 1
            if len(a.targets) == 1 and a.value is not None and int_value(a.value) is not None \
                    and not a.augmented:
                literal.add(name)
    rebound = {n for fn in model.functions for n in fn.global_names}
    return {n for n in literal if counts[n] == 1 and n not in rebound}


def _constant_seed(call: cst.Call, fn: Function, module_constants: set[str]) -> bool:
    seed = _seed_argument(call)
    if seed is None:
        return False
    if int_value(seed) is not None:
        return True
    if isinstance(seed, cst.Name) and seed.value in module_constants:
        # shadowed by a local binding or parameter: not the module constant
        owner = fn.binding_scope(seed.value)
        return owner is None or owner.is_module
    return False


def _key_names(site: Site) -> set[str]:
    """Names the constant key is bound to in its function (`base = jax.random.key(0)`)."""
    return {t for a in site.function.assignments if a.value is site.node for t in a.targets}


def _refers_to_key(expr: cst.BaseExpression, site: Site, names: set[str]) -> bool:
    return expr is site.node or (isinstance(expr, cst.Name) and expr.value in names)


def _derived_per_step(model: SemanticModel, site: Site) -> bool:
    """`fold_in(key(0), step)` or `split(key(0), n)[i]`: a different key each step."""
    names = _key_names(site)
    fn = site.function
    for other in fn.calls:
        call: cst.Call = other.node
        if not call.args or not _refers_to_key(call.args[0].value, site, names):
            continue
        q = model.resolve(call.func)
        if q in PER_STEP_DERIVATIONS:
            return True
    for sub in fn.subscripts:
        node: cst.Subscript = sub.node
        value = node.value
        if isinstance(value, cst.Call) and model.resolve(value.func) == "jax.random.split" \
                and value.args and _refers_to_key(value.args[0].value, site, names):
            indices = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
            if indices and any(int_value(i) is None for i in indices):
                return True
    return False


def _only_initialises(model: SemanticModel, site: Site) -> bool:
    """The key is passed only to `.init(...)`-like calls: identical initialisation on purpose."""
    names = _key_names(site)
    consumers = [c.node for c in site.function.calls
                 if any(_refers_to_key(a.value, site, names) for a in c.node.args)]
    return bool(consumers) and all(
        isinstance(c.func, cst.Attribute) and c.func.attr.value in INIT_METHODS for c in consumers)


def _loop_carries_state(model: SemanticModel, context) -> bool:
    """The step loop carries state from one iteration to the next (`params = step(params, b)`):
    a training or simulation loop, where the same key every step biases the result. A loop whose
    iterations are independent (a sweep over settings, candidate models, timesteps to evaluate)
    uses one key for every candidate on purpose: common random numbers make them comparable.
    Compiled loop bodies always carry state."""
    if context.compiled_loop is not None:
        return True
    loop = model.step_loop_of(context.step_call)
    return loop is not None and bool(carried_names(model, loop))
