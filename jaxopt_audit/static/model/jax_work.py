"""JAX work and arrays: which calls dispatch JAX operations, which functions do JAX work, and the
propagation of array values through bindings, loops and calls (they feed each other: `x.sum()`
is work once `x` is an array)."""


from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import libcst as cst

from ..knowledge import apis
from ..syntax.walk import target_names, walk

if TYPE_CHECKING:
    pass
from .index import Assignment, Function
from .jit_marks import JitMarks
from .value_kinds import host_annotation


def unpacks(value: cst.BaseExpression | None, count: int) -> bool:
    """A literal tuple or list of `count` plain elements (`return x, y` for `a, b = f()`)."""
    return isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == count \
        and not any(isinstance(e, cst.StarredElement) for e in value.elements)


def _item_values(node: cst.For | cst.CompFor, targets: tuple[str, ...],
                 iterates_arrays: Callable[[cst.BaseExpression], bool]) -> tuple[str, ...]:
    """Which loop targets hold array items: `for k, v in d.items()` only the values; `for i, x in
    enumerate(xs)` only `x` (the index is a Python int); `for a, b in zip(xs, names)` only the
    targets whose iterable holds arrays."""
    it, target = node.iter, node.target
    if not isinstance(it, cst.Call) or not isinstance(target, cst.Tuple):
        return targets
    elements = [e.value for e in target.elements]
    if isinstance(it.func, cst.Attribute) and it.func.attr.value == "items" and len(elements) == 2:
        return tuple(target_names(elements[1]))
    args = [a.value for a in it.args if a.keyword is None and not a.star]
    if isinstance(it.func, cst.Name) and it.func.value == "enumerate" and len(elements) == 2 and args:
        return tuple(target_names(elements[1]))
    if isinstance(it.func, cst.Name) and it.func.value == "zip" and len(elements) == len(args):
        return tuple(n for e, a in zip(elements, args, strict=True) if iterates_arrays(a) for n in target_names(e))
    return targets


def _only_syncs(body: cst.BaseExpression, model: JaxWork) -> bool:
    """A lambda body that only waits for or reads back its argument."""
    if not isinstance(body, cst.Call):
        return False
    if isinstance(body.func, cst.Attribute) and body.func.attr.value in (apis.SYNC_METHODS | apis.HOST_METHODS):
        return True
    q = model.resolve(body.func)
    return q in apis.SYNC_FUNCTIONS or (q in apis.HOST_PULL_FUNCTIONS and q != "builtins.print")


