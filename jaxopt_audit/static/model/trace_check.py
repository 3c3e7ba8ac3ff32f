"""Whether a function of the file can be traced as it is written.

`jax.jit` and `jax.vmap` run a function on tracers. Whether that works as written is what the
trace rules (JAX401-JAX404) answer for code the file already traces: Python control flow on a
traced value, NumPy on it, a value-dependent shape, a side effect. So the question "could this
function be jitted (or vmapped) as it is?" is asked by wrapping it in the source, scanning the
file again with the trace rules, and comparing their findings with those of the file as it is:
any new one (in the function or in a helper it calls, now traced too) says no. The JAX101 fix
asks it of the function decorated with `@jax.jit`; JAX202 of the function jitted with every
parameter but the mapped ones static.

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
