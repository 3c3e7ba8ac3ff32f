"""The codemods behind the rules' `fix` hooks (one function per kind of fix; see fixes.py).

Each returns a Fix or None; None whenever the rewrite cannot be shown to be right on this code
(precision first: a fix that is not offered costs nothing, a wrong one breaks a user's file).
"""

from __future__ import annotations

import re
from typing import cast

import libcst as cst

from ..framework.fix import SAFE, UNSAFE, Fix, dotted_expression, module_alias, wrap_call
from ..model.trace_check import no_new_trace_findings
from ..syntax.walk import describe


def block_until_ready(model, call: cst.BaseExpression) -> Fix | None:
    """JAX701: wait for the timed work's result where it is produced: `f(x)` ->
    `jax.block_until_ready(f(x))`, which returns its argument unchanged (any pytree)."""
    wrapped = wrap_call(model, "jax.block_until_ready", call)
    if wrapped is None:
        return None
    return Fix(SAFE, ((call, wrapped),), f"`{describe(call)}` -> `jax.block_until_ready({describe(call)})`")


def timeit_block_until_ready(model, timeit_call: cst.Call) -> Fix | None:
    """JAX701 on `timeit.timeit(lambda: f(x), ...)`: the lambda's body waits for its result."""
    if not timeit_call.args or not isinstance(timeit_call.args[0].value, cst.Lambda):
        return None
    body = timeit_call.args[0].value.body
    if not isinstance(body, cst.Call):
        return None
    return block_until_ready(model, body)


def carried_key(model, call: cst.Call) -> Fix | None:
    """JAX502 for a key rebuilt from a constant seed in a loop body (`key = jax.random.key(42)`
    as a statement of the loop): the constant key is made once before the loop and carried, and
    each step splits a fresh `key` from it. Unsafe: the numbers drawn change (that is the point)."""
    for fn in model.functions:
        site = next((s for s in fn.calls if s.node is call), None)
        if site is not None:
            break
    else:
        return None
    if site.loop is None or fn.traced or not isinstance(site.loop.node, (cst.For, cst.While)):
        return None
    loop = site.loop.node
    statement = next((line for line in loop.body.body if isinstance(line, cst.SimpleStatementLine)
                      and len(line.body) == 1 and isinstance(line.body[0], cst.Assign)
                      and line.body[0].value is call), None)
    if statement is None:
        return None
    assign = statement.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 \
            or not isinstance(assign.targets[0].target, cst.Name):
        return None
    name = assign.targets[0].target.value
    carried = f"{name}_carry"
    split = _split_spelling(model, call)
    if split is None or (model.source is not None and re.search(rf"\b{carried}\b", model.source)):
        return None
    targets = [cst.AssignTarget(cast(cst.BaseAssignTargetExpression, cst.parse_expression(f"{carried}, {name}")))]
    step = statement.with_changes(body=[assign.with_changes(value=cst.parse_expression(f"{split}({carried})"),
                                                             targets=targets)])
    init = cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(carried))], value=call)],
                                   leading_lines=loop.leading_lines)
    new_loop = loop.deep_replace(statement, step).with_changes(leading_lines=())
    return Fix(UNSAFE, ((loop, cst.FlattenSentinel([init, new_loop])),),
               f"`{describe(call)}` made once before the loop as `{carried}`; each step splits `{name}` from it")


def _split_spelling(model, call: cst.Call) -> str | None:
    """`jax.random.split` spelled like the key constructor (`jax.random.key` -> `jax.random.split`,
    `random.PRNGKey` -> `random.split`)."""
    if isinstance(call.func, cst.Attribute) and model.resolve(call.func.value) == "jax.random":
        return cst.Module(body=[]).code_for_node(call.func.value) + ".split"
    alias = module_alias(model, "jax")
    return f"{alias}.random.split" if alias else None


def jit_decorator(model, function: cst.FunctionDef) -> Fix | None:
    """JAX101: `@jax.jit` on a plain function (not a method), offered only when no argument has to
    be static: every parameter is used as an array, nothing branches on or checks a value, and
    the trace rules find nothing new in it once jitted. Unsafe: jitting changes when Python side
    effects run and which values are traced."""
    jax_alias = module_alias(model, "jax")
    if jax_alias is None or function.decorators or not _array_only_parameters(model, function):
        return None
    decorator = dotted_expression(cst.Name(jax_alias), "jit")
    new = function.with_changes(decorators=[cst.Decorator(decorator=decorator)])
    if not no_new_trace_findings(model, function, new):
        return None
    return Fix(UNSAFE, ((function, new),), f"`{function.name.value}` decorated with `@{jax_alias}.jit`")


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
        return isinstance(func, cst.Name) and any(
            fn.name == func.value and fn.parent is not None and fn.parent.is_module and fn.does_array_work
            for fn in self.model.functions)


def _array_only_parameters(model, function: cst.FunctionDef) -> bool:
    """Jitting as is (no static arguments) is only offered when every parameter is used as an
    array and nothing in the body branches on or checks values; `-> None` functions have
    nothing to compute."""
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
