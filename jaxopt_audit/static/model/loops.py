"""Facts about step loops that several rules share: what state a loop carries between
iterations, its trip count, and whether its body must stay on the host."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import callee_name, children, describe, int_value, names_in, walk
from .core import SemanticModel
from .facts import fact
from .index import Function, Loop


@fact
def mutated_params(model: SemanticModel) -> dict[Function, frozenset[str]]:
    """The parameters each function updates in place: it calls a method of one for its effect
    (`optimizer.update(grads)`, the NNX idiom; `self.step += 1` through a method) or assigns to
    one's attribute or item (`state.params = p`, `cache[k] = v`). A loop calling such a function
    with the same object every iteration carries state through it."""
    found: dict[Function, frozenset[str]] = {}
    for fn in model.functions:
        params = set(fn.params)
        names = {site.node.func.value.value for site in fn.calls
                 if site.discarded and isinstance(site.node.func, cst.Attribute)
                 and isinstance(site.node.func.value, cst.Name) and site.node.func.value.value in params}
        for a in fn.assignments:
            target = a.site.node
            if not a.targets and isinstance(target, (cst.Attribute, cst.Subscript)) \
                    and isinstance(target.value, cst.Name) and target.value.value in params:
                names.add(target.value.value)
        if names:
            found[fn] = frozenset(names)
    return found


def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    return [n for n in walk(node) if type(n) is cst.Call]


def carried_names(model: SemanticModel, loop: Loop) -> set[str]:
    """Names the loop body recomputes through a JAX call from their value in the previous
    iteration: `state = step(state, x)`, `params, opt = update(params, opt, b)`,
    `result = step(state); state = result.state`. Loop counters are not state."""
    fn = loop.function
    derived: dict[str, set[str]] = {}  # name -> names its current value was computed from via JAX
    assigned: set[str] = set()  # names already (re)bound earlier in this iteration
    exposed: set[str] = set()  # names read before being bound: their value comes from the last iteration
    carried: set[str] = set()
    for a in fn.assignments:
        if a.value is None or not loop.encloses(a.site.loop):
            continue
        targets = a.targets
        if not targets and isinstance(a.site.node, cst.Subscript) and isinstance(a.site.node.value, cst.Name):
            targets = (a.site.node.value.value,)  # `params[k] -= lr * g[k]`: the dict is updated in place
        if not targets:
            continue
        reads = set(names_in(a.value))
        if a.augmented:
            reads |= set(targets)
        exposed |= reads - assigned
        deps: set[str] = set()
        for name in reads:
            deps.add(name)
            deps |= derived.get(name, set())
        calls = _calls_in(a.value)
        jax_calls = [c for c in calls if model.call_work(c, fn) is not None or _opaque_on_arrays(model, c, fn)]
        # a value computed by host code (`obs = env.step(action)`) is new data, not carried state
        through_jax = bool(jax_calls) or (not calls and any(name in derived for name in reads))
        assigned.update(targets)
        if not through_jax:
            continue
        for target in targets:
            if target in deps and target in exposed and target not in loop.counters \
                    and target not in loop.targets:
                carried.add(target)
            derived[target] = deps
    return {name for name in carried if not _reset_before_next(loop, name)}


_FRESH = (cst.List, cst.Dict, cst.Tuple, cst.Set, cst.Integer, cst.Float, cst.SimpleString)


def _reset_before_next(loop: Loop, name: str) -> bool:
    """The body's last statement binding `name` sets it to a fresh literal (`metrics = []` after
    summarising an epoch's metrics into it): each iteration starts from that literal, not from
    the previous iteration's value."""
    body = loop.node.body
    if not isinstance(body, cst.IndentedBlock):
        return False
    last: int | None = None
    for index, stmt in enumerate(body.body):
        if any(isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and name in _bound_names(n)
               for n in walk(stmt)):
            last = index
    if last is None or not isinstance(body.body[last], cst.SimpleStatementLine):
        return False
    for small in cast(cst.SimpleStatementLine, body.body[last]).body:
        if isinstance(small, cst.Assign) and name in _bound_names(small):
            value = small.value
            return isinstance(value, _FRESH) and not any(True for _ in names_in(value))
    return False


def _bound_names(node: cst.CSTNode) -> set[str]:
    if isinstance(node, cst.Assign):
        return {n.value for t in node.targets for n in walk(t.target) if isinstance(n, cst.Name)}
    if isinstance(node, (cst.AugAssign, cst.AnnAssign)):
        return {n.value for n in walk(node.target) if isinstance(n, cst.Name)}
    return set()


def step_state(model: SemanticModel, loop: Loop) -> set[str]:
    """The carried names that are state a scan would carry: not PRNG keys only split and passed
    on (randomness, not state), and not a buffer filled row by row (`buf = buf.at[i].set(v)` with
    the loop index: building an array, which wants `jnp.stack`, not a scan), and not a running
    total the body only adds to (`total_loss += loss`: a reduction of the steps' outputs, read
    after the loop, that no step depends on)."""
    fn = loop.function
    state = set()
    for name in carried_names(model, loop):
        if _only_accumulated(name, loop) or _written_by_index(fn, name, loop):
            continue
        bindings = [a for a in fn.bindings(name) if loop.encloses(a.site.loop) and a.value is not None]
        if bindings and all(isinstance(a.value, cst.Call) and model.resolve(a.value.func) in apis.KEY_DERIVATIONS
                            for a in bindings):
            continue
        state.add(name)
    return state


