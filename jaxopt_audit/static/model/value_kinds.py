"""Value kinds: whether an expression is a JAX array, a NumPy array, a host scalar or a container,
from its binding, its call and the annotations of its parameters."""


from __future__ import annotations

from typing import TYPE_CHECKING, cast

import libcst as cst

from ..knowledge import apis
from ..syntax.names import dotted

if TYPE_CHECKING:
    pass
from .facts import forget
from .index import Function
from .resolution import NameResolution

# Annotations that say a parameter holds a host value, never an array.
_HOST_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "bytes", "Shape", "DimSize", "Callable"})


_CONTAINERS = frozenset({"tuple", "Tuple", "list", "List", "Sequence"})


def host_annotation(annotation: str | None) -> bool:
    """`n: int`, `shape: tuple[int, ...]`: callers' arrays do not flow into it."""
    if annotation is None:
        return False
    base, _, element = annotation.partition("[")
    base = base.rsplit(".", 1)[-1]
    return base in _HOST_ANNOTATIONS or (base in _CONTAINERS and element.rstrip("]") in _HOST_ANNOTATIONS)


class ValueKinds(NameResolution):
    def value_kind(self, expr: cst.BaseExpression, scope: Function, depth: int = 0) -> str | None:
        """"array" for JAX arrays (or pytrees of them), "object" for models, optimizers and
        jitted callables, None when the file does not say (silence when unsure).

        Memoised per (expression, scope) until the dataflow facts grow; a recursive query that
        comes back to an expression being computed sees None (unknown)."""
        if depth > 12:
            return None
        key = (id(expr), id(scope), self._module_values_static)
        cache = self._kind_cache
        if key in cache:
            return cache[key]
        cache[key] = None
        result = self._value_kind(expr, scope, depth)
        if cache is self._kind_cache:
            cache[key] = result
        return result

    def _forget_kinds(self) -> None:
        """The dataflow grew (a new array, a function now doing JAX work): kinds asked before
        may change."""
        self._kind_cache = forget(self, ValueKinds.value_kind)

    def _value_kind(self, expr: cst.BaseExpression, scope: Function, depth: int) -> str | None:
        # dispatch on the exact type (see visit); cast() records what the test established
        t = type(expr)
        if t is cst.Name:
            name_node = cast(cst.Name, expr)
            name = name_node.value
            return "array" if self.is_array_name(name, scope, name_node) else self._object_name(name, scope, depth)
        if t is cst.Attribute:
            attribute = cast(cst.Attribute, expr)
            if attribute.attr.value in apis.STATIC_ATTRIBUTES:
                return None
            if isinstance(attribute.value, cst.Name) and attribute.value.value in ("self", "cls"):
                return None  # attributes set at construction: static configuration
            if self._module_values_static and attribute.attr.value not in apis.ARRAY_ATTRIBUTES:
                return None  # a field of a traced pytree may be static config (`state.dynamic_scale`)
            base = self.value_kind(attribute.value, scope, depth + 1)
            return "array" if base == "array" else None
        if t is cst.Subscript:
            subscripted = cast(cst.Subscript, expr).value
            if isinstance(subscripted, cst.Attribute) and subscripted.attr.value in apis.STATIC_ATTRIBUTES:
                return None
            return "array" if self.value_kind(subscripted, scope, depth + 1) == "array" else None
        if t is cst.Call:
            return self._call_kind(cast(cst.Call, expr), scope, depth)
        if t is cst.BinaryOperation:
            binary = cast(cst.BinaryOperation, expr)
            if self.value_kind(binary.left, scope, depth + 1) == "array" \
                    or self.value_kind(binary.right, scope, depth + 1) == "array":
                return "array"
            return None
        if t is cst.UnaryOperation:
            unary = cast(cst.UnaryOperation, expr)
            if type(unary.operator) is cst.Not:
                return None
            return self.value_kind(unary.expression, scope, depth + 1)
        if t is cst.Comparison:
            comparison = cast(cst.Comparison, expr)
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in comparison.comparisons):
                return None
            if self.value_kind(comparison.left, scope, depth + 1) == "array" or any(
                    self.value_kind(c.comparator, scope, depth + 1) == "array" for c in comparison.comparisons):
                return "array"
            return None
        if t is cst.IfExp:
            ifexp = cast(cst.IfExp, expr)
            if "array" in (self.value_kind(ifexp.body, scope, depth + 1),
                           self.value_kind(ifexp.orelse, scope, depth + 1)):
                return "array"
            return None
        if t in (cst.Tuple, cst.List):
            if any(not isinstance(e, cst.StarredElement) and self.value_kind(e.value, scope, depth + 1) == "array"
                   for e in cast("cst.Tuple | cst.List", expr).elements):
                return "array"
            return None
        if t is cst.Dict:
            if any(isinstance(e, cst.DictElement) and self.value_kind(e.value, scope, depth + 1) == "array"
                   for e in cast(cst.Dict, expr).elements):
                return "array"
            return None
        if t is cst.DictComp:
            return "array" if self.value_kind(cast(cst.DictComp, expr).value, scope, depth + 1) == "array" else None
        if t in (cst.ListComp, cst.GeneratorExp):
            element = cast("cst.ListComp | cst.GeneratorExp", expr).elt
            return "array" if self.value_kind(element, scope, depth + 1) == "array" else None
        return None

    def _value_kind_cached(self, expr: cst.BaseExpression, scope: Function) -> str | None:
        """value_kind before the dataflow has run returns None for names: cheap and safe."""
        return self.value_kind(expr, scope) if scope.array_names or scope.array_params else None

    def _call_kind(self, call: cst.Call, scope: Function, depth: int) -> str | None:
        callee = self.callee(call, scope)
        q = callee.qualname
        if callee.transform is not None:
            return "array"
        if callee.jitted:
            return "array"
        if callee.cls is not None:
            return "object" if callee.cls.is_jax_module else None
        if callee.function is not None:
            fn = callee.function
            if isinstance(fn.node, cst.FunctionDef) and fn.node.returns is not None \
                    and host_annotation(dotted(fn.node.returns.annotation)):
                return None  # `def is_leaf(x) -> bool`: a Python value, whatever it computes
            if fn.traced and fn.does_array_work:
                return "array"
            if any(self.value_kind(r, fn, depth + 1) == "array" for r in fn.returns):
                return "array"
            return None
        if callee.imported is not None:
            return "array" if callee.imported.eager_ops and not callee.imported.host_work else None
        receiver = self.receiver_kind(call, scope, depth) if q is None else None
        if receiver == "array":
            method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
            return None if method in apis.HOST_METHODS or method == "keys" or method in apis.STRING_METHODS \
                or method in apis.FOREIGN_TENSOR_METHODS else "array"
        if receiver == "object":
            method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
            if method in apis.COMPILED_OBJECT_METHODS:
                return "object" if method in ("lower", "compile", "trace") else None
            return "array"  # model.apply(...), optimizer.update(...), state.apply_gradients(...)
        if q is None:
            return None
        root = q.split(".")[0]
        if root not in apis.JAX_ROOTS:
            return None
        if q in apis.RUNS_ITS_FUNCTION:
            return "array"  # `lax.scan(step, init, xs)` runs now: its results are arrays
        if q in apis.JIT_WRAPPERS or q in apis.TRACING_TRANSFORMS:
            return "object"
        if q in apis.JAX_HOST_RESULTS or q.startswith(apis.JAX_HOST_PREFIXES):
            return None
        if q in apis.TREE_MAPS and call.args and self._maps_to_numpy(call.args[0].value, scope):
            return None  # `tree_map(lambda *x: np.stack(x), *steps)` builds NumPy arrays on the host
        return apis.ecosystem_result(q)

    def _object_name(self, name: str, scope: Function, depth: int) -> str | None:
        owner = scope.binding_scope(name)
        if owner is not None:
            for a in owner.bindings(name):
                if a.value is not None and len(a.targets) == 1 and isinstance(a.value, cst.Call):
                    if self._call_kind(a.value, owner, depth + 1) == "object":
                        return "object"
        return None

    def is_array_name(self, name: str, scope: Function, use: cst.Name | None = None) -> bool:
        for current in scope.scopes():
            if current.is_module and self._module_values_static:
                return False
            if name in current.array_names:
                if use is not None and current is scope and name in current.host_names:
                    return self._reaching_is_array(name, current, use)
                return True
            if name in current.params or current.bindings(name):
                return False  # bound here, and not to an array
        return False

    def is_array_at(self, use: cst.Name, fn: Function) -> bool:
        """Is the value that reaches this use of a name an array? (Its own later rebinding, as in
        `x = jnp.asarray(x)`, does not count.)"""
        if use.value not in fn.array_names or not fn.bindings(use.value):
            return self.is_array(use, fn)
        return self._reaching_is_array(use.value, fn, use)

    def _reaching_is_array(self, name: str, fn: Function, use: cst.Name) -> bool:
        """A name bound both to arrays and to host values (`loss = loss.item()`): the latest
        binding before the use decides; before any binding (loop-carried), arrays win."""
        last = self.reaching_binding(use, fn)
        if last is None:
            return True
        if last.value is None:
            return name in fn.array_params or (isinstance(last.site.node, cst.For)
                                                and self.value_kind(last.site.node.iter, fn) == "array")
        return not self.is_host_pull(last.value) and self.value_kind(last.value, fn) == "array"

    def is_array(self, expr: cst.BaseExpression, scope: Function) -> bool:
        return self.value_kind(expr, scope) == "array"

    def receiver_kind(self, call: cst.Call, scope: Function, depth: int = 0) -> str | None:
        """"array"/"object" when `call` is a method call on a JAX value (`x.sum()`, `model.apply`)."""
        if isinstance(call.func, cst.Attribute) and not (
                isinstance(call.func.value, cst.Name) and call.func.value.value in ("self", "cls")):
            if self.resolve(call.func) is None or self.resolve(call.func.value) is None:
                return self.value_kind(call.func.value, scope, depth + 1)
        return None

