"""Host values in step loops: which values a step loop hands to JAX are NumPy data on the host,
where that data comes from (a data set the file holds, a batch the loop draws and works on, NumPy
built afresh), and which calls of the loop run a step.

JAX302 asks these to find host data copied to the device on every step. Host data counts only
when the file shows it: built by `np.*`, a name, tuple element or `self.` attribute bound to
NumPy, a slice of one returned by a batch getter of the file, or a loader's batch preprocessed
with NumPy in the loop.
"""

from __future__ import annotations

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import names_in, walk
from .core import SemanticModel
from .enclosing import dominating_binding
from .host_loops import Statements
from .index import Assignment, Function, Loop, Site
from .loops import batch_getter, is_numpy_value, iterates_rows


def from_data_set(model: SemanticModel, fn: Function, site: Site, value: cst.BaseExpression,
                  loader_batches: bool = True, depth: int = 0, processed: bool = False) -> bool:
    """The host data is something the rule's fix removes: a NumPy data set this file holds in
    memory (a NumPy name the loop does not rebind: the same array uploaded every step; a slice or
    a row of one; a batch from a generator of this module), or this step's batch from a loader,
    preprocessed on the host in the loop (`preprocess(batch)`, `x / 255.0`: the training-loop
    case study's NumPy work every step). Data generated afresh each step (`problem =
    make_problem(dataset)`) is an input pipeline by design, and so is a loader's batch merely
    converted (`jnp.array(x)` of a torch DataLoader's batch, the JAX docs' own loop) or put with
    an explicit `jax.device_put` (`loader_batches=False`): left alone."""
    if depth > 5 or site.loop is None:
        return False
    loop = site.loop

    def follow(x: cst.BaseExpression, work: bool = False) -> bool:
        return from_data_set(model, fn, site, x, loader_batches, depth + 1, processed or work)

    if isinstance(value, cst.Subscript):
        return not _element_of_vector(model, fn, value) and follow(value.value)
    if isinstance(value, cst.Call):
        q = model.resolve(value.func)
        args = [a.value for a in value.args if not a.star]
        if q in apis.DEVICE_PUT_FUNCTIONS or q in _CONVERSIONS or (
                q is None and isinstance(value.func, cst.Attribute) and value.func.attr.value in _VIEWS):
            parts = args + ([value.func.value] if q is None and isinstance(value.func, cst.Attribute) else [])
            # `np.array(x.numpy())` copies the batch on the host before the upload: work per step
            return any(follow(x, work=q == "numpy.array") for x in parts)
        if q is not None and q.startswith("numpy.") and not q.startswith("numpy.random.") \
                and q not in apis.NUMPY_METADATA and not set(names_in(value)) & _assigned_in(fn, loop):
            return True  # `np.zeros(4)`: the same array built and uploaded every step
        if batch_getter(model, value, fn):
            return any(follow(x) for x in args)  # `xb, yb = get_batch(X, Y, i)`: slices of what it is given
        # a helper or NumPy work on this step's item carries it on; anything else makes new data
        drawn = _drawn_names(fn, loop)
        return any(set(names_in(x)) & drawn and follow(x, work=True) for x in args)
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        parts = [value.left, value.right] if isinstance(value, cst.BinaryOperation) else [value.expression]
        return any(follow(x, work=True) for x in parts)
    if isinstance(value, cst.Dict):
        return any(isinstance(e, cst.DictElement) and follow(e.value) for e in value.elements)
    if isinstance(value, cst.DictComp):
        return follow(value.for_in.iter)
    if isinstance(value, cst.Attribute):
        return is_numpy_value(model, value, fn)  # `self.X`, a data set the object holds
    if not isinstance(value, cst.Name):
        return False
    reaching = dominating_binding(model, fn, loop, value)
    inside = [reaching] if reaching is not None else \
        [a for a in fn.bindings(value.value) if loop.encloses(a.site.loop)]
    if not inside:
        return is_numpy_value(model, value, fn) and not model.is_array(value, fn)
    for a in inside:
        node = a.site.node
        if a.value is None and isinstance(node, cst.CompFor):
            if follow(node.iter):
                return True
        elif a.value is None and isinstance(node, cst.For):
            it = node.iter
            if isinstance(it, cst.Call) and (target := model.callee(it, fn).function) is not None \
                    and any(isinstance(n, cst.Yield) for n in walk(target.body)):
                return True  # `for batch in data_loader(x, y, order)`: this module's generator
            if iterates_rows(model, it, fn) and not model.is_array(it, fn):
                return True  # rows of NumPy arrays held in memory
            if loader_batches and processed and node is loop.node and not _is_counter(model, it):
                return True  # this step's batch, from whatever the loop draws it, worked on here
        elif a.value is not None and follow(a.value):
            return True
    return False


