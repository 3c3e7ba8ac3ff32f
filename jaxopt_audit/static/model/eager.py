"""Evidence that code runs eagerly on the host, and that a loop is a loop over steps.

The model marks as a step loop any untraced loop that does JAX work. On real code most such
loops are not what JAX101/JAX201/JAX202 mean: library helpers that loop over a pytree's
structure, over the dimensions of an index or the agents of an environment, inside functions
that users jit (the model cannot see that from the file), and host helpers (plotting,
formatting) that merely touch arrays. The rules about per-step dispatch therefore ask two
further questions, answered here once per model:

- `host_side(fn)`: the function's job is host work (it prints, formats, plots, times, does
  file I/O, or pulls device values into Python): it cannot be jitted as it stands.
- `dispatch_loop(loop)`: the loop is a loop over steps that Python dispatches one by one, shown
  by the model: it is not over structure, configurations or files, and either it runs in code
  that is eager for certain (module level, a function called from module level, a function
  doing host work) or its own shape says "steps" (it calls jitted code, iterates rows of
  arrays, sits inside an epoch loop over a data stream, or counts many literal steps).

When neither is shown, the rules stay silent.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.names import dotted
from ..syntax.walk import read_names, walk
from .core import SemanticModel
from .facts import answers, fact
from .gradients import derivative_of
from .index import Function, Loop, Site
from .loops import (
    carried_names,
    draws_on_host,
    has_fixed_trip_count,
    is_numpy_value,
    iterates_rows,
    literal_trip_count,
)
from .per_step import SINGLE_PASS

# Libraries whose calls are host work by nature (plots, images, logging, progress bars).
HOST_LIBRARIES = frozenset({"matplotlib", "PIL", "cv2", "imageio", "wandb", "logging", "tqdm", "pandas",
                            "seaborn", "plotly", "IPython", "mediapy", "tensorboard", "tensorboardX",
                            "absl.logging", "rich", "networkx", "pygraphviz", "graphviz"})
PLOT_LIBRARIES = frozenset({"matplotlib", "seaborn", "plotly", "mediapy", "PIL", "imageio", "graphviz",
                            "networkx"})
# Other array frameworks: a function computing with them is not a jit candidate.
OTHER_FRAMEWORKS = frozenset({"tensorflow", "torch"})
# Receivers that are plotting objects by convention (`ax.plot`, `fig.savefig`).
PLOT_RECEIVERS = frozenset({"ax", "axs", "axes", "fig", "figure", "plt", "canvas"})
# A loop that waits for a person or paces itself to be watched runs at human speed: its host
# reads and un-jitted helpers cost nothing anyone would notice.
HUMAN_PACED_FUNCTIONS = frozenset({"builtins.input", "time.sleep", "getpass.getpass"})
HUMAN_PACED_METHODS = frozenset({"render", "imshow", "waitKey", "clear_output", "display", "flip"})
# A literal trip count at or above this is a run of steps, whatever the body (`range(1000)`).
MANY_STEPS = 50
# Iterating these methods' results walks a container's structure or a file, not steps.
STRUCTURE_METHODS = frozenset({"items", "keys", "values", "iterdir", "glob", "rglob", "readlines",
                               "splitlines"})
STRUCTURE_FUNCTIONS = apis.TREE_LEAVES | apis.TREE_FLATTENS | frozenset({"builtins.open", "os.listdir", "os.walk",
                                 "os.scandir", "glob.glob", "glob.iglob",
                                 "jax.devices",
                                 "jax.local_devices", "itertools.product", "builtins.dir",
                                 "builtins.vars"})




# jit pays by replacing many dispatches with one. On CPU an eager op costs about 4.5 us to
# dispatch and a small jitted call about 3.5 us (benchmarks/eager_dispatch.py), so a function of
# a few ops saves about 15 us a call: nothing next to the step around it. The small helpers
# real code calls per step (a reshape and a slice, a figure's two broadcasts, a one-line
# material index) run fewer than five ops; eager steps worth jitting run 8 to 33.
WORTH_JIT = 5
# Transforms that run the function and its derivative: an eager `jax.grad(loss)(p)` dispatches
# the forward pass and the backward pass op by op.
_DIFFERENTIATING = frozenset({"jax.grad", "jax.value_and_grad", "jax.jacfwd", "jax.jacrev", "jax.hessian",
                              "jax.vjp", "jax.jvp", "jax.linearize"})


def eager_ops(model: SemanticModel, fn: Function) -> int:
    """Array operations one eager call of `fn` dispatches: its own (`Function.array_ops`), those
    of the un-jitted functions it calls, those of a function it maps over a pytree (once per
    tree: the leaf count is not in the file), and those of a function it calls through a transform
    (`jax.grad(loss)(p)` counts at least `WORTH_JIT`, and `WORTH_JIT` when the transformed
    function is not in this file). A callee with loops of its own is a driver (an evaluation
    pass, a sampler): its work is per iteration of its loop, not one body to fuse, so only the
    call itself counts."""
    facts = answers(model, eager_ops)
    if fn in facts:
        return facts[fn]
    facts[fn] = fn.array_ops  # a recursive call counts its own body once
    total = fn.array_ops
    for site in fn.calls:
        callee = model.callee(site.node, fn)
        target = callee.function
        if callee.jitted or target is fn:
            continue
        if callee.qualname in apis.TREE_MAPS and site.node.args:
            mapped = model.function_ref(site.node.args[0].value, fn)
            if mapped is not None and mapped is not fn and not mapped.loops:
                total += _leaf_ops(model, mapped)
            continue
        if callee.transform in _DIFFERENTIATING:
            # an eager derivative traces the function and runs its forward and backward passes
            # op by op: a whole training step's worth of dispatches, whatever the loss calls
            inner = eager_ops(model, target) if target is not None and not target.loops else 0
            total += max(WORTH_JIT, 2 * inner)
        elif target is not None and target.does_array_work and not target.direct_jit and not target.loops:
            total += eager_ops(model, target)
        elif callee.transform is not None and target is None:
            total += WORTH_JIT
        elif callee.imported is not None and not callee.imported.has_loop:
            total += callee.imported.eager_ops
    facts[fn] = total
    return total


def _leaf_ops(model: SemanticModel, mapped: Function) -> int:
    """Operations a function mapped over a pytree (`jax.tree.map(lambda p, g: p - lr * g, ...)`)
    runs on each leaf: its operators and array calls, counted as on arrays (its parameters are
    the leaves, which its own model does not know to be arrays), at least once per tree."""
    calls = sum(1 for s in mapped.calls if model.call_work(s.node, mapped) == "array")
    return max(eager_ops(model, mapped), len(mapped.operations) + calls)


def eager_tree_updates(model: SemanticModel, loop: Loop) -> list[tuple[Site, Function, Site]]:
    """`params = jax.tree.map(lambda p, g: p - lr * g, params, grads)` written in the loop itself,
    unguarded, with `grads` from a compiled call of the same iteration (`grads = grad_fn(params,
    batch)`) and the result carried to the next iteration: an update of the whole pytree
    dispatched op by op, leaf by leaf, beside a compiled step it could be part of. Each as
    (the map's call, the mapped function, the compiled call feeding it)."""
    fn = loop.function
    carried = carried_names(model, loop)
    compiled: dict[str, Site] = {}  # names bound in the loop from a compiled call
    for a in fn.assignments:
        if a.value is not None and loop.encloses(a.site.loop) and isinstance(a.value, cst.Call):
            site = next((s for s in fn.calls if s.node is a.value), None)
            if site is not None and model.call_work(a.value, fn) == "dispatch":
                compiled.update((t, site) for t in a.targets)
    found = []
    for a in fn.assignments:
        value = a.value
        if not isinstance(value, cst.Call) or not loop.encloses(a.site.loop) or a.site.guarded \
                or not set(a.targets) & carried or model.resolve(value.func) not in apis.TREE_MAPS \
                or len(value.args) < 2:
            continue
        mapped = model.function_ref(value.args[0].value, fn)
        feeding = [compiled[n] for arg in value.args[1:] for n in read_names(arg.value) if n in compiled]
        if mapped is None or mapped.loops or not feeding or _leaf_ops(model, mapped) < 2:
            continue
        site = next((s for s in fn.calls if s.node is value), None)
        if site is not None:
            found.append((site, mapped, feeding[0]))
    return found


def rebound_globals(model: SemanticModel, fn: Function) -> list[str]:
    """Module-level arrays `fn` reads (not parameters, not its own locals) that the module
    rebinds in a loop, or that a function rebinds through `global`: jit captures a global's
    value when it traces, so a jitted `fn` would go on computing with the first value while the
    loop moves on. Such arrays must become arguments before `fn` can be jitted."""
    module = next((f for f in model.functions if f.is_module), None)
    if module is None or fn.is_module:
        return []
    inner = [f for f in model.functions if _within(f, fn)]  # its own scope and its nested functions
    local = {name for f in inner for name in (*f.params, *(t for a in f.assignments for t in a.targets))}
    found = []
    for name in sorted(read_names(fn.body) - local):
        if name in fn.global_names or not model.is_array_name(name, module):
            continue
        in_loop = any(a.site.loop is not None for a in module.bindings(name))
        through_global = any(name in other.global_names and other.bindings(name)
                             for other in model.functions if other is not fn)
        if in_loop or through_global:
            found.append(name)
    return found


def rebound_kind(fn: Function, names: list[str]) -> str:
    """What the rebound globals `fn` reads are, for a message: "function" when `fn` calls each
    of them (`opt_update`, `get_params` of an optimizer made per learning rate), "array" when it
    calls none, "value" for a mix."""
    called = {s.node.func.value for s in fn.calls if isinstance(s.node.func, cst.Name)}
    return "function" if called >= set(names) else "value" if called & set(names) else "array"


def _within(inner: Function, outer: Function) -> bool:
    """`inner` is `outer` or defined (at any depth) inside it."""
    current: Function | None = inner
    while current is not None:
        if current is outer:
            return True
        current = current.parent
    return False


def differentiates(model: SemanticModel, fn: Function) -> bool:
    """The function's own body calls a derivative (`jax.grad(loss)(p)`, `value_and_grad`):
    run eagerly, it is a whole training step, not a helper."""
    return any(model.callee(site.node, fn).transform in _DIFFERENTIATING for site in fn.calls)


def prepares_compiled_input(model: SemanticModel, site: Site) -> bool:
    """The call makes a fresh input of a compiled call in the same loop (`xb = sample_batch(key,
    data)` then `params = train_step(params, xb)`, or `train_step(params, augment(x))`): the
    helper prepares each step's batch, and its eager ops overlap with the compiled step already
    queued on the device (a batch sampler of about six ops beside a jitted step). A helper whose
    result the loop carries to the next step (`w = scale(step(w, x))`) and an eager gradient step
    stay reported."""
    fn, loop = site.function, site.loop
    if loop is None:
        return False
    callee = model.callee(site.node, fn)
    target = callee.function
    if callee.transform in _DIFFERENTIATING or (target is not None and differentiates(model, target)):
        return False  # an eager gradient (`loss_grad_fn(params, x, y)`) is the step's own work
    made = {t for a in fn.assignments if a.value is site.node and loop.encloses(a.site.loop) for t in a.targets}
    made -= carried_names(model, loop)
    for other in fn.calls:
        if other is site or not loop.encloses(other.loop) or model.call_work(other.node, fn) != "dispatch":
            continue
        for arg in other.node.args:
            if arg.value is site.node or read_names(arg.value) & made:
                return True
    return False


def host_work(model: SemanticModel, fn: Function) -> bool:
    """The function's own body does work that only a driver does: prints, reads a timer, does
    file I/O, plots or logs. Error messages (`raise`/`assert`) do not count. Code doing this runs
    eagerly. (Pulls and branches on values are not evidence: library code does them on
    concrete values under `core.is_concrete`-style guards.)"""
    facts = answers(model, host_work)
    if fn in facts:
        return facts[fn]
    facts[fn] = result = any(not _in_error_path(model, fn, node) for node in _host_nodes(model, fn, strict=True))
    return result


def host_side(model: SemanticModel, fn: Function) -> bool:
    """The function's job is host work, so it cannot be jitted as it stands: `host_work`, or it
    formats values (f-strings, `str`, `.format`), pulls an array into Python (`float(x)`,
    `x.item()`, `np.asarray(x)`), branches on a device value (`if jnp.any(x):`), slices with
    device bounds (`tokens[i:i + n]` for `i` in a drawn array), or runs NumPy, TensorFlow or
    PyTorch on its values."""
    return host_work(model, fn) or any(
        not _in_error_path(model, fn, node) for node in _host_nodes(model, fn, strict=False))


def _host_nodes(model: SemanticModel, fn: Function, strict: bool) -> Iterator[cst.CSTNode]:
    """Candidate host operations in `fn`'s body (strict: only what `host_work` counts)."""
    if not strict:
        yield from (site.node for site in fn.fstrings)
    for site in fn.calls:
        call: cst.Call = site.node
        q = model.resolve(call.func)
        if q is not None:
            if strict:
                if q == "builtins.print" or q in apis.TIMER_FUNCTIONS or q in apis.HOST_IO_FUNCTIONS \
                        or q.split(".")[0] in HOST_LIBRARIES or q.rsplit(".", 1)[0] in HOST_LIBRARIES:
                    yield call
            elif q in apis.HOST_PULL_FUNCTIONS and call.args and model.is_array(call.args[0].value, fn):
                yield call
            elif q in ("builtins.str", "builtins.repr", "builtins.format") or q.split(".")[0] in OTHER_FRAMEWORKS:
                yield call
            elif q.startswith("numpy.") and any(
                    model.is_array(a.value, fn) or (isinstance(a.value, cst.Name) and a.value.value in fn.params)
                    for a in call.args):
                yield call
            continue
        func = call.func
        if not isinstance(func, cst.Attribute):
            continue
        base = func.value
        if strict:
            if isinstance(base, cst.Name) and (base.value in PLOT_RECEIVERS or _plot_annotation(fn, base.value)):
                yield call
            elif isinstance(base, cst.Subscript) and isinstance(base.value, cst.Name) \
                    and base.value.value in PLOT_RECEIVERS:
                yield call  # axs[0, j].imshow(...)
        elif func.attr.value == "format" and isinstance(base, (cst.SimpleString, cst.ConcatenatedString)):
            yield call
        elif func.attr.value in apis.HOST_METHODS and model.is_array(base, fn):
            yield call
    if not strict:
        # a slice whose bounds are device values (`tokens[i:i + n] for i in ix`, `ix` drawn by
        # `randint`): each bound is pulled to the host (`__index__`), and under jit a slice of
        # traced bounds fails (it needs `lax.dynamic_slice`), so the helper is host work as written
        for sub in fn.subscripts:
            if any(isinstance(element.slice, cst.Slice) and any(
                    bound is not None and model.is_array(bound, fn)
                    for bound in (element.slice.lower, element.slice.upper, element.slice.step))
                   for element in sub.node.slice):
                yield sub.node
        for test in fn.tests:
            node = test.node
            if isinstance(node, (cst.If, cst.While)) and any(
                    type(n) is cst.Call and model.is_array(n, fn) for n in walk(node.test)):
                yield node.test  # a Python branch on a device value: a sync
        for site in fn.calls:  # a device value handed to a helper that branches on it in Python
            target = model.callee(site.node, fn).function
            if target is None or target.traced or target is fn:
                continue
            positional = [a for a in site.node.args if a.keyword is None and not a.star]
            for param, arg in zip(target.params, positional, strict=False):
                if model.is_array(arg.value, fn) and _branches_on(target, param):
                    yield site.node
                    break


def _branches_on(fn: Function, name: str) -> bool:
    """`while y < x:` with `x` a parameter: Python control flow needs the value itself."""
    return any(isinstance(site.node, (cst.If, cst.While)) and name in read_names(site.node.test)
               for site in fn.tests)


def _in_error_path(model: SemanticModel, fn: Function, node: cst.CSTNode) -> bool:
    """The node sits in a `raise` or `assert` statement (an error message, not the work)."""
    errors = answers(model, _in_error_path)
    if fn not in errors:  # walked only for functions with a candidate host operation
        errors[fn] = {id(n) for stmt in walk(fn.node) if type(stmt) in (cst.Raise, cst.Assert)
                      for n in walk(stmt)}
    return id(node) in errors[fn]


def _plot_annotation(fn: Function, name: str) -> bool:
    annotation = fn.param_annotations.get(name)
    return annotation is not None and annotation.split(".")[-1] in ("Axes", "Figure", "Axis")


@fact
def eager_functions(model: SemanticModel) -> set[Function]:
    """Functions that certainly run eagerly: the module body, functions called from it (not
    through a transform), and functions those call, transitively; untraced host-side functions."""
    found: set[Function] = {model.module_function}
    work = [model.module_function]
    for fn in model.functions:
        if not fn.traced and not fn.is_module and host_work(model, fn) and fn not in found:
            found.add(fn)
            work.append(fn)
    while work:
        fn = work.pop()
        for site in fn.calls:
            callee = model.callee(site.node, fn)
            target = callee.function
            if target is None or target in found or target.traced or callee.jitted \
                    or callee.transform is not None:
                continue
            found.add(target)
            work.append(target)
    return found


def iterates_structure(model: SemanticModel, loop: Loop) -> bool:
    """The loop walks a container's structure, files or configurations, not steps:
    `d.items()`, `jax.tree.leaves(p)`, `open(f)`, `range(len(layers))`, `itertools.product(...)`,
    or a name bound to one of those."""
    node = loop.node
    if not isinstance(node, cst.For):
        return False
    return _structure_iterable(model, node.iter, loop.function, 0) or _walks_paths(loop)


# Attributes only a `pathlib.Path` has: a loop reading them from its item walks files.
PATH_ATTRIBUTES = frozenset({"stem", "suffix", "suffixes", "with_suffix", "with_name", "read_text",
                             "read_bytes", "write_text", "is_file", "is_dir", "iterdir"})


def _walks_paths(loop: Loop) -> bool:
    """`for fn in files: ... fn.stem ...`: the items are paths, each iteration a file's work
    (an energy comparison per structure file), not a step loop."""
    items = set(loop.targets)
    return bool(items) and any(
        isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value in items
        and n.attr.value in PATH_ATTRIBUTES for n in walk(loop.node.body))


def _structure_iterable(model: SemanticModel, expr: cst.BaseExpression, fn: Function, depth: int) -> bool:
    if depth > 4:
        return False
    if isinstance(expr, cst.Call):
        func = expr.func
        q = model.resolve(func)
        if q in STRUCTURE_FUNCTIONS:
            return True
        if q is None and isinstance(func, cst.Attribute) and func.attr.value in STRUCTURE_METHODS:
            return True
        if q == "builtins.range":
            return any(_length_of_structure(model, a.value, fn) for a in expr.args)
        if q in ("builtins.enumerate", "builtins.zip", "builtins.sorted", "builtins.list", "builtins.reversed"):
            args = [a.value for a in expr.args if a.keyword is None]
            return any(_structure_iterable(model, a, fn, depth + 1) for a in args)
        return False
    if isinstance(expr, cst.Attribute) and expr.attr.value in apis.STATIC_ATTRIBUTES:
        return True  # `zip(coords, x.shape)`: one iteration per dimension
    base = expr.value if isinstance(expr, cst.Subscript) else expr
    name = base.value if isinstance(base, cst.Name) else base.attr.value if isinstance(base, cst.Attribute) else None
    if name is not None and apis.STRUCTURE_NAMES.search(name):
        return True  # `for w, b in params`, `enumerate(slice_shape[:-1])`: layers, dimensions
    if isinstance(expr, cst.Name):
        bindings = fn.bindings(expr.value)
        if bindings and all(a.value is not None for a in bindings):
            return all(len(a.targets) <= 2 and a.value is not None
                       and _structure_iterable(model, a.value, fn, depth + 1) for a in bindings)
    return False


def _configurations(model: SemanticModel, expr: cst.BaseExpression, fn: Function, depth: int = 0) -> bool:
    """A literal list or tuple (of settings), zip/enumerate of such, or a name bound once to one:
    a loop over configurations, each usually a new shape or program."""
    if depth > 3:
        return False
    if isinstance(expr, (cst.List, cst.Tuple)):
        return True
    if isinstance(expr, cst.Call) and model.resolve(expr.func) in ("builtins.zip", "builtins.enumerate"):
        args = [a.value for a in expr.args if a.keyword is None]
        return bool(args) and all(_configurations(model, a, fn, depth + 1) for a in args)
    if isinstance(expr, cst.Subscript):  # `rotations[0]` of a literal list of settings
        return _configurations(model, expr.value, fn, depth + 1)
    if isinstance(expr, cst.Name):
        for scope in fn.scopes():
            bindings = scope.bindings(expr.value)
            if bindings:
                return len(bindings) == 1 and bindings[0].value is not None \
                    and _configurations(model, bindings[0].value, scope, depth + 1)
    return False


def _length_of_structure(model: SemanticModel, expr: cst.BaseExpression, fn: Function) -> bool:
    """`len(layers)`, `len(xs) - 1`, `x.ndim`: a count of structure, not of steps."""
    if isinstance(expr, cst.BinaryOperation):
        return _length_of_structure(model, expr.left, fn) or _length_of_structure(model, expr.right, fn)
    if isinstance(expr, cst.Call) and model.resolve(expr.func) == "builtins.len" and expr.args:
        return not model.is_array(expr.args[0].value, fn)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "ndim":
        return True
    return False


def dispatch_loop(model: SemanticModel, loop: Loop) -> bool:
    """The loop is shown to be a loop over steps, each dispatched from Python (module docstring)."""
    facts = answers(model, dispatch_loop)
    if loop in facts:
        return facts[loop]
    facts[loop] = result = _dispatch_loop(model, loop)
    return result


def _dispatch_loop(model: SemanticModel, loop: Loop) -> bool:
    fn = loop.function
    if fn.traced or not loop.is_step or iterates_structure(model, loop):
        return False
    count = literal_trip_count(loop, model.resolve)
    if count is not None and count <= SINGLE_PASS:
        return False
    if isinstance(loop.node, cst.For) and _configurations(model, loop.node.iter, fn):
        return False
    if _plots(model, loop) or _other_framework(model, loop) or human_paced(model, loop):
        return False  # a display loop (a grid of images), a TensorFlow/PyTorch loop, a game
    if isinstance(loop.node, cst.For) and _attribute_iterable(model, loop.node.iter, fn):
        # `for shots in self.shots`, `for axis, n in spec.ragged_axes`: fields of a record or
        # settings made at construction; only a compiled step in the body, or (for a record
        # handed in, not `self`) state fed back through a step with each item, says "steps"
        if _calls_compiled(model, loop):
            return True
        return not _self_attribute(loop.node.iter) and _steps_user_function(model, loop)
    if fn in eager_functions(model):
        return True
    if count is not None and count >= MANY_STEPS:
        return True
    if _calls_compiled(model, loop) or _steps_user_function(model, loop):
        return True
    node = loop.node
    if isinstance(node, cst.While):
        return has_fixed_trip_count(model, loop)  # `while step < horizon` with `step += 1`
    if isinstance(node, cst.For):
        if iterates_rows(model, node.iter, fn):
            return True
        # `for batch in batches` inside `for epoch in range(n)`: epochs over a data stream
        parent = loop.parent
        if parent is not None and parent.is_step and not _is_range(model, node.iter):
            return True
    return False


def drives_steps(model: SemanticModel, loop: Loop) -> bool:
    """The loop is a hot driver of device work: shown to be a loop over steps, and each
    iteration threads state through JAX work (`state = step(state, batch)`, `result =
    learner.update(state, x); state = result.state`). A host read there stalls the device
    pipeline every step. Loops that only evaluate or collect (`for batch in ds: outs.append(
    np.asarray(f(params, batch)))`) or do eager one-off work (preprocessing blocks, drawing a
    figure) are left alone: reading results back is what they are for."""
    facts = answers(model, drives_steps)
    if loop not in facts:
        facts[loop] = dispatch_loop(model, loop) and (
            _steps_user_function(model, loop) or _feeds_state_back(model, loop)
            or _feeds_attribute_back(model, loop))
    return facts[loop]


def walks_device_rows(model: SemanticModel, loop: Loop) -> bool:
    """`for x in inputs` where `inputs` is a JAX array (also under zip/enumerate): the data is
    already on the device, so reading each iteration's result back is the loop's only host trip."""
    node = loop.node
    if not isinstance(node, cst.For):
        return False
    it = node.iter
    if isinstance(it, cst.Call) and model.resolve(it.func) in ("builtins.enumerate", "builtins.zip"):
        return any(_device_rows(model, a.value, loop.function) for a in it.args if a.keyword is None)
    return _device_rows(model, it, loop.function)


def _device_rows(model: SemanticModel, expr: cst.BaseExpression, fn: Function) -> bool:
    return isinstance(expr, (cst.Name, cst.Subscript)) and model.is_array(expr, fn) \
        and not is_numpy_value(model, expr, fn)


def _feeds_state_back(model: SemanticModel, loop: Loop) -> bool:
    """`params, opt, loss = update(params, opt, batch)`: a call doing JAX work takes a value
    carried from the last iteration and its result is bound to a carried name (directly or
    through a record: `out = step(state); state = out.state`). Running sums (`total += x`) are
    not state."""
    fn = loop.function
    carried = carried_names(model, loop)
    if not carried:
        return False
    results: set[str] = set()  # names bound to such a call's result in this loop
    for a in fn.assignments:
        if not loop.encloses(a.site.loop) or a.value is None or a.augmented:
            continue
        if isinstance(a.value, cst.Call) and model.call_work(a.value, fn) is not None and any(
                read_names(arg.value) & (carried | results) for arg in a.value.args if not arg.star):
            if carried & set(a.targets):
                return True
            results.update(a.targets)
        elif carried & set(a.targets) and read_names(a.value) & results \
                and not isinstance(a.value, cst.BinaryOperation):
            return True
    return False


def _feeds_attribute_back(model: SemanticModel, loop: Loop) -> bool:
    """`self.params, loss = update(self.params, x)`, `holder.params, (out, mets) =
    train(holder.params, batch)`: state kept in an object's attribute, handed to a call doing
    JAX work and rebound from its result, every iteration (a diffusion trainer whose
    parameters live in a handler object)."""
    fn = loop.function
    for a in fn.assignments:
        if not loop.encloses(a.site.loop) or not isinstance(a.value, cst.Call) \
                or model.call_work(a.value, fn) is None:
            continue
        stored = {dotted(t) for t in _attribute_targets(a.site.node)} - {None}
        if stored and any(isinstance(n, cst.Attribute) and dotted(n) in stored
                          for arg in a.value.args for n in walk(arg.value)):
            return True
    return False


def _attribute_targets(target: cst.CSTNode) -> list[cst.Attribute]:
    if isinstance(target, cst.Attribute):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [t for e in target.elements for t in _attribute_targets(e.value)]
    return []


def _steps_user_function(model: SemanticModel, loop: Loop) -> bool:
    """`w = self.update(w, x, y)`, `state = step(state, batch)`: the loop feeds a value back
    into a function of this module that does array work, over data it does not index by
    structure, or into one that differentiates: the shape of a training or simulation loop."""
    counted = isinstance(loop.node, cst.For) and _is_range(model, loop.node.iter)
    carried = carried_names(model, loop)
    if not carried:
        return False
    fn = loop.function
    assigned = {t for a in fn.assignments if loop.encloses(a.site.loop) for t in a.targets}
    for a in fn.assignments:
        if not loop.encloses(a.site.loop) or not isinstance(a.value, cst.Call):
            continue
        target = model.callee(a.value, fn).function
        args = [arg.value for arg in a.value.args if not arg.star]
        if target is None or not target.does_array_work or not any(read_names(arg) & carried for arg in args):
            continue
        # a function that differentiates, fed the carried state, is a gradient step whatever
        # else it is given (`w = train_step(w, x, y)` over a fixed data set)
        if differentiates(model, target):
            return True
        # the state and this iteration's item go in, the new state comes out; under
        # `for k in range(n)` the item must be a row of data the loop does not write (`xs[t]`),
        # or `k` may count dimensions of something being built
        if counted and any(_row_of_data(arg, loop, assigned) for arg in args):
            return True
        if not counted and any(read_names(arg) & set(loop.targets) for arg in args):
            return True
    return False


def descent_loop(model: SemanticModel, loop: Loop) -> bool:
    """The loop evaluates an un-jitted derivative at a value it rebinds (`coords = coords - eta *
    force(coords)`, `force = jax.grad(potential)`): a descent run step by step, even when nothing
    else in its body is known to be JAX work. Not over structure, configurations or a short
    literal count, not a display, game or other framework's loop, not in traced code."""
    fn = loop.function
    count = literal_trip_count(loop, model.resolve)
    if fn.traced or iterates_structure(model, loop) or (count is not None and count <= SINGLE_PASS):
        return False
    if isinstance(loop.node, cst.For) and _configurations(model, loop.node.iter, fn):
        return False
    return not (_plots(model, loop) or _other_framework(model, loop) or human_paced(model, loop)) \
        and _descends(model, loop)


def _descends(model: SemanticModel, loop: Loop) -> bool:
    """`forces = -force_fn(positions)` with `force_fn = jax.grad(energy)`, then `positions = ...`:
    the loop evaluates a derivative at a value it rebinds, the shape of a descent or a
    minimiser, whatever the iteration count's source."""
    fn = loop.function
    carried = {t for a in fn.assignments if a.value is not None and loop.encloses(a.site.loop)
               for t in a.targets} - loop.counters - set(loop.targets)
    return bool(carried) and any(
        loop.encloses(site.loop) and derivative_of(model, site) is not None
        and any(read_names(arg.value) & carried for arg in site.node.args)
        for site in fn.calls)


def _self_attribute(expr: cst.BaseExpression) -> bool:
    """`self.x`, `cls.x` (also inside zip/enumerate): state the object was built with."""
    if isinstance(expr, cst.Call):
        return any(_self_attribute(a.value) for a in expr.args if a.keyword is None)
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name) and expr.value in ("self", "cls")


