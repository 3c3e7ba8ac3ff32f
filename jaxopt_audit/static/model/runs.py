"""How many times a piece of code runs, as far as the file shows: the trip counts of the loops
around it, and of the loops that call the function holding it.

A count comes from a literal (`range(5000)`, a name bound once to one), simple arithmetic of
those (`N_STEPS = 10 * 500` at module level), what the file's calls pass for a parameter
(`train(200)`, or the largest value when its calls pass different ones), a parameter's literal
default (`def train(steps=5000)`), or a configuration value the file sets in exactly one way
(`parser.add_argument("--steps", default=5000)`, a dataclass field `steps: int = 5000`,
`config.steps = 5000`, `dict(steps=5000)`); a progress bar around the iterable
(`tqdm(range(n))`, also bound to a name first) leaves the count as it is, and evenly spaced points
(`np.linspace(0, 1, 24)`) count as many items. Anything else (a data loader, `while True`, a count
read from the command line without a default) is unknown, and the answer names what it depends on
rather than guessing. `Runs.count` is an upper bound when the code sits under a condition inside
the loop, or when the calls pass different counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import libcst as cst

from ..syntax.walk import describe, int_value, string_value, walk
from .core import SemanticModel
from .enclosing import condition_around
from .facts import answers, fact
from .index import Function, Loop, Site
from .loops import PROGRESS_BARS, exits_early, literal_trip_count

# how far up the chain of callers a count is followed (a step called by a train function called
# by a sweep): further than this the file rarely says more
_CALLER_DEPTH = 3
# how far a count is followed through names and arguments (`range(n)`, `n` a parameter, passed
# `steps` by a caller, itself a parameter given `200` by its own caller)
_VALUE_DEPTH = 4


@dataclass(frozen=True)
class LoopCount:
    """One loop around the code: its line, its trip count (None: unknown) and where that came from."""

    line: int
    count: int | None
    source: str = ""  # "" for a literal; else e.g. "the default of `--steps`"
    conditional: bool = False  # the code runs only on some of its iterations
    via: str = ""  # the function whose call sits in this loop, when the code is reached through it
    kind: str = "loop"  # "loop"; "comprehension" (a call in one); "calls" (`count` call sites)
    upper: bool = False  # `count` is the largest of the counts the file's calls pass
    # when `count` is None: what the count depends on (`self.n_steps`, the argument `n`), and
    # whether the file leaves it unset (a parameter without a default that no call passes)
    depends: str = ""
    unset: bool = False


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

    @property
    def upper(self) -> bool:
        """`count` is an upper bound: under a condition, or the largest of several passed counts."""
        return self.conditional or any(loop.upper for loop in self.loops)


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
        own = _iterations(model, node.for_in.iter, fn)  # a finding about the comprehension's items
        loops.append(_loop_count(model.line_of(node), own, False, "", "comprehension"))
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
            return _loop_count(model.line_of(node), _iterations(model, node.for_in.iter, site.function), False,
                               via, "comprehension")
    return None


def _iterations(model: SemanticModel, it: cst.BaseExpression, fn: Function) -> _Value:
    """A comprehension's count: `range(30)`, a written-out list or tuple, a count the file shows."""
    if isinstance(it, (cst.List, cst.Tuple)):
        return _Value(len(it.elements))
    return _iterated(model, it, fn, 0)


def _count(model: SemanticModel, loop: Loop, conditional: bool = False, via: str = "") -> LoopCount:
    line = model.line_of(loop.node)
    conditional = conditional or exits_early(loop)  # a `break`: the count is an upper bound
    literal = literal_trip_count(loop, model.resolve)
    if literal is not None:
        return LoopCount(line, literal, "", conditional, via)
    node = loop.node
    if isinstance(node, cst.For):
        shown = _iterated(model, node.iter, loop.function, 0)
    else:
        shown = _Value(None, depends=f"when the `while` loop at line {line} stops")
    return _loop_count(line, shown, conditional, via)


def _loop_count(line: int, value: _Value, conditional: bool, via: str, kind: str = "loop") -> LoopCount:
    return LoopCount(line, value.number, value.source, conditional, via, kind, value.upper, value.depends,
                     value.unset)


