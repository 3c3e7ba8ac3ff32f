"""Host reads in step loops: which calls, f-strings and `if` tests of untraced code bring a device
value to the host on every step of a loop over steps, which of those the loop needs anyway, and
which of them stall the loop rather than reuse a wait that already happened.

A read here is a device-to-host transfer: `float(x)`, `x.item()`, `np.asarray(x)`,
`jax.device_get(x)`, `print(x)`, an f-string of an array, an `if` on an array, and
`x.block_until_ready()` (a wait without a copy). `StepReads` answers the questions for one
function; `first_waits` picks, among reads already found, those that wait for new device work.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal, TypeVar, cast

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import read_names, walk
from .core import SemanticModel
from .eager import dispatch_loop, drives_steps, walks_device_rows
from .enclosing import dominating_binding, enclosing_statements
from .facts import fact
from .host_loops import (
    Statements,
    accepts_or_rejects,
    exits_on_device,
    fed_back,
    measured_call,
    over_structure,
    runs_compiled_loops,
)
from .index import Function, Loop, Site
from .loops import device_history, records_for_rendering, renders_each_iteration, whole_list_read
from .timing import timed_regions

# What a host-reading call reads: "call" the value it is given, "each" every item of a device
# value (`all(jnp.all(x, axis=1))`: bool() per item), "fstring" an f-string of an array it prints.
ReadKind = Literal["call", "each", "fstring"]

T = TypeVar("T")


@fact
def checks_every_result(model: SemanticModel) -> bool:
    """The file turns on `jax.config.update("jax_debug_nans", True)` (or `jax_debug_infs`): every
    jitted call checks its outputs, so it waits for them before returning, and a read after it
    adds no stall. Measured: a jitted call returns in 0.1 ms without it and only after its whole
    0.3 s computation with it."""
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


class StepReads:
    """The host reads of one untraced function `fn` that run on every step of a loop over steps.

    Answers, per site of `fn`: does it run every step of a hot loop (`per_step`), is it a host
    read and of what kind (`pull`), does the loop need its value on the host (`needed`), and does
    it cost a stall of its own (`stalls`); per function: which f-strings and which `if`/`while`
    operands convert an array every step. Loop-level answers are computed once per loop.
    """

    def __init__(self, model: SemanticModel, fn: Function) -> None:
        self.model = model
        self.fn = fn
        self.statements = Statements(fn)
        # loops that read a timer: a benchmark's `block_until_ready` there is the measurement
        self.timed_loops = {id(s.loop) for s in fn.calls if s.loop is not None
                            and model.resolve(s.node.func) in apis.TIMER_FUNCTIONS}
        self._amortised: dict[tuple[int, int], bool] = {}
        self._returned: dict[int, list[cst.CSTNode]] = {}
        self._timed_steps = timed_each_iteration(model, fn)

    def per_step(self, site: Site) -> bool:
        """`site` runs on every iteration of a loop shown to run steps (it drives a compiled step,
        or dispatches eager work over device rows), in a function that does not display values,
        and nothing amortises a read there: no compiled inner loop makes each iteration a whole
        program, the loop does not leave on a device value (it must learn it every step), and it
        does not record or render each iteration for a viewer."""
        model = self.model
        if not model.dispatched_per_step(site) or over_structure(site.loop, model.resolve):
            return False
        loop = model.step_loop_of(site)
        if loop is None or displays(site.function) or not (drives_steps(model, loop) or (
                dispatch_loop(model, loop) and walks_device_rows(model, loop))):
            return False  # not shown to be a hot loop over steps (a viewer, a sweep, a demo)
        key = (id(site.loop), id(loop))
        if key not in self._amortised:
            # compiled inner loops amortise the read; a loop that leaves on a device value
            # (a decode loop's end-of-sequence test) waits every step by design
            self._amortised[key] = runs_compiled_loops(model, site.loop) \
                or exits_on_device(model, loop) or records_for_rendering(model, loop) is not None \
                or renders_each_iteration(loop) is not None
        return not self._amortised[key]

    def pull(self, site: Site) -> ReadKind | None:
        """What the call at `site` brings to the host, or None when it is no host read: a
        conversion or copy of a device array, `print` of one (or of an f-string of one), `all`/
        `any` over device values, `.item()`/`.tolist()`, and a wait (`block_until_ready`) that is
        not a benchmark's measurement (in a loop reading a timer, or of a result only timed)."""
        model, fn, statements = self.model, self.fn, self.statements
        call: cst.Call = site.node
        q = model.resolve(call.func)
        if reduces_to_bool(model, call, fn):
            return "each"
        if q in apis.HOST_PULL_FUNCTIONS:
            args = [a.value for a in call.args if a.keyword is None]
            if q == "builtins.print":
                if any(model.is_array(a, fn) for a in args):
                    return "call"
                if any(isinstance(a, cst.FormattedString) and fstring_has_array(model, a, fn) for a in args):
                    return "fstring"
                return None
            if args and model.is_array(args[0], fn):
                if q == "jax.device_get" and measured_call(call, args[0], statements):
                    return None
                return "call"
            return None
        if q in apis.SYNC_FUNCTIONS:
            first = call.args[0].value if call.args else None
            if id(site.loop) in self.timed_loops or measured_call(call, first, statements):
                return None
            if call.args and model.is_array(call.args[0].value, fn):
                return "call"
            return None
        if isinstance(call.func, cst.Attribute) and q is None:
            method = call.func.attr.value
            if method in ("item", "tolist", "block_until_ready") and model.is_array(call.func.value, fn):
                if method == "block_until_ready" and (id(site.loop) in self.timed_loops
                                                      or measured_call(call, call.func.value, statements)):
                    return None
                return "call"
        return None

    def needed(self, site: Site) -> bool:
        """The host needs the value the read at `site` brings back: the loop hands it to a host
        environment (`a = jax.device_get(a); env.step(a)`), or back to JAX as the next step's
        input (`tok = int(jnp.argmax(l))`, then `jnp.array([[tok]])`: the host picks each step's
        input). Such a read is a wait by design."""
        if feeds_host_environment(self.fn, site):
            return True
        around = site.loop.outward() if site.loop is not None else ()
        return any(node is site.node for loop in around for node in self._handed_back(loop))

    def _handed_back(self, loop: Loop) -> list[cst.CSTNode]:
        """`fed_back(loop)`, computed once per loop."""
        if id(loop) not in self._returned:
            self._returned[id(loop)] = fed_back(self.model, loop)
        return self._returned[id(loop)]

    def stalls(self, site: Site) -> bool:
        """The read at `site` is one the loop pays for when it runs: not in the message of a
        `raise`/`assert` (formatted only on failure), and not of a value an `if` above it in the
        loop already read (that test waited)."""
        return not self.statements.on_error_path(site.node) and not read_by_the_test_above(self.model, site) \
            and not reads_back_an_upload(self.model, site)

    def fstring_reads(self) -> list[Site]:
        """The f-strings of `fn` that format a device array on every step and stall: not one
        passed straight to print() (that call is the read), and each implicitly concatenated
        string (`f"a {x} " f"b {y}"`) once, at its first such part."""
        model, fn = self.model, self.fn
        strings = concatenations(fn)
        reported_strings: set[int] = set()
        out: list[Site] = []
        for fstring in fn.fstrings:
            whole = strings.get(id(fstring.node))
            if whole is not None and whole in reported_strings:
                continue  # `f"a {x} " f"b {y}"`: one string, reported once
            if self.per_step(fstring) and any(
                    isinstance(part, cst.FormattedStringExpression) and model.is_array(part.expression, fn)
                    for part in fstring.node.parts):
                if not inside_printed_call(model, fstring, fn.calls) and self.stalls(fstring):
                    out.append(fstring)
                    if whole is not None:
                        reported_strings.add(whole)
        return out

    def condition_reads(self) -> Iterator[tuple[cst.BaseExpression, Site]]:
        """The operands of `if`/`while` tests of `fn` that Python converts with bool() on every
        step: device arrays computed by JAX work (not objects that merely hold arrays), outside
        a line search's accept/reject test, which the algorithm needs every step. `all(...)`/
        `any(...)` over device values is a call read (`pull`), not listed here."""
        model, fn = self.model, self.fn
        for test_site in fn.tests:
            node = test_site.node
            test = node.test if isinstance(node, (cst.If, cst.While)) else None
            if test is None or not self.per_step(test_site):
                continue
            if isinstance(node, cst.If) and test_site.loop is not None \
                    and accepts_or_rejects(model, test_site.loop, node):
                continue  # a line search's accept/reject: the algorithm needs the answer each step
            for operand in operands(test):
                if reduces_to_bool(model, operand, fn):
                    continue  # `all(jnp.all(...))` is reported as the call it is
                if model.is_array(operand, fn) and not model.is_container(operand, fn) \
                        and computed_on_device(model, operand, fn):
                    yield operand, test_site

    def timed(self, node: cst.CSTNode) -> bool:
        """`node` holds a read between two timer readings of one iteration (`t0 = time()`, the
        step, `print(f"{loss}")`, `dt = time() - t0`): the wait that makes the figure the step's."""
        return any(id(n) in self._timed_steps for n in walk(node))