def _attribute_iterable(model: SemanticModel, expr: cst.BaseExpression, fn: Function) -> bool:
    if isinstance(expr, cst.Call) and model.resolve(expr.func) in ("builtins.zip", "builtins.enumerate"):
        return any(_attribute_iterable(model, a.value, fn) for a in expr.args if a.keyword is None)
    return (isinstance(expr, cst.Attribute) and model.resolve(expr) is None
            and expr.attr.value not in apis.ARRAY_ATTRIBUTES)


def _plots(model: SemanticModel, loop: Loop) -> bool:
    """The loop body draws: calls a plotting library or a method of an axes or figure."""
    fn = loop.function
    for site in fn.calls:
        if not loop.encloses(site.loop) or site.guarded:  # a plot every k steps is still a step loop
            continue
        func = site.node.func
        q = model.resolve(func)
        if q is not None and q.split(".")[0] in PLOT_LIBRARIES:
            return True
        if isinstance(func, cst.Attribute):
            base = func.value.value if isinstance(func.value, cst.Subscript) else func.value
            if isinstance(base, cst.Name) and base.value in PLOT_RECEIVERS:
                return True
        if any(isinstance(a.value, cst.Name)
               and (a.value.value in PLOT_RECEIVERS or _plot_annotation(fn, a.value.value))
               for a in site.node.args):
            return True  # `self._render_square(ax=ax, ...)`: drawing through a helper
    return False


