"""Which values are certainly tracers: the fact JAX401-404 report on.

A value is a tracer only when the file shows it (precision first):

- a parameter of a function compiled by `jax.jit`/`pmap` (not static: `static_argnums`,
  `static_argnames`, `static_broadcasted_argnums`, arguments bound by `functools.partial` before
  the transform), or handed to a transform that traces abstractly (`vmap` except `in_axes=None`
  positions, `lax.scan`/`fori_loop`/`while_loop`/`cond`/`switch`/`map`, `eval_shape`, ...);
- `equinox.filter_jit` traces arrays only (Python numbers stay static): its parameters count
  only when annotated as arrays;
- a parameter of a same-module function called, from traced code, with a tracer in that
  position (also through `jax.grad(f)(x)`, `jax.vmap(f)(x)`);
- what `jnp`/`lax`/`jax.random`/`jax.nn` compute in traced code (staged even from constants;
  not `jnp.shape`/`jnp.size`, not a collective of a constant such as `lax.psum(1, axis)`),
  arithmetic and comparisons on a tracer, its array methods and indexing, and names whose
  reaching binding is one of these.

Not tracers: `x.shape`/`len(x)` and anything computed from them, module constants, attributes
of objects and pytrees (fields may be static configuration), the keys of `d.items()`,
`range`/`enumerate` counters, and the parameters of `grad`, `custom_jvp`, eager `shard_map`
bodies and flax/equinox module methods (these may run on concrete values).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import int_value
from .core import SemanticModel
from .facts import fact
from .index import Assignment, Function
from .jax_work import unpacks

# Transforms that trace their function even when called eagerly (grad, custom_jvp and eager
# shard_map run on concrete values outside jit: their bodies are traced only under an outer trace).
ABSTRACT_TRANSFORMS = frozenset({
    "jax.vmap", "jax.lax.scan", "jax.lax.fori_loop", "jax.lax.while_loop", "jax.lax.cond",
    "jax.lax.switch", "jax.lax.map", "jax.lax.associative_scan", "jax.lax.reduce",
    "jax.eval_shape", "jax.make_jaxpr", "jax.checkpoint", "jax.remat", "equinox.filter_vmap",
    "jax.lax.custom_root", "flax.nnx.vmap", "flax.nnx.scan", "flax.linen.scan", "flax.linen.vmap",
})
# flax's lifted transforms pass modules and variables first: their parameters are not all tracers.
LIFTED_TRANSFORMS = frozenset({"flax.nnx.vmap", "flax.nnx.scan", "flax.linen.scan", "flax.linen.vmap"})
VMAPS = frozenset({"jax.vmap", "equinox.filter_vmap"})
# Jit wrappers that make every non-static argument a tracer.
ALL_ARGUMENT_JITS = frozenset({"jax.jit", "jax.pmap", "jax.experimental.pjit.pjit", "jax.pjit",
                               "flax.nnx.jit", "flax.nnx.pmap"})
# jax.* namespaces whose calls return arrays (as opposed to pytree utilities or transforms).
ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.random.", "jax.nn.", "jax.scipy.")
# jnp/lax calls whose result is static metadata even for a traced argument.
STATIC_RESULTS = frozenset({
    "shape", "ndim", "size", "dtype", "result_type", "promote_types", "finfo", "iinfo", "can_cast",
    "issubdtype", "isdtype", "isscalar", "iscomplexobj", "isrealobj", "broadcast_shapes",
    "axis_size", "canonicalize_dtype",
})
# Collectives: `lax.psum(1, "i")` of a constant is the (static) axis size.
COLLECTIVES = frozenset({"psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
                         "all_to_all", "pshuffle"})
# Methods of an array that return arrays.
ARRAY_METHODS = frozenset({
    "reshape", "astype", "transpose", "ravel", "flatten", "squeeze", "sum", "mean", "max", "min",
    "clip", "set", "add", "multiply", "divide", "power", "apply", "get", "swapaxes",
    "cumsum", "cumprod", "prod", "dot", "round", "conj", "any", "all", "argmax", "argmin", "std",
    "var", "sort", "argsort", "take", "repeat", "nonzero", "__getitem__", "view", "T",
})
GRAD_LIKE = apis.GRADIENT_TRANSFORMS | frozenset({
    "jax.jacfwd", "jax.jacrev", "jax.hessian", "jax.checkpoint", "jax.remat", "jax.vmap", "jax.jit",
    "equinox.filter_vmap", "equinox.filter_jit"})
MAX_DEPTH = 10


class Tracers:
    """Certain-tracer facts for one module; built once per model on first use."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.params: dict[int, set[str]] = {}  # id(fn) -> parameters that are tracers
        self._cache: dict[tuple[int, int], bool] = {}
        self._tested: dict[int, set[str]] = {}
        self.traced_ids = really_traced(model)
        self.root_params: dict[int, set[str]] = {}  # traced by the transform itself, not a caller
        self._roots()
        self._propagate()

    # ------------------------------------------------------------------ parameters
    def _add(self, fn: Function, names: set[str], root: bool = False) -> bool:
        names = {n for n in names if n not in fn.static_params and n not in ("self", "cls")}
        if root:  # a defaulted parameter is traced only if a caller passes it: unknown here
            names -= _defaulted(fn)
            self.root_params.setdefault(id(fn), set()).update(names)
        have = self.params.setdefault(id(fn), set())
        if names <= have:
            return False
        have |= names
        self._cache = {}
        return True

    def _roots(self) -> None:
        """The parameters the jit wrappers and transforms of the file trace themselves (the
        model's `trace_roots`). Quieter than the jit marks: a computed `static_argnums` leaves
        which arguments are static unknown, a factory's product is not followed, and flax's
        lifted transforms pass modules and variables first."""
        if jax_internal(self.model):
            return
        for root in self.model.trace_roots:
            fn, q = root.function, root.wrapper
            if fn.is_module or root.via == "factory" or _unknown_static(root.options):
                continue
            bound = _partial_bound(fn, root.ref) if root.ref is not None else set()
            if q in ALL_ARGUMENT_JITS:
                self._add(fn, set(fn.params) - bound, root=True)
            elif q in apis.JIT_WRAPPERS:  # equinox.filter_jit: non-array leaves are static
                self._add(fn, _array_annotated(fn) - bound, root=True)
            elif q in ABSTRACT_TRANSFORMS and q not in LIFTED_TRANSFORMS:
                names = set(fn.params) - bound
                if q in VMAPS:  # `vmap(f, in_axes=(0, None))`, `@partial(jax.vmap, in_axes=...)`
                    names -= _unmapped(fn, root.ref, list(root.options), 1 if root.via == "call" else 0)
                self._add(fn, names, root=True)

    # ------------------------------------------------------------------ propagation
    def _propagate(self) -> None:
        """A callee's parameter is a tracer when a traced caller passes it one."""
        functions = [fn for fn in self.model.functions if id(fn) in self.traced_ids]
        for _ in range(6):
            changed = False
            for fn in functions:
                for site in fn.calls:
                    if self._propagate_call(site.node, fn):
                        changed = True
            if not changed:
                break

    def _propagate_call(self, call: cst.Call, fn: Function) -> bool:
        model = self.model
        if isinstance(call.func, cst.Name) and any(
                not isinstance(a.site.node, cst.FunctionDef) for a in fn.bindings(call.func.value)):
            return False  # a local `shift = partial(...)` shadows a module-level `def shift`
        callee = model.callee(call, fn)
        target = callee.function
        if target is None or target.is_module:
            return False
        if isinstance(call.func, cst.Call):
            if callee.transform not in GRAD_LIKE and callee.transform != "functools.partial":
                return False
            offset = _partial_count(call.func) if callee.transform == "functools.partial" else 0
            params = target.params[offset:]
        else:
            params = target.params[1:] if target.cls is not None and target.params[:1] == ["self"] \
                and isinstance(call.func, cst.Attribute) else target.params
        names: set[str] = set()
        position = 0
        for arg in call.args:
            if arg.star:
                break
            name: str | None
            if arg.keyword is not None:
                name = arg.keyword.value
            else:
                name = params[position] if position < len(params) else None
                position += 1
            if name is not None and name in target.params and self.expr(arg.value, fn):
                names.add(name)
        return bool(names) and self._add(target, names)

    # ------------------------------------------------------------------ values
    def is_param(self, fn: Function, name: str) -> bool:
        return name in self.params.get(id(fn), ())

    def expr(self, expr: cst.BaseExpression, fn: Function, depth: int = 0) -> bool:
        if depth > MAX_DEPTH:
            return False
        key = (id(expr), id(fn))
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        self._cache[key] = False  # a cycle is unknown: not a tracer
        result = self._expr(expr, fn, depth)
        self._cache[key] = result
        return result

    def _expr(self, expr: cst.BaseExpression, fn: Function, depth: int) -> bool:
        # dispatch on the exact type, as the model does; cast() records what the test established
        t = type(expr)
        if t is cst.Name:
            return self._name(cast(cst.Name, expr), fn, depth)
        if t is cst.Attribute:
            attribute = cast(cst.Attribute, expr)
            return attribute.attr.value in apis.ARRAY_ATTRIBUTES and self.expr(attribute.value, fn, depth + 1)
        if t is cst.Subscript:
            base = cast(cst.Subscript, expr).value
            if isinstance(base, cst.Attribute) and base.attr.value == "at":
                return False  # `x.at[i]` is an update helper, not a value
            return self.expr(base, fn, depth + 1)
        if t is cst.BinaryOperation:
            binary = cast(cst.BinaryOperation, expr)
            return self.expr(binary.left, fn, depth + 1) or self.expr(binary.right, fn, depth + 1)
        if t is cst.UnaryOperation:
            unary = cast(cst.UnaryOperation, expr)
            return not isinstance(unary.operator, cst.Not) and self.expr(unary.expression, fn, depth + 1)
        if t is cst.Comparison:
            comparison = cast(cst.Comparison, expr)
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in comparison.comparisons):
                return False
            # `x != None`: a JAX array defers a comparison with None to Python, which compares
            # identities and gives a plain bool, under jit too
            if any(isinstance(n, cst.Name) and n.value == "None"
                   for n in (comparison.left, *(c.comparator for c in comparison.comparisons))):
                return False
            return self.expr(comparison.left, fn, depth + 1) or any(
                self.expr(c.comparator, fn, depth + 1) for c in comparison.comparisons)
        if t is cst.IfExp:
            ifexp = cast(cst.IfExp, expr)
            return self.expr(ifexp.body, fn, depth + 1) and self.expr(ifexp.orelse, fn, depth + 1)
        if t is cst.Call:
            return self._call(cast(cst.Call, expr), fn, depth)
        if t in (cst.Tuple, cst.List):  # holds a tracer (storing it leaks it; its truth is static)
            return any(not isinstance(e, cst.StarredElement) and self.expr(e.value, fn, depth + 1)
                       for e in cast("cst.Tuple | cst.List", expr).elements)
        if t is cst.Dict:
            return any(isinstance(e, cst.DictElement) and self.expr(e.value, fn, depth + 1)
                       for e in cast(cst.Dict, expr).elements)
        return False

    def _call(self, call: cst.Call, fn: Function, depth: int) -> bool:
        model = self.model
        args = [a.value for a in call.args]
        q = model.resolve(call.func)
        if q is not None:
            if q.startswith(ARRAY_NAMESPACES):
                last = q.rsplit(".", 1)[-1]
                if last in STATIC_RESULTS or last[:1].isupper():
                    return False  # metadata, or a class (`lax.ConvDimensionNumbers(...)`, `lax.Precision`)
                if last == "axis_index":
                    return True
                if last in COLLECTIVES:
                    return bool(args) and self.expr(args[0], fn, depth + 1)
                # staged under the trace, even from constants (`jnp.array(x.shape)`); in eager
                # code (a closure's captured value) it is a concrete array
                return id(fn) in self.traced_ids
            if q in ("builtins.abs", "builtins.max", "builtins.min", "builtins.sum", "builtins.pow"):
                return any(self.expr(a, fn, depth + 1) for a in args)
        callee = model.callee(call, fn)
        if isinstance(call.func, cst.Call):
            return callee.transform in GRAD_LIKE and any(self.expr(a, fn, depth + 1) for a in args)
        if callee.function is not None and not callee.function.is_module:
            target = callee.function
            return any(self.expr(r, target, depth + 1) for r in target.returns)
        if q is None and isinstance(call.func, cst.Attribute) and call.func.attr.value in ARRAY_METHODS:
            base = call.func.value
            return self.expr(base, fn, depth + 1) or _is_at(base) and \
                self.expr(cast(cst.Attribute, cast(cst.Subscript, base).value).value, fn, depth + 1)
        return False

    def _name(self, use: cst.Name, fn: Function, depth: int) -> bool:
        name = use.value
        if name in self.type_tested(fn):
            return False  # `if isinstance(n, int): ...`: the code handles Python values too
        bindings = fn.bindings(name)
        if not bindings:
            if name in fn.params:
                return self.is_param(fn, name)
            if name in fn.global_names:
                return False
            owner = fn.parent.binding_scope(name) if fn.parent is not None else None
            if owner is not None and not owner.is_module:
                return self._scope_value(name, owner, depth)
            return False  # module constants are static (docs/rules.md)
        seq = self.model.name_seq.get(id(use))
        before = [a for a in bindings if seq is not None and a.seq < seq]
        if before:
            return self._binding(name, before[-1], fn, depth)
        if name in fn.params:
            return self.is_param(fn, name)
        return all(self._binding(name, a, fn, depth) for a in bindings)

    def type_tested(self, fn: Function) -> set[str]:
        """Names `fn` passes to `isinstance`/`hasattr`/`callable`/`assertIsInstance`: their type is
        in question (maybe a Python value or a mutable Variable), so not certainly a tracer."""
        found = self._tested.get(id(fn))
        if found is None:
            found = set()
            for site in fn.calls:
                call = site.node
                if call.args and isinstance(call.args[0].value, cst.Name) and (self.model.resolve(call.func) in (
                        "builtins.isinstance", "builtins.hasattr", "builtins.callable") or (
                        isinstance(call.func, cst.Attribute) and call.func.attr.value == "assertIsInstance")):
                    found.add(call.args[0].value.value)
            self._tested[id(fn)] = found
        return found

    def _scope_value(self, name: str, scope: Function, depth: int) -> bool:
        """A closure variable: a tracer when every binding in its scope is one."""
        bindings = scope.bindings(name)
        if not bindings:
            return self.is_param(scope, name)
        return all(self._binding(name, a, scope, depth) for a in bindings)

    def _binding(self, name: str, a: Assignment, fn: Function, depth: int) -> bool:
        if a.attribute_target is not None:
            return False
        node = a.site.node
        if a.value is None:
            if isinstance(node, (cst.For, cst.CompFor)):
                return self._loop_target(name, node, a, fn, depth)
            return False
        if isinstance(node, cst.WithItem):
            return False
        value = a.value
        if len(a.targets) > 1:
            position = a.targets.index(name)
            if unpacks(value, len(a.targets)):  # `a, b = x, y`
                return self.expr(cast("cst.Tuple | cst.List", value).elements[position].value, fn, depth + 1)
            if isinstance(value, cst.Call):  # `shape, pad = parse(...)` of a helper returning `x, y`
                target = self.model.callee(value, fn).function
                if target is not None and not target.is_module and target.returns \
                        and all(unpacks(r, len(a.targets)) for r in target.returns):
                    return any(self.expr(cast("cst.Tuple | cst.List", r).elements[position].value, target, depth + 1)
                               for r in target.returns)
        return self.expr(value, fn, depth + 1)

    def _loop_target(self, name: str, node: cst.For | cst.CompFor, a: Assignment, fn: Function,
                     depth: int) -> bool:
        it = node.iter
        position = a.targets.index(name)
        if isinstance(it, cst.Call):
            q = self.model.resolve(it.func)
            if q == "builtins.range":
                return False
            iterated = [x.value for x in it.args if x.keyword is None]
            if q == "builtins.enumerate" and iterated:
                return position > 0 and self.expr(iterated[0], fn, depth + 1)
            if q == "builtins.zip" and len(iterated) == len(a.targets):
                return self.expr(iterated[position], fn, depth + 1)
            if isinstance(it.func, cst.Attribute) and it.func.attr.value in ("items", "keys", "values"):
                method = it.func.attr.value
                if method == "keys" or (method == "items" and position == 0):
                    return False
                return self.expr(it.func.value, fn, depth + 1)
        return self.expr(it, fn, depth + 1)