class JaxWork(JitMarks):
    def _compute_jax_work(self) -> None:
        """Which functions do JAX work (any) and array work (not just calling jitted code)."""
        for fn in self.functions:
            for site in fn.calls:
                callee = self.callee(site.node, fn)
                if callee.qualname in apis.SCAN_LIKE or self._library_scan(site.node, fn):
                    fn.uses_scan = True
        changed = True
        rounds = 0
        while changed and rounds < 20:
            changed = False
            rounds += 1
            for fn in self.functions:
                if fn.is_module:
                    continue
                work, array_work, scan = fn.does_jax_work, fn.does_array_work, fn.uses_scan
                ops = 0
                for site in fn.calls:
                    kind = self.call_work(site.node, fn)
                    if kind:
                        work = True
                    if kind == "array":
                        array_work = True
                        ops += not self._uploads(site.node, fn)
                    target = self.callee(site.node, fn).function or self._transformed(site.node, fn)
                    if target is not None and target.uses_scan:
                        scan = True
                # `x[x < 0]`, `w - lr * g`, `jnp.tanh(x) * 2`: operators and indexing on arrays run
                # eagerly too (operands can be array calls even where no name holds an array yet)
                kind_of = self.value_kind if ops else self._value_kind_cached
                ops += sum(1 for s in fn.operations if kind_of(s.node, fn) == "array")
                # (`out[i]` of a Python list of arrays picks an element: no device work)
                ops += sum(1 for s in fn.subscripts if kind_of(s.node.value, fn) == "array"
                           and not self.is_container(s.node.value, fn))
                fn.array_ops = ops
                if ops:
                    array_work = work = True
                if (work, array_work, scan) != (fn.does_jax_work, fn.does_array_work, fn.uses_scan):
                    fn.does_jax_work, fn.does_array_work, fn.uses_scan = work, array_work, scan
                    self._forget_kinds()
                    changed = True

    def _uploads(self, call: cst.Call, fn: Function) -> bool:
        """`jnp.array([token_ids])`, `jnp.arange(n)`: an array made from Python values, an upload
        or a constant rather than an operation on arrays (not counted in `array_ops`)."""
        return self.resolve(call.func) in apis.ARRAY_CONSTRUCTORS and not any(
            isinstance(n, cst.Name) and self.is_array_name(n.value, fn)
            for a in call.args for n in walk(a.value))

    def call_work(self, call: cst.Call, scope: Function) -> str | None:
        """"array" when the call itself does array work eagerly (jnp.*, lax.*, grad(f)(x), a
        non-jitted function that does), "dispatch" when it runs compiled or library JAX code
        (a jitted function, model.apply, optimizer.update), None for host work."""
        callee = self.callee(call, scope)
        if callee.jitted:
            return "dispatch"
        if callee.transform is not None:
            return "array"
        if callee.function is not None:
            fn = callee.function
            if fn.does_array_work:
                if fn.direct_jit:
                    return "dispatch"
                if not scope.traced and not self._passes_array(call, scope) and self._works_on_arguments(fn):
                    return None  # operators on what it is given, given no array here (NumPy data)
                return "array"
            return "dispatch" if fn.does_jax_work else None
        if callee.imported is not None:
            return "array" if callee.imported.eager_ops else None
        if callee.cls is not None:
            return None
        q = callee.qualname
        receiver = self.receiver_kind(call, scope) if q is None else None
        if receiver == "array":
            method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
            if method in apis.HOST_METHODS or method in apis.CONTAINER_METHODS or method in apis.SYNC_METHODS \
                    or method in apis.STRING_METHODS or method in apis.FOREIGN_TENSOR_METHODS:
                return None
            return "array"
        if receiver == "object":
            return "dispatch"
        if q is None or q.split(".")[0] not in apis.JAX_ROOTS:
            return None
        if q in apis.JAX_HOST_RESULTS or q.startswith(apis.JAX_HOST_PREFIXES):
            return None
        if q in apis.TREE_MAPS and call.args:
            mapped = self.function_ref(call.args[0].value, scope)
            if mapped is not None and isinstance(mapped.node, cst.Lambda) and _only_syncs(mapped.node.body, self):
                return None  # jax.tree.map(lambda x: x.block_until_ready(), out)
            if mapped is not None and not mapped.does_array_work and not any(
                    self.is_array(a.value, scope) for a in call.args[1:]):
                return "dispatch" if mapped.does_jax_work else None
            return "array"
        if q in apis.RUNS_ITS_FUNCTION:
            return "array"
        if q in apis.JIT_WRAPPERS or q in apis.TRACING_TRANSFORMS:
            return None  # building a wrapper
        kind = self._call_kind(call, scope, 0)
        if kind == "object":
            return None  # building an optimizer or a model is not per-step work
        if q.startswith(("jax.numpy.", "jax.lax.", "jax.nn.", "jax.random.", "jax.scipy.", "jax.tree")):
            return "array"
        if q.startswith("jax.") or kind == "array":
            return "dispatch"
        return None  # a library's utility (`flax.io.exists`, `flax.serialization.to_bytes`)

    def _passes_array(self, call: cst.Call, scope: Function) -> bool:
        """Some argument of the call may be an array (a `*args` or `**kwargs` may)."""
        return any(a.star or self.is_array(a.value, scope) for a in call.args)

    def _works_on_arguments(self, fn: Function, depth: int = 0) -> bool:
        """The function's array work is all operators on what its callers give it: it calls no
        JAX API (nor a helper that does), and reads no array of an enclosing scope (a helper
        shared by a NumPy baseline and its JAX version, `def prediction(w, x): return x * w`,
        which traced callers hand tracers). Memoised with the value kinds."""
        key = ("works on arguments", id(fn))
        cache = self._kind_cache
        if key in cache:
            return cache[key] is not None
        cache[key] = None  # a recursive helper: not shown to be one
        result = depth < 6 and not self._makes_arrays(fn, depth) and not self._reads_outer_arrays(fn)
        cache[key] = "yes" if result else None
        return result

    def _makes_arrays(self, fn: Function, depth: int) -> bool:
        """A call of `fn` does JAX work of its own: a JAX API, or a helper that is not
        `_works_on_arguments` itself."""
        for site in fn.calls:
            callee = self.callee(site.node, fn)
            target = callee.function
            if target is not None and not callee.jitted and callee.transform is None and target is not fn:
                if target.does_jax_work and not self._works_on_arguments(target, depth + 1):
                    return True
            elif self.call_work(site.node, fn) is not None:
                return True
        return False

    def _reads_outer_arrays(self, fn: Function) -> bool:
        """An operator or an index of `fn` reads an array of an enclosing scope."""
        local = set(fn.params) | set(fn.array_names)
        operands: list[cst.CSTNode] = [s.node for s in fn.operations] + [s.node for s in fn.subscripts]
        return any(isinstance(n, cst.Name) and n.value not in local and not fn.bindings(n.value)
                   and self.is_array_name(n.value, fn) for node in operands for n in walk(node))

    def _fed_host_values(self, value: cst.BaseExpression, fn: Function) -> bool:
        """`obs, reward, done, info = env.step(np.array(action))`: a method of another library's
        object given a value pulled to the host returns host values (a gym environment's step)."""
        if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute) \
                or not any(self.is_host_pull(a.value) for a in value.args):
            return False
        q = self.resolve(value.func)
        if q is not None:
            return q.split(".")[0] not in apis.JAX_ROOTS
        callee = self.callee(value, fn)
        return callee.function is None and not callee.jitted and callee.imported is None

    def _propagate_arrays(self) -> None:
        """Fixpoint: which names hold arrays, seeded by traced parameters and JAX calls, and
        carried into same-module callees through their arguments."""
        for fn in self.functions:
            for name, annotation in fn.param_annotations.items():
                if annotation and annotation.split(".")[-1] in ("Array", "ndarray", "ArrayLike", "PRNGKeyArray") \
                        and (annotation.startswith(("jax", "jnp", "chex")) or annotation in ("Array", "PRNGKeyArray")):
                    if annotation != "ndarray" and not annotation.startswith(("np.", "numpy.")):
                        fn.array_params.add(name)
        for fn in self.functions:
            for a in fn.assignments:
                if a.value is not None and a.targets and (
                        self.is_host_pull(a.value) or self._fed_host_values(a.value, fn)):
                    fn.host_names.update(a.targets)  # uses of these look at the binding that reaches them
        for _ in range(8):
            changed = False
            for fn in self.functions:
                before = len(fn.array_names)
                if not fn.array_params <= fn.array_names:
                    fn.array_names |= fn.array_params
                    self._forget_kinds()
                for _ in range(4):  # local flow-insensitive closure
                    grew = False
                    for a in fn.assignments:
                        if a.value is None or not a.targets:
                            continue
                        if all(t in fn.array_names for t in a.targets):
                            continue
                        if self._binding_is_array(a, fn):
                            if isinstance(a.value, cst.Call) and len(a.targets) == 2 \
                                    and self.resolve(a.value.func) in apis.TREE_FLATTENS:
                                fn.array_names.add(a.targets[0])  # (leaves, treedef): the treedef is static
                                if a.targets[0] in fn.array_names:
                                    continue
                            added = self._array_targets(a, fn) - fn.array_names
                            if added:
                                fn.array_names |= added
                                self._forget_kinds()
                                grew = True
                    for a in fn.assignments:  # loop and comprehension targets iterate over arrays
                        if a.value is None and isinstance(a.site.node, (cst.For, cst.CompFor)):
                            if self._iterates_arrays(a.site.node.iter, fn):
                                def iterates_arrays(e: cst.BaseExpression, fn: Function = fn) -> bool:
                                    return self._iterates_arrays(e, fn)
                                targets = _item_values(a.site.node, a.targets, iterates_arrays)
                                if not set(targets) <= fn.array_names:
                                    fn.array_names.update(targets)
                                    self._forget_kinds()
                                    grew = True
                    if not grew:
                        break
                if len(fn.array_names) != before:
                    changed = True
                for site in fn.calls:
                    target = self.callee(site.node, fn).function
                    if target is None or target.is_module:
                        continue
                    params = target.params[1:] if target.cls is not None and target.params[:1] == ["self"] \
                        and isinstance(site.node.func, cst.Attribute) else target.params
                    position = 0
                    for arg in site.node.args:
                        if arg.star:
                            break
                        param = arg.keyword.value if arg.keyword is not None else (
                            params[position] if position < len(params) else None)
                        if arg.keyword is None:
                            position += 1
                        if param is None or param in target.static_params or param in target.array_params \
                                or host_annotation(target.param_annotations.get(param)):
                            continue
                        if self.is_array(arg.value, fn):
                            target.array_params.add(param)
                            self._forget_kinds()
                            changed = True
            if not changed:
                break

    def _array_targets(self, a: Assignment, fn: Function) -> set[str]:
        """The targets of an array binding that get arrays: each element on its own when the tuple
        an eager helper of the file returns is unpacked (`state, step = restore(state)` where
        `restore` returns `(arrays, ckpt.step)`); all of them otherwise (a jitted function's
        outputs are all arrays)."""
        value = a.value
        count = len(a.targets)
        if count > 1 and isinstance(value, cst.Call):
            callee = self.callee(value, fn)
            helper = callee.function
            if helper is not None and not helper.is_module and not callee.jitted and callee.transform is None \
                    and helper.returns and all(unpacks(r, count) for r in helper.returns):
                return {t for i, t in enumerate(a.targets)
                        if any(self.value_kind(cast("cst.Tuple | cst.List", r).elements[i].value, helper) == "array"
                               for r in helper.returns)}
        return set(a.targets)

    def _iterates_arrays(self, it: cst.BaseExpression, fn: Function) -> bool:
        """`for x in xs` over an array, or `zip(params, grads)` with an array among its arguments."""
        if isinstance(it, cst.Call) and self.resolve(it.func) in ("builtins.zip", "builtins.enumerate"):
            return any(self._iterates_arrays(a.value, fn) for a in it.args if a.keyword is None)
        return self.value_kind(it, fn) == "array"

    def _binding_is_array(self, a: Assignment, fn: Function) -> bool:
        value = a.value
        if value is None:
            return False
        if fn.traced and not self._module_values_static:
            self._module_values_static = True  # traced code: attributes of pytrees may be config
            try:
                return self._binding_is_array(a, fn)
            finally:
                self._module_values_static = False
        if self.is_host_pull(value):
            return False
        return self.value_kind(value, fn) == "array"