def human_paced(model: SemanticModel, loop: Loop) -> bool:
    """The loop body waits for a person or renders for one: `input()`, `time.sleep`,
    `env.render()`, `cv2.imshow`, `clear_output`: an interactive game, a viewer, a demo."""
    fn = loop.function
    for site in fn.calls:
        if not loop.encloses(site.loop):
            continue
        func = site.node.func
        if model.resolve(func) in HUMAN_PACED_FUNCTIONS:
            return True
        if isinstance(func, cst.Attribute) and func.attr.value in HUMAN_PACED_METHODS:
            return True
    return False


def _row_of_data(expr: cst.BaseExpression, loop: Loop, assigned: set[str]) -> bool:
    """`xs[t]`: a name the loop does not assign, indexed by the loop's counter."""
    return isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) \
        and expr.value.value not in assigned \
        and any(read_names(e.slice) & (set(loop.targets) | loop.counters) for e in expr.slice)


def _other_framework(model: SemanticModel, loop: Loop) -> bool:
    fn = loop.function
    return any(loop.encloses(site.loop) and (model.resolve(site.node.func) or "").split(".")[0] in OTHER_FRAMEWORKS
               for site in fn.calls)


def _is_range(model: SemanticModel, expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and model.resolve(expr.func) == "builtins.range"


def _calls_compiled(model: SemanticModel, loop: Loop) -> bool:
    """The loop body calls a jitted function or compiled library code (`model.apply`,
    `optimizer.update`): the user compiled the step, so this loop is the Python driver."""
    fn = loop.function
    for site in fn.calls:
        if not loop.encloses(site.loop):
            continue
        callee = model.callee(site.node, fn)
        if callee.jitted:
            return True
        if model.receiver_kind(site.node, fn) == "object" and model.call_work(site.node, fn) == "dispatch":
            return True
    return False


def host_fed(model: SemanticModel, loop: Loop) -> bool:
    """Each iteration draws fresh data on the host (`perm = np.random.permutation(n)`,
    `problem = rng.normal(size=...)`) or calls a same-module function that prints or plots:
    the body must run on the host every step. (NumPy rows of a data set sliced per step are
    JAX302's business and still a scan candidate once moved to the device.)"""
    fn = loop.function
    for a in fn.assignments:
        if loop.encloses(a.site.loop) and not a.site.guarded and isinstance(a.value, cst.Call) \
                and draws_on_host(model, a.value, fn):
            return True
    for site in fn.calls:
        if loop.encloses(site.loop) and not site.guarded:
            target = model.callee(site.node, fn).function
            if target is not None and not target.traced and host_work(model, target):
                return True
            if target is not None and not target.traced and not target.does_jax_work and any(
                    draws_on_host(model, s.node, target) for s in target.calls):
                return True  # `problem = make_problem(data)`: a helper sampling on the host
            if model.resolve(site.node.func) == "builtins.print" \
                    and any(model.is_array(a.value, fn) for a in site.node.args):
                return True  # a device value printed every step: a host round trip per iteration
    return False



# Transforms whose result runs op by op when called outside jit: a gradient or a batched call
# is still a sequence of eager dispatches.
_EAGER_TRANSFORMS = _DIFFERENTIATING | {"jax.vmap"}


def runs_eagerly(model: SemanticModel, loop: Loop) -> bool:
    """Nothing the loop runs is compiled: no call in its body, or in the functions of this file
    it calls (transitively), is jitted, is a compiled loop (`lax.scan`), or reaches code the file
    cannot see (another module's function, a method of an object). A host read there waits
    only for the last eager op queued before it; the loop's cost is the missing jit (JAX101),
    not the read."""
    seen: set[int] = set()
    work: list[tuple[Function, Loop | None]] = [(loop.function, loop)]
    while work:
        fn, within = work.pop()
        for site in fn.calls:
            if within is not None and not within.encloses(site.loop):
                continue
            callee = model.callee(site.node, fn)
            target = callee.function
            q = callee.qualname or ""
            if callee.transform is not None or q in _EAGER_TRANSFORMS:
                target = target or _transformed_function(model, site.node, fn)
                if (callee.transform or q) not in _EAGER_TRANSFORMS:
                    return False
            elif target is None:
                target = _transformed_function(model, site.node, fn)
                if target is None and not _eager_library_call(q) and not _eager_method(model, site.node, fn) \
                        and not _made_by_eager_library(model, site.node, fn):
                    return False  # compiled code (`lax.scan`), or a call the file cannot see into
            if callee.jitted or callee.imported is not None or (target is not None and target.jitted):
                return False
            if target is not None and id(target) not in seen:
                seen.add(id(target))
                work.append((target, None))
    return True


# Libraries whose calls run as they are called: host code, or (for JAX) one op each.
_EAGER_LIBRARIES = ("jax.", "builtins.", "numpy.", "time.", "math.", "random.")


def _eager_library_call(q: str) -> bool:
    """A library call that compiles nothing: not a jit wrapper, nor a transform or control-flow
    primitive that traces and compiles a function (`lax.scan`, `lax.cond`; a gradient or vmap
    called outside jit runs op by op)."""
    return q.startswith(_EAGER_LIBRARIES) and q not in apis.JIT_WRAPPERS \
        and (q not in apis.TRACING_TRANSFORMS or q in _EAGER_TRANSFORMS)
# Methods of host containers and arrays a loop calls around its work.
_HOST_CONTAINER_METHODS = frozenset({"append", "extend", "insert", "pop", "item", "tolist", "format", "copy",
                                     "keys", "values", "items", "block_until_ready"})


def _eager_method(model: SemanticModel, call: cst.Call, fn: Function) -> bool:
    """A method of an array (`x.sum()`, one op) or of a host container (`losses.append(l)`)."""
    if not isinstance(call.func, cst.Attribute):
        return False
    kind = model.receiver_kind(call, fn)
    return kind == "array" or (kind is None and call.func.attr.value in _HOST_CONTAINER_METHODS)


def _made_by_eager_library(model: SemanticModel, call: cst.Call, fn: Function) -> bool:
    """`get_params(state)` where `opt_init, opt_update, get_params = optimizers.adam(lr)`: a
    function a JAX library call made that is not a jit wrapper (its functions run op by op)."""
    if not isinstance(call.func, cst.Name):
        return False
    for scope in fn.scopes():
        bindings = scope.bindings(call.func.value)
        if bindings:
            value = bindings[-1].value
            return isinstance(value, cst.Call) and _eager_library_call(model.resolve(value.func) or "") \
                and model.resolve(value.func) not in _EAGER_TRANSFORMS  # those are followed into `f`
    return False


def _transformed_function(model: SemanticModel, call: cst.Call, fn: Function) -> Function | None:
    """`batched(x)` where `batched = jax.vmap(f, ...)`: `f`, when the wrapper is an eager one."""
    if not isinstance(call.func, cst.Name):
        return None
    for scope in fn.scopes():
        bindings = scope.bindings(call.func.value)
        if bindings:
            value = bindings[-1].value
            if isinstance(value, cst.Call) and value.args and model.resolve(value.func) in _EAGER_TRANSFORMS:
                return model.function_ref(value.args[0].value, scope)
            return None
    return None

def scalar_inputs(site: Site) -> bool:
    """Every argument is the step count or a number (`lr = schedule(step)`, `schedule(step + 1,
    1e-3)`): the function computes on scalars, so each of its eager ops costs a dispatch of a few
    microseconds and jitting it saves tens of microseconds a step (a warmup-cosine schedule
    called each step to log the rate is not worth a finding)."""
    call: cst.Call = site.node
    counters = site.loop.counters_in_scope() if site.loop is not None else set()
    if not call.args or not counters:
        return False
    for arg in call.args:
        for node in walk(arg.value):
            if isinstance(node, cst.Name) and node.value not in counters:
                return False
            if isinstance(node, (cst.Call, cst.Subscript, cst.Attribute)):
                return False
    return True
