"""Loop shapes that make a per-step host transfer a non-issue for JAX301/JAX302."""

from __future__ import annotations

from typing import TypeGuard, cast

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import names_in, walk
from .builder import is_divergence_guard
from .core import SemanticModel
from .index import Function, Loop
from .loops import carried_names, grown_list, literal_trip_count
from .per_step import SINGLE_PASS

# `for k, v in d.items()`: a walk over a dict's entries (metrics, splits, parameters), a few
# iterations over structure, not over steps.
_STRUCTURE_METHODS = frozenset({"items", "keys", "values"})


def over_structure(loop: Loop | None, resolve=None) -> bool:
    """The innermost loop walks a dict's entries, or runs its body once (`for _ in range(1)`),
    rather than steps."""
    if loop is None or not isinstance(loop.node, cst.For):
        return False
    if resolve is not None:
        count = literal_trip_count(loop, resolve)
        if count is not None and count <= SINGLE_PASS:
            return True
    it = loop.node.iter
    return isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) \
        and it.func.attr.value in _STRUCTURE_METHODS and not it.args


def runs_compiled_loops(model: SemanticModel, loop: Loop | None) -> bool:
    """An iteration of `loop` calls a compiled function that itself loops (a Python loop unrolled
    under jit, a `lax.scan`), or runs a compiled loop itself (`lax.fori_loop(0, n, step, carry)`):
    each iteration is a whole multi-step program (a rollout, an epoch), and one read per
    iteration is amortised over all its steps."""
    if loop is None:
        return False
    fn = loop.function
    for site in fn.calls:
        if not loop.encloses(site.loop):
            continue
        if model.resolve(site.node.func) in apis.COMPILED_LOOPS:
            return True
        target = model.callee(site.node, fn).function
        if target is not None and target.jitted and (target.loops or target.uses_scan):
            return True
    return False


def fed_back(model: SemanticModel, loop: Loop) -> list[cst.CSTNode]:
    """The host reads whose results the same loop hands back to JAX (`tok = int(jnp.argmax(l))`
    then `jnp.array([[tok]])` or `mask.at[tok].set(1)`): the host decides each step's next
    input, as in a greedy decode loop, so the round trip is the loop's design and the loop is not
    a carried computation `lax.scan` could take as written. The pulling calls are returned."""
    fn = loop.function
    pulled: dict[str, set[cst.CSTNode]] = {}  # name -> the reads whose value it may hold
    for a in fn.assignments:
        if a.value is not None and loop.encloses(a.site.loop) and _pulls_device_value(model, a.value, fn):
            for target in a.targets:
                pulled.setdefault(target, set()).add(a.value)
    if not pulled:
        return []
    for _ in range(3):  # `draft = nxt` hands the value on under another name (speculative decoding)
        for a in fn.assignments:
            if isinstance(a.value, cst.Name) and a.value.value in pulled and loop.encloses(a.site.loop):
                for target in a.targets:
                    pulled.setdefault(target, set()).update(pulled[a.value.value])
    found: list[cst.CSTNode] = []
    for site in fn.calls:
        if not loop.encloses(site.loop) or model.call_work(site.node, fn) is None:
            continue
        for name in set(names_in(site.node)) & set(pulled):
            found.extend(node for node in pulled[name] if not any(node is f for f in found))
    return found


def _pulls_device_value(model: SemanticModel, value: cst.BaseExpression, fn: Function) -> bool:
    """`int(x)`, `np.asarray(x)`, `x.item()` of a device value `x`."""
    if not isinstance(value, cst.Call) or not model.is_host_pull(value):
        return False
    if isinstance(value.func, cst.Attribute) and model.resolve(value.func) is None:
        return model.is_array(value.func.value, fn)
    return bool(value.args) and model.is_array(value.args[0].value, fn)


def accepts_or_rejects(model: SemanticModel, loop: Loop, node: cst.If) -> bool:
    """`if loss_fn(params_new) < loss: params = params_new` (else shrink the step): the test
    decides which candidate the next iteration starts from, a line search or an accept/reject
    rule. The host must know the answer every step; reading it every k steps would change the
    algorithm. A NaN or divergence test is not such a decision: it guards against failure."""
    if is_divergence_guard(node.test):
        return False
    carried = carried_names(model, loop)
    if not carried:
        return False
    branches = [node.body] + ([node.orelse] if node.orelse is not None else [])
    for branch in branches:
        for inner in walk(branch):
            # adopting a candidate computed this iteration (`params = params_new`), not
            # changing the state in place (`w = w / 2` can be a `jnp.where` on the device)
            if isinstance(inner, cst.Assign) and isinstance(inner.value, cst.Name) and any(
                    isinstance(t.target, cst.Name) and t.target.value in carried for t in inner.targets):
                return True
    return False


