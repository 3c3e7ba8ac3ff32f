"""Whether two calls consuming one PRNG key draw numbers that matter together.

keys.py finds each call that consumes a key already consumed on some path to it (a `Reuse`).
The flow walk keeps no values and knows nothing of what the draws are for; the questions here
look at a sequence reuse's two calls (`previous`, then `node`) and say when sharing the key is
harmless or deliberate: draws that only make stand-in inputs of a measurement or example inputs
for a model's `init`, two `if`s that never both run, a sampler that splits the key before
drawing, a result nobody reads, a flax `init` (which folds module paths into its key), and, at
the top level of a script or notebook, draws that never meet.

Two questions read identifier names, because nothing else in the code says what a draw is for:
a function named for a benchmark or mock data (`def benchmark(...)`, `generate_mock_data`) and a
result stored under a stand-in name (`dummy_indices = randint(key, ...)`); both are documented
on JAX501, the rule that asks them.
"""

from __future__ import annotations

import re
from typing import cast

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import children, names_in, read_names, walk
from .core import SemanticModel
from .enclosing import enclosing_statements, site_of
from .index import Function
from .keys import INIT_METHODS, Reuse
from .timing import reads_timer


def apart_at_top_level(model: SemanticModel, reuse: Reuse) -> bool:
    """A reuse at the top level of a script or notebook whose two draws never meet (see
    `_draws_meet`), nor does the call with any earlier top-level call taking the same key."""
    module = next((fn for fn in model.functions if fn.is_module), None)
    return module is not None and reuse.previous is not None and _module_level(module, reuse.node) \
        and not any(_draws_meet(model, module, reuse.node, earlier) for earlier in _earlier_draws(model, module, reuse))


# Functions whose draws are stand-in data: a benchmark's inputs, mock or dummy arrays.
_STAND_IN_NAME = re.compile(r"(^|_)(bench|benchmark|benchmarks|profile|timing|mock|dummy|fake)(_|$)")


def measurement_inputs(model: SemanticModel, previous: cst.Call, node: cst.Call) -> bool:
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
    site = site_of(model, node)
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


def named_stand_in(model: SemanticModel, draw: cst.Call) -> bool:
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


def exclusive_cases(model: SemanticModel, previous: cst.Call, node: cst.Call) -> bool:
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


def _function_of(model: SemanticModel, call: cst.Call) -> Function | None:
    """The function (or module) whose own calls include `call`."""
    site = site_of(model, call)
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
    """No value satisfies both cases: two different literals, or ranges that do not overlap."""
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


def one_splits_first(model: SemanticModel, previous: cst.Call, node: cst.Call) -> bool:
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
    """This call of `sampler` splits its key before drawing (`choice` only without `p`)."""
    if sampler == "jax.random.choice":  # choice(key, a, shape, replace, p, axis)
        return not any(a.keyword is not None and a.keyword.value == "p" for a in call.args) \
            and len(call.args) < 5
    return sampler in SPLITTING_SAMPLERS


def example_inputs_for_init(model: SemanticModel, previous: cst.Call, node: cst.Call) -> bool:
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


def result_unread(model: SemanticModel, call: cst.Call) -> bool:
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
    """The call is a model's initialisation method (`model.init(key, x)`)."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in INIT_METHODS


def input_for_init(model: SemanticModel, previous: cst.Call, node: cst.Call) -> bool:
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


def flax_inits(model: SemanticModel, previous: cst.Call, node: cst.Call) -> bool:
    """A flax `init` and another use of its key: flax never draws with the key it is given, it
    folds each submodule's path into it, so an actor and a critic initialised from one key get
    parameters of their own, one module twice is a deliberate copy, and a later `split(key)`
    shares no bits with the parameters. Haiku draws its keys in order from the one given, so two haiku networks with
    layers of the same shapes start equal: a file importing haiku is still reported."""
    if not (_is_init(previous) or _is_init(node)):
        return False
    roots = {full.split(".")[0] for full in model.imports.bound.values()}
    return "flax" in roots and "haiku" not in roots


def _draws_meet(model: SemanticModel, module: Function, node: cst.Call, previous: cst.Call) -> bool:
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


def _earlier_draws(model: SemanticModel, module: Function, reuse: Reuse) -> list[cst.Call]:
    """Top-level calls before this one that take the same key (`reuse.previous` among them)."""
    line = model.line_of(reuse.node)
    # the argument test first: a position costs a render of the statement
    found = [s.node for s in module.calls if s.node is not reuse.node
             and any(isinstance(a.value, cst.Name) and a.value.value == reuse.key for a in s.node.args)
             and model.line_of(s.node) < line]
    return found or [call for call in (reuse.previous,) if call is not None]


def _module_level(module: Function, node: cst.Call) -> bool:
    """The call is one of the module's own top-level calls."""
    return any(site.node is node for site in module.calls)