def whole_history_read(model: SemanticModel, site: Site) -> str | None:
    """The name of the list read whole by the call at `site` (`jax.device_get(history)`,
    `np.mean(jnp.stack(history))`, `print(history)`) when a loop around it appends a device value
    to that list every iteration: each read pulls every value so far. None otherwise."""
    call: cst.Call = site.node
    q = model.resolve(call.func) or ""
    if site.loop is None or not (q in apis.HOST_PULL_FUNCTIONS or q.startswith("numpy.")):
        return None
    for loop in site.loop.outward():
        grown = device_history(model, loop)
        for arg in call.args if grown else ():
            name = whole_list_read(model, arg.value, grown)
            if name is not None:
                return name
    return None


def timed_each_iteration(model: SemanticModel, fn: Function) -> set[int]:
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


def concatenations(fn: Function) -> dict[int, int]:
    """Each f-string that is a part of an implicitly concatenated string argument of a call
    (`f"..." f"..."` over several lines), mapped to the string it belongs to."""
    group: dict[int, int] = {}
    for site in fn.calls:
        for arg in site.node.args:
            if isinstance(arg.value, cst.ConcatenatedString):
                for part in _string_parts(arg.value):
                    group[id(part)] = id(arg.value)
    return group


def _string_parts(node: cst.ConcatenatedString) -> list[cst.BaseExpression]:
    """The f-string parts of an implicitly concatenated string, left to right."""
    parts: list[cst.BaseExpression] = []
    for side in (node.left, node.right):
        if isinstance(side, cst.ConcatenatedString):
            parts.extend(_string_parts(side))
        elif isinstance(side, cst.FormattedString):
            parts.append(side)
    return parts


