"""Timed regions in one function: pairs of timer readings and what runs between them.

A timed region is a reading `start = time.perf_counter()` and a later reading whose value is
subtracted from it (`time.perf_counter() - start`, or `end = ...; end - start`). The calls of the
function are put in evaluation order (arguments before the call that takes them, nested defs
and lambdas left out), so "what runs between the two readings" is a slice of that list.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import children, own_nodes, read_names, walk
from .core import SemanticModel
from .facts import answers, fact
from .index import Function, Loop

# Timer readings (timeit.timeit/repeat run a statement; they are not readings).
TIMER_READS = apis.TIMER_FUNCTIONS - {"timeit.timeit", "timeit.repeat"}
SYNC_CALLS = frozenset({"jax.block_until_ready", "jax.effects_barrier", "jax.device_get",
                        "jax.experimental.multihost_utils.sync_global_devices",
                        # each returns host NumPy arrays (of every process's values, of process 0's)
                        "jax.experimental.multihost_utils.process_allgather",
                        "jax.experimental.multihost_utils.broadcast_one_to_all",
                        # a loop body reporting progress through jax_tqdm's host callbacks: the run's
                        # last callback reaches the host at its end (a training scan timed this
                        # way reports 50-780 s, growing with the model)
                        "jax_tqdm.scan_tqdm", "jax_tqdm.loop_tqdm"})
# The builtins that may read a device value given to them: they format it as text.
_FORMATTING_BUILTINS = frozenset({"builtins.print", "builtins.repr", "builtins.str"})
# A function or method of another library named for waiting (`executable.sync()`,
# `sync_func()`, `synchronize_all_activity()`, `barrier()`): taken at its word, once some
# JAX work is pending.
_WAIT_WORDS = frozenset({"sync", "synchronize", "synchronise", "barrier", "wait"})
# Methods that wait for a device value: block_until_ready and the host reads.
SYNC_METHODS = apis.SYNC_METHODS | apis.HOST_METHODS
# jax.tree_util functions that only look at a pytree's structure: no device work is dispatched.
TREE_STRUCTURE_PREFIXES = ("jax.tree_util.", "jax.tree.")


def reads_timer(model: SemanticModel, sites) -> bool:
    """Some call among `sites` reads a clock (`time.time()`, `perf_counter()`, `timeit`): the
    code around them measures. A benchmark's loops and inputs are its workload, written so on
    purpose."""
    return any(model.resolve(s.node.func) in apis.TIMER_FUNCTIONS for s in sites)


def eager_baseline(model: SemanticModel, caller: Function, target: Function) -> bool:
    """`caller` reads a timer and the file compiles `target`, or a twin of it (a function with
    the same parameters and body under any name, such as the same `def` written again before the
    "jitted version" of a script): the eager calls are the baseline of an eager-versus-jit
    comparison, the fix is already in the file, and the slow loop is there to be measured."""
    if not reads_timer(model, caller.calls):
        return False
    if target.jitted:
        return True
    node = target.node
    if not isinstance(node, cst.FunctionDef):
        return False
    return any(fn is not target and fn.jitted and isinstance(fn.node, cst.FunctionDef)
               and fn.node.params.deep_equals(node.params) and fn.node.body.deep_equals(node.body)
               for fn in model.functions)


def eager_baseline_loop(model: SemanticModel, loop: Loop) -> bool:
    """The loop calls, eagerly, a function that is the baseline of an eager-versus-jit comparison
    (`eager_baseline`): the loop is the measured workload, not a step loop to compile."""
    fn = loop.function
    for site in fn.calls:
        if loop.encloses(site.loop):
            callee = model.callee(site.node, fn)
            if not callee.jitted and callee.function is not None \
                    and eager_baseline(model, fn, callee.function):
                return True
    return False


@dataclass(frozen=True)
class Truth:
    """An `if`/`while` test: Python asks for its truth value, which for an array waits for it."""

    test: cst.BaseExpression


@dataclass(frozen=True)
class Store:
    """`samples[i] = x`: an item assignment, which converts `x` when `samples` is a NumPy array."""

    target: cst.Subscript
    value: cst.BaseExpression


@dataclass(frozen=True)
class TimedRegion:
    start: cst.Call  # the first timer reading
    end: cst.Call  # the second one
    # the calls evaluated between them, in order, with the f-string fields and `if`/`while` tests
    # (formatting a value or asking its truth reads it)
    calls: tuple[cst.Call | cst.FormattedStringExpression | Truth | Store, ...]
    in_loop: bool  # the second reading sits in a loop (per-iteration or windowed measurement)


def calls_in_order(fn: Function, fstrings: bool = False) -> list:
    """`fn`'s own calls in evaluation order: arguments and receivers before the call; with
    `fstrings`, the f-string fields, `if`/`while` tests (`Truth`) and item assignments (`Store`)
    too, each right after the value it reads."""
    out: list = []
    _in_order(fn.body, fn.body, fstrings, out)
    return out


# The walks below are module functions, not closures: a recursive closure holds itself through
# its cell, a reference cycle that would keep the file's tree alive for the cyclic collector.
def _in_order(node: cst.CSTNode, body: cst.CSTNode, fstrings: bool, out: list) -> None:
    if node is not body and isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        if isinstance(node, cst.FunctionDef):
            for d in node.decorators:
                _in_order(d, body, fstrings, out)
        return
    if isinstance(node, cst.Assign):  # the value is evaluated before the targets
        _in_order(node.value, body, fstrings, out)
        for t in node.targets:
            _in_order(t, body, fstrings, out)
            if fstrings and isinstance(t.target, cst.Subscript):
                out.append(Store(t.target, node.value))
        return
    if fstrings and isinstance(node, (cst.If, cst.While)):
        _in_order(node.test, body, fstrings, out)
        out.append(Truth(node.test))
        for child in children(node):
            if child is not node.test and child is not node.orelse:
                _in_order(child, body, fstrings, out)
        if isinstance(node, cst.While):
            # the loop leaves only after its test reads the last iteration's values again
            _in_order(node.test, body, fstrings, out)
            out.append(Truth(node.test))
        if node.orelse is not None:
            _in_order(node.orelse, body, fstrings, out)
        return
    for child in children(node):
        _in_order(child, body, fstrings, out)
    if type(node) is cst.Call or (fstrings and type(node) is cst.FormattedStringExpression):
        out.append(node)


def _timer_bindings(model: SemanticModel, fn: Function) -> dict[str, list[cst.Call]]:
    """name -> the timer readings bound to it (`start = time.perf_counter()`)."""
    out: dict[str, list[cst.Call]] = {}
    for a in fn.assignments:
        value = a.value
        if isinstance(value, cst.Call) and len(a.targets) == 1 and model.resolve(value.func) in TIMER_READS:
            out.setdefault(a.targets[0], []).append(value)
    return out


def _subtractions(fn: Function) -> list[cst.BinaryOperation]:
    return [node for node in own_nodes(fn.body)
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract)]


def timed_regions(model: SemanticModel, fn: Function) -> list[TimedRegion]:
    """Every (start, end) pair of timer readings of `fn` that is subtracted, with the calls
    between them."""
    memo = answers(model, timed_regions)
    if fn not in memo:
        memo[fn] = _timed_regions(model, fn)
    return memo[fn]


def _timed_regions(model: SemanticModel, fn: Function) -> list[TimedRegion]:
    bound = _timer_bindings(model, fn)
    if not bound:
        return []  # no `start = time...()`: nothing to pair (and no walk of the body)
    order = calls_in_order(fn, fstrings=True)
    position = {id(c): i for i, c in enumerate(order)}
    reading_of = {id(c): name for name, calls in bound.items() for c in calls}
    loop_of = {id(s.node): s.loop for s in fn.calls}
    regions: list[TimedRegion] = []
    seen: set[tuple[int, int]] = set()
    for sub in _subtractions(fn):
        left, right = sub.left, sub.right
        if not isinstance(right, cst.Name) or right.value not in bound:
            continue
        if isinstance(left, cst.Call) and model.resolve(left.func) in TIMER_READS:
            ends = [left]
        elif isinstance(left, cst.Name) and left.value in bound:
            ends = bound[left.value]
        else:
            continue
        for end in ends:
            if id(end) not in position:
                continue
            j = position[id(end)]
            starts = [c for c in bound[right.value] if id(c) in position and position[id(c)] < j]
            if not starts:
                continue
            start = max(starts, key=lambda c: position[id(c)])
            i = position[id(start)]
            key = (i, j)
            if key in seen:
                continue
            seen.add(key)
            jumped = _jumped_away(fn, start, end)
            between = tuple(c for c in order[i + 1:j] if id(c) not in reading_of
                            and id(c.test if type(c) is Truth else c) not in jumped
                            and (type(c) is not cst.Call or model.resolve(c.func) not in TIMER_READS))
            regions.append(TimedRegion(start, end, between, loop_of.get(id(end)) is not None))
    return regions


def _jumped_away(fn: Function, start: cst.Call, end: cst.Call) -> set[int]:
    """ids of the nodes in blocks that leave before `end` can be read: a branch ending in
    `return` or `raise`, in `break` out of a loop holding `end`, or in `continue` of a loop
    holding both readings (the next iteration reads the start again)."""
    out: set[int] = set()
    holds_end: set[int] = set()  # ids of the nodes on the way from the body down to a reading
    holds_start: set[int] = set()
    _mark_paths(fn.body, fn.body, {end: holds_end, start: holds_start}, [])
    _leave(fn.body, fn.body, None, holds_end, holds_start, out)
    return out


def _mark_paths(node: cst.CSTNode, body: cst.CSTNode, marks: dict[cst.CSTNode, set[int]], path: list[int]) -> None:
    """Adds to `marks[n]` the ids of the nodes from `body` down to `n`, for each node `n` it holds."""
    if node is not body and isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        return
    path.append(id(node))
    for target, ids in marks.items():
        if node is target:
            ids.update(path)
    for child in children(node):
        _mark_paths(child, body, marks, path)
    path.pop()


def _leave(node: cst.CSTNode, body: cst.CSTNode, loop: cst.CSTNode | None, holds_end: set[int],
           holds_start: set[int], out: set[int]) -> None:
    if node is not body and isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        return
    if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)) and node.body \
            and id(node) not in holds_end:
        last = node.body[-1]
        if isinstance(last, cst.SimpleStatementLine) and last.body:
            last = last.body[-1]
        in_loop = loop is not None and id(loop) in holds_end
        if isinstance(last, (cst.Return, cst.Raise)) or in_loop and (
                isinstance(last, cst.Break) or isinstance(last, cst.Continue) and id(loop) in holds_start):
            out.update(id(n) for n in walk(node))
            return
    for child in children(node):
        _leave(child, body, node if isinstance(node, (cst.For, cst.While)) else loop, holds_end, holds_start, out)


@fact
def syncing_functions(model: SemanticModel) -> set[Function]:
    """Same-module functions that wait for device results (directly or through callees)."""
    return _closure(model, lambda fn, site: is_sync(model, site.node, fn, set()))


@fact
def opaque_functions(model: SemanticModel) -> set[Function]:
    """Same-module functions that call something the file does not show (another library's
    function, a method of an object), directly or through callees: given a device value, such a
    function may read it (a logger, `mcmc.print_summary()`, a checkpoint writer)."""
    return _closure(model, lambda fn, site: _unseen(model, site.node, fn))


def _closure(model: SemanticModel, direct) -> set[Function]:
    """The functions for which `direct(fn, site)` holds for one of their calls, or that call one
    of those functions."""
    found: set[Function] = set()
    changed = True
    while changed:
        changed = False
        for fn in model.functions:
            if fn in found or fn.is_module:
                continue
            for site in fn.calls:
                target = model.callee(site.node, fn).function
                if (target is not None and target in found) or direct(fn, site):
                    found.add(fn)
                    changed = True
                    break
    return found


def _unseen(model: SemanticModel, call: cst.Call, fn: Function) -> bool:
    callee = model.callee(call, fn)
    if callee.function is not None or callee.cls is not None:
        return False  # this module's own code: `_closure` follows it
    q = callee.qualname
    if q is None:
        return model.receiver_kind(call, fn) != "array"  # a method of some object
    if _builds_record(q):
        return False
    root = q.split(".")[0]
    if root in apis.JAX_ROOTS or root == "numpy":
        return False  # the model knows these; `is_sync` says which ones wait
    return not q.startswith("builtins.") or q in _FORMATTING_BUILTINS


@fact
def pending_returns(model: SemanticModel) -> set[Function]:
    """Same-module functions, run eagerly, whose returned value may still be computing: their
    body ends with JAX work that nothing after it waits for. A call of one is pending work for
    its caller; a call of another eager function of the module is not (it waited, or it hands
    nothing back to wait on). A function also jitted elsewhere (`selu_jit = jax.jit(selu)`)
    counts: its plain call still runs eagerly."""
    candidates = [(fn, calls_in_order(fn, fstrings=True), work_results(model, fn)) for fn in model.functions
                  if not fn.is_module and not fn.direct_jit and fn.returns and fn.does_jax_work]
    pending: set[Function] = set()
    for _ in range(4):  # each round sees one level of helpers deeper
        grown = {fn for fn, calls, results in candidates if _pending(model, fn, calls, results, pending)}
        if grown == pending:
            break
        pending = grown
    return pending


def work_results(model: SemanticModel, fn: Function) -> set[str]:
    """Names bound from JAX work in `fn` (`out = f(x)`): converting them waits for the device."""
    out: set[str] = set()
    for a in fn.assignments:
        if a.value is not None and any(isinstance(n, cst.Call) and model.call_work(n, fn) is not None
                                       for n in walk(a.value)):
            out.update(a.targets)
    return out


def _scalar_follow_up(model: SemanticModel, fn: Function, call: cst.Call, waited: set[str]) -> bool:
    """After the timed region waited for its step, a call given only host values (the step
    count) or the values it waited for (`jnp.float32(loss[0])`, `schedule(step)`, a helper that
    runs no compiled code and no loop): scalar ops dispatched after the wait, microseconds the
    reading can leave out (a step timer around a `block_until_ready` followed by a
    learning-rate schedule)."""
    callee = model.callee(call, fn)
    if callee.jitted or callee.transform is not None:
        return False
    target = callee.function
    if target is not None and (target.loops or any(
            model.call_work(s.node, target) == "dispatch" for s in target.calls)):
        return False  # a helper running compiled code or a loop of its own is real work
    for arg in call.args:
        value = arg.value
        root = value.value if isinstance(value, cst.Subscript) else value
        if isinstance(root, cst.Name) and root.value in waited:
            continue
        if model.value_kind(value, fn) == "array":
            return False
    return not (isinstance(call.func, cst.Attribute) and model.value_kind(call.func.value, fn) == "array"
                and not (isinstance(call.func.value, cst.Name) and call.func.value.value in waited))


def unsynchronized_work(model: SemanticModel, fn: Function, calls, results: set[str]) -> cst.Call | None:
    """The last JAX call in `calls` (a slice of `calls_in_order(fn)`) when nothing after it
    waits for the device; None when the work is synced, when there is none, or when a call
    after it might sync (an unknown function given a result)."""
    return _pending(model, fn, calls, results, pending_returns(model))


def _pending(model: SemanticModel, fn: Function, calls, results: set[str],
             pending_helpers: set[Function]) -> cst.Call | None:
    syncing = syncing_functions(model)
    pending: cst.Call | None = None
    waited: set[str] | None = None  # once the region has waited: the names it waited for
    # `jax.jit(f).lower(x, jnp.arange(8)).compile()` times compilation, which is synchronous;
    # lowering reads only its arguments' shapes, so making them is not the work being timed
    lowered = {id(n) for c in calls if type(c) is cst.Call and isinstance(c.func, cst.Attribute)
               and c.func.attr.value == "lower" for a in c.args for n in walk(a.value) if type(n) is cst.Call}
    for call in calls:
        if id(call) in lowered:
            continue
        if type(call) is cst.FormattedStringExpression:
            if pending is not None and formats_device_value(model, call, fn, results):
                pending = None  # `f"{loss} {time.time() - t}"`: the loss is formatted first
            continue
        if type(call) is Truth:
            if pending is not None and _reads_device_value(model, call.test, fn, results):
                pending = None  # `if all_done(mask): break`: the test waits for the mask
            continue
        if type(call) is Store:
            if pending is not None and _device_value(model, call.value, fn, results) \
                    and _numpy_array(model, fn, call.target.value):
                pending = None  # `samples[i] = x` into a NumPy array copies x to the host
            continue
        if structural_tree_call(model, call):
            continue  # pytree bookkeeping on the host
        if _requests_async(model, call):
            return None  # `jax.copy_to_host_async(x)`: the code times issuing work, on purpose
        callee = model.callee(call, fn)
        target = callee.function
        if target is not None and callee.jitted and not target.does_array_work:
            continue  # a jitted function that computes nothing (a dispatch-overhead benchmark)
        if target is not None and target in syncing:
            pending = None  # the function waits for its own results
            waited = waited or set()
            continue
        if is_sync(model, call, fn, results):
            pending = None
            waited = (waited or set()) | {n.value for n in walk(call) if isinstance(n, cst.Name)}
            continue
        if waited is not None and _scalar_follow_up(model, fn, call, waited):
            continue  # `lr = schedule(step)`, `jnp.float32(loss[0])` after the step was waited for
        if callee.imported is not None and not callee.jitted:
            # another module's eager function: whether it waits is not in its summary
            if pending is not None and _given_results(model, fn, call, results):
                return None
            continue
        if target is not None and not callee.jitted and callee.transform is None:
            # an eager function of this module hands back running work only when its own body
            # ends with some; one that may read what it is given (it calls code the file does
            # not show) may have waited
            if target in pending_helpers:
                pending = call
            elif pending is not None and target in opaque_functions(model) and _given_results(model, fn, call, results):
                return None
            continue
        work = model.call_work(call, fn)
        if work is not None:
            q = model.resolve(call.func) or ""
            if q in apis.JIT_WRAPPERS or q in apis.TRACING_TRANSFORMS and q not in apis.RUNS_ITS_FUNCTION:
                continue  # building a wrapper is not device work
            if copies_or_casts(model, call, fn):
                continue  # a copy, a cast or a key: not the computation a timer is meant to cover
            # only work that hands back device arrays runs asynchronously (not compiling, I/O)
            if work == "array" or model.value_kind(call, fn) == "array":
                pending = call
            continue
        if pending is not None and _may_sync(model, fn, call, results):
            return None
    return pending


# Methods that give the same numbers another shape or dtype (of a copy's or a key's result).
_RELABELS = frozenset({"reshape", "astype", "transpose", "squeeze", "ravel", "flatten", "view"})


def copies_or_casts(model: SemanticModel, call: cst.Call, scope: Function, depth: int = 0) -> bool:
    """The call only moves, relabels or allocates data: a host-device copy (`jax.device_put`,
    `jax.make_array_from_*`), a dtype cast, a key made or split, a constant fill (`jnp.zeros`:
    a training loop's loss buffer made before an epoch timer), a reshape
    of what one of them returned, or a tree map of a function whose only JAX work is such calls
    (`jax.tree.map(lambda x: x.astype(bf16), params)`)."""
    q = model.resolve(call.func) or ""
    if q in apis.TRANSFER_FUNCTIONS or q in apis.FILL_FUNCTIONS or isinstance(call.func, cst.Attribute) \
            and call.func.attr.value in apis.TRANSFER_METHODS:
        return True
    if depth > 2:
        return False
    if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Call) \
            and call.func.attr.value in _RELABELS:
        return copies_or_casts(model, call.func.value, scope, depth + 1)  # `split(k, n).reshape(-1, 2)`
    if q not in apis.TREE_MAPS or not call.args:
        return False
    mapped = model.function_ref(call.args[0].value, scope)
    if mapped is None:
        return False
    moved = [copies_or_casts(model, s.node, mapped, depth + 1) for s in mapped.calls]
    return any(moved) and all(m or model.call_work(s.node, mapped) is None
                              for m, s in zip(moved, mapped.calls, strict=True))


def _requests_async(model: SemanticModel, call: cst.Call) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in apis.ASYNC_REQUEST_METHODS:
        return True
    return model.resolve(func) in apis.ASYNC_REQUESTS


def _given_results(model: SemanticModel, fn: Function, call: cst.Call, results: set[str]) -> bool:
    """The call is handed a device value: an argument, or the object whose method it is."""
    return any(_device_value(model, a.value, fn, results) for a in call.args) or (
        isinstance(call.func, cst.Attribute) and bool(read_names(call.func.value) & results))


def _may_sync(model: SemanticModel, fn: Function, call: cst.Call, results: set[str]) -> bool:
    """An unknown function given a device result might read it (a logger, a metrics writer)."""
    callee = model.callee(call, fn)
    if callee.function is not None:
        return False  # this module's functions are known: `_pending` decided about them
    if callee.cls is not None:  # a class of this module: only its own `__init__` could read them
        init = callee.cls.methods.get("__init__")
        return init is not None and init in opaque_functions(model) and _given_results(model, fn, call, results)
    q = callee.qualname or ""
    if q.startswith("builtins.") and q not in _FORMATTING_BUILTINS:
        return False
    if _stores_in_list(model, fn, call):
        return False
    func = call.func
    name = q.rsplit(".", 1)[-1] if q else (func.attr.value if isinstance(func, cst.Attribute)
                                           else func.value if isinstance(func, cst.Name) else "")
    if _WAIT_WORDS & set(name.lower().split("_")):
        return True  # `executable.sync()`, `sync_func()`: named for waiting
    return not _builds_record(q) and _given_results(model, fn, call, results)


def _stores_in_list(model: SemanticModel, fn: Function, call: cst.Call) -> bool:
    """`samples.append(state.position)` where `samples` is a list (or deque) this function made:
    storing a device value keeps a reference; it reads nothing (a sampler's 2000 steps
    appended to a list inside a timed region)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in _LIST_STORES and isinstance(func.value, cst.Name)):
        return False
    made = model.reaching_binding(func.value, fn)
    value = made.value if made is not None else None
    return isinstance(value, (cst.List, cst.ListComp)) or (
        isinstance(value, cst.Call) and model.resolve(value.func) in ("builtins.list", "collections.deque"))