def jax_internal(model: SemanticModel) -> bool:
    """A module of JAX itself: its implementation handles concrete and traced values by design
    (its own `jit` is `jax._src.api.jit`; impl rules run on concrete arrays)."""
    return model.package == "jax" or model.package.startswith("jax.")


@fact
def tracers(model: SemanticModel) -> Tracers:
    """Which values of the file's traced code are certainly tracers (memoised per expression)."""
    return Tracers(model)


def transformed_function(model: SemanticModel, expr: cst.BaseExpression, scope: Function) -> Function | None:
    """`jax.grad(f)` / `jax.vmap(f)` given to a jit: f runs under the jit's trace."""
    if isinstance(expr, cst.Call) and model.resolve(expr.func) in apis.TRACING_TRANSFORMS and expr.args:
        return model.function_ref(expr.args[0].value, scope)
    return None


def _defaulted(fn: Function) -> set[str]:
    node = fn.node
    if isinstance(node, cst.Module):
        return set()
    params = node.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
            if p.default is not None}


def annotation_text(fn: Function, name: str) -> str | None:
    """The source text of a parameter's annotation (`Float[Array, "n"]`, `Tuple[Array, Array]`)."""
    if fn.param_annotations.get(name) is not None:
        return fn.param_annotations[name]
    node = fn.node
    if isinstance(node, cst.Module) or name not in fn.param_annotations:
        return None
    params = node.params
    for p in (*params.posonly_params, *params.params, *params.kwonly_params):
        if p.name.value == name and p.annotation is not None:
            return cst.Module([]).code_for_node(p.annotation.annotation)
    return None