# A function whose name says its job is to show a value to a person (`render`, `__repr__`,
# `plot_losses`, `show_image`, `visualize`): converting the value is the point. The name is the
# only evidence the file gives of that job; such functions run per step only in viewers and
# debugging loops.
_DISPLAY_NAME = re.compile(r"(^|_)(render|repr|str|string|plot|draw|show|display|visuali[sz]e)(_|$)")


def displays(fn: Function) -> bool:
    """`fn` is a named function (not the module, not a lambda) whose name, as a word of it, says
    it shows a value to a person: render, repr, str, string, plot, draw, show, display,
    visualise/visualize."""
    return isinstance(fn.node, cst.FunctionDef) \
        and bool(_DISPLAY_NAME.search(fn.node.name.value.lower().strip("_")))


def first_waits(model: SemanticModel, found: list[tuple[cst.CSTNode, Site, T]],
                waits: list[tuple[cst.CSTNode, Site, T]]) -> list[tuple[cst.CSTNode, Site, T, int]]:
    """Of the reads `found` (node, site, payload), the ones that stall, in source order, each
    with the count of reads right after it that wait no longer. `waits` are reads left
    unreported (the loop needs them, or they are deliberate waits) that still wait.

    Once an unconditional read in the iteration has brought an array to the host
    (`float(loss)`), reading the same array again (`f"{loss:.3f}"`, `loss.item()`) uses the host
    copy the array keeps; it is not another transfer, and another output of the same compiled
    call (`peak.item()` after `float(loss)` from `w, loss, peak = step(w)`) is ready by then: a
    transfer, not another stall. A loop that already waits for the step every iteration on
    purpose (`stats["loss"].block_until_ready()` before reading a timer) has stalled for it:
    reads after that wait add no stall of their own. A read right after a kept one, with no new
    device work between them, waits for nothing new: it is counted with the first."""
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
            if unconditional(site.function, node, loop):
                waited.add(id(loop))
            continue
        values = arrays_read(model, node, site)
        done = copied.setdefault(id(loop), set())
        if id(loop) in waited or (values and values <= done):
            continue
        before = last_wait.get(id(loop))
        if before is not None and not dispatches_between(model, site, before, node):
            followers[id(before)] = followers.get(id(before), 0) + 1
            continue  # `np.array(loss)` then `np.array(aux)`: the queue was drained by the first
        kept.append(entry)
        if (loop is not None or site.function.per_step) and unconditional(site.function, node, loop):
            last_wait[id(loop)] = node
            if values:
                done |= values
    return [(node, site, what, followers.get(id(node), 0)) for node, site, what in kept]


