"""Jit detection: which functions are jitted or otherwise traced (decorators, `jax.jit(f)`,
transform roots, `lax.scan` bodies, factories), their static parameters, and the propagation of
the traced mark to the functions traced code calls."""


from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

import libcst as cst

from ..knowledge import apis
from ..syntax.walk import int_value, string_value

if TYPE_CHECKING:
    pass
from .index import Function, TraceRoot
from .value_kinds import ValueKinds


class JitMarks(ValueKinds):
    def _static_params(self, fn: Function, args: list[cst.Arg], bound: bool = False) -> set[str]:
        """The parameters `static_argnums`/`static_argnames` in `args` name; `bound`: the function
        is jitted as a bound method (`jax.jit(self.step, static_argnums=(1,))`), whose positions
        do not count `self`."""
        static: set[str] = set()
        positional = fn.params[1:] if bound and fn.params[:1] in (["self"], ["cls"]) else list(fn.params)
        for arg in args:
            if arg.keyword is None:
                continue
            key = arg.keyword.value
            values = (arg.value.elements if isinstance(arg.value, (cst.Tuple, cst.List)) else None)
            items = [e.value for e in values] if values is not None else [arg.value]
            if key in ("static_argnums", "static_broadcasted_argnums"):
                for item in items:
                    index = int_value(item)
                    if index is not None and -len(positional) <= index < len(positional):
                        static.add(positional[index])
            elif key == "static_argnames":
                for item in items:
                    value = string_value(item)
                    if value is not None:
                        static.add(value)
        return static

    def _mark_jit(self, fn: Function, site: cst.CSTNode, args: list[cst.Arg], direct: bool = False,
                  bound: bool = False) -> None:
        fn.jit_sites.append(site)
        fn.static_params |= self._static_params(fn, args, bound)
        fn.direct_jit = fn.direct_jit or direct

    def _bound_method(self, ref: cst.BaseExpression, target: Function) -> bool:
        """`self.step` / `model.step` names a method bound to an instance (`Class.step` does not)."""
        return isinstance(ref, cst.Attribute) and target.cls is not None \
            and not (isinstance(ref.value, cst.Name) and ref.value.value in self.classes)

    def _rebinds_own_name(self, call: cst.Call, target: Function, scope: Function) -> bool:
        """`f = jax.jit(f)`: the function's own name now calls the compiled version."""
        return any(a.value is call and a.targets == (target.name,) for a in scope.assignments)

    def _mark_jit_and_transforms(self) -> None:
        self.trace_roots = list(self._find_trace_roots())
        for fn in self.functions:
            for decorator in fn.decorators:
                d = decorator.decorator
                if isinstance(d, cst.Call):
                    # `@partial(jax.remat, static_argnums=(0,))`: transforms take static arguments too
                    partial = self.resolve(d.func) == "functools.partial"
                    fn.static_params |= self._static_params(fn, list(d.args[1:] if partial else d.args))
        for root in self.trace_roots:
            fn, options = root.function, list(root.options)
            if root.wrapper not in apis.JIT_WRAPPERS:
                fn.transform_roots.append(root.wrapper)
                if isinstance(root.ref, cst.Call):  # partial(f, a, b=...): bound arguments are static
                    bound = root.ref.args[1:]
                    fn.static_params |= set(fn.params[:sum(1 for a in bound if a.keyword is None)])
                    fn.static_params |= {a.keyword.value for a in bound if a.keyword is not None}
            elif root.via == "decorator":
                self._mark_jit(fn, root.site, options, direct=True)
            elif root.via == "factory":
                self._mark_jit(fn, root.site, options)
            elif root.via == "inner":  # jax.jit(jax.grad(loss_fn), static_argnums=...): same positions
                fn.static_params |= self._static_params(fn, options)
            else:
                call = cast(cst.Call, root.site)
                # `partial(jax.jit, ...)(self.step)` is left as it was: no offset for a bound method
                method = root.ref is not None and not isinstance(call.func, cst.Call) \
                    and self._bound_method(root.ref, fn)
                self._mark_jit(fn, call, options, self._rebinds_own_name(call, fn, root.scope), bound=method)

    def _find_trace_roots(self) -> Iterator[TraceRoot]:
        for fn in self.functions:
            for decorator in fn.decorators:
                yield from self._decorator_roots(fn, decorator.decorator)
        for fn in self.functions:
            for site in fn.calls:
                call = site.node
                q = self.resolve(call.func)
                if q in apis.JIT_WRAPPERS and call.args:
                    ref, options = call.args[0].value, tuple(call.args[1:])
                    target = self.function_ref(ref, fn)
                    if target is not None:
                        yield TraceRoot(target, q, options, call, fn, ref, "call")
                        continue
                    for returned in self._factory_returns(ref, fn):
                        yield TraceRoot(returned, q, options, call, fn, ref, "factory")
                    if isinstance(ref, cst.Call) and self.resolve(ref.func) in apis.TRACING_TRANSFORMS and ref.args:
                        transformed = self.function_ref(ref.args[0].value, fn)
                        if transformed is not None:
                            yield TraceRoot(transformed, q, options, call, fn, ref.args[0].value, "inner")
                        # `jax.jit(jax.vmap(make_train(config)))`: the function the factory returns
                        for returned in self._factory_returns(ref.args[0].value, fn):
                            yield TraceRoot(returned, q, options, call, fn, ref.args[0].value, "factory")
                elif isinstance(call.func, cst.Call) and self.resolve(call.func.func) == "functools.partial" \
                        and call.func.args and call.args:
                    wrapper = self.resolve(call.func.args[0].value)
                    target = self.function_ref(call.args[0].value, fn)
                    if wrapper in apis.JIT_WRAPPERS and target is not None:
                        yield TraceRoot(target, wrapper, tuple(call.func.args[1:]), call, fn, call.args[0].value,
                                        "call")
                elif q in apis.TRACING_TRANSFORMS:
                    refs = [call.args[i].value for i in apis.TRACING_TRANSFORMS[q]
                            if i < len(call.args) and call.args[i].keyword is None]
                    refs += [a.value for a in call.args if a.keyword is not None and a.keyword.value in (
                        "f", "fun", "body_fun", "cond_fun", "true_fun", "false_fun", "fn")]  # keyword spellings
                    for expr in refs:
                        exprs = [e.value for e in expr.elements] if isinstance(expr, (cst.Tuple, cst.List)) else [expr]
                        for e in exprs:
                            target = self.function_ref(e, fn)
                            if target is not None:
                                yield TraceRoot(target, q, tuple(call.args), call, fn, e, "call")

    def _decorator_roots(self, fn: Function, decorator: cst.BaseExpression) -> Iterator[TraceRoot]:
        q = self.resolve(decorator)
        options: tuple[cst.Arg, ...] = ()
        if q is None and isinstance(decorator, cst.Call):
            q = self.resolve(decorator.func)
            options = tuple(decorator.args)
            if q == "functools.partial" and decorator.args:  # @partial(jax.jit, static_argnums=...)
                q, options = self.resolve(decorator.args[0].value), options[1:]
            # else `@jax.jit(static_argnames=...)` (newer JAX), `@jax.vmap(in_axes=...)`
        if q in apis.JIT_WRAPPERS or q in apis.TRACING_TRANSFORMS:
            yield TraceRoot(fn, q, options, decorator, fn.parent or fn, None, "decorator")

    def _factory_returns(self, expr: cst.BaseExpression, scope: Function) -> list[Function]:
        """`jax.jit(make_train(config))`: the functions the factory returns."""
        if not isinstance(expr, cst.Call):
            return []
        factory = self.function_ref(expr.func, scope)
        if factory is None:
            return []
        out = []
        for r in factory.returns:
            target = self.function_ref(r, factory)
            if target is not None:
                out.append(target)
        return out

    def _propagate_traced(self) -> None:
        work = []
        # functions handed to host callbacks run on NumPy values
        host_side = self.host_callback_functions
        for fn in self.functions:
            for site in fn.calls:
                call = site.node
                if self.resolve(call.func) in apis.HOST_CALLBACKS and call.args:
                    target = self.function_ref(call.args[0].value, fn)
                    if target is not None:
                        host_side.add(id(target))
        for cls in self.classes.values():
            # flax/equinox/haiku module methods run under apply/filter_jit: traced, but their
            # parameters may be static configuration (`train: bool`), so none is assumed traced
            if cls.is_jax_module:
                for method in cls.methods.values():
                    if method.name != "__init__" and not method.traced:
                        method.traced = True
                        work.append(method)
        for fn in self.functions:
            if fn.jitted or fn.transform_roots:
                fn.traced = True
                fn.array_params = {p for p in fn.params if p not in fn.static_params
                                   and p not in ("self", "cls")}
                work.append(fn)
        # traced by another scanned module (project.py): the body runs under tracing there, but
        # which parameters are arrays is that caller's business, so none is assumed traced
        elsewhere = self.project.traced if self.project is not None else frozenset()
        for fn in self.functions:
            if not fn.traced and fn.qualname in elsewhere and not fn.is_module \
                    and (fn.parent is None or fn.parent.is_module):
                fn.traced = True
                work.append(fn)
        # nested defs and lambdas inside traced functions run at trace time too
        while work:
            fn = work.pop()
            for site in fn.calls:
                target = self.callee(site.node, fn).function
                if target is not None and not target.traced and not target.is_module \
                        and id(target) not in host_side:
                    target.traced = True
                    work.append(target)
            for inner in self.functions:
                if inner.parent is fn and not inner.traced and not inner.is_module \
                        and id(inner) not in host_side:
                    if inner.name == "<lambda>" or inner.transform_roots:
                        inner.traced = True
                        # a lambda handed to a transform gets traced arguments; any other lambda
                        # (`lambda s: jnp.zeros(s)` as an initializer) may get shapes or config
                        if inner.transform_roots:
                            inner.array_params = {p for p in inner.params if p not in inner.static_params}
                        work.append(inner)

    def _library_scan(self, call: cst.Call, fn: Function) -> bool:
        """`loader.scan_epoch(state, carry, update_step)`: a library's scan wrapper, a method named
        for a scan that is handed a step function of this file, runs the steps as one loop."""
        func = call.func
        return isinstance(func, cst.Attribute) and "scan" in func.attr.value.lower() \
            and self.resolve(func) is None \
            and any(self.function_ref(a.value, fn) is not None for a in call.args)

