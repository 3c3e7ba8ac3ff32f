"""Where a function computes gradients, which names hold them, and the shape of a descent step.

A gradient is computed by calling what a gradient transform returns (`jax.grad(loss)(params)`,
`jax.value_and_grad(loss)(params)`, `apis.GRADIENT_TRANSFORMS`); the name it is bound to holds
the gradients. A descent step subtracts a scaled term from a value (`p - lr * g`).
"""

from __future__ import annotations

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import target_names
from .core import SemanticModel
from .index import Assignment, Function, Site

# Transforms whose result, called, evaluates a function and a derivative of it: eagerly, the
# forward pass and the backward pass run op by op (jvp/vjp/linearize are called directly instead).
DERIVATIVES = apis.GRADIENT_TRANSFORMS | frozenset({"jax.jacfwd", "jax.jacrev", "jax.hessian"})


def computes_gradients(model: SemanticModel, fn: Function) -> bool:
    """Whether `fn`, or a function it is nested in (the module aside), calls a gradient
    transform or what one returns (`jax.grad(loss_fn)(params)`): a training step's body."""
    return any(_calls_gradient_transform(model, scope) for scope in fn.scopes() if not scope.is_module)


def _calls_gradient_transform(model: SemanticModel, fn: Function) -> bool:
    return any(model.resolve(s.node.func) in apis.GRADIENT_TRANSFORMS
               or (isinstance(s.node.func, cst.Call) and model.resolve(s.node.func.func) in apis.GRADIENT_TRANSFORMS)
               for s in fn.calls)


def derivative_of(model: SemanticModel, site: Site[cst.Call]) -> tuple[cst.Call, Assignment | None] | None:
    """The derivative a call evaluates without jit: `jax.grad(loss)(p)` gives the transform's
    call (`jax.grad(loss)`) and no binding; `force_fn(x)`, where the one binding of `force_fn`
    the call sees is `force_fn = jax.grad(energy)`, gives that call and that binding. None for
    any other call, and for a compiled derivative (`jax.jit(jax.grad(loss))`, under any name)."""
    fn, func = site.function, site.node.func
    if model.callee(site.node, fn).jitted:
        return None
    if isinstance(func, cst.Call):
        derivative: tuple[cst.Call, Assignment | None] = (func, None)
    else:
        binding = _sole_binding(func, fn)
        if binding is None or not isinstance(binding.value, cst.Call):
            return None
        derivative = (binding.value, binding)
    transform = derivative[0]
    if model.resolve(transform.func) not in DERIVATIVES or (transform.args and _compiled(
            model, transform.args[0].value, fn)):
        return None  # `jax.grad(jax.jit(f))` runs the compiled forward and backward passes
    return derivative


def _sole_binding(expr: cst.BaseExpression, fn: Function) -> Assignment | None:
    """The one binding of a plain name, as `fn` sees it (not a parameter)."""
    if not isinstance(expr, cst.Name):
        return None
    scope = fn.binding_scope(expr.value)
    if scope is None or expr.value in scope.params:
        return None
    bindings = scope.bindings(expr.value)
    return bindings[0] if len(bindings) == 1 and len(bindings[0].targets) == 1 else None


def _compiled(model: SemanticModel, expr: cst.BaseExpression, fn: Function) -> bool:
    """`jax.jit(f)`, a jitted def, or a name bound once to `jax.jit(f)`."""
    if isinstance(expr, cst.Name):
        binding = _sole_binding(expr, fn)
        if binding is not None and binding.value is not None:
            expr = binding.value
    if isinstance(expr, cst.Call):
        return model.resolve(expr.func) in apis.JIT_WRAPPERS
    target = model.function_ref(expr, fn)
    return target is not None and target.direct_jit


def gradient_names(model: SemanticModel, fn: Function) -> set[str]:
    """Which names `fn` and the functions it is nested in bind from a gradient transform's
    result: `grads = jax.grad(f)(p)`, `loss, grads = jax.value_and_grad(f)(p)` (the last target
    of a tuple, and the names inside it: `(loss, aux), (gw, gb) = ...`)."""
    out: set[str] = set()
    for scope in fn.scopes():
        for a in scope.assignments:
            value = a.value
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Call) \
                    and model.resolve(value.func.func) in apis.GRADIENT_TRANSFORMS and a.targets:
                out.add(a.targets[-1])
                if isinstance(a.site.node, cst.Tuple):
                    last = a.site.node.elements[-1].value
                    out.update(target_names(last))
    return out


def descent_step(expr: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """Whether `expr` is a descent step, `p - lr * g` (also `p - g * lr`, `p - g / n`,
    `p + -lr * g`): its value `p` and its step term `g` (the factor that is not the step size);
    None for any other shape."""
    if not isinstance(expr, cst.BinaryOperation):
        return None
    op = expr.operator
    right = expr.right
    if isinstance(op, cst.Add) and isinstance(right, cst.BinaryOperation) \
            and isinstance(right.operator, cst.Multiply) and isinstance(right.left, cst.UnaryOperation) \
            and isinstance(right.left.operator, cst.Minus):
        return expr.left, right.right
    if not isinstance(op, cst.Subtract):
        return None
    if isinstance(right, cst.BinaryOperation) and isinstance(right.operator, (cst.Multiply, cst.Divide)):
        # the gradient is the factor that is not the step size
        for factor in ((right.right, right.left) if isinstance(right.operator, cst.Multiply) else (right.left,)):
            if isinstance(factor, (cst.Name, cst.Subscript, cst.Attribute)):
                return expr.left, factor
    return None