_LIST_STORES = frozenset({"append", "extend", "insert", "appendleft"})


def _builds_record(qualname: str) -> bool:
    """`core.HMMPosterior(marginal_loglik=...)`, `TrainState(...)`: a class (CamelCase by
    convention) given arrays holds them; it does not read them."""
    last = qualname.rsplit(".", 1)[-1]
    return last[:1].isupper() and not last.isupper() and "_" not in last


def is_sync(model: SemanticModel, call: cst.Call, fn: Function, results: set[str]) -> bool:
    """The call waits for a device value: `block_until_ready`, `jax.device_get`, `float(x)`,
    `np.asarray(x)`, `x.item()` on an array (or on a name bound from JAX work, `results`)."""
    q = model.resolve(call.func)
    if q in SYNC_CALLS or q in apis.ARRAY_WRITERS:
        return True  # `eqx.tree_serialise_leaves(path, model)` copies every leaf out: a wait
    # `jax.tree.map(np.asarray, metrics)`: a host read of every leaf
    if q in apis.TREE_MAPS and call.args and _reads_to_host(model, call.args[0].value):
        return True
    # `jax.tree.map(lambda x: x.block_until_ready(), out)` (brax's training loop)
    if any(isinstance(a.value, cst.Lambda) and _lambda_syncs(a.value) for a in call.args):
        return True
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in SYNC_METHODS and q is None:
        return True
    if q in apis.HOST_PULL_FUNCTIONS or (q or "").startswith("numpy."):
        for arg in call.args:
            value = arg.value
            if _device_value(model, value, fn, results):
                return True
            # `float(step(x))`: converting a call's result waits for it
            if q in apis.HOST_PULL_FUNCTIONS and isinstance(value, cst.Call) and q != "builtins.print":
                return True
    return False