# NumPy calls that build a 1-D array when their size argument is one number (not a tuple).
_VECTOR_BUILDERS = frozenset({"numpy.linspace", "numpy.arange", "numpy.zeros", "numpy.ones", "numpy.empty",
                              "numpy.full"})


def _element_of_vector(model: SemanticModel, fn: Function, value: cst.Subscript) -> bool:
    """`noise[t]`, one number of a 1-D NumPy array the function builds (`noise =
    np.random.uniform(-0.1, 0.1, steps)`, `np.linspace(0, 1, n)`): a scalar per step, a few bytes
    whatever the array's length. The data set a step slices is not that; moving the vector to the
    device would trade the upload for an indexing dispatch."""
    if len(value.slice) != 1 or not isinstance(value.slice[0].slice, cst.Index) \
            or not isinstance(value.value, cst.Name):
        return False
    bindings = fn.bindings(value.value.value)
    return bool(bindings) and all(isinstance(a.value, cst.Call) and a.targets == (value.value.value,)
                                  and _builds_vector(model, a.value) for a in bindings)


def _builds_vector(model: SemanticModel, call: cst.Call) -> bool:
    """`np.linspace(...)`, `np.zeros(n)`, `np.random.rand(n)`, `np.random.uniform(lo, hi, n)` (the
    size last of three, or after the star-unpacked bounds): a 1-D array."""
    q = model.resolve(call.func) or ""
    positional = [a for a in call.args if a.keyword is None]
    sizes = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "size"]
    if q in ("numpy.random.rand", "numpy.random.randn"):
        sizes = [a.value for a in positional] if len(positional) == 1 and not positional[0].star else []
    elif q.startswith("numpy.random.") and not sizes and positional and not positional[-1].star \
            and (len(positional) >= 3 or any(a.star for a in positional)):
        sizes = [positional[-1].value]
    elif q in ("numpy.linspace", "numpy.arange"):
        return True
    elif q in _VECTOR_BUILDERS and positional and not positional[0].star:
        sizes = [positional[0].value]
    return len(sizes) == 1 and not isinstance(sizes[0], (cst.Tuple, cst.List))


# Calls that only convert or view the data they are given: follow them to where it comes from.
_CONVERSIONS = frozenset({"jax.numpy.array", "jax.numpy.asarray", "numpy.asarray", "numpy.array"})
_VIEWS = frozenset({"items", "values", "astype", "reshape", "numpy"})


def _is_counter(model: SemanticModel, it: cst.BaseExpression) -> bool:
    """`range(...)`: the loop counts; its items are no batch."""
    return isinstance(it, cst.Call) and model.resolve(it.func) == "builtins.range"


def _assigned_in(fn: Function, loop: Loop) -> set[str]:
    """The names the loop binds: its targets and every assignment in its body."""
    return set(loop.targets) | {t for a in fn.assignments if loop.encloses(a.site.loop) for t in a.targets}


def _drawn_names(fn: Function, loop: Loop) -> set[str]:
    """The loop's item and the names computed from it in the loop body."""
    drawn = set(loop.targets)
    for a in fn.assignments:
        if loop.encloses(a.site.loop) and a.value is not None and set(names_in(a.value)) & drawn:
            drawn.update(a.targets)
    return drawn


def is_literal(node: cst.BaseExpression) -> bool:
    """A literal written in the source (`3`, `-1.5`, `"a"`, `[1, 2]`, `(True, None)`): a few
    Python scalars, not a data set."""
    return all(isinstance(n, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.List,
                              cst.Tuple, cst.Element, cst.UnaryOperation, cst.Minus, cst.Name))
               and (not isinstance(n, cst.Name) or n.value in ("True", "False", "None"))
               for n in walk(node))