@dataclass(frozen=True)
class _Value:
    """An integer as the file shows it: the number and where it comes from ("" for a literal
    in place), or, when the file does not give one, what it depends on."""

    number: int | None
    source: str = ""
    upper: bool = False  # the largest of the values the file's calls pass
    depends: str = ""
    unset: bool = False  # a parameter without a default that no call of the file passes


def _iterated(model: SemanticModel, it: cst.BaseExpression, fn: Function, depth: int) -> _Value:
    """How many items a loop over `it` takes: a `range` whose bounds the file shows, through
    `enumerate`, `zip` (its shortest argument) and progress bars."""
    unknown = _Value(None, depends=f"the length of `{describe(it)}`")
    if isinstance(it, (cst.List, cst.Tuple)) and not any(isinstance(e, cst.StarredElement) for e in it.elements):
        return _Value(len(it.elements))
    if isinstance(it, cst.Name) and depth < 2:
        # `bar = tqdm(range(n))`, `grid = np.linspace(0, 1, 24)`: what the name holds; a written-out
        # list is the literal count's to judge (it may be grown after)
        scope = fn.binding_scope(it.value)
        bound = _sole_value(model, scope, it.value) if scope is not None else None
        if bound is not None and scope is not None and not isinstance(bound, (cst.List, cst.Tuple)):
            return _iterated(model, bound, scope, depth + 1)
        return unknown
    if not isinstance(it, cst.Call) or any(a.star for a in it.args):
        return unknown
    q = model.resolve(it.func) or ""
    short = q.rsplit(".", 1)[-1]
    positional = [a.value for a in it.args if a.keyword is None]
    if q == "builtins.range" or short == "trange" and not q.startswith("builtins."):
        return _range(model, positional, fn, depth) if positional else unknown
    if q in _SPACED and len(positional) >= 2 and all(_is_number(a) for a in positional[:2]):
        # `np.linspace(0.1, 2.0, 24)`: `num` points (50 unless given) along one axis
        num = positional[2] if len(positional) > 2 else next(
            (a.value for a in it.args if a.keyword is not None and a.keyword.value == "num"), None)
        return _evaluated(model, num, fn, depth) if num is not None else _Value(50, f"`{short}`'s default of 50 points")
    if (q in ("builtins.enumerate", "builtins.reversed") or short in PROGRESS_BARS
            and not q.startswith("builtins.")) and positional:
        return _iterated(model, positional[0], fn, depth)
    if q == "builtins.zip" and positional:
        counts = [_iterated(model, a, fn, depth) for a in positional]
        known = [c for c in counts if c.number is not None]
        if known:
            return min(known, key=lambda c: c.number or 0)
        return counts[0]
    return unknown


# evenly spaced points: iterating over them takes `num` items
_SPACED = frozenset(f"{lib}.{name}" for lib in ("numpy", "jax.numpy") for name in ("linspace", "geomspace", "logspace"))