def filled_buffers(model: SemanticModel, loop: Loop) -> set[str]:
    """Carried arrays the loop fills row by row and never reads otherwise (`hist =
    hist.at[t].set(state)` with the loop's counter, and no other rebinding or read in the loop:
    a record of the steps): left out of `step_state`, but outside jit each
    `.at[t].set` copies the whole array, and `lax.scan` would return the rows stacked."""
    fn = loop.function
    filled = set()
    for name in carried_names(model, loop):
        writes = _written_by_index(fn, name, loop)
        if writes and _reads_of(name, loop.node.body) == writes:
            filled.add(name)  # written, never read, in the loop: a record of the steps
    return filled


def _written_by_index(fn: Function, name: str, loop: Loop) -> int:
    """How many times the loop rebinds `name`, when every one is `name.at[i].set(v)` with `i`
    reading the loop's counter (0 when some rebinding is anything else)."""
    values = [a.value for a in fn.bindings(name) if loop.encloses(a.site.loop) and a.value is not None]
    return len(values) if all(_fills_by_index(value, name, loop) for value in values) else 0


def _reads_of(name: str, body: cst.CSTNode) -> int:
    """How many times `body` reads `name` (its own `name.at[...]` rebinding counts once; the
    names an assignment binds are not reads)."""
    bound = {id(n) for node in walk(body) if isinstance(node, cst.AssignTarget) for n in walk(node.target)}
    return sum(1 for node in walk(body) if isinstance(node, cst.Name) and node.value == name and id(node) not in bound)


def _only_accumulated(name: str, loop: Loop) -> bool:
    """Inside the loop `name` (or an item of it: `metrics[k] += m[k]`) is only ever the target of
    `+=`/`-=`, and nothing else in the body reads it."""
    accumulations = reads = 0
    for node in walk(loop.node.body):
        if isinstance(node, cst.Name) and node.value == name:
            reads += 1
        elif isinstance(node, cst.AugAssign):
            target = node.target.value if isinstance(node.target, cst.Subscript) else node.target
            if isinstance(target, cst.Name) and target.value == name:
                if not isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)) \
                        or name in names_in(node.value):
                    return False
                accumulations += 1
        elif isinstance(node, cst.Assign) and any(name in names_in(t.target) for t in node.targets):
            return False  # rebound whole (`total = total + loss`): not a plain running sum
        elif isinstance(node, cst.AnnAssign) and name in names_in(node.target):
            return False
    # every read of the name is one of the accumulating targets
    return accumulations > 0 and reads == accumulations