def _array_annotated(fn: Function) -> set[str]:
    """Parameters annotated as arrays (`jax.Array`, jaxtyping `Float[Array, "n"]`)."""
    out = set()
    for name in fn.params:
        annotation = annotation_text(fn, name)
        if annotation and "Array" in annotation and not annotation.startswith(("np.", "numpy.", "onp.")) \
                and "ArrayLike" not in annotation and not annotation.startswith(_CONTAINERS):
            out.add(name)
    return out


_CONTAINERS = ("Tuple", "tuple", "List", "list", "Dict", "dict", "Sequence", "Mapping", "Optional",
               "Union", "typing.", "Callable")


def container_annotation(fn: Function, name: str) -> bool:
    """`limit: Tuple[Array, Array]`, `mask: Optional[Array]`: its truth is length or None-ness."""
    annotation = annotation_text(fn, name)
    return annotation is not None and annotation.startswith(_CONTAINERS)


def _unknown_static(options: Sequence[cst.Arg]) -> bool:
    """`jit(f, static_argnums=spec)` with a computed spec (or `**options`): which arguments
    are static is unknown here."""
    for arg in options:
        if arg.star == "**":
            return True
        if arg.keyword is not None and arg.keyword.value.startswith("static_"):
            value = arg.value
            items = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
            parts = [e.value for e in items] if items is not None else [value]
            if not all(isinstance(p, (cst.Integer, cst.SimpleString, cst.UnaryOperation)) for p in parts):
                return True
    return False