def is_prefetch(model: SemanticModel, fn: Function, site: Site) -> bool:
    """The upload at `site` is a prefetch: `next_batch = jax.device_put(...)`, with `next_batch`
    read earlier in the loop body, so it feeds the next step while this one runs."""
    loop = site.loop
    if loop is None:
        return False
    for a in fn.assignments:
        if a.value is site.node and a.targets:
            name = a.targets[0]
            for other in fn.assignments:
                if other is a or not loop.encloses(other.site.loop) or other.value is None:
                    continue
                if name in set(names_in(other.value)) and model.line_of(other.site.node) < model.line_of(a.site.node):
                    return True
    return False


def numpy_origin(model: SemanticModel, fn: Function, site: Site,
                 value: cst.BaseExpression) -> cst.BaseExpression | None:
    """The call that built the host NumPy value `value` (a name) in this loop, when every binding
    of it there is NumPy work (`np.*`, or a same-module NumPy helper such as `preprocess_batch`);
    None otherwise (a JAX array, a slice from a batch getter: held data, not built)."""
    if not isinstance(value, cst.Name) or model.is_array(value, fn):
        return None
    loop = site.loop
    bindings: list[Assignment] = [a for a in fn.bindings(value.value)
                                  if a.value is not None and (loop is None or loop.encloses(a.site.loop))]
    if not bindings:
        return None
    for a in bindings:
        if not isinstance(a.value, cst.Call) or batch_getter(model, a.value, fn):
            return None  # (slices of a data set the file holds are held data, not built)
        if is_numpy_value(model, a.value, fn):
            continue
        target = model.callee(a.value, fn).function
        if target is not None and _numpy_function(model, target):
            continue
        return None
    return bindings[0].value


def _numpy_function(model: SemanticModel, fn: Function) -> bool:
    """A same-module helper that computes with NumPy and no JAX (`preprocess_batch`): it calls
    `np.*`, or a `.mean()`/`.std()`/`.astype()` method, which on a value it does no JAX work on
    can only be NumPy's (the method name is the evidence: the value's type is not written)."""
    if fn.does_jax_work:
        return False
    return any((q := model.resolve(s.node.func)) is not None and q.startswith("numpy.") for s in fn.calls) \
        or any(isinstance(s.node.func, cst.Attribute) and s.node.func.attr.value in ("mean", "std", "astype")
               for s in fn.calls)


def is_numpy_metadata(model: SemanticModel, value: cst.BaseExpression) -> bool:
    """`np.shape(x)`, `np.ndim(x)`: metadata, which JAX takes as static arguments."""
    return isinstance(value, cst.Call) and model.resolve(value.func) in apis.NUMPY_METADATA


def is_host_data(model: SemanticModel, fn: Function, site: Site, value: cst.BaseExpression) -> bool:
    """The value converted is NumPy data: built by `np.*` (here, or in a same-module NumPy
    helper this loop calls), held in a NumPy name, or a slice of one."""
    if is_numpy_metadata(model, value):
        return False
    return _host_expr(model, fn, site, value) or numpy_origin(model, fn, site, value) is not None \
        or _numpy_rows(model, fn, value) or _drawn_batch(model, fn, site, value)


def _drawn_batch(model: SemanticModel, fn: Function, site: Site, value: cst.BaseExpression) -> bool:
    """`for x, y in loader: x = jnp.array(x)` (or `batch["image"]`): a batch the step loop draws
    from a host iterable and converts every step (the binding that reaches the use is the loop's)."""
    while isinstance(value, (cst.Subscript, cst.Attribute)):
        value = value.value
    if not isinstance(value, cst.Name) or site.loop is None:
        return False
    seq = model.name_seq.get(id(value))
    before = [a for a in fn.bindings(value.value) if seq is not None and a.seq < seq]
    if not before:
        return False
    last = before[-1]
    return last.value is None and isinstance(last.site.node, cst.For) \
        and last.site.loop is not None and last.site.loop.encloses(site.loop)