def dispatches_between(model: SemanticModel, site: Site, first: cst.CSTNode, then: cst.CSTNode) -> bool:
    """Some call after the read `first` and up to the read `then` (in the loop's body or the
    per-step function's, in source order; `w.sum().item()` computes anew) may put new work on the
    device. When none does, the first read has already waited for what was queued before it: the
    second waits for no new work (five `np.array(...)` of one eager step's loss and aux outputs).
    One stall, reported once, at the first read."""
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


def arrays_read(model: SemanticModel, node: cst.CSTNode, site: Site) -> set[tuple[int, str]] | None:
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


def inside_loop(fn: Function, node: cst.CSTNode, loop: Loop | None) -> list[cst.CSTNode] | None:
    """The block statements around `node` inside `loop`, outermost first (in a per-step
    function, `loop` None: those of its body); None when the loop is not around it in `fn`'s
    own body."""
    around = enclosing_statements(fn, node) or []
    if loop is None and fn.per_step:
        return around  # a function called once per step: its body is part of one iteration
    return around[around.index(loop.node) + 1:] if loop is not None and loop.node in around else None


def unconditional(fn: Function, node: cst.CSTNode, loop: Loop | None) -> bool:
    """`node` runs on every iteration of `loop`: no `if`, `try` or inner loop between them."""
    inside = inside_loop(fn, node, loop)
    return inside is not None and not any(
        isinstance(s, (cst.If, cst.Try, cst.For, cst.While, cst.ExceptHandler)) for s in inside)


# Calls that put host data on the device and do nothing else to it.
_UPLOADS = frozenset({"jax.numpy.array", "jax.numpy.asarray", "jax.device_put"})


def reads_back_an_upload(model: SemanticModel, site: Site) -> bool:
    """`np.array(X)` where every way to it in the loop goes through `X = jnp.array(X)` of a value
    not known to be on the device (a batch the loop drew): the read waits for that upload only,
    not for the step's device work, and brings back data the host had a moment ago. A round trip,
    not a stall until the device finishes."""
    call = site.node
    if site.loop is None or not isinstance(call, cst.Call):
        return False
    if call.args and call.args[0].keyword is None:
        read = call.args[0].value
    elif isinstance(call.func, cst.Attribute) and not call.args:
        read = call.func.value  # `X.item()`
    else:
        return False
    if not isinstance(read, cst.Name):
        return False
    binding = dominating_binding(model, site.function, site.loop, read)
    if binding is None or binding.value is None:
        return False
    value = binding.value
    if isinstance(value, cst.Tuple) and len(value.elements) == len(binding.targets):
        value = value.elements[binding.targets.index(read.value)].value  # `X, y = jnp.array(X), jnp.array(y)`
    elif binding.targets != (read.value,):
        return False
    return isinstance(value, cst.Call) and model.resolve(value.func) in _UPLOADS and bool(value.args) \
        and value.args[0].keyword is None and not _device_value(model, value.args[0].value, site.function)


def _device_value(model: SemanticModel, expr: cst.BaseExpression, fn: Function) -> bool:
    return model.is_array_at(expr, fn) if isinstance(expr, cst.Name) else model.is_array(expr, fn)


def read_by_the_test_above(model: SemanticModel, site: Site) -> bool:
    """`if n_bad > 0: print(f"{n_bad} bad")`: the `if` in the loop already waited for `n_bad`
    (that test is the finding); reading it again in the branch costs no second stall."""
    node = site.node
    inside = inside_loop(site.function, node, site.loop)
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