def _partial_count(call: cst.Call) -> int:
    return sum(1 for a in call.args[1:] if a.keyword is None and not a.star)


def _partial_bound(target: Function, ref: cst.BaseExpression) -> set[str]:
    """`partial(f, cfg, n=3)`: the bound parameters are fixed Python values, not traced."""
    if not isinstance(ref, cst.Call):
        return set()
    bound = set(target.params[:_partial_count(ref)])
    return bound | {a.keyword.value for a in ref.args[1:] if a.keyword is not None}


def _unmapped(target: Function, ref: cst.BaseExpression | None, args: list[cst.Arg], position: int) -> set[str]:
    """Parameters given `in_axes=None` by `vmap`: broadcast as they are, not traced by vmap.
    `ref` names the function (`partial(f, cfg)` binds the first ones; None for a decorator),
    `args` are vmap's arguments; `position` is where a positional `in_axes` would be."""
    in_axes = next((a.value for a in args if a.keyword is not None and a.keyword.value == "in_axes"), None)
    if in_axes is None:
        positional = [a.value for a in args if a.keyword is None]
        in_axes = positional[position] if len(positional) > position else None
    if in_axes is None:
        return set()
    params = target.params[_partial_count(ref):] if isinstance(ref, cst.Call) else target.params
    if isinstance(in_axes, cst.Name) and in_axes.value == "None":
        return set(params)
    if isinstance(in_axes, (cst.Tuple, cst.List)):
        return {p for p, e in zip(params, in_axes.elements, strict=False)
                if isinstance(e.value, cst.Name) and e.value.value == "None"}
    if int_value(in_axes) is None and not isinstance(in_axes, cst.Dict):
        return set(params)  # a computed spec: unknown, so no parameter is known to be mapped
    return set()