def exits_on_device(model: SemanticModel, loop: Loop) -> bool:
    """The loop leaves when a value it computed on the device this iteration says the work is done
    (`if token == eos: break`, `if jnp.all(done): break`, `if float(gap) < tol: break`): a
    decode loop, a sampler or an iterative solver must learn that value every iteration. The
    host waits for the device each step by design, so a read in it adds no stall of its own; the
    fix would be moving the whole loop into `lax.while_loop`, not dropping a read. A NaN or
    divergence check that ends the loop is not such a test: it guards against failure and can
    run every N steps. A `while` test counts the same way (`while not done:`, `while gap > tol:`),
    but not one on a counter (`while step < n` with a device `step` is a read to report)."""
    fn = loop.function
    device: set[str] = set()  # names bound in the loop from device work
    computed: set[str] = set()  # ... by a call (`gap = step(w)`), not counted (`i = i + 1`)
    for a in fn.assignments:
        if a.value is None or not loop.encloses(a.site.loop):
            continue
        value = a.value
        called = isinstance(value, cst.Call) and model.call_work(value, fn) in ("array", "dispatch")
        if model.value_kind(value, fn) == "array" or called:
            device.update(a.targets)
        if called:
            computed.update(a.targets)
    if isinstance(loop.node, cst.While) and not is_divergence_guard(loop.node.test):
        if any(isinstance(n, cst.Name) and n.value in computed
               or isinstance(n, cst.Call) and model.is_array(n, fn) for n in walk(loop.node.test)):
            return True
    derived = _derived_on_host(model, loop, device)
    for site in fn.tests:
        node = site.node
        if not isinstance(node, cst.If) or site.loop is not loop or not _leaves(node):
            continue
        test = node.test
        if is_divergence_guard(test):
            continue  # `if not jnp.all(jnp.isfinite(w)): break` guards a failure: checked every N steps
        if any(isinstance(n, cst.Name) and n.value in device for n in walk(test)) \
                or set(names_in(test, counted=False)) & derived or any(
                model.is_array(n, fn) for n in walk(test) if isinstance(n, cst.BaseExpression)):
            return True
    return False


def _derived_on_host(model: SemanticModel, loop: Loop, device: set[str]) -> set[str]:
    """`device` and the names the loop derives from them on the host: `lf = float(loss)`,
    `history.append(float(loss))`, then `gain = history[-2] - history[-1]` (an Adam loop
    stopping when the gain is below a tolerance). A stop on any of them learns a device
    value every iteration."""
    fn = loop.function
    assignments = [a for a in fn.assignments if a.value is not None and loop.encloses(a.site.loop)]
    growths = [(owner, site.node) for site in fn.calls
               if loop.encloses(site.loop) and (owner := grown_list(site.node)) is not None]
    derived = set(device)
    changed = True
    while changed:
        changed = False
        for a in assignments:
            value = cast(cst.BaseExpression, a.value)
            if not set(a.targets) <= derived and set(names_in(value, counted=False)) & derived:
                derived.update(a.targets)
                changed = True
        for owner, call in growths:
            if owner not in derived and any(set(names_in(arg.value, counted=False)) & derived for arg in call.args):
                derived.add(owner)
                changed = True
    return derived


def ends_episode(model: SemanticModel, loop: Loop, carried: set[str]) -> bool:
    """The loop stops on a done flag its step returns with the state (`obs, state, r, done, _ =
    env.step(...)`, then `if done: break`; or `if state.done: break`): an environment episode,
    which a `lax.scan` with a done mask runs whole (the gymnax and PureJaxRL rewrite). A stop on
    a value derived later (a decode's end token, a solver's tolerance) is not one."""
    fn = loop.function
    flags = {t for a in fn.assignments if loop.encloses(a.site.loop) and len(a.targets) > 1
             and set(a.targets) & carried for t in a.targets} - carried
    for site in fn.tests:
        node = site.node
        if not isinstance(node, cst.If) or site.loop is not loop or not _leaves(node):
            continue
        for n in walk(node.test):
            if isinstance(n, cst.Name) and n.value in flags:
                return True
            if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value in carried:
                return True
    return False


