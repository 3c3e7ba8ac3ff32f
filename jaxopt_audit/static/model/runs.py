"""How many times a piece of code runs, as far as the file shows: the trip counts of the loops
around it, and of the loops that call the function holding it.

A count comes from a literal (`range(5000)`, a name bound once to one), a parameter's literal
default (`def train(steps=5000)`), or a configuration value the file sets in exactly one way
(`parser.add_argument("--steps", default=5000)`, a dataclass field `steps: int = 5000`,
`config.steps = 5000`, `dict(steps=5000)`). Anything else (a data loader, `while True`, a count
read from the command line without a default) is unknown, and the answer says so rather than
guessing. `Runs.count` is an upper bound when the code sits under a condition inside the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from ..syntax.walk import int_value, string_value, walk
from .core import SemanticModel
from .enclosing import condition_around
from .facts import fact
from .index import Function, Loop, Site
from .loops import exits_early, literal_trip_count

# how far up the chain of callers a count is followed (a step called by a train function called
# by a sweep): further than this the file rarely says more
_CALLER_DEPTH = 3


@dataclass(frozen=True)
class LoopCount:
    """One loop around the code: its line, its trip count (None: unknown) and where that came from."""

    line: int
    count: int | None
    source: str = ""  # "" for a literal; else e.g. "the default of `--steps`"
    conditional: bool = False  # the code runs only on some of its iterations
    via: str = ""  # the function whose call sits in this loop, when the code is reached through it
    kind: str = "loop"  # "loop"; "comprehension" (a call in one); "calls" (`count` call sites)


@dataclass(frozen=True)
class Runs:
    """The loops that make a piece of code run repeatedly, innermost first."""

    loops: tuple[LoopCount, ...] = field(default_factory=tuple)
    # the code is traced (a jitted function's body, a `lax.scan` body, what they call): it runs as
    # often as the compiled program runs, which the file does not show
    traced: bool = False

    @property
    def count(self) -> int | None:
        """Times the code runs: the product of the trip counts; None when any is unknown or the
        code is traced; 1 outside every loop."""
        if self.traced:
            return None
        total = 1
        for loop in self.loops:
            if loop.count is None:
                return None
            total *= loop.count
        return total

    @property
    def conditional(self) -> bool:
        return any(loop.conditional for loop in self.loops)


def runs_of(model: SemanticModel, node: cst.CSTNode) -> Runs:
    """The loops that repeat `node`: those around it in its own function, then, for a function's
    body (or its `def`), the loops around the calls to that function, up the callers."""
    fn = _function_at(model, node)
    if fn is None:
        return Runs()
    about_the_function = node is fn.node or (isinstance(fn.node, cst.FunctionDef) and node is fn.node.name)
    # a finding about a function as a whole (JAX101 at its `def`) counts its eager calls, wherever
    # else JAX may trace it; one inside its body runs as often as the compiled program when traced
    if not about_the_function and model.analysed and any(scope.traced for scope in _enclosing_functions(fn)):
        return Runs(traced=True)
    loops: list[LoopCount] = []
    if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
        own = _iterations(model, node.for_in.iter)  # a finding about the comprehension's items
        loops.append(LoopCount(model.line_of(node), own, "", False, "", "comprehension"))
    if not about_the_function:
        loops.extend(_enclosing_counts(model, fn, node))
    if not fn.is_module:
        loops.extend(_caller_counts(model, fn, _CALLER_DEPTH))
    return Runs(tuple(loops))


def _enclosing_functions(fn: Function) -> list[Function]:
    scopes = []
    current: Function | None = fn
    while current is not None and not current.is_module:
        scopes.append(current)
        current = current.parent
    return scopes


def _function_at(model: SemanticModel, node: cst.CSTNode) -> Function | None:
    """The innermost function (or the module) whose body holds `node`; a `def` is its own."""
    for fn in model.functions:
        if fn.node is node:
            return fn
    spans = _spans(model)
    target = model.positions.get(node)
    if target is None:
        return None
    best: Function | None = None
    best_size = None
    for fn, (first, last) in spans.functions.items():
        if first <= target.line <= last and (best_size is None or last - first < best_size):
            best, best_size = fn, last - first
    return best if best is not None else model.module_function


@dataclass
class _Spans:
    functions: dict[Function, tuple[int, int]]
    loops: dict[Loop, tuple[int, int]]


@fact
def _spans(model: SemanticModel) -> _Spans:
    """The first and last line of every function and loop of the file (for finding which ones
    hold a reported node)."""
    functions: dict[Function, tuple[int, int]] = {}
    loops: dict[Loop, tuple[int, int]] = {}
    for fn in model.functions:
        if not fn.is_module and isinstance(fn.node, cst.FunctionDef):
            span = model.positions.get(fn.node)
            if span is not None:
                functions[fn] = (span.line, span.end_line)
        for loop in fn.loops:
            span = model.positions.get(loop.node)
            if span is not None:
                loops[loop] = (span.line, span.end_line)
    return _Spans(functions, loops)


def _enclosing_counts(model: SemanticModel, fn: Function, node: cst.CSTNode) -> list[LoopCount]:
    """The loops of `fn` around `node`, innermost first."""
    spans = _spans(model)
    target = model.positions.get(node)
    if target is None:
        return []
    around = [loop for loop in fn.loops
              if (span := spans.loops.get(loop)) is not None and span[0] <= target.line <= span[1]]
    if not around:
        return []
    innermost = max(around, key=lambda loop: spans.loops[loop][0])
    conditional = condition_around(fn, node, innermost) is not None  # it runs on some iterations only
    counts = []
    for i, loop in enumerate(innermost.outward()):
        counts.append(_count(model, loop, conditional=conditional and i == 0))
    return counts


@fact
def _callers(model: SemanticModel) -> dict[Function, list[Site]]:
    """The call sites of each function of the file, in other functions, in walk order."""
    found: dict[Function, list[Site]] = {}
    for caller in model.functions:
        for site in caller.calls:
            target = model.callee(site.node, caller).function
            if target is not None and target is not caller:
                found.setdefault(target, []).append(site)
    return found


def callers_of(model: SemanticModel, fn: Function) -> list[Site]:
    """Where the file calls `fn` from its other functions (or the module), in walk order."""
    return _callers(model).get(fn, [])


def _caller_counts(model: SemanticModel, fn: Function, depth: int) -> list[LoopCount]:
    """The loops around a call to `fn` in this file: its recorded per-step call site when it has
    one, else the first call inside a loop; then the loops around the caller's own callers."""
    if depth <= 0:
        return []
    calls = callers_of(model, fn)
    sites = list(fn.step_call_sites) or [site for site in calls if site.loop is not None]
    if not sites:
        sites = calls
        if len(sites) > 1:  # called from several places, each once as far as the file shows
            return [LoopCount(model.line_of(sites[0].node), len(sites), "", False, fn.name, "calls")]
        if not sites:
            return []
        caller = sites[0].function
        around = _comprehension_count(model, sites[0], fn.name)
        return ([around] if around is not None else []) + (
            [] if caller.is_module else _caller_counts(model, caller, depth - 1))
    site = sites[0]
    caller = site.function
    called = model.callee(site.node, caller).function
    via = called.name if called is not None else fn.name
    counts: list[LoopCount] = []
    if site.loop is not None:
        for i, loop in enumerate(site.loop.outward()):
            counts.append(_count(model, loop, conditional=site.guarded and i == 0, via=via if i == 0 else ""))
    if not caller.is_module:
        counts.extend(_caller_counts(model, caller, depth - 1))
    return counts


