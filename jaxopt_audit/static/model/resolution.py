"""Name resolution: which function a name or a call reaches (nested defs, methods, imported
functions of other scanned modules, jit wrappers built from a function), and what a name means."""


from __future__ import annotations

from typing import TYPE_CHECKING, cast

import libcst as cst

from ..knowledge import apis
from ..syntax.names import dotted

if TYPE_CHECKING:
    pass
from .index import Callee, ClassInfo, Function, ModelIndex


class NameResolution(ModelIndex):
    def lookup_function(self, name: str, scope: Function) -> Function | None:
        """A def named `name` visible from `scope` (nested defs first, then module level); None
        when a parameter or a local variable of that name shadows it (`def loop(x, step): step(x)`
        calls whatever the caller passed, not the module's `step`)."""
        for s in scope.scopes():
            if name in s.nested:
                return s.nested[name]
            if name in s.params:
                return None
            if not s.is_module and s.bindings(name) and name not in s.global_names \
                    and name not in s.nonlocal_names:
                return None  # a local variable: `def square(n): square = table(n)` shadows the def
        return None

    def function_ref(self, expr: cst.BaseExpression, scope: Function) -> Function | None:
        """The same-module function an expression names: `f`, `self.m`, `Cls.m`, `obj.m`, a lambda,
        `partial(f, ...)`."""
        if isinstance(expr, cst.Lambda):
            return self.lambdas.get(expr)
        if isinstance(expr, cst.Name):
            fn = self.lookup_function(expr.value, scope)
            if fn is not None:
                return self._redefinition(expr, fn, scope)
            # `step = some_function` local alias
            for a in scope.bindings(expr.value):
                if a.value is not None and isinstance(a.value, (cst.Name, cst.Attribute)) \
                        and a.value is not expr:
                    target = self.function_ref(a.value, scope) if dotted(a.value) != expr.value else None
                    if target is not None:
                        return target
            return None
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            owner = expr.value.value
            attr = expr.attr.value
            cls = None
            if owner in ("self", "cls") and scope.cls is None and scope.parent is not None:
                # nested function inside a method: `self` is the method's
                method_scope = scope
                while method_scope.parent is not None and method_scope.cls is None:
                    method_scope = method_scope.parent
                cls = method_scope.cls
            elif owner in ("self", "cls"):
                cls = scope.cls
            elif owner in self.classes:
                cls = self.classes[owner]
            else:
                annotation = self._annotation_of(owner, scope)
                if annotation in self.classes:
                    cls = self.classes[annotation]
            if cls is not None:
                return self._method(cls, attr)
            return None
        if isinstance(expr, cst.Call) and self.resolve(expr.func) == "functools.partial" and expr.args:
            return self.function_ref(expr.args[0].value, scope)
        return None

    def _redefinition(self, use: cst.Name, fn: Function, scope: Function) -> Function:
        """A name defined by several `def`s (notebook cells): the one bound when `use` runs, the
        latest before it in the same scope, the last one from a function body run later."""
        owner = fn.parent
        if owner is None:
            return fn
        defs = [a for a in owner.bindings(use.value) if isinstance(a.site.node, cst.FunctionDef)]
        if len(defs) < 2:
            return fn
        seq = self.name_seq.get(id(use))
        before = [a for a in defs if seq is not None and a.seq < seq] if scope is owner else defs
        chosen = self.function_of_def.get(cast(cst.FunctionDef, before[-1].site.node)) if before else None
        return chosen if chosen is not None else fn

    def _annotation_of(self, name: str, scope: Function) -> str | None:
        return next((s.param_annotations[name] for s in scope.scopes() if name in s.param_annotations), None)

    def _method(self, cls: ClassInfo, name: str, depth: int = 0) -> Function | None:
        if name in cls.methods:
            return cls.methods[name]
        if depth < 5:
            for base in cls.bases:
                if base is not None and base in self.classes:
                    found = self._method(self.classes[base], name, depth + 1)
                    if found is not None:
                        return found
        return None

    def callee(self, call: cst.Call, scope: Function) -> Callee:
        """Resolve what `call` calls. Cached per call node."""
        cached = self._callee_cache.get(call)
        if cached is not None:
            return cached
        result = self._resolve_callee(call, scope)
        self._callee_cache[call] = result
        return result

    def _resolve_callee(self, call: cst.Call, scope: Function) -> Callee:
        func = call.func
        # `jax.jit(f)(x)`, `jax.grad(loss)(p)`: calling a transform's result
        if isinstance(func, cst.Call):
            inner = self.resolve(func.func)
            target = self.function_ref(func.args[0].value, scope) if func.args else None
            if inner in apis.JIT_WRAPPERS:
                return Callee(inner, target, jitted=True, transform=inner)
            if inner in apis.TRACING_TRANSFORMS or inner == "functools.partial":
                return Callee(inner, target, transform=inner)
            return Callee(None)
        qualname = self.resolve(func)
        if isinstance(func, cst.Name) and func.value in self.classes and qualname is None:
            return Callee(None, cls=self.classes[func.value])
        fn = self.function_ref(func, scope)
        if fn is not None:
            if not fn.direct_jit:
                # `loss_fn = jax.jit(jax.value_and_grad(loss_fn))`, `self.step = jax.jit(self.step)`
                # under a mode test: the name now holds the wrapper
                rebound = self._jit_binding(func.value, scope) if isinstance(func, cst.Name) \
                    else self._jit_attribute(func, scope)
                if rebound is not None:
                    return rebound
            return Callee(qualname, fn, jitted=fn.direct_jit)
        if qualname is not None and self.project is not None:  # the one cross-module lookup
            imported = self.project.get(dotted(func))
            if imported is not None:
                return Callee(qualname, jitted=imported.jitted, imported=imported)
        if qualname is not None and (qualname.split(".")[0] in apis.JAX_ROOTS
                                     or qualname.startswith("builtins.")
                                     or "." in qualname):
            return Callee(qualname)
        # a name bound to `jax.jit(f)` or to another JAX value
        if isinstance(func, cst.Name):
            bound = self._jit_binding(func.value, scope)
            if bound is not None:
                return bound
        wrapped = self._jit_attribute(func, scope)
        return wrapped if wrapped is not None else Callee(qualname)

    def _jit_attribute(self, func: cst.BaseExpression, scope: Function) -> Callee | None:
        """`self.step` where the class assigns `self.step = jax.jit(...)`: the jitted Callee."""
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            cls = scope.cls or self._enclosing_class(scope)
            if cls is not None:
                for value, owner in cls.attribute_values.get(func.attr.value, []):
                    wrapped = self._jit_of(value, owner)
                    if wrapped is not None:
                        return wrapped
        return None

    def _enclosing_class(self, scope: Function) -> ClassInfo | None:
        return next((s.cls for s in scope.scopes() if s.cls is not None), None)

    def _jit_of(self, value: cst.BaseExpression, scope: Function, factory: bool = True) -> Callee | None:
        """`jax.jit(f, ...)` (or partial(jax.jit, ...)(f)) -> a jitted Callee of f; also a call of
        a same-module factory every return of which is one (`step = make_step(opt)`, where
        `make_step` ends in `return jax.jit(_step)` or returns a nested `@jax.jit` function)."""
        if not isinstance(value, cst.Call):
            return None
        if factory:
            maker = self.function_ref(value.func, scope)
            if maker is not None and not maker.direct_jit and maker.returns:
                made = [self._jit_of(r, maker, factory=False) or self._jitted_nested(r, maker)
                        for r in maker.returns]
                if all(made) and made[0] is not None:
                    return made[0]
        wrapper = self.resolve(value.func)
        if wrapper in apis.JIT_WRAPPERS:
            target = self.function_ref(value.args[0].value, scope) if value.args else None
            # `jax.jit(step)` with `step` imported from another scanned module: its summary
            imported = self.project.get(dotted(value.args[0].value)) \
                if target is None and value.args and self.project is not None else None
            return Callee(wrapper, target, jitted=True, imported=imported)
        if isinstance(value.func, cst.Call) and self.resolve(value.func.func) == "functools.partial" \
                and value.func.args and self.resolve(value.func.args[0].value) in apis.JIT_WRAPPERS:
            target = self.function_ref(value.args[0].value, scope) if value.args else None
            return Callee("jax.jit", target, jitted=True)
        return None

    def _jitted_nested(self, expr: cst.BaseExpression, scope: Function) -> Callee | None:
        """`return step` where `step` is a nested function decorated with jit."""
        if isinstance(expr, cst.Name):
            inner = scope.nested.get(expr.value)
            if inner is not None and inner.direct_jit:
                return Callee(None, inner, jitted=True)
        return None

    def _transformed(self, call: cst.Call, scope: Function) -> Function | None:
        """`batched(x)` where the name's one binding in the nearest scope that binds it is
        `jax.vmap(f, ...)` (or another wrapping transform of a function of this file): `f`, which
        the call runs. Asked only of whether a call reaches a compiled loop (a step whose
        vmapped inner function scans is a whole program). The eager-work facts do not follow
        it: missing-jit and loop-to-scan findings on eager vmapped calls are rarely worth
        making."""
        if not isinstance(call.func, cst.Name):
            return None
        for current in scope.scopes():
            bindings = current.bindings(call.func.value)
            if not bindings:
                continue
            value = bindings[0].value if len(bindings) == 1 else None
            if isinstance(value, cst.Call) and value.args and self.resolve(value.func) in apis.WRAPPING_TRANSFORMS:
                return self.function_ref(value.args[0].value, current)
            return None
        return None

    def _jit_binding(self, name: str, scope: Function) -> Callee | None:
        for current in scope.scopes():
            for a in current.bindings(name):
                if a.value is not None:
                    wrapped = self._jit_of(a.value, current)
                    if wrapped is not None:
                        return wrapped
        return None

    def is_container(self, expr: cst.BaseExpression, scope: Function, depth: int = 0) -> bool:
        """A Python list/tuple/dict/set (of arrays or not): its truth is its length, a static fact."""
        if isinstance(expr, (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
            return True
        if isinstance(expr, cst.Call) and self.resolve(expr.func) in (
                "builtins.list", "builtins.tuple", "builtins.dict", "builtins.set", "jax.tree.leaves",
                "jax.tree_util.tree_leaves"):
            return True
        if isinstance(expr, cst.Name) and depth < 4:
            bindings = scope.bindings(expr.value)
            return bool(bindings) and all(
                a.value is not None and len(a.targets) == 1 and self.is_container(a.value, scope, depth + 1)
                for a in bindings)
        return False

    def is_host_pull(self, value: cst.BaseExpression) -> bool:
        """`float(x)`, `x.item()`, `np.asarray(x)`, `jax.device_get(x)`: a host value."""
        if not isinstance(value, cst.Call):
            return False
        q = self.resolve(value.func)
        if q in apis.HOST_PULL_FUNCTIONS and q != "builtins.print":
            return True
        return q is None and isinstance(value.func, cst.Attribute) and value.func.attr.value in apis.HOST_METHODS

    def _maps_to_numpy(self, mapped: cst.BaseExpression, scope: Function) -> bool:
        """A lambda whose body is a NumPy call: what it maps to lives on the host."""
        if not isinstance(mapped, cst.Lambda) or not isinstance(mapped.body, cst.Call):
            return False
        q = self.resolve(mapped.body.func)
        return q is not None and q.split(".")[0] == "numpy"

