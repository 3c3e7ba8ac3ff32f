"""JAX103 recompile-on-changing-input."""

from __future__ import annotations

from collections.abc import Iterator

from jaxopt_audit.static import (
    GrowingList,
    Invalid,
    Report,
    Rule,
    SemanticModel,
    Valid,
    changing_shape,
    describe,
    growing_list,
    grown_by_callee,
)


class RecompileOnChangingInput(Rule):
    """
    ## What it does
    Finds a jitted function called in a loop with an input whose shape the loop changes on every
    iteration, as far as the file shows it: a slice with one bound the loop rebinds and the other
    fixed (`x[:n]`, `x[n:]`, `tokens[:, :t]`), or an array made with a shape that reads such a
    name (`np.random.randn(n, 4)`; a random draw's shape is its shape argument, never its key),
    passed directly or through a name the loop binds to it. Also a jitted step that returns a
    value longer than it came in (`hist = jnp.append(hist, x)`) which the loop passes back in
    (reported at the growth), and a Python list, or one array stacked from it, given to a jitted
    function when the file shows its length changing between calls: refilled by a `while` loop,
    grown and never emptied, emptied after a call that runs only when a run-time condition holds
    (an episode's end), or an attribute list that other methods of the class grow. `run`
    reports the same code for every steady-state recompilation it sees, with the argument
    that changed.

    ## Why is this bad?
    `jax.jit` compiles a function once per distinct input shape. A length that changes every
    iteration traces and compiles the function again each time it takes a value not seen
    before: a compilation costs milliseconds to seconds, far more than the step.

    ## How to fix
    Give the input a fixed shape: pad it to the largest length (or to a few bucket sizes) and
    pass a mask or the true length as an array argument; or keep the full array and select
    inside the function with `jnp.where` on an index comparison.

    ## At run time
    `jaxopt-audit run` finds every recompilation, whatever the file shows: it counts each jitted
    function's compilations and asks JAX why each one after the first happened
    (`jax_explain_cache_misses`). A function compiled at least three times in one run, for a
    reason other than a new wrapper (that is JAX102), is reported at the call that missed the
    cache, with the argument that changed and how: its shape, its dtype, its weak type (a Python
    scalar one call, an array the next), a static argument's value, or a pytree's structure. The
    cost it reports is the compile time of those recompilations: what fixing them saves, at most.

    The rule stays quiet on lists filled to a fixed length before each call (a `for` loop over
    `range(horizon)`, a call under `if len(buf) == batch_size:` or a periodic guard), on lists
    filled once (in `__init__`), and on slices whose bounds move together (`x[i:i + bs]`: the same length
    every iteration, the last partial batch at most once more), on loops over a written-out list
    of sizes (`for n in [64, 128]`: one compilation per size is the point of such a sweep), on
    shapes changed under a periodic guard, and on functions that are not jitted (no compilation
    to repeat).
    """

    CODE = "JAX103"
    NAME = "recompile-on-changing-input"
    SEVERITY = "warning"
    SUMMARY = "Jitted function given an input whose shape changes every iteration: a compilation per new shape"
    FIX = "Pad the input to a fixed length (or a few bucket sizes) and pass a mask or the true length as an array."

    INVALID = [
        Invalid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def step(w, xb):
                return w - 0.01 * jnp.mean(xb, axis=0)

            def train(w, x, n_steps):
                for i in range(n_steps):
                    n = 10 + i
                    w = step(w, x[:n])  # <- JAX103
                return w
        """),
        Invalid("""
            import jax
            import jax.numpy as jnp
            import numpy as np

            @jax.jit
            def train_step(w, xb):
                return w - 0.1 * jnp.mean(xb @ w) * w

            w = jnp.ones(4)
            for i in range(12):
                xb = np.random.randn(8 + i, 4)
                w = train_step(w, xb)  # <- JAX103
        """, note="host batches of a new size every step"),
    ]
    VALID = [
        Valid("""
            import jax
            import jax.numpy as jnp

            @jax.jit
            def step(w, xb):
                return w - 0.01 * jnp.mean(xb, axis=0)

            def train(w, x, bs, n_batches):
                for i in range(n_batches):
                    w = step(w, x[i * bs:(i + 1) * bs])  # the same length each iteration
                for n in [64, 128, 256]:  # a sweep over written-out sizes
                    w = step(w, x[:n])
                return w
        """),
    ]

    def check(self, model: SemanticModel) -> Iterator[Report]:
        grown: set[int] = set()
        for fn in model.functions:
            if fn.traced:
                continue
            for site in fn.calls:
                loop = site.loop
                if not model.callee(site.node, fn).jitted:
                    continue
                # a list emptied after each call: the call's guard (an episode's end) is the point
                listed = next(((a.value, g) for a in site.node.args
                               if (g := growing_list(model, site, a.value)) is not None), None)
                if listed is not None:
                    yield Report(listed[0], _list_message(describe(site.node.func), listed[1]))
                    continue
                if site.guarded:
                    continue
                fed_back = grown_by_callee(model, site) if loop is not None else None
                if fed_back is not None and loop is not None and id(fed_back[1]) not in grown:
                    grown.add(id(fed_back[1]))
                    carried, growth = fed_back
                    callee = describe(site.node.func)
                    yield Report(growth, f"`{callee}` is jitted and returns `{carried}` longer than it came in "
                                         f"(`{describe(growth.func)}`), and the loop at line "
                                         f"{model.line_of(loop.node)} passes it back in (line "
                                         f"{model.line_of(site.node)}): its shape is new on every call, so each "
                                         f"call traces and compiles `{callee}` again", runs_at=site.node)
                if loop is None:
                    continue
                for arg in site.node.args:
                    name = changing_shape(model, arg.value, loop)
                    if name is None:
                        continue
                    yield Report(arg.value, f"`{describe(site.node.func)}` is jitted and is given "
                                            f"`{describe(arg.value)}`, whose shape depends on `{name}`, which the "
                                            f"loop at line {model.line_of(loop.node)} rebinds on every iteration: "
                                            f"each shape not seen before traces and compiles "
                                            f"`{describe(site.node.func)}` again")
                    break


def _list_message(callee: str, found: GrowingList) -> str:
    """A list whose length changes between calls: as a list, or stacked into one array."""
    if found.converted is None:
        return (f"`{callee}` is jitted and is given `{found.shown}`, a Python list {found.why}; a list's length is "
                f"part of the input structure jit compiles for (every leaf of every item is an argument), so each "
                f"new length traces and compiles `{callee}` again")
    return (f"`{callee}` is jitted and is given `{found.converted}` of the list `{found.shown}`, {found.why}; the "
            f"array's leading dimension is the list's length, so each new length traces and compiles `{callee}` "
            "again")
