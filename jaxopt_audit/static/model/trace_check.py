"""Whether a function of the file can be traced as it is written.

`jax.jit` and `jax.vmap` run a function on tracers. Whether that works as written is what the
trace rules (JAX401-JAX404) answer for code the file already traces: Python control flow on a
traced value, NumPy on it, a value-dependent shape, a side effect. So the question "could this
function be jitted (or vmapped) as it is?" is asked by wrapping it in the source, scanning the
file again with the trace rules, and comparing their findings with those of the file as it is:
any new one (in the function or in a helper it calls, now traced too) says no. The JAX101 fix
asks it of the function decorated with `@jax.jit`, once `array_only_parameters` has said from
the function's text alone that no argument would have to be static; JAX202 asks it of the
function jitted with every parameter but the mapped ones static.

The model cannot scan (the scan pipeline sits above it): the pipeline hands each model a
`rescan` callable that counts the findings of named rules on a text. A model built without one
answers no.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

TRACE_RULES = ("JAX401", "JAX402", "JAX403", "JAX404")


def traces_as_written(model, function: cst.FunctionDef, static: Iterable[str] = ()) -> bool:
    """A module-level `function` jitted with the parameters in `static` marked static (the rest
    traced, as the mapped arguments of a `jax.vmap` are) adds no trace-rule finding to the file.
    False for a nested function or method, or when the file cannot be scanned."""
    if model.source is None or model.rescan is None or not any(s is function for s in model.module.body):
        return False
    name = function.name.value
    static_names = tuple(sorted(static))
    # an import of its own: the file may spell jax differently, or import only `jax.numpy`
    wrapped = (f"{model.source.rstrip()}\nimport jax as _traces_as_written\n"
               f"{name} = _traces_as_written.jit({name}, static_argnames={static_names!r})\n")
    before, after = (model.rescan(text, TRACE_RULES) for text in (model.source, wrapped))
    return before is not None and after is not None and after == before


def no_new_trace_findings(model, old: cst.FunctionDef, new: cst.FunctionDef) -> bool:
    """Replacing `old` with `new` leaves the trace rules' findings on the file as many as they
    were (the whole file: tracing a function traces the helpers it calls too)."""
    if model.source is None or model.rescan is None:
        return False
    before = model.rescan(model.source, TRACE_RULES)
    return before is not None and model.rescan(model.module.deep_replace(old, new).code, TRACE_RULES) == before


# Statements whose behaviour under jit depends on values: a raise or assert checks them, and an
# `if`/`while` may branch on them.
_VALUE_DEPENDENT = (cst.If, cst.While, cst.Assert, cst.Raise, cst.IfExp, cst.Try, cst.With)


class _ParameterUses(cst.CSTVisitor):
    """Whether every use of the parameters is an array use: an operand, subscripted, an
    attribute read (`x.shape`, `state.params`), or an argument of a `jax.*` function."""

    def __init__(self, model, names: set[str]) -> None:
        super().__init__()
        self.model, self.names = model, names
        self.stack: list[cst.CSTNode] = []
        self.ok = True

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _VALUE_DEPENDENT):
            self.ok = False
        if isinstance(node, cst.Name) and node.value in self.names and self.stack:
            self.ok = self.ok and self._array_use(node)
        self.stack.append(node)
        return self.ok

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()

    def _array_use(self, node: cst.Name) -> bool:
        parent = self.stack[-1]
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison,
                               cst.ComparisonTarget, cst.Return, cst.Element, cst.Tuple)):
            return True
        if isinstance(parent, cst.Subscript) and parent.value is node:
            return True
        if isinstance(parent, (cst.Param, cst.AssignTarget)):
            return True  # a binding (a nested function's parameter, `m = update(m, g)`), not a use
        if isinstance(parent, (cst.CompFor, cst.For)) and parent.iter is node:
            return True  # `{k: params[k] - lr * g[k] for k in params}`: a dict's keys are static
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return True
        if isinstance(parent, cst.Arg) and len(self.stack) >= 2 and isinstance(self.stack[-2], cst.Call):
            func = self.stack[-2].func
            # `jax.value_and_grad(loss)(w, x)`: an argument of a JAX transform's result
            callee = self.model.resolve(func.func if isinstance(func, cst.Call) else func) or ""
            # or a function of this file doing array work (`model_forward(params, x)`): jitted with
            # the caller, it is traced too, and the trace rules are asked about the whole file
            return callee.split(".", 1)[0] == "jax" or self._array_function(func)
        return False

    def _array_function(self, func: cst.BaseExpression) -> bool:
        """`func` names a module-level function of this file that does array work."""
        return isinstance(func, cst.Name) and any(
            fn.name == func.value and fn.parent is not None and fn.parent.is_module and fn.does_array_work
            for fn in self.model.functions)


def array_only_parameters(model, function: cst.FunctionDef) -> bool:
    """Could `function` be jitted with no static argument, as far as its own text shows? Every
    parameter is used as an array (see `_ParameterUses`), nothing in the body branches on or
    checks values, it takes no `*args`/`**kwargs` and does not return `None` (`-> None`
    functions have nothing to compute). The JAX101 fix asks this before `no_new_trace_findings`."""
    params = function.params
    if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
        return False  # *args/**kwargs: what is passed there is unknown
    if function.returns is not None and isinstance(function.returns.annotation, cst.Name) \
            and function.returns.annotation.value == "None":
        return False
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    if not names:
        return False
    visitor = _ParameterUses(model, names)
    function.body.visit(visitor)
    return visitor.ok