def _numpy_array(model: SemanticModel, fn: Function, expr: cst.BaseExpression) -> bool:
    """A name every binding of which in `fn` is made by NumPy (`samples = np.zeros((n, d))`):
    storing a device value into it converts the value on the host, which waits for it (a timed
    sampler filling a NumPy array each step)."""
    if not isinstance(expr, cst.Name):
        return False
    bindings = fn.bindings(expr.value)
    return bool(bindings) and all(
        isinstance(a.value, cst.Call) and (model.resolve(a.value.func) or "").startswith("numpy.")
        for a in bindings)


def _lambda_syncs(node: cst.Lambda) -> bool:
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
               and n.func.attr.value in SYNC_METHODS for n in walk(node.body))


def _device_value(model: SemanticModel, expr: cst.BaseExpression, fn: Function, results: set[str]) -> bool:
    """`expr` is, or reads, a device value: a JAX array, or a name bound from JAX work."""
    return model.is_array(expr, fn) or _reads_any(expr, results)


def _reads_any(expr: cst.BaseExpression, names: set[str]) -> bool:
    return bool(read_names(expr) & names)


def _reads_to_host(model: SemanticModel, fn: cst.BaseExpression) -> bool:
    """`np.asarray`, `float`, `jax.device_get` passed as a function: each call reads a value back."""
    q = model.resolve(fn)
    return q in (apis.HOST_PULL_FUNCTIONS - {"builtins.print"}) or q in SYNC_CALLS