def _is_number(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _sole_value(model: SemanticModel, scope: Function, name: str) -> cst.BaseExpression | None:
    """The value of `name`'s one binding in `scope`: not a parameter, not augmented, not rebound
    through `global` by a function of the file."""
    if name in scope.params:
        return None
    bindings = scope.bindings(name)
    if len(bindings) != 1 or bindings[0].augmented:
        return None
    if scope.is_module and any(name in other.global_names and other.bindings(name) for other in model.functions):
        return None
    return bindings[0].value


def _range(model: SemanticModel, args: list[cst.BaseExpression], fn: Function, depth: int) -> _Value:
    """`range(n)`, `range(a, b, s)`; `range(start, start + n)` takes `n` items whatever `start`."""
    if len(args) == 1:
        return _clamped(_evaluated(model, args[0], fn, depth))
    start, stop = args[0], args[1]
    step = _evaluated(model, args[2], fn, depth) if len(args) > 2 else _Value(1)
    if step.number == 1 and isinstance(stop, cst.BinaryOperation) and isinstance(stop.operator, cst.Add) \
            and stop.left.deep_equals(start):
        return _clamped(_evaluated(model, stop.right, fn, depth))
    values = [_evaluated(model, start, fn, depth), _evaluated(model, stop, fn, depth), step]
    missing = next((v for v in values if v.number is None), None)
    if missing is not None:
        return missing
    first, last, stride = (v.number or 0 for v in values)
    if not stride or any(v.upper for v in values):
        return _Value(None, depends=f"the bounds of `range({', '.join(describe(a) for a in args)})`")
    return _Value(len(range(first, last, stride)), _joined(v.source for v in values))


def _clamped(value: _Value) -> _Value:
    if value.number is not None and value.number < 0:
        return _Value(0, value.source)
    return value


def _joined(sources: Iterable[str]) -> str:
    return "; ".join(s for s in sources if s)


def _evaluated(model: SemanticModel, expr: cst.BaseExpression, fn: Function, depth: int) -> _Value:
    """The integer `expr`, read in `fn`, holds as far as the file shows: a literal, arithmetic
    of such, a name bound once to one, what the file's calls pass for a parameter, or a
    configured value; else what it depends on."""
    literal = _int_literal(expr)
    if literal is not None:
        return _Value(literal)
    if depth > _VALUE_DEPTH:
        return _Value(None, depends=f"`{describe(expr)}`")
    # a parameter's value is asked of each call site, and theirs of their callers': each question
    # answered once keeps a file of many calls passing names to many calls linear
    known = answers(model, _evaluated)
    key = (id(expr), id(fn), depth)
    if key not in known:
        known[key] = _evaluated_once(model, expr, fn, depth)
    return known[key]


def _evaluated_once(model: SemanticModel, expr: cst.BaseExpression, fn: Function, depth: int) -> _Value:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _evaluated(model, expr.expression, fn, depth + 1)
        if inner.number is None or inner.upper:  # a negated bound bounds nothing
            return inner if inner.number is None else _Value(None, depends=f"`{describe(expr)}`")
        return _Value(-inner.number, inner.source)
    if isinstance(expr, cst.BinaryOperation):
        return _arithmetic(model, expr, fn, depth)
    if isinstance(expr, cst.Name):
        return _name_value(model, expr, fn, depth)
    if isinstance(expr, cst.Attribute):
        configured = configured_int(model, expr, fn)
        if configured is not None:
            return _Value(*configured)
        return _Value(None, depends=f"`{describe(expr)}`")
    if isinstance(expr, cst.Call) and model.resolve(expr.func) == "builtins.len" and expr.args:
        return _Value(None, depends=f"the length of `{describe(expr.args[0].value)}`")
    if isinstance(expr, cst.Call) and model.resolve(expr.func) == "builtins.int" and len(expr.args) == 1:
        return _evaluated(model, expr.args[0].value, fn, depth + 1)
    return _Value(None, depends=f"`{describe(expr)}`")


_OPERATORS: dict[type, Callable[[int, int], int | None]] = {
    cst.Add: lambda a, b: a + b,
    cst.Subtract: lambda a, b: a - b,
    cst.Multiply: lambda a, b: a * b,
    cst.FloorDivide: lambda a, b: a // b if b else None,
    cst.Divide: lambda a, b: a // b if b and a % b == 0 else None,  # `int(n / 2)` and exact halves
    cst.Power: lambda a, b: a ** b if 0 <= b <= 64 else None,
}


def _arithmetic(model: SemanticModel, expr: cst.BinaryOperation, fn: Function, depth: int) -> _Value:
    operate = _OPERATORS.get(type(expr.operator))
    if operate is None:
        return _Value(None, depends=f"`{describe(expr)}`")
    left = _evaluated(model, expr.left, fn, depth + 1)
    right = _evaluated(model, expr.right, fn, depth + 1)
    for side in (left, right):
        if side.number is None:
            return side
    upper = left.upper or right.upper
    # the largest of several counts bounds a sum or product of counts, not a difference or quotient
    if upper and not (isinstance(expr.operator, (cst.Add, cst.Multiply))
                      and (left.number or 0) >= 0 and (right.number or 0) >= 0):
        return _Value(None, depends=f"`{describe(expr)}`")
    number = operate(left.number or 0, right.number or 0)
    if number is None:
        return _Value(None, depends=f"`{describe(expr)}`")
    return _Value(number, _joined((left.source, right.source)), upper)


def _name_value(model: SemanticModel, name: cst.Name, fn: Function, depth: int) -> _Value:
    scope = fn.binding_scope(name.value)
    if scope is None:
        return _Value(None, depends=f"`{name.value}`")
    if name.value in scope.params:
        return _argument_value(model, scope, name.value, depth)
    bindings = scope.bindings(name.value)
    bound = _sole_value(model, scope, name.value)
    if bound is not None:
        binding = bindings[0]
        value = _evaluated(model, bound, scope, depth + 1)
        if value.number is not None and not value.source and _int_literal(bound) is not None \
                and scope is fn:
            return value  # `n = 10` above `range(n)`: as plain as the literal
        if value.number is not None:
            line = model.line_of(binding.site.node)
            # `N = 4 * 500`: the number; `n = cfg.steps`: where the number comes from, after
            here = f"`{name.value}` from line {line}" if value.source \
                else f"`{name.value}` is {value.number:,} at line {line}"
            return _Value(value.number, _joined((here, value.source)), value.upper)
        return value
    configured = configured_int(model, name, fn)
    if configured is not None:
        return _Value(*configured)
    places = len(bindings)
    return _Value(None, depends=f"`{name.value}`, which the file binds in {places} places" if places > 1
                  else f"`{name.value}`")


def _argument_value(model: SemanticModel, fn: Function, param: str, depth: int) -> _Value:
    """What the file's calls of `fn` pass for `param`: one value when they agree, the largest
    (an upper bound) when they differ; the default when no call passes it."""
    default = _parameter_default(fn, param)
    sites = callers_of(model, fn) if not fn.is_module else []
    values: list[tuple[_Value, Site[cst.Call]]] = []
    passed = False
    for site in sites:
        arg = passed_argument(site, fn, param, isinstance(site.node.func, cst.Attribute))
        if arg is not None:
            values.append((_evaluated(model, arg, site.function, depth + 1), site))
            passed = True
        elif any(a.star for a in site.node.args):  # `train(**cfg)` may pass it
            return _Value(None, depends=f"the argument `{param}` of `{fn.name}` (unpacked into the call at line "
                                        f"{model.line_of(site.node)})")
        elif default is None:
            return _Value(None, depends=f"the argument `{param}` of `{fn.name}`")
        else:
            values.append((_Value(default, f"the default of parameter `{param}`"), site))
    if not passed:
        if default is not None:
            return _Value(default, f"the default of parameter `{param}`")
        configured = configured_int(model, cst.Name(param), fn)
        if configured is not None:
            return _Value(*configured)
        return _Value(None, depends=f"the argument `{param}` of `{fn.name}`, which no call in this file passes",
                      unset=True)
    unknown = next((v for v, _ in values if v.number is None), None)
    if unknown is not None:
        if unknown.depends.startswith("the argument "):  # passed on from a caller's parameter: name that one
            return unknown
        return _Value(None, depends=f"the argument `{param}` of `{fn.name}` ({unknown.depends} at a call)"
                      if unknown.depends else f"the argument `{param}` of `{fn.name}`")
    numbers = {v.number for v, _ in values}
    largest = max((v for v, _ in values), key=lambda v: v.number or 0)
    lines = ", ".join(str(model.line_of(s.node)) for _, s in values[:3]) + (", ..." if len(values) > 3 else "")
    calls = f"the call at line {lines}" if len(values) == 1 else f"the {len(values)} calls at lines {lines}"
    if len(values) == 1 and largest.source:  # passed on from further up
        here = f"`{param}` from the call at line {lines}"
        return _Value(largest.number, _joined((here, largest.source)), largest.upper)
    if len(numbers) == 1:
        here = f"`{param}` is {largest.number:,} in {calls}"
        return _Value(largest.number, _joined((here, largest.source)), largest.upper)
    here = f"`{param}` is up to {largest.number:,} in {calls}"
    return _Value(largest.number, _joined((here, largest.source)), True)


def passed_argument(site: Site[cst.Call], fn: Function, param: str, bound_method: bool) -> cst.BaseExpression | None:
    """The expression the call passes for `param` of `fn`, by keyword or position."""
    params = fn.params[1:] if bound_method and fn.params[:1] == ["self"] else fn.params
    arg = next((a.value for a in site.node.args if a.keyword is not None and a.keyword.value == param), None)
    positional = [a for a in site.node.args if a.keyword is None]
    if arg is None and param in params and params.index(param) < len(positional) \
            and not any(a.star for a in positional[:params.index(param) + 1]):
        arg = positional[params.index(param)].value
    return arg


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
