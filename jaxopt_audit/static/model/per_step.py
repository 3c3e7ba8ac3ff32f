"""Which functions execute once per step, jitted or not, and why.

The model's `Function.per_step` covers untraced functions called from a step loop. Rules about
what happens "every step" (a constant PRNG key, a hand-written update) also need the jitted
functions a step loop calls, the traced helpers those call, and the bodies of compiled loops
(`lax.scan`, `fori_loop`, `while_loop`), whose every iteration is a step. This module computes
that closure once per model and says, for each function, which call or compiled loop makes it
per-step, so messages can name it.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.walk import describe
from .core import SemanticModel
from .facts import fact
from .index import Function, Loop, Site
from .loops import literal_trip_count

# A loop of one literal iteration runs its body once. Any more, and what its body does runs once
# per iteration: that is the fact the per-step rules state, however few the iterations (their
# count is the finding's evidence of impact, not a reason to stay quiet).
SINGLE_PASS = 1
# A loop of a few literal iterations (`for _ in range(4)`) is written out better than scanned or
# vmapped: JAX201 and JAX202 leave loops of 1 to 8 literal iterations alone.
SHORT_LOOP = 8



@dataclass(frozen=True)
class StepContext:
    """Why a function runs every step: a call from a step loop, or a compiled loop body."""

    step_call: Site | None  # the unguarded call in a step loop (or per-step function) that leads here
    compiled_loop: str | None  # "jax.lax.scan" when the function is (reached from) a loop body

    def describe(self, model: SemanticModel) -> str:
        """`called every step from the loop `for batch in loader`` and the like."""
        if self.compiled_loop is not None:
            return f"runs on every iteration of `{self.compiled_loop.rsplit('.', 1)[-1]}`"
        assert self.step_call is not None
        loop = model.step_loop_of(self.step_call)
        call = describe(self.step_call.node.func, 30)
        if loop is None:
            return f"is called every step (via `{call}`)"
        return f"is called on every iteration of {loop_header(loop)} (via `{call}`)"


def loop_header(loop: Loop) -> str:
    """`the loop `for batch in loader``: how messages name a loop without line numbers."""
    node = loop.node
    if isinstance(node, cst.For):
        return f"the loop `for {describe(node.target, 20)} in {describe(node.iter, 30)}`"
    return f"the loop `while {describe(node.test, 30)}`"


@fact
def per_step_functions(model: SemanticModel) -> dict[Function, StepContext]:
    """Every function that executes once per step (host code called from a step loop, the traced
    functions those call, compiled loop bodies), with the reason."""
    found: dict[Function, StepContext] = {}
    work: list[Function] = []

    def add(fn: Function | None, context: StepContext) -> None:
        if fn is None or fn.is_module or fn in found or fn.contains_step_loop:
            return
        found[fn] = context
        work.append(fn)

    for fn in model.functions:
        if fn.traced:
            continue
        for site in fn.calls:
            if model.dispatched_per_step(site) and not _in_short_loop(model, site):
                add(model.callee(site.node, fn).function, StepContext(site, None))
    for fn in model.functions:
        roots = [r for r in fn.transform_roots if r in apis.COMPILED_LOOPS]
        if roots:
            add(fn, StepContext(None, roots[0]))
    while work:
        fn = work.pop()
        context = found[fn]
        for site in fn.calls:
            if site.guarded and not fn.traced:
                continue
            add(model.callee(site.node, fn).function, context)
    return found


def why_every_step(model: SemanticModel, site: Site) -> StepContext | None:
    """Why `site` executes every step: it sits in a leaf step loop, or in a function that
    executes per step (host or traced, see `per_step_functions`), outside any loop of its own
    and unguarded. None when it does not (or we cannot tell). `model.dispatched_per_step` is
    the narrower question of host code Python dispatches every step."""
    if site.guarded:
        return None
    if site.loop is not None:
        if site.loop.is_step and not site.loop.is_epoch and not site.function.traced \
                and not _in_short_loop(model, site):
            return StepContext(site, None)
        return None
    return per_step_functions(model).get(site.function)


def _in_short_loop(model: SemanticModel, site: Site) -> bool:
    """The site's step loop runs its body once (`for _ in range(1)`)."""
    loop = model.step_loop_of(site) if site.loop is not None else None
    if loop is None:
        return False
    count = literal_trip_count(loop, model.resolve)
    return count is not None and count <= SINGLE_PASS


def where(model: SemanticModel, site: Site, context: StepContext) -> str:
    """Where a per-step site sits, for messages: `on every iteration of the loop `for b in
    data`` or `in `preprocess`, which is called on every iteration of the loop ... (via ...)`."""
    if site.loop is not None and context.step_call is site:
        return f"on every iteration of {loop_header(site.loop)}"
    return f"in `{site.function.name}`, which {context.describe(model)}"