def _comprehension_count(model: SemanticModel, site: Site, via: str) -> LoopCount | None:
    """The comprehension around a call, if any (`[run(k) for k in range(30)]`), with its
    count when a literal gives it."""
    for comp in site.function.comprehensions:
        node = comp.node
        element = node.elt if not isinstance(node, cst.DictComp) else node.value
        if any(n is site.node for n in walk(element)):
            return LoopCount(model.line_of(node), _iterations(model, node.for_in.iter), "", False, via,
                             "comprehension")
    return None


def _iterations(model: SemanticModel, it: cst.BaseExpression) -> int | None:
    """A comprehension's literal count: `range(30)`, a written-out list or tuple."""
    if isinstance(it, (cst.List, cst.Tuple)):
        return len(it.elements)
    if isinstance(it, cst.Call) and model.resolve(it.func) == "builtins.range" \
            and len(it.args) == 1 and it.args[0].keyword is None:
        return _int_literal(it.args[0].value)
    return None


def _count(model: SemanticModel, loop: Loop, conditional: bool = False, via: str = "") -> LoopCount:
    line = model.line_of(loop.node)
    conditional = conditional or exits_early(loop)  # a `break`: the count is an upper bound
    literal = literal_trip_count(loop, model.resolve)
    if literal is not None:
        return LoopCount(line, literal, "", conditional, via)
    configured = configured_trip_count(model, loop)
    if configured is not None:
        return LoopCount(line, configured[0], configured[1], conditional, via)
    return LoopCount(line, None, "", conditional, via)