def _reads_device_value(model: SemanticModel, expr: cst.BaseExpression, fn: Function, results: set[str]) -> bool:
    """The truth of `expr` is a device value's: an array, a name bound from JAX work, a
    comparison or `not` of one, or a call that computes one."""
    if isinstance(expr, cst.UnaryOperation):
        return _reads_device_value(model, expr.expression, fn, results)
    if isinstance(expr, cst.Comparison):
        return _device_value(model, expr.left, fn, results)
    if isinstance(expr, cst.Call) and model.call_work(expr, fn) is not None:
        return model.value_kind(expr, fn) == "array"
    return model.is_array(expr, fn) or (isinstance(expr, cst.Name) and expr.value in results)


def formats_device_value(model: SemanticModel, field: cst.FormattedStringExpression, fn: Function,
                         results: set[str]) -> bool:
    """An f-string field formatting a device array (or a name bound from JAX work) converts it
    to text on the host: it waits for the value."""
    return _device_value(model, field.expression, fn, results)


def structural_tree_call(model: SemanticModel, call: cst.Call) -> bool:
    """`jax.tree_util.tree_structure(x)`, `tree_flatten(x)`, `treedef_is_leaf(...)`: walks the
    pytree on the host; only `tree.map` and friends run a function that may dispatch work."""
    q = model.resolve(call.func) or ""
    return q.startswith(TREE_STRUCTURE_PREFIXES) and q not in apis.TREE_MAPS