# Methods through which a loop hands a value to a host environment: a Gym environment's `step`,
# a simulator's `act`, a socket's `send`, a queue's `put`. The file does not show those objects'
# types, so the method name is the evidence that the host consumes the value each step.
_HOST_CONSUMERS = frozenset({"step", "send", "act", "step_async", "put"})


def feeds_host_environment(fn: Function, site: Site) -> bool:
    """The pulled value is bound to a name that the same loop hands to a host environment's
    `step`/`send`/`act`/`step_async`/`put` (a Gym env, a simulator, a socket): the host needs the
    value each step."""
    if site.loop is None:
        return False
    target = _bound_name(fn, site.node)
    return any(site.loop.encloses(s.loop) and isinstance(s.node.func, cst.Attribute)
               and s.node.func.attr.value in _HOST_CONSUMERS
               and any(a.value is site.node or (isinstance(a.value, cst.Name) and a.value.value == target)
                       for a in s.node.args)
               for s in fn.calls)


def _bound_name(fn: Function, call: cst.Call) -> str | None:
    """The one name `call`'s result is assigned to (`a = jax.device_get(a)`), or None."""
    for a in fn.assignments:
        if a.value is call and len(a.targets) == 1:
            return a.targets[0]
    return None


def operands(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`a and (b or c)` -> [a, b, c]; each is converted to bool on its own."""
    if isinstance(test, cst.BooleanOperation):
        return operands(test.left) + operands(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return operands(test.expression)
    return [test]


def fstring_has_array(model: SemanticModel, node: cst.FormattedString, fn: Function) -> bool:
    """One of the f-string's fields is a device array."""
    return any(isinstance(p, cst.FormattedStringExpression) and model.is_array(p.expression, fn)
               for p in node.parts)


def inside_printed_call(model: SemanticModel, site: Site, calls: list[Site]) -> bool:
    """The f-string at `site` is passed straight to print(): reported once, at the print call."""
    return any(model.resolve(c.node.func) == "builtins.print"
               and any(arg.value is site.node for arg in c.node.args) for c in calls)


def reduces_to_bool(model: SemanticModel, expr: cst.BaseExpression, fn: Function) -> bool:
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


def computed_on_device(model: SemanticModel, expr: cst.BaseExpression, fn: Function, depth: int = 0) -> bool:
    """The tested value comes from JAX work this function does or names: a `jnp`/`jax` call, a
    compiled function's result, or a local name bound to one (also through comparisons,
    arithmetic and indexing). An attribute or method of an object the file knows only as
    "holds arrays" (`layer.is_stateful()`, `eqn.primitive.multiple_results`, an IR value's
    `.layout`) is usually a Python value: an `if` on it says nothing about a sync."""
    if depth > 6:
        return False
    if isinstance(expr, cst.Comparison):
        return computed_on_device(model, expr.left, fn, depth + 1) or any(
            computed_on_device(model, c.comparator, fn, depth + 1) for c in expr.comparisons)
    if isinstance(expr, cst.BinaryOperation):
        return computed_on_device(model, expr.left, fn, depth + 1) \
            or computed_on_device(model, expr.right, fn, depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return computed_on_device(model, expr.expression, fn, depth + 1)
    if isinstance(expr, cst.Subscript):
        return computed_on_device(model, expr.value, fn, depth + 1)
    if isinstance(expr, cst.Call):
        callee = model.callee(expr, fn)
        if callee.jitted or callee.transform is not None:
            return True
        if callee.function is not None:  # a same-module function the model sees computing arrays
            return callee.function.does_array_work and model.is_array(expr, fn)
        if callee.qualname is not None:
            return callee.qualname.split(".")[0] in apis.JAX_ROOTS
        # `x.sum()`, `x.any()` on a value computed on the device
        return isinstance(expr.func, cst.Attribute) and computed_on_device(model, expr.func.value, fn, depth + 1)
    if isinstance(expr, cst.Name):
        if not model.is_array(expr, fn):
            return False
        for a in fn.bindings(expr.value):
            if a.value is not None and computed_on_device(model, a.value, fn, depth + 1):
                return True
            node = a.site.node
            if a.value is None and isinstance(node, cst.For) and model.is_array(node.iter, fn) \
                    and computed_on_device(model, node.iter, fn, depth + 1):
                return True
        return False
    return False