def configured_trip_count(model: SemanticModel, loop: Loop) -> tuple[int, str] | None:
    """`range(X)` whose bound the file configures in exactly one way."""
    node = loop.node
    if not isinstance(node, cst.For) or not isinstance(node.iter, cst.Call):
        return None
    if model.resolve(node.iter.func) != "builtins.range":
        return None
    args = [a.value for a in node.iter.args if a.keyword is None]
    if len(args) != 1:
        return None
    return configured_int(model, args[0], loop.function)


def configured_int(model: SemanticModel, bound: cst.BaseExpression, fn: Function) -> tuple[int, str] | None:
    """The integer a name or attribute read in `fn` holds when the file sets it in exactly one
    way: a parameter's literal default, or a configuration value (see `_configured_values`),
    with where it came from."""
    if isinstance(bound, cst.Name):
        default = _parameter_default(fn, bound.value)
        if default is not None:
            return default, f"the default of parameter `{bound.value}`"
        name = bound.value
    elif isinstance(bound, cst.Attribute):
        name = bound.attr.value
    else:
        return None
    values = _configured_values(model).get(name.lower().lstrip("_"))
    if values is not None and len(values) == 1:
        value = next(iter(values))
        return value, f"`{name}` as the file configures it ({value:,})"
    return None


def _parameter_default(fn: Function, name: str) -> int | None:
    node = fn.node
    if not isinstance(node, cst.FunctionDef):
        return None
    for param in (*node.params.params, *node.params.kwonly_params):
        if param.name.value == name and param.default is not None:
            return _int_literal(param.default)
    return None


def _int_literal(node: cst.BaseExpression) -> int | None:
    """`5000`, `5_000`, `int(1e4)`, `1e4` written as an integral float."""
    value = int_value(node)
    if value is not None:
        return value
    if isinstance(node, cst.Float):
        try:
            number = float(node.value.replace("_", ""))
        except ValueError:
            return None
        return int(number) if number.is_integer() else None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "int" \
            and len(node.args) == 1:
        return _int_literal(node.args[0].value)
    return None


@fact
def _configured_values(model: SemanticModel) -> dict[str, set[int]]:
    """Integer settings the file writes down, by name: argparse defaults (`--num-steps` is
    `num_steps`), absl flags, class-level fields (`steps: int = 5000`), attribute assignments
    (`config.steps = 5000`), class attributes (`epochs = 200` in a class body), dict literals and
    keyword arguments (`dict(steps=5000)`)."""
    found: dict[str, set[int]] = {}

    def add(name: str | None, value: cst.BaseExpression | None) -> None:
        if not name or value is None:
            return
        number = _int_literal(value)
        if number is not None:
            found.setdefault(name.lower().lstrip("-_").replace("-", "_"), set()).add(number)

    for node in walk(model.module):
        if isinstance(node, cst.Call):
            _add_call(node, add)
        elif isinstance(node, cst.AnnAssign) and isinstance(node.target, cst.Name):
            add(node.target.value, node.value)
        elif isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Attribute):
                    add(target.target.attr.value, node.value)
        elif isinstance(node, cst.ClassDef):
            for statement in node.body.body:  # class-level settings: `epochs = 200`
                if isinstance(statement, cst.SimpleStatementLine):
                    for small in statement.body:
                        if isinstance(small, cst.Assign):
                            for target in small.targets:
                                if isinstance(target.target, cst.Name):
                                    add(target.target.value, small.value)
        elif isinstance(node, cst.DictElement):
            add(string_value(node.key), node.value)
    return found


def _add_call(call: cst.Call, add: Callable[[str | None, cst.BaseExpression | None], None]) -> None:
    """The settings a call writes down: `add_argument("--steps", default=N)` (its dest),
    `flags.DEFINE_integer("steps", N, ...)`, and keyword arguments (`dict(steps=N)`)."""
    keyword = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    func = call.func
    method = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    positional = [a.value for a in call.args if a.keyword is None]
    if method == "add_argument":
        flags = [text for a in positional if (text := string_value(a)) is not None]
        dest = string_value(keyword["dest"]) if "dest" in keyword else None
        if dest is None:
            long = [f for f in flags if f.startswith("--")]
            dest = (long or flags)[0] if (long or flags) else None
        add(dest, keyword.get("default"))
    elif method.startswith("DEFINE_") and positional:
        add(string_value(positional[0]), positional[1] if len(positional) > 1 else keyword.get("default"))
    else:
        for name, value in keyword.items():
            add(name, value)