def _numpy_rows(model: SemanticModel, fn: Function, value: cst.BaseExpression) -> bool:
    """`v` bound by `for k, v in batch_np.items()` (a comprehension or loop) over NumPy data."""
    if not isinstance(value, cst.Name):
        return False
    for a in fn.bindings(value.value):
        node = a.site.node
        if a.value is None and isinstance(node, (cst.CompFor, cst.For)):
            it = node.iter
            if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) \
                    and it.func.attr.value in ("items", "values"):
                it = it.func.value
            if isinstance(it, cst.Name) and (is_numpy_value(model, it, fn)
                                             or numpy_origin(model, fn, a.site, it) is not None
                                             or _from_host_helper(model, fn, it)):
                return True
    return False


def _from_host_helper(model: SemanticModel, fn: Function, name: cst.Name) -> bool:
    """`batch_np = preprocess(batch)`: every binding calls an untraced same-module helper that
    computes with NumPy and returns no JAX array."""
    bindings = [a for a in fn.bindings(name.value) if a.value is not None]
    if not bindings:
        return False
    for a in bindings:
        target = model.callee(a.value, fn).function if isinstance(a.value, cst.Call) else None
        if target is None or target.jitted or target.traced \
                or any(model.is_array(r, target) for r in target.returns) \
                or not any((model.resolve(s.node.func) or "").startswith("numpy.") for s in target.calls):
            return False
    return True


def _host_expr(model: SemanticModel, fn: Function, site: Site, value: cst.BaseExpression) -> bool:
    """`data[i] * 2`: arithmetic on NumPy data stays NumPy."""
    if isinstance(value, cst.BinaryOperation):
        return any(_host_expr(model, fn, site, side) and not model.is_array(side, fn)
                   for side in (value.left, value.right)) and not model.is_array(value, fn)
    return is_numpy_value(model, value, fn)


def runs_a_step(model: SemanticModel, call: cst.Call, fn: Function) -> bool:
    """A compiled function, a transform's product, a model or optimizer method, or a
    same-module function doing JAX work: a call that runs a step."""
    callee = model.callee(call, fn)
    if callee.jitted or callee.transform is not None:
        return True
    if callee.function is not None and callee.function.does_jax_work and callee.function is not fn:
        return not _returns_numpy(callee.function)
    return callee.qualname is None and model.receiver_kind(call, fn) == "object"


def loop_runs_steps(model: SemanticModel, site: Site) -> bool:
    """The step loop runs a step: a compiled function, a model or optimizer call, or a
    same-module function doing JAX work. A loop that only converts items or applies single
    `jnp`/`lax` operations to them (set-up code, library internals walking their arguments)
    copies each item once, not the same data every step."""
    loop = model.step_loop_of(site)
    if loop is None or site.loop is None:
        return True  # a per-step function: its callers' loop computes
    fn = loop.function
    for other in fn.calls:
        if not loop.encloses(other.loop):
            continue
        if runs_a_step(model, other.node, fn):
            return True
    return False


def only_measured(fn: Function, site: Site, statements: Statements) -> bool:
    """The per-step call (or the call its converted value feeds) runs only to be timed: its
    result is thrown away or just waited for (`while state: f(x).block_until_ready()`)."""
    call = site.node
    outer = call
    for other in fn.calls:  # the outermost call that takes this one as an argument or receiver
        if other.loop is site.loop and any(n is call for n in walk(other.node)) and other.node is not call:
            if outer is call or any(n is outer for n in walk(other.node)):
                outer = other.node
    return statements.only_waited_for(outer) or statements.only_waited_for(call)


def _returns_numpy(fn: Function) -> bool:
    """`def forces(...) -> np.ndarray`: a helper whose return annotation says it computes on the
    host. The annotation is read as written (`np.`, `numpy.`, `onp.`: the usual spellings of a
    NumPy import), since annotations are not resolved through the file's imports."""
    node = fn.node
    if not isinstance(node, cst.FunctionDef) or node.returns is None:
        return False
    text = cst.Module([]).code_for_node(node.returns.annotation)
    return text.startswith(("np.", "numpy.", "onp."))
