"""Each finding's impact: how much the code shows it matters, for ranking and `--min-impact`.

A static finding states a fact; whether fixing it pays in a given program is what `run` measures.
What the file does show is how often the code runs (model/runs.py: literal, passed and
configured trip counts, nested loops, the loops around a function's callers) and, for a function
run eagerly, how much array work each call dispatches. The level ranks by that evidence alone:

- per-run rules (a cost paid each time the code runs): `high` from 1,000 runs, `medium` from 50,
  `low` below, or when the code runs once; `unknown` when a loop's length is not worked out from
  the file, and the evidence names what it depends on. A
  finding under a condition inside the loop (it runs on some iterations only) drops a level, and
  so does an un-jitted function of a single array operation.
- correctness rules (wrong numbers or a failure under jit): `medium` whatever the count, `high`
  when a reused key is drawn from on every iteration of a loop of 1,000 runs or more.
- API rules: `medium` for a removed API (the code fails on current JAX), `low` for a deprecated one.
- measurement rules (a timing that reports the wrong number): `medium`.
"""

from __future__ import annotations

import libcst as cst

from ..framework.rule import Impact, Report, Rule
from ..model import SemanticModel
from ..model.runs import Runs, runs_of

HIGH_RUNS = 1000
MEDIUM_RUNS = 50


def impact_of(model: SemanticModel, rule: Rule, report: Report) -> Impact:
    kind = rule.IMPACT
    severity = report.severity or rule.SEVERITY
    if kind == "api":
        if severity == "warning":
            return Impact("medium", None, "a removed API: the code fails with current JAX")
        return Impact("low", None, "a deprecated API: it works today and will be removed")
    if kind == "measurement":
        return Impact("medium", None, "the timing reports the wrong number; fixing it changes what is "
                                      "measured, not how long the program takes")
    runs = runs_of(model, report.runs_at or report.node)
    where = describe_runs(runs)
    if kind == "correctness":
        count = runs.count
        if count is not None and count >= HIGH_RUNS and not runs.conditional and rule.CODE.startswith("JAX5"):
            return Impact("high", count, f"wrong numbers on every run: {where}")
        return Impact("medium", count if runs.loops else None,
                      f"a correctness problem, whatever the count; {where}")
    return _per_run(model, runs, where, report)


def _per_run(model: SemanticModel, runs: Runs, where: str, report: Report) -> Impact:
    count = runs.count
    if count is None:
        return Impact("unknown", None, where)
    if not runs.loops:
        return Impact("low", 1, where)
    level = "high" if count >= HIGH_RUNS else "medium" if count >= MEDIUM_RUNS else "low"
    why = where
    if runs.conditional:
        level = _lower(level)
    ops = _eager_ops(model, report.node)
    if ops is not None:
        why += f"; {ops} eager array operation{'s' if ops != 1 else ''} in its body per call"
        if ops <= 1:
            level = _lower(level)
    return Impact(level, count, why)


def _lower(level: str) -> str:
    return {"high": "medium", "medium": "low"}.get(level, level)


def _eager_ops(model: SemanticModel, node: cst.CSTNode) -> int | None:
    """The array operations a reported function issues from its own body, each dispatched on its
    own when it runs eagerly (counted when the model was built)."""
    if not model.analysed:
        return None
    fn = model.function_of_def.get(node) if isinstance(node, cst.FunctionDef) else next(
        (f for d, f in model.function_of_def.items() if d.name is node), None)
    if fn is None:
        return None
    return fn.array_ops


def describe_runs(runs: Runs) -> str:
    """`runs 5,000 times: once per iteration of the 5,000-iteration loop at line 40`; the loops
    innermost first, each with where its count comes from."""
    if runs.traced:
        return ("runs inside code JAX traces (a jitted function, a `lax.scan` body or what they call): as "
                "often as the compiled program runs, which the file does not show")
    if not runs.loops:
        return "runs once as far as this file shows (no loop around it or its callers)"
    parts = []  # each: (as the innermost, as an outer one)
    for loop in runs.loops:
        if loop.kind == "calls":
            where = f"`{loop.via}`, which this file calls from {loop.count} places (the first at line {loop.line})"
            parts.append((f"once per call of {where}", f"in each call of {where}"))
            continue
        noun = "comprehension" if loop.kind == "comprehension" else "loop"
        if loop.count is None:
            size = f"{noun} of unknown length"
        elif loop.upper:
            size = f"{noun} of up to {loop.count:,} iteration{'s' if loop.count != 1 else ''}"
        else:
            size = f"{loop.count:,}-iteration {noun}"
        text = f"the {size} at line {loop.line}"
        if loop.source:
            text += f" ({loop.source})"
        if loop.via:
            text += f", through the call to `{loop.via}`"
        if loop.conditional:
            text += ", under a condition or with an early exit"
        parts.append((f"once per iteration of {text}", f"inside {text}"))
    chain = "; ".join([parts[0][0]] + [outer for _, outer in parts[1:]])
    count = runs.count
    if count is None:
        return f"runs {chain}; {_unknown_count(runs)}"
    bound = "at most " if runs.upper else ""
    return f"runs {bound}{count:,} time{'s' if count != 1 else ''}: {chain}"


def _unknown_count(runs: Runs) -> str:
    """What an unknown count depends on. The file does not say it only when what it depends on
    is left unset there (a parameter no call passes); a name bound several times, an attribute or
    a data loader's length may well be in the file without this analysis working it out."""
    unknown = [loop for loop in runs.loops if loop.count is None]
    depends = list(dict.fromkeys(loop.depends for loop in unknown if loop.depends))
    if not depends:
        return "this analysis cannot tell how many times"
    said = " and ".join(depends)
    if all(loop.unset for loop in unknown):
        return f"the file does not say how many times: that depends on {said}"
    return f"how many times depends on {said}"