def _is_at(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) \
        and expr.value.attr.value == "at"


# Maps over pytree structure: tracing comes from the caller, if any.
STRUCTURE_MAPS = apis.TREE_MAPS


@dataclass(frozen=True)
class TraceClosure:
    traced: set[int]  # ids of the functions JAX runs on tracers
    # per function id: the `jax.tree.map(f, tree)` calls in traced code that map it, each with
    # the function making the call (whether its leaves are traced depends on the tree)
    tree_maps: dict[int, list[tuple[cst.Call, Function]]]


def really_traced(model: SemanticModel) -> set[int]:
    """ids of the functions JAX runs on tracers (see the module docstring)."""
    return trace_closure(model).traced


@fact
def trace_closure(model: SemanticModel) -> TraceClosure:
    """The functions JAX runs on tracers (jitted, given to a tracing transform, or reached from
    those; not host callbacks; none in JAX itself) and the `jax.tree.map` calls in traced code
    that map each function."""
    callbacks = model.host_callback_functions
    traced: set[int] = set()
    if jax_internal(model):
        return TraceClosure(traced, {})
    work: list[Function] = []
    for fn in model.functions:
        if id(fn) in callbacks or fn.is_module:
            continue
        if fn.jitted or any(root in ABSTRACT_TRANSFORMS for root in fn.transform_roots):
            traced.add(id(fn))
            work.append(fn)
    for fn in model.functions:
        for site in fn.calls:  # jax.jit(jax.grad(loss_fn))
            if model.resolve(site.node.func) in apis.JIT_WRAPPERS and site.node.args:
                inner = transformed_function(model, site.node.args[0].value, fn)
                if inner is not None and id(inner) not in traced and id(inner) not in callbacks:
                    traced.add(id(inner))
                    work.append(inner)
    children: dict[int, list[Function]] = {}
    for fn in model.functions:
        if fn.parent is not None:
            children.setdefault(id(fn.parent), []).append(fn)
    leaves: dict[int, list[tuple[cst.Call, Function]]] = {}
    while work:
        fn = work.pop()
        reached: list[Function] = []
        for site in fn.calls:
            target = model.callee(site.node, fn).function
            if target is not None:
                reached.append(target)
            q = model.resolve(site.node.func)
            if q in apis.TRACING_TRANSFORMS:
                # `jax.grad(loss_fn)` inside traced code: loss_fn is traced by the outer trace
                for arg in site.node.args:
                    ref = model.function_ref(arg.value, fn)
                    if ref is not None:
                        reached.append(ref)
            mapped = _tree_mapped_function(model, site.node, fn)
            if mapped is not None:
                # under a trace, `jax.tree.map(f, tree)` calls f on the tree's leaves
                leaves.setdefault(id(mapped), []).append((site.node, fn))
                reached.append(mapped)
        for inner in children.get(id(fn), []):
            if inner.name == "<lambda>" or inner.transform_roots or inner.jitted:
                reached.append(inner)
        for target in reached:
            if id(target) not in traced and id(target) not in callbacks and not target.is_module:
                traced.add(id(target))
                work.append(target)
    return TraceClosure(traced, leaves)


def _tree_mapped_function(model: SemanticModel, call: cst.Call, scope: Function) -> Function | None:
    if model.resolve(call.func) not in STRUCTURE_MAPS or not call.args:
        return None
    return model.function_ref(call.args[0].value, scope)