def _fills_by_index(value: cst.BaseExpression, name: str, loop: Loop) -> bool:
    """`name.at[i, ...].set(v)` / `.add(v)` where the index reads a loop variable."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
        return False
    sub = value.func.value
    if not (isinstance(sub, cst.Subscript) and isinstance(sub.value, cst.Attribute)
            and sub.value.attr.value == "at" and isinstance(sub.value.value, cst.Name)
            and sub.value.value.value == name):
        return False
    index_names = {n for e in sub.slice for n in names_in(e)}
    return bool(index_names & (set(loop.targets) | loop.counters))


def _opaque_on_arrays(model: SemanticModel, call: cst.Call, fn) -> bool:
    """A method of an unknown object called with device values (`env.step(state, action)` with
    `action` drawn from a key): as likely JAX as the values it takes."""
    if not isinstance(call.func, cst.Attribute) or model.resolve(call.func) is not None \
            or model.callee(call, fn).function is not None:
        return False
    if isinstance(call.func.value, cst.Name) and call.func.value.value in ("self", "cls"):
        return False
    return any(model.is_array(a.value, fn) or set(names_in(a.value)) & fn.array_names for a in call.args)


# Calls that return an array longer than their input: a carry built with them changes shape.
GROWING_CALLS = frozenset({"jax.numpy.concatenate", "jax.numpy.append", "jax.numpy.vstack", "jax.numpy.hstack",
                           "jax.numpy.stack", "numpy.concatenate", "numpy.append"})


def grows_carry(model: SemanticModel, loop: Loop, carried: set[str]) -> str | None:
    """How the carry changes shape from step to step, or None: "concatenated" for `tokens =
    jnp.concatenate([tokens, next_token], axis=1)` (a decode loop: each step also re-traces
    the jitted step for the new length), "starts as None" for a cache filled on the first step
    (the loop's state is not one pytree of fixed shape at all), "loses an axis" for a carry
    contracted each step (`acc = jnp.einsum('im,mi...->m...', b[i], acc)`, `x = x.sum(0)`,
    `x = x[0]`): its rank changes, which no `scan` or `fori_loop` carry may do."""
    fn = loop.function
    for a in fn.assignments:
        if not set(a.targets) & carried or a.value is None:
            continue
        if not loop.encloses(a.site.loop) and isinstance(a.value, cst.Name) and a.value.value == "None":
            return "starts as None"
    for a in fn.assignments:
        if set(a.targets) & carried and loop.encloses(a.site.loop) and _grows(model, a.value, a.targets):
            return "concatenated"
    for a in fn.assignments:
        if len(a.targets) == 1 and a.targets[0] in carried and loop.encloses(a.site.loop) \
                and _drops_axis(model, a.value, a.targets[0]):
            return "loses an axis"
    return None


# reductions that drop the axes they are given (unless `keepdims=True`)
_REDUCTIONS = frozenset({"sum", "mean", "prod", "max", "min", "any", "all", "argmax", "argmin", "std", "var"})


def _drops_axis(model: SemanticModel, value: cst.BaseExpression | None, name: str) -> bool:
    """`value` has fewer axes than `name`, which it is computed from: an einsum whose output
    lists fewer indices than `name`'s operand, a reduction of `name` over given axes, or an
    integer index into `name`."""
    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and value.value.value == name:
        return any(isinstance(e.slice, cst.Index) and int_value(e.slice.value) is not None for e in value.slice)
    if not isinstance(value, cst.Call):
        return False
    q = model.resolve(value.func) or ""
    if q in ("jax.numpy.einsum", "numpy.einsum"):
        return _einsum_drops(value, name)
    keywords = {a.keyword.value: a.value for a in value.args if a.keyword is not None}
    if isinstance(keywords.get("keepdims"), cst.Name) and cast(cst.Name, keywords["keepdims"]).value == "True":
        return False
    positional = [a.value for a in value.args if a.keyword is None and not a.star]
    if isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Name) \
            and value.func.value.value == name and value.func.attr.value in _REDUCTIONS:
        axes = positional[:1]  # `x.sum(0)`
    elif q.split(".")[0] in ("jax", "numpy") and q.rsplit(".", 1)[-1] in _REDUCTIONS and positional \
            and isinstance(positional[0], cst.Name) and positional[0].value == name:
        axes = positional[1:2]  # `jnp.sum(x, 0)`
    else:
        return False
    axis = keywords.get("axis", axes[0] if axes else None)
    return axis is not None and not (isinstance(axis, cst.Name) and axis.value == "None")


def _einsum_drops(call: cst.Call, name: str) -> bool:
    """`jnp.einsum('im,mi...->m...', b, acc)`: the output has fewer explicit indices than the
    operand `name` (each `...` stands for the same axes in both)."""
    spec = call.args[0].value if call.args else None
    if not isinstance(spec, cst.SimpleString):
        return False
    text = spec.evaluated_value if isinstance(spec.evaluated_value, str) else ""
    inputs, arrow, output = text.replace(" ", "").partition("->")
    operands = inputs.split(",")
    given = [a.value for a in call.args[1:] if a.keyword is None]
    index = next((i for i, g in enumerate(given) if isinstance(g, cst.Name) and g.value == name), None)
    if index is None or index >= len(operands) or not arrow:
        return False
    mine = operands[index]
    return ("..." in mine) == ("..." in output) and \
        len(mine.replace("...", "")) > len(output.replace("...", ""))


def _grows(model: SemanticModel, value: cst.BaseExpression | None, targets: tuple[str, ...]) -> bool:
    """`tokens = jnp.concatenate([tokens, nxt], axis=1)`: the value appends to what it rebinds."""
    return isinstance(value, cst.Call) and model.resolve(value.func) in GROWING_CALLS \
        and bool(set(names_in(value)) & set(targets))


def concatenated(model: SemanticModel, loop: Loop, names: set[str]) -> tuple[list[str], list[str]]:
    """Which of `names` the loop grows by concatenation (`hist = jnp.append(hist, x)`), sorted,
    and the jitted functions the loop gives one of those to, each as a message names it: given
    the grown name itself (each call re-traces for the new length), or a slice of it bound in the
    loop (`ctx = tokens[:, -n:]`: a new length on each call until the slice reaches its bound)."""
    fn = loop.function
    inside = [a for a in fn.assignments if a.value is not None and loop.encloses(a.site.loop)]
    grown = sorted({t for a in inside if _grows(model, a.value, a.targets) for t in a.targets} & names)
    sliced = {a.targets[0]: a.value.value.value for a in inside if len(a.targets) == 1
              and isinstance(a.value, cst.Subscript) and isinstance(a.value.value, cst.Name)
              and a.value.value.value in grown and any(isinstance(e.slice, cst.Slice) for e in a.value.slice)}
    jitted: set[str] = set()
    for site in fn.calls:
        if not loop.encloses(site.loop) or not model.callee(site.node, fn).jitted:
            continue
        given = [a.value.value for a in site.node.args if isinstance(a.value, cst.Name)]
        callee = describe(site.node.func)
        if any(g in grown for g in given):
            jitted.add(f"`{callee}` (given `{next(g for g in given if g in grown)}`)")
        elif any(g in sliced for g in given):
            name = next(g for g in given if g in sliced)
            jitted.add(f"`{callee}` (given `{name}`, a slice of `{sliced[name]}`, until the slice reaches its bound)")
    return grown, sorted(jitted)


def grown_names(model: SemanticModel, loop: Loop) -> set[str]:
    """Names whose shape changes every iteration: grown by concatenation in the loop, and
    names the loop computes from those (`ctx = tokens[:, -n:]`). A function called with one
    sees a new shape each step, so jitting it would compile it again each step."""
    fn = loop.function
    inside = [a for a in fn.assignments if a.value is not None and loop.encloses(a.site.loop)]
    grown = {t for a in inside if _grows(model, a.value, a.targets) for t in a.targets}
    if grown:
        for a in inside:  # assignments in source order: one pass reaches names derived in turn
            if a.value is not None and set(names_in(a.value)) & grown:
                grown.update(a.targets)
    return grown


def draws_on_host(model: SemanticModel, call: cst.Call, fn) -> bool:
    """`np.random.permutation(n)`, `rng.normal(...)` with `rng = np.random.default_rng()`."""
    q = model.resolve(call.func) or ""
    if q.startswith("numpy.random.") or q.startswith("random."):
        return True
    return isinstance(call.func, cst.Attribute) and _is_numpy_generator(model, call.func.value, fn)


def literal_trip_count(loop: Loop, resolve) -> int | None:
    """`range(5)`, `for x in (a, b, c)`, `zip(names, outs)` with `names = ("q", "k", "v")`: the
    number of iterations when a literal bounds it (zip stops at its shortest argument)."""
    node = loop.node
    if not isinstance(node, cst.For):
        return None
    return _count(unwrapped_progress(node.iter, resolve), loop, resolve)


# progress bars that yield the items of the iterable they wrap (`tqdm(range(n))`,
# `rich.progress.track(xs)`); `trange(n)` is `tqdm(range(n))`
PROGRESS_BARS = frozenset({"tqdm", "track"})


def unwrapped_progress(it: cst.BaseExpression, resolve) -> cst.BaseExpression:
    """The iterable inside a progress bar (`tqdm(range(n))`), which yields the same items as it;
    `trange(a, b)` as `range(a, b)`. Anything else as it is."""
    if not isinstance(it, cst.Call):
        return it
    q = resolve(it.func) or ""
    short = q.rsplit(".", 1)[-1]
    if q.startswith("builtins."):
        return it
    if short == "trange":
        return it.with_changes(func=cst.Name("range"))
    if short in PROGRESS_BARS and it.args and it.args[0].keyword is None:
        return it.args[0].value
    return it


def _count(it: cst.BaseExpression, loop: Loop, resolve, depth: int = 0) -> int | None:
    if isinstance(it, (cst.Tuple, cst.List)):
        return len(it.elements) if not any(isinstance(e, cst.StarredElement) for e in it.elements) else None
    if isinstance(it, cst.Name) and depth < 2:
        bound = _bound_once(it, loop)
        # a list bound once is often filled later (`xs = []`, then `xs.append`): a tuple, or a
        # list written out that nothing grows (`test_cases = [a, b, c]`)
        if isinstance(bound, cst.Tuple) or isinstance(bound, cst.List) and bound.elements \
                and not _grown(it.value, loop):
            return _count(bound, loop, resolve, depth + 1)
        return None
    if not isinstance(it, cst.Call):
        return None
    q = resolve(it.func)
    if q == "builtins.range":
        found = [_literal_int(a.value, loop) for a in it.args]
        values = [v for v in found if v is not None]
        if values and len(values) == len(found):
            start, stop, step = (0, values[0], 1) if len(values) == 1 else (
                values[0], values[1], values[2] if len(values) > 2 else 1)
            if step:
                return max(0, len(range(start, stop, step)))
    if q in ("builtins.zip", "builtins.enumerate") and depth < 2:
        counts = [_count(a.value, loop, resolve, depth + 1) for a in it.args if a.keyword is None]
        known = [c for c in counts if c is not None]
        if q == "builtins.enumerate":
            return counts[0] if counts else None
        return min(known) if known else None
    return None


def grown_list(call: cst.Call) -> str | None:
    """`xs` for `xs.append(...)` (or extend, insert): the name of the list the call grows."""
    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
            and func.attr.value in apis.LIST_GROWING_METHODS:
        return func.value.value
    return None


# Calls that turn a list of arrays into one array holding all of them (`jnp.stack(history)`).
_WHOLE_LIST_CALLS = frozenset({"jax.numpy.stack", "jax.numpy.array", "jax.numpy.asarray", "jax.numpy.concatenate",
                               "jax.numpy.vstack", "jax.numpy.hstack", "numpy.stack", "numpy.array",
                               "numpy.asarray", "numpy.concatenate", "numpy.vstack", "numpy.hstack"})


def device_history(model: SemanticModel, loop: Loop) -> set[str]:
    """Lists the loop grows by a device value on each iteration (`history.append(x)`, unguarded,
    with `x` an array) and binds only outside the loop: their length is the iteration count,
    so a read of the whole list inside the loop costs more on each iteration."""
    fn = loop.function
    grown: set[str] = set()
    for site in fn.calls:
        name = grown_list(site.node)
        if name is None or site.guarded or site.loop is None or not loop.encloses(site.loop) \
                or not site.node.args or not model.is_array(site.node.args[0].value, fn):
            continue
        if all(not loop.encloses(a.site.loop) for a in fn.bindings(name)) and fn.bindings(name):
            grown.add(name)
    return grown


def whole_list_read(model: SemanticModel, expr: cst.BaseExpression, names: set[str]) -> str | None:
    """The name in `names` that `expr` hands over whole: `history` itself, or inside
    `jnp.stack(history)` (not `history[-1]`, one entry)."""
    if isinstance(expr, cst.Name):
        return expr.value if expr.value in names else None
    if isinstance(expr, cst.Call) and expr.args and model.resolve(expr.func) in _WHOLE_LIST_CALLS:
        return whole_list_read(model, expr.args[0].value, names)
    return None


def _grown(name: str, loop: Loop) -> bool:
    """`name.append(...)` (or extend, insert) anywhere in the scope that binds `name` or in the
    functions nested in it."""
    scope = loop.function.binding_scope(name)
    work = [scope] if scope is not None else []
    while work:
        fn = work.pop()
        if any(grown_list(site.node) == name for site in fn.calls):
            return True
        work.extend(fn.nested.values())
    return False


def _literal_int(expr: cst.BaseExpression, loop: Loop) -> int | None:
    """An integer literal, or a name bound once, to one, in the scopes the loop sees
    (`num_steps = 10` above `for step in range(num_steps)`)."""
    value = int_value(expr)
    if value is not None or not isinstance(expr, cst.Name):
        return value
    bound = _bound_once(expr, loop)
    return int_value(bound) if bound is not None else None


def _bound_once(name: cst.Name, loop: Loop) -> cst.BaseExpression | None:
    """The value of a name bound exactly once (not a parameter, not augmented) in the scope the
    loop's function sees it from."""
    scope = loop.function.binding_scope(name.value)
    if scope is None or name.value in scope.params:
        return None
    bindings = scope.bindings(name.value)
    if len(bindings) == 1 and not bindings[0].augmented:
        return bindings[0].value
    return None


def has_fixed_trip_count(model: SemanticModel, loop: Loop) -> bool:
    """`range(n)` (not over a pytree's length), `enumerate`/`zip` over arrays or ranges,
    `while i < n` with `i` counted in the body."""
    node = loop.node
    fn = loop.function
    if isinstance(node, cst.While):
        test = node.test
        return (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                and isinstance(test.comparisons[0].operator, (cst.LessThan, cst.LessThanEqual))
                and isinstance(test.left, cst.Name) and test.left.value in loop.counters)
    it = unwrapped_progress(node.iter, model.resolve)
    if not isinstance(it, cst.Call):
        return False
    q = model.resolve(it.func)
    if q == "builtins.range":
        for arg in it.args:  # range(len(layers)): a loop over structure, not steps
            v = arg.value
            if isinstance(v, cst.Call) and model.resolve(v.func) == "builtins.len" and v.args \
                    and not model.is_array(v.args[0].value, fn):
                return False
        return True
    if q in ("builtins.enumerate", "builtins.zip"):
        args = [a.value for a in it.args if a.keyword is None]
        return bool(args) and all(_counted(model, a, fn) for a in args)
    return False


def _counted(model: SemanticModel, expr: cst.BaseExpression, fn) -> bool:
    """An iterable of known length: an array (JAX or NumPy), a range, or zip/enumerate of those."""
    if model.is_array(expr, fn) or is_numpy_value(model, expr, fn):
        return True
    if isinstance(expr, cst.Call):
        q = model.resolve(expr.func)
        if q == "builtins.range":
            return True
        if q in ("builtins.enumerate", "builtins.zip"):
            args = [a.value for a in expr.args if a.keyword is None]
            return bool(args) and all(_counted(model, a, fn) for a in args)
    return False


def iterates_rows(model: SemanticModel, expr: cst.BaseExpression, fn) -> bool:
    """Rows of arrays: an array (JAX or NumPy), or zip/enumerate of arrays (and ranges), with at
    least one array."""
    if isinstance(expr, cst.Call) and model.resolve(expr.func) in ("builtins.enumerate", "builtins.zip"):
        args = [a.value for a in expr.args if a.keyword is None]
        rows = [a for a in args if iterates_rows(model, a, fn)]
        return bool(rows) and all(a in rows or (isinstance(a, cst.Call) and model.resolve(a.func) == "builtins.range")
                                  for a in args)
    if not isinstance(expr, (cst.Name, cst.Subscript)):
        return False  # `jaxpr.eqns`, `self.shots`: fields of a record, not rows the model can show
    return model.is_array(expr, fn) or is_numpy_value(model, expr, fn)


def counter_subscripts(loop: Loop) -> Iterator[tuple[cst.Subscript, cst.BaseSlice]]:
    """Which subscripts in the loop index or slice by the loop's counter (`for t in ...`: `x[t]`,
    `x[t * bs:(t + 1) * bs]`): each with the index or slice that reads it."""
    target = loop.node.target if isinstance(loop.node, cst.For) else None
    if not isinstance(target, cst.Name):
        return
    for site in loop.function.subscripts:
        if not loop.encloses(site.loop):
            continue
        for element in site.node.slice:
            part = element.slice
            if isinstance(part, cst.Index):
                read = [part.value]
            else:
                read = [b for b in (cast(cst.Slice, part).lower, cast(cst.Slice, part).upper) if b is not None]
            if any(isinstance(n, cst.Name) and n.value == target.value for e in read for n in walk(e)):
                yield site.node, part


def slices_by_counter(loop: Loop) -> bool:
    """Whether the body slices a range out of an array with the loop's counter (`x[i:i + bs]`)."""
    return any(isinstance(part, cst.Slice) for _, part in counter_subscripts(loop))


def indexes_rows(model: SemanticModel, loop: Loop) -> bool:
    """Whether the body picks row `t` of an array, or element `t` of a sequence the function was
    handed, by the loop's counter (`for t in range(n): update(w, xs[t])`)."""
    fn = loop.function
    for node, part in counter_subscripts(loop):
        if len(node.slice) == 1 and isinstance(part, cst.Index) and isinstance(part.value, cst.Name) and (
                model.is_array(node.value, fn) or is_numpy_value(model, node.value, fn)
                or (isinstance(node.value, cst.Name) and node.value.value in fn.params)):
            return True
    return False


def _is_numpy_generator(model: SemanticModel, expr: cst.BaseExpression, fn) -> bool:
    """A name bound to `np.random.default_rng(...)` / `RandomState(...)`."""
    if not isinstance(expr, cst.Name):
        return False
    for scope in fn.scopes():
        bindings = [a for a in scope.bindings(expr.value) if a.value is not None]
        if bindings:
            return all(isinstance(a.value, cst.Call) and model.resolve(a.value.func) in (
                "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator")
                for a in bindings)
        if expr.value in scope.params:
            return False
    return False


def _binds_numpy(model: SemanticModel, a, scope, depth: int, name: str | None = None,
                 seen: frozenset[str] = frozenset()) -> bool:
    if isinstance(a.value, cst.Call) and model.resolve(a.value.func) in apis.NUMPY_DATASET_LOADERS:
        return True  # `(x_train, y_train), (x_test, y_test) = mnist.load_data()`: NumPy arrays
    value = element_bound(a, name) if name is not None else a.value  # `X, Y = data["x"], data["y"]`
    if isinstance(value, cst.Call) and name is not None and len(a.targets) > 1 and name in a.targets \
            and not batch_getter(model, value, scope):
        # `x, y = make_dataset()`: the element of what a host helper of the file returns
        element = a.targets.index(name)
        returned = _host_helper_returns(model, value, scope)
        return bool(returned) and all(
            isinstance(r, cst.Tuple) and len(r.elements) == len(a.targets)
            and is_numpy_value(model, r.elements[element].value, helper, depth + 1, seen) for r, helper in returned)
    if value is not None:
        return is_numpy_value(model, value, scope, depth + 1, seen)
    node = a.site.node  # `for batch, labels in zip(DATA, LABELS)`: rows of NumPy arrays
    if isinstance(node, cst.For):
        return _iterates_numpy(model, node.iter, scope, depth + 1)
    return False


def _iterates_numpy(model: SemanticModel, it: cst.BaseExpression, scope, depth: int) -> bool:
    """NumPy arrays, or zip/enumerate of NumPy arrays and ranges (with at least one array)."""
    if isinstance(it, cst.Call) and model.resolve(it.func) in ("builtins.zip", "builtins.enumerate"):
        args = [x.value for x in it.args if x.keyword is None]
        ranges = [x for x in args if isinstance(x, cst.Call) and model.resolve(x.func) == "builtins.range"]
        rest = [x for x in args if x not in ranges]
        return bool(rest) and all(_iterates_numpy(model, x, scope, depth + 1) for x in rest)
    return is_numpy_value(model, it, scope, depth)


# How far the NumPy questions follow names, helpers and operators (a guard against cycles).
_MAX_DEPTH = 10
# Methods of a NumPy array whose result is a NumPy array.
_NUMPY_METHODS = frozenset({"astype", "reshape", "copy", "T", "sum", "mean", "std", "clip", "squeeze", "ravel",
                            "flatten", "transpose"})
_NUMPY_SCALARS = frozenset({"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                            "uint32", "bool_", "complex64", "complex128", "dtype", "finfo", "iinfo"})


def is_numpy_value(model: SemanticModel, expr: cst.BaseExpression, fn, depth: int = 0,
                   seen: frozenset[str] = frozenset()) -> bool:
    """A NumPy array on the host: built by `np.*`, a row or slice of one, or a name bound to one
    (in this function or at module level, also by unpacking a tuple), or an attribute of `self`
    the class binds only to one. A name rebound from itself (`x = x / 255.0`, `x = x[perm]`) is
    what its other bindings make it."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Call):
        q = model.resolve(expr.func)
        if q is not None:
            if not q.startswith("numpy.") or q.rsplit(".", 1)[-1] in _NUMPY_SCALARS \
                    or q.startswith(("numpy.random.default_rng", "numpy.random.seed", "numpy.random.RandomState")):
                return False
            return not model.is_array(expr, fn)
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _NUMPY_METHODS:
            return is_numpy_value(model, expr.func.value, fn, depth + 1, seen)
        if isinstance(expr.func, cst.Attribute) and _is_numpy_generator(model, expr.func.value, fn):
            return True  # rng.normal(...), rng.integers(...)
        if batch_getter(model, expr, fn):
            return any(is_numpy_value(model, a.value, fn, depth + 1, seen) for a in expr.args)
        returned = _host_helper_returns(model, expr, fn)
        return bool(returned) and all(is_numpy_value(model, r, helper, depth + 1, seen) for r, helper in returned)
    if isinstance(expr, (cst.BinaryOperation, cst.Comparison)):
        # `rng.normal(size=s) * scale`, `x.sum(axis=1) > 0`: NumPy stays NumPy unless a JAX array
        # takes part
        right = [expr.right] if isinstance(expr, cst.BinaryOperation) else [c.comparator for c in expr.comparisons]
        return not model.is_array(expr, fn) and any(is_numpy_value(model, part, fn, depth + 1, seen)
                                                    for part in (expr.left, *right))
    if isinstance(expr, cst.Subscript):
        return is_numpy_value(model, expr.value, fn, depth + 1, seen)
    if isinstance(expr, cst.Name):
        if expr.value in seen:
            return True  # a rebinding from itself: decided by the name's other bindings
        if model.is_array(expr, fn):
            return False
        owner = fn.binding_scope(expr.value)
        bindings = owner.bindings(expr.value) if owner is not None else []
        inner = seen | {expr.value}
        return any(a.value is None or expr.value not in names_in(a.value) for a in bindings) \
            and all(_binds_numpy(model, a, owner, depth, expr.value, inner) for a in bindings)
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self" \
            and fn.cls is not None:
        # `self.X` where the class binds `self.X = np.random.randn(...)`: a data set the object holds
        values = fn.cls.attribute_values.get(expr.attr.value, [])
        return bool(values) and all(is_numpy_value(model, v, owner, depth + 1, seen) for v, owner in values)
    return False


# NumPy functions whose result is float64 unless a dtype says otherwise.
_FLOAT64_MAKERS = frozenset({"numpy.random.randn", "numpy.random.rand", "numpy.random.random", "numpy.random.normal",
                             "numpy.random.uniform", "numpy.random.standard_normal", "numpy.zeros", "numpy.ones",
                             "numpy.empty", "numpy.linspace"})
# Methods of a NumPy random generator whose result is float64 unless a dtype says otherwise.
_FLOAT64_DRAWS = frozenset({"normal", "uniform", "standard_normal", "random", "exponential"})


def is_float64_numpy(model: SemanticModel, expr: cst.BaseExpression, fn, depth: int = 0) -> bool:
    """A NumPy value the code shows is float64: made by a NumPy function that returns float64
    without a `dtype=` (`np.random.randn(n, d)`, `np.zeros(shape)`), cast with
    `.astype(np.float64)`, or a slice, row, name, tuple element, `self.` attribute or batch getter
    result of one (as `is_numpy_value` follows them)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Call):
        q = model.resolve(expr.func)
        if q is not None:
            if q in _FLOAT64_MAKERS:
                return not any(a.keyword is not None and a.keyword.value == "dtype" for a in expr.args)
            return False
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _FLOAT64_DRAWS \
                and _is_numpy_generator(model, expr.func.value, fn):
            return not any(a.keyword is not None and a.keyword.value == "dtype" for a in expr.args)
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "astype" and expr.args:
            dtype = expr.args[0].value
            return model.resolve(dtype) == "numpy.float64" or (
                isinstance(dtype, cst.SimpleString) and dtype.evaluated_value == "float64")
        if batch_getter(model, expr, fn):
            return any(is_float64_numpy(model, a.value, fn, depth + 1) for a in expr.args)
        returned = _host_helper_returns(model, expr, fn)
        return bool(returned) and all(is_float64_numpy(model, r, helper, depth + 1) for r, helper in returned)
    if isinstance(expr, cst.BinaryOperation):
        parts = [p for p in (expr.left, expr.right) if not isinstance(p, (cst.Integer, cst.Float))]
        return bool(parts) and all(is_float64_numpy(model, p, fn, depth + 1) for p in parts)
    if isinstance(expr, cst.Subscript):
        return is_float64_numpy(model, expr.value, fn, depth + 1)
    if isinstance(expr, cst.Name):
        owner = fn.binding_scope(expr.value)
        bindings = owner.bindings(expr.value) if owner is not None else []
        return bool(bindings) and all(_binds_float64(model, a, owner, expr.value, depth) for a in bindings)
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self" \
            and fn.cls is not None:
        values = fn.cls.attribute_values.get(expr.attr.value, [])
        return bool(values) and all(is_float64_numpy(model, v, owner, depth + 1) for v, owner in values)
    return False


def _binds_float64(model: SemanticModel, a, scope, name: str, depth: int) -> bool:
    value = element_bound(a, name)
    if isinstance(value, cst.Call) and len(a.targets) > 1 and name in a.targets \
            and not batch_getter(model, value, scope):
        element = a.targets.index(name)  # `x, y = make_dataset()`
        returned = _host_helper_returns(model, value, scope)
        return bool(returned) and all(
            isinstance(r, cst.Tuple) and len(r.elements) == len(a.targets)
            and is_float64_numpy(model, r.elements[element].value, helper, depth + 1) for r, helper in returned)
    return value is not None and is_float64_numpy(model, value, scope, depth + 1)


def element_bound(a, name: str) -> cst.BaseExpression | None:
    """The value `name` gets from assignment `a` (its element, when a tuple is unpacked)."""
    value = a.value
    if isinstance(value, (cst.Tuple, cst.List)) and name in a.targets and len(value.elements) == len(a.targets):
        return value.elements[a.targets.index(name)].value
    return value


def _host_helper_returns(model: SemanticModel, call: cst.Call, fn) -> list[tuple[cst.BaseExpression, Function]]:
    """What a function of this file that does no JAX work returns (each with the function, the
    scope to read it in); empty for anything else, or a helper that loops (a generator)."""
    helper = model.callee(call, fn).function
    if helper is None or helper is fn or helper.does_jax_work or helper.loops:
        return []
    return [(r, helper) for r in helper.returns]


def batch_getter(model: SemanticModel, call: cst.Call, fn: Function) -> bool:
    """A call of a function of this file doing no JAX work that returns only slices or rows of
    its parameters (`def get_batch(X, Y, i, bs): return X[i * bs:...], Y[i * bs:...]`): its result
    is part of what it is given, not new data."""
    helper = model.callee(call, fn).function
    if helper is None or helper.does_jax_work or not helper.returns:
        return False
    for returned in helper.returns:
        parts = [e.value for e in returned.elements] if isinstance(returned, cst.Tuple) else [returned]
        if not all(isinstance(p, cst.Subscript) and isinstance(p.value, cst.Name) and p.value.value in helper.params
                   for p in parts):
            return False
    return True


def host_bound_call(model: SemanticModel, loop: Loop) -> cst.Call | None:
    """A call in the loop body that keeps each iteration on the host: file or network I/O,
    checkpoint writes, `next()` on a Python iterator (data read per step), or host code that
    consumes device values every step (`envs.step(np.asarray(action))`, `buffer.add(obs, ...)`)."""
    fn = loop.function
    for site in fn.calls:
        if not loop.encloses(site.loop):
            continue
        call = site.node
        q = model.resolve(call.func)
        if q in apis.HOST_IO_FUNCTIONS or q == "builtins.next":
            return call
        if _consumes_device_values(model, call, fn) or _gym_step(fn, call):
            return call
        lowered = callee_name(call).lower()
        if any(lowered.startswith(h) or lowered.endswith(h) for h in apis.HOST_IO_HINTS) \
                and model.call_work(call, fn) is None:
            return call
    return None


def records_for_rendering(model: SemanticModel, loop: Loop) -> cst.Call | None:
    """The loop appends to a list that the function, outside the loop, hands to a renderer
    (`rollout.append(state)` each step, then `frames = env.render(rollout[::2])`): a rollout made
    to be watched, whose time goes to rendering; scanning it or syncing less buys nothing a
    reader wants. The renderer call is returned."""
    fn = loop.function
    recorded = {site.node.func.value.value for site in fn.calls
                if loop.encloses(site.loop) and isinstance(site.node.func, cst.Attribute)
                and site.node.func.attr.value in ("append", "extend")
                and isinstance(site.node.func.value, cst.Name)}
    if not recorded:
        return None
    for site in fn.calls:
        if loop.encloses(site.loop) or not _renders(site.node):
            continue
        if any(n in recorded for arg in site.node.args for n in names_in(arg.value)):
            return site.node
    return None


def exits_early(loop: Loop) -> bool:
    """A `break` (or `return`) in the loop's own body, outside loops nested in it: the loop may
    stop before its trip count, on a test that `lax.scan` cannot make (`lax.while_loop` can)."""
    stack: list[cst.CSTNode] = list(children(loop.node.body))
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Break, cst.Return)):
            return True
        if isinstance(node, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(children(node))
    return False


def renders_each_iteration(loop: Loop) -> cst.Call | None:
    """A call in the loop's body draws or saves a frame (`renderer.render_frame(...)`,
    `save_frame`, `imageio.mimwrite`): a loop made to be watched, whose values have to reach the
    host to be drawn, one frame per iteration. The call is returned."""
    fn = loop.function
    for site in fn.calls:
        if loop.encloses(site.loop) and _renders(site.node):
            return site.node
    return None


def has_compiled_alternative(model: SemanticModel, loop: Loop) -> bool:
    """The loop is one branch of an `if` whose other branch runs the same steps in a compiled
    loop (`if debug: for i in range(n): ... else: lax.fori_loop(...)`): the Python loop is the
    author's eager debugging path, kept on purpose."""
    fn = loop.function
    compiled = [site.node for site in fn.calls if model.resolve(site.node.func) in apis.COMPILED_LOOPS]
    if not compiled:
        return False
    for site in fn.tests:
        node = site.node
        if not isinstance(node, cst.If) or node.orelse is None:
            continue
        branches = [set(map(id, walk(node.body))), set(map(id, walk(node.orelse)))]
        for mine, other in (branches, branches[::-1]):
            if id(loop.node) in mine and any(id(c) in other for c in compiled):
                return True
    return False


def _renders(call: cst.Call) -> bool:
    lowered = callee_name(call).lower()
    return any(h in lowered for h in apis.RENDER_HINTS)


def _gym_step(fn: Function, call: cst.Call) -> bool:
    """`obs, reward, done, info = envs.step(action)`: the Gym API, whose environment keeps its
    state inside the object (only the action goes in), so the loop cannot hand that state to a
    scan as written. A functional step takes the state and returns it (`env.step(key, state,
    action, params)`): not this."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "step"
            and len(call.args) == 1 and call.args[0].keyword is None):
        return False
    return any(a.value is call and len(a.targets) in (4, 5) for a in fn.assignments)


def _consumes_device_values(model: SemanticModel, call: cst.Call, fn) -> bool:
    """Host code (not JAX, not a builtin, not list bookkeeping) called with values just pulled
    from the device."""
    q = model.resolve(call.func)
    if q is not None or model.call_work(call, fn) is not None or model.callee(call, fn).function is not None:
        return False
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in apis.CONTAINER_METHODS:
        return False
    # Only values pulled to the host say the callee is host code: an unknown callable that
    # takes device arrays (`policy(obs, key)`, `env.step(state, action)`) may well be JAX.
    for arg in call.args:
        value = arg.value
        if model.is_host_pull(value):
            return True
        if isinstance(value, cst.Name) and value.value in fn.host_names and not model.is_array(value, fn):
            return True
    return False


def wraps_compiled_scan(model: SemanticModel, loop: Loop) -> bool:
    """The body calls a function that itself scans (epochs around a scanned epoch)."""
    fn = loop.function
    for site in fn.calls:
        if loop.encloses(site.loop):
            target = model.callee(site.node, fn).function
            if target is not None and target.uses_scan:
                return True
            if model.resolve(site.node.func) in apis.SCAN_LIKE:
                return True
    return False


def runs_at_most_once(loop: Loop) -> bool:
    """The loop's body always leaves it: its last statement is a `return`, `break` or `raise`
    and no `continue` of this loop skips it (`for idx in hits: ...; return found`), so the body
    runs once or not at all, whatever the iterable."""
    body = loop.node.body
    statements = body.body if isinstance(body, cst.IndentedBlock) else ()
    if not statements:
        return False
    last = statements[-1]
    small = last.body if isinstance(last, cst.SimpleStatementLine) else ()
    if not small or not isinstance(small[-1], (cst.Return, cst.Break, cst.Raise)):
        return False
    return not any(isinstance(node, cst.Continue) for node in _own_statements(body))


def _own_statements(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes of a loop body outside nested loops, functions and classes (a `continue` there
    belongs to another loop)."""
    for child in children(node):
        yield child
        if not isinstance(child, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            yield from _own_statements(child)
