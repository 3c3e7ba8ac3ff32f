"""Which functions really run on tracers, which values there are traced, and which are
certainly single JAX arrays.

Rules that report errors only tracers cause (JAX403, JAX404) need: functions that are jitted or
given to a tracing transform, what they call and define, and the functions that `jax.tree.map`
maps over a pytree inside traced code (their parameters receive traced leaves, which the model
leaves unknown), minus host callbacks (`jax.pure_callback(f, ...)`, `jax.debug.callback(f, ...)`),
whose bodies get concrete NumPy arrays. A `jax.tree.map` lambda in plain Python code runs on
concrete arrays (`jax.tree.map(np.asarray, params)` is how checkpoints are written) and is not
traced.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import children
from .core import SemanticModel
from .facts import fact
from .index import Function
from .tracers import (
    ARRAY_METHODS,
    ARRAY_NAMESPACES,
    annotation_text,
    really_traced,
    trace_closure,
    tracers,
)

# Attributes a traced parameter has only if it is an array (a dict or list has none of them).
ARRAY_ONLY_ATTRIBUTES = frozenset({"at", "shape", "ndim", "dtype", "astype", "reshape", "T"})


def traced_leaf_params(model: SemanticModel, fn: Function) -> set[str]:
    """Parameters of `fn` that receive traced pytree leaves: `fn` is mapped by `jax.tree.map`
    inside traced code over a tree that is traced (the model leaves such arguments unknown). A
    tree the trace closes over (a config, a tree of shapes) gives Python leaves."""
    return _traced_leaves(model).get(id(fn), set())


@fact
def _traced_leaves(model: SemanticModel) -> dict[int, set[str]]:
    """Per function id, the parameters its `jax.tree.map` calls in traced code give traced
    leaves (see `traced_leaf_params`)."""
    facts = tracers(model)
    by_id = {id(fn): fn for fn in model.functions}
    found: dict[int, set[str]] = {}
    for fn_id, sites in trace_closure(model).tree_maps.items():
        fn = by_id[fn_id]
        for call, scope in sites:
            params = [p for p in fn.params if p not in fn.static_params]
            if model.resolve(call.func) in apis.TREE_MAPS_WITH_PATH:
                params = params[1:]  # the first is the leaf's path
            trees = [a.value for a in call.args[1:] if a.keyword is None and not a.star]
            found.setdefault(fn_id, set()).update(
                p for p, tree in zip(params, trees, strict=False) if facts.expr(tree, scope))
    return found


def is_traced_value(model: SemanticModel, expr: cst.BaseExpression, fn: Function) -> bool:
    """A certain tracer (see `tracers.py`), or a leaf parameter of a function tree-mapped
    over a traced pytree."""
    if tracers(model).expr(expr, fn):
        return True
    return isinstance(expr, cst.Name) and expr.value in traced_leaf_params(model, fn) \
        and not fn.bindings(expr.value)


def traced_functions(model: SemanticModel) -> Iterable[Function]:
    ids = really_traced(model)
    return (fn for fn in model.functions if id(fn) in ids)


def is_free(name: str, fn: Function) -> bool:
    """`name` is read from an enclosing function or the module, not bound in `fn`."""
    if name in fn.params or name in fn.global_names or name in fn.nonlocal_names:
        return False
    return not fn.bindings(name)




class ArrayEvidence:
    """Whether a name certainly holds a single JAX array (not a pytree, list or NumPy array).

    The model's `is_array` counts pytrees of arrays as arrays, which is right for "does this
    touch the device" but not for "does `x[i] = v` raise": a dict of arrays accepts item
    assignment. Evidence here is a binding from a jnp/lax/random call or arithmetic on one, or,
    for a traced parameter, its use as an operand of arithmetic, of `.at[...]` or of a jnp call.
    """

    def __init__(self, model: SemanticModel, traced_ids: set[int]) -> None:
        self.model = model
        self.traced_ids = traced_ids
        self._operands: dict[int, set[str]] = {}

    def name(self, name: str, fn: Function, depth: int = 0, use: cst.Name | None = None) -> bool:
        """`name` certainly holds one JAX array in `fn` (at `use`, when given: a parameter's own
        value still reaches a use that comes before every rebinding)."""
        if depth > 6:
            return False
        bindings = fn.bindings(name)
        seq = self.model.name_seq.get(id(use)) if use is not None else None
        param_reaches = name in fn.params and (
            not bindings or (seq is not None and all(a.seq >= seq for a in bindings)))
        if param_reaches and not self._array_param(name, fn):
            return False
        if not bindings:
            return param_reaches
        values = [a.value for a in bindings if a.value is not None and not a.augmented and len(a.targets) == 1]
        if not bindings or len(values) != len(bindings):
            return False
        return all(self.expr(value, fn, depth + 1) for value in values)

    def _array_param(self, name: str, fn: Function) -> bool:
        text = annotation_text(fn, name)
        if text is not None and ("Array" not in text or "Variable" in text or "Ref" in text):
            return False  # `nnx.Variable[Array]`, a mutable ref: `v[...] = x` is its API
        if _array_annotation(fn.param_annotations.get(name)):
            return True
        # a tracer by the facts of tracers.py (a Pallas kernel's refs are not), used as an array
        facts = tracers(self.model)
        return (id(fn) in self.traced_ids and facts.is_param(fn, name)
                and name not in facts.type_tested(fn) and name in self._array_operands(fn))

    def expr(self, expr: cst.BaseExpression, fn: Function, depth: int = 0) -> bool:
        if depth > 6:
            return False
        if isinstance(expr, cst.Name):
            return self.name(expr.value, fn, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            if any(isinstance(side, (cst.List, cst.Tuple, cst.ListComp)) for side in (expr.left, expr.right)):
                return False  # `[slice(None)] * ndim`: a Python list
            return self.expr(expr.left, fn, depth + 1) or self.expr(expr.right, fn, depth + 1)
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            return self.expr(expr.expression, fn, depth + 1)
        if isinstance(expr, cst.Call):
            q = self.model.resolve(expr.func)
            if q is not None:
                return q.startswith(ARRAY_NAMESPACES) and not _returns_structure(q)
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in ARRAY_METHODS:
                return self.expr(func.value, fn, depth + 1) or _is_at_update(func.value)
        return False

    def _array_operands(self, fn: Function) -> set[str]:
        """Names `fn` uses where only an array works: arithmetic operands, `x.at`, jnp args."""
        cached = self._operands.get(id(fn))
        if cached is not None:
            return cached
        found: set[str] = set()
        body = fn.body
        for node in _walk_own(body):
            if isinstance(node, cst.BinaryOperation) and not isinstance(node.operator, cst.Modulo):
                for side in (node.left, node.right):
                    if isinstance(side, cst.Name):
                        found.add(side.value)
            elif isinstance(node, cst.Attribute) and node.attr.value in ARRAY_ONLY_ATTRIBUTES \
                    and isinstance(node.value, cst.Name):
                found.add(node.value.value)
            elif isinstance(node, cst.Call):
                q = self.model.resolve(node.func)
                if q is not None and q.startswith(("jax.numpy.", "jax.lax.")) and node.args \
                        and isinstance(node.args[0].value, cst.Name) and not _returns_structure(q):
                    found.add(node.args[0].value.value)
        self._operands[id(fn)] = found
        return found


def _array_annotation(annotation: str | None) -> bool:
    if not annotation or annotation.startswith(("np.", "numpy.", "onp.")):
        return False
    # not chex.Array: a Union that admits NumPy arrays
    return annotation.split(".")[-1] in ("Array", "ndarray") and (
        annotation.startswith(("jax", "jnp")) or annotation == "Array")


def _returns_structure(qualname: str) -> bool:
    last = qualname.rsplit(".", 1)[-1]
    return last in ("shape", "ndim", "size", "dtype", "result_type", "split", "array_split",
                    "meshgrid", "broadcast_arrays", "unstack", "unique_all", "unique_counts",
                    "unique_inverse", "nonzero", "linalg", "scan", "while_loop",
                    "fori_loop", "cond", "switch", "map")


def _is_at_update(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) \
        and expr.value.attr.value == "at"


def _walk_own(node: cst.CSTNode):
    """Descendants of a function body, not entering nested defs, lambdas or classes."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in children(current):
            if isinstance(child, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                continue
            stack.append(child)