def _leaves(node: cst.If) -> bool:
    """`if ...: break` (or return): the branch ends the loop."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else (node.body,)
    for statement in body:
        small = statement.body if isinstance(statement, cst.SimpleStatementLine) else \
            statement.body if isinstance(statement, cst.SimpleStatementSuite) else ()
        if any(isinstance(s, (cst.Break, cst.Return)) for s in small):
            return True
    return False


def measured_call(call: cst.Call, synced: cst.BaseExpression | None, paths: Statements) -> bool:
    """`f(x).block_until_ready()` or `jax.block_until_ready(f(x))` as a statement: the result of
    the work is thrown away as soon as it is ready, so the loop exists to run and wait for it
    (a benchmark's measured body), not to compute with it."""
    if synced is None or not paths.discarded(call):
        return False
    if isinstance(synced, cst.Call):
        return True  # `jax.device_get(f(x))` as a statement: fetched to be thrown away
    return not isinstance(synced, cst.Name) or paths.only_synced(synced.value)


class Statements:
    """Where nodes of one function sit, computed on first question: on an error path (a `raise`
    statement, an `assert`'s message: evaluated once, on the way out, not every step), or as a
    call whose result is thrown away (`f(x).block_until_ready()`, `_ = ...`)."""

    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self._errors: set[int] | None = None
        self._discarded: set[int] = set()
        self._bound: dict[int, str] = {}  # call -> the one name its result is bound to
        self._waits: set[int] = set()  # block_until_ready calls
        self._synced: set[str] = set()  # names waited for
        self._reads: dict[str, int] = {}  # name -> reads other than as a target or a sync's receiver

    def _index(self) -> None:
        self._errors = set()
        body = self.fn.body
        skip: set[int] = set()
        for n in walk(body):
            if isinstance(n, (cst.Lambda, cst.FunctionDef)):  # their names are another scope's
                skip.update(id(m) for m in walk(n) if isinstance(m, cst.Name))
            elif isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For)):
                targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
                for t in targets:
                    skip.update(id(m) for m in walk(t) if isinstance(m, cst.Name))
            elif is_wait(n):
                self._waits.add(id(n))
                synced = n.args[0].value if n.args else cast(cst.Attribute, n.func).value
                if isinstance(synced, cst.Name):  # `x.block_until_ready()`, `jax.block_until_ready(x)`
                    skip.add(id(synced))
                    self._synced.add(synced.value)
            elif isinstance(n, cst.Name) and id(n) not in skip:
                self._reads[n.value] = self._reads.get(n.value, 0) + 1
        for n in walk(body):
            if isinstance(n, cst.Raise):
                self._errors.update(id(m) for m in walk(n))
            elif isinstance(n, cst.Assert) and n.msg is not None:
                self._errors.update(id(m) for m in walk(n.msg))
            elif isinstance(n, cst.Expr) and isinstance(n.value, cst.Call):
                self._discarded.add(id(n.value))
            elif isinstance(n, cst.Assign) and isinstance(n.value, cst.Call) and all(
                    isinstance(t.target, cst.Name) and t.target.value == "_" for t in n.targets):
                self._discarded.add(id(n.value))
            elif isinstance(n, cst.Assign) and isinstance(n.value, cst.Call) and len(n.targets) == 1 \
                    and isinstance(n.targets[0].target, cst.Name):
                self._bound[id(n.value)] = n.targets[0].target.value

    def on_error_path(self, node: cst.CSTNode) -> bool:
        if self._errors is None:
            self._index()
        return id(node) in (self._errors or ())

    def only_synced(self, name: str) -> bool:
        """`c, d = f(a, b); c.block_until_ready()`: the name is bound and waited for, never
        computed with (nothing reads it but syncs)."""
        if self._errors is None:
            self._index()
        return self._reads.get(name, 0) == 0

    def discarded(self, call: cst.Call) -> bool:
        if self._errors is None:
            self._index()
        return id(call) in self._discarded

    def only_waited_for(self, call: cst.Call) -> bool:
        """The call's result is waited for and then thrown away (`jax.block_until_ready(f(x))` as
        a statement, `y = f(x)` with `y` read by nothing but `y.block_until_ready()`): the loop
        runs it to measure it."""
        if self._errors is None:
            self._index()
        name = self._bound.get(id(call))
        if name is not None:
            return name in self._synced and self.only_synced(name)
        return id(call) in self._discarded and id(call) in self._waits


def is_wait(node: cst.CSTNode) -> TypeGuard[cst.Call]:
    """`x.block_until_ready()` or `jax.block_until_ready(x)`."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
        and node.func.attr.value == "block_until_ready"
