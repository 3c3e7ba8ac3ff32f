"""The index of one file: what one walk over the libcst tree finds, and the base of the model.

The walk records each function (the module body and lambdas count as functions) with its calls,
loops, tests, subscripts and bindings, each tagged with its innermost enclosing loop and whether
it sits under a guard that selects some iterations (`if step % k == 0`, or a recovery under
`if np.isnan(loss):`). `ModelIndex` declares what the model holds and answers the questions the
index alone can (what a name means, which binding reaches a use, where a node is); the layers
above it (resolution, value kinds, jit marks, JAX work, step loops) each add one concern, and
`core.SemanticModel` runs their fixpoints in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import libcst as cst

from ..knowledge import apis
from ..syntax.names import ImportTable
from ..syntax.positions import Positions
from ..syntax.walk import own_nodes, walk

if TYPE_CHECKING:
    from .summaries import FunctionSummary, ImportedView

FunctionNode = cst.FunctionDef | cst.Lambda | cst.Module
LoopNode = cst.For | cst.While
Comprehension = cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp


@dataclass(eq=False)
class Loop:
    node: LoopNode
    function: Function
    parent: Loop | None
    guarded: bool  # the loop itself sits under a periodic guard of an enclosing loop
    counters: set[str] = field(default_factory=set)  # index variables: range/enumerate/`i += 1`
    targets: tuple[str, ...] = ()
    # computed
    is_step: bool = False  # its body does JAX work (directly or through same-module calls)
    is_epoch: bool = False  # it contains another step loop (directly or through calls)
    children: list[Loop] = field(default_factory=list)

    def outward(self) -> Iterator[Loop]:
        """This loop and the loops around it, innermost first."""
        current: Loop | None = self
        while current is not None:
            yield current
            current = current.parent

    def counters_in_scope(self) -> set[str]:
        """The counters of this loop and of every loop around it."""
        return set().union(*(loop.counters for loop in self.outward()))

    def encloses(self, other: Loop | None) -> bool:
        while other is not None:
            if other is self:
                return True
            other = other.parent
        return False


N = TypeVar("N", bound=cst.CSTNode)


@dataclass(eq=False)
class Site(Generic[N]):
    """A node together with where it sits: function, innermost loop, periodic guard."""

    node: N
    function: Function
    loop: Loop | None
    # under an `if` that selects some iterations: testing a counter of an enclosing loop (runs
    # every k steps) or testing for a diverged value (`if np.isnan(loss):`, a recovery)
    guarded: bool
    in_test: bool = False  # part of an if/while test
    discarded: bool = False  # a call that is a whole statement: its result is dropped (`opt.update(g)`)


@dataclass(eq=False)
class Assignment:
    targets: tuple[str, ...]
    value: cst.BaseExpression | None  # None: bound by a loop target, `with ... as`, etc.
    site: Site[cst.CSTNode]
    attribute_target: str | None = None  # `self.name = value`
    augmented: bool = False
    seq: int = 0  # walk order, taken after the value was walked: uses in the value come before


@dataclass(eq=False)
class Function:
    node: FunctionNode
    name: str
    qualname: str
    parent: Function | None
    cls: ClassInfo | None
    params: list[str]
    param_annotations: dict[str, str | None]
    decorators: list[cst.Decorator]
    calls: list[Site[cst.Call]] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    # If/While tests, IfExp tests, BooleanOperation, not
    tests: list[Site[cst.BaseExpression | cst.If | cst.While]] = field(default_factory=list)
    subscripts: list[Site[cst.Subscript]] = field(default_factory=list)
    fstrings: list[Site[cst.FormattedString]] = field(default_factory=list)
    # list/set/dict comprehensions, generator expressions
    comprehensions: list[Site[Comprehension]] = field(default_factory=list)
    # binary operators and comparisons
    operations: list[Site[cst.BinaryOperation | cst.Comparison]] = field(default_factory=list)
    returns: list[cst.BaseExpression] = field(default_factory=list)
    nested: dict[str, Function] = field(default_factory=dict)
    global_names: set[str] = field(default_factory=set)
    nonlocal_names: set[str] = field(default_factory=set)
    host_names: set[str] = field(default_factory=set)  # rebound somewhere from a host pull
    # computed by the model
    jit_sites: list[cst.CSTNode] = field(default_factory=list)
    # its own name calls compiled code: decorated, or rebound as `f = jax.jit(f)`; a call through
    # the plain name of a function jitted only as `g = jax.jit(f)` still runs eagerly
    direct_jit: bool = False
    static_params: set[str] = field(default_factory=set)
    transform_roots: list[str] = field(default_factory=list)  # e.g. "jax.lax.scan"
    traced: bool = False
    array_params: set[str] = field(default_factory=set)
    array_names: set[str] = field(default_factory=set)
    does_jax_work: bool = False
    does_array_work: bool = False
    array_ops: int = 0  # eager array operations in its own body: calls, operators, indexing
    uses_scan: bool = False
    contains_step_loop: bool = False
    per_step: bool = False  # a host function the step loop calls every step (dispatched_per_step)
    step_call_sites: list[Site[cst.Call]] = field(default_factory=list)
    _binding_index: dict[str, list[Assignment]] | None = field(default=None, repr=False)
    _indexed_count: int = field(default=0, repr=False)

    @property
    def is_module(self) -> bool:
        return isinstance(self.node, cst.Module)

    @property
    def body(self) -> cst.CSTNode:
        """What runs when it is called: the statements of a def, a lambda's expression, a module."""
        node = self.node
        return node if isinstance(node, cst.Module) else node.body

    @property
    def jitted(self) -> bool:
        """Compiled somewhere: by a decorator, `f = jax.jit(f)`, or `g = jax.jit(f)`."""
        return bool(self.jit_sites)

    def reads(self, name: str, own: bool = False) -> int:
        """How many times the body reads `name`: its occurrences that neither bind it nor name a
        keyword argument; nested functions' included, or with `own` only the body's own scope.
        Walks the body: for the few names a rule asks about."""
        nodes = list(own_nodes(self.body) if own else walk(self.body))
        keywords = {id(n.keyword) for n in nodes if isinstance(n, cst.Arg) and n.keyword is not None}
        occurrences = sum(1 for n in nodes if isinstance(n, cst.Name) and n.value == name and id(n) not in keywords)
        return occurrences - len(self.bindings(name))

    def binds_unread(self, value: cst.BaseExpression) -> bool:
        """`value` is bound to one plain local name that nothing reads (`subkeys = split(key,
        n)` left over, `jitted = jax.jit(run)` never called). An attribute (`self.keys = ...`) is
        read by other methods."""
        bound = self._sole_binding(value)
        return bound is not None and self.reads(bound.targets[0]) == 0

    def rebound_before_read(self, value: cst.BaseExpression, name_seq: dict[int, int]) -> bool:
        """`value` is bound to one plain local name that the next statements of the same block
        bind again before anything reads it (`keys = split(key, 12)`, then `keys = split(key,
        n)`: a UNet's leftover first split). No jump (`break`, `continue`, `return`,
        `raise`) may lie between, so the second binding surely runs."""
        first = self._sole_binding(value)
        if first is None:
            return False
        name = first.targets[0]
        later = [a for a in self.bindings(name) if a.seq > first.seq]
        if not later:
            return False
        second = min(later, key=lambda a: a.seq)
        if second.value is None or second.augmented or not _in_one_block(self.body, first.site.node,
                                                                          second.site.node):
            return False
        return not any(isinstance(n, cst.Name) and n.value == name
                       and first.seq < name_seq.get(id(n), -1) < second.seq for n in walk(self.body))

    def _sole_binding(self, value: cst.BaseExpression) -> Assignment | None:
        """The one assignment of `value` to one plain local name; None at module level, where a
        script's or notebook's global may be read by code the scan does not see."""
        if self.is_module:
            return None
        bound = [a for a in self.assignments if a.value is value]
        if len(bound) != 1 or len(bound[0].targets) != 1 or not bound[0].targets[0].isidentifier():
            return None
        return bound[0]

    def bindings(self, name: str) -> list[Assignment]:
        index = self._binding_index
        if index is None or self._indexed_count != len(self.assignments):
            index = {}
            for a in self.assignments:
                for target in a.targets:
                    index.setdefault(target, []).append(a)
            self._binding_index, self._indexed_count = index, len(self.assignments)
        return index.get(name, [])

    def scopes(self) -> Iterator[Function]:
        """This function and those it is nested in, innermost first, the module last: the
        order in which Python resolves a free name."""
        current: Function | None = self
        while current is not None:
            yield current
            current = current.parent

    def binding_scope(self, name: str) -> Function | None:
        """The function (or module) whose binding of `name` this function sees: the innermost
        scope that binds it or has it as a parameter. None for builtins and undefined names."""
        return next((s for s in self.scopes() if name in s.params or s.bindings(name)), None)


_JUMPS = (cst.Break, cst.Continue, cst.Return, cst.Raise)


def _in_one_block(body: cst.CSTNode, first: cst.CSTNode, second: cst.CSTNode) -> bool:
    """`first` lies in a plain statement of a block and `second` in a later plain statement of
    the same block, with no jump between them."""
    for block in own_nodes(body):
        statements = getattr(block, "body", None)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)) or not isinstance(statements, (list, tuple)):
            continue
        index = {id(n): i for i, statement in enumerate(statements)
                 if isinstance(statement, cst.SimpleStatementLine) for n in walk(statement)}
        i, j = index.get(id(first)), index.get(id(second))
        if i is None or j is None:
            continue
        return i < j and not any(isinstance(n, _JUMPS) for statement in statements[i:j] for n in walk(statement))
    return False


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    name: str
    bases: list[str | None]
    methods: dict[str, Function] = field(default_factory=dict)
    attribute_values: dict[str, list[tuple[cst.BaseExpression, Function]]] = field(default_factory=dict)

    @property
    def is_jax_module(self) -> bool:
        """A flax/equinox/haiku module: instances are models whose calls do JAX work."""
        return any(b is not None and b.split(".")[0] in apis.JAX_ROOTS for b in self.bases)


@dataclass(frozen=True)
class Callee:
    """What a call expression calls, as far as the file says."""

    qualname: str | None  # resolved library name (`jax.numpy.sum`) when it is an import
    function: Function | None = None  # same-module function or method
    jitted: bool = False  # a jit-wrapped callable (decorated, `jax.jit(f)` result, ...)
    transform: str | None = None  # `jax.grad(f)(x)`: the transform whose result is called
    cls: ClassInfo | None = None  # calling a same-module class (construction)
    imported: FunctionSummary | None = None  # a function of another scanned module (project.py)


@dataclass(frozen=True)
class TraceRoot:
    """A place that hands a function of this module to `jit` or to a tracing transform: the one
    list both the jit marks (here) and the tracer analysis (tracers.py) read."""

    function: Function
    wrapper: str  # the jit wrapper or transform (`jax.jit`, `jax.vmap`, `jax.lax.scan`)
    options: tuple[cst.Arg, ...]  # the wrapper's other arguments: `static_argnums=`, `in_axes=`
    site: cst.CSTNode  # the decorator or the call
    scope: Function  # where the site is
    # the expression naming the function (`partial(step, cfg)`); None for a decorator
    ref: cst.BaseExpression | None
    # "decorator"; "call" (`jax.jit(f)`, `partial(jax.jit, ...)(f)`, `jax.vmap(f)`); "factory"
    # (`jax.jit(make_step(cfg))`: a function the factory returns); "inner" (`jax.jit(jax.grad(f))`)
    via: str


class ModelIndex:
    """What the model of a file holds; filled by `SemanticModel.__init__` and its passes."""

    module: cst.Module
    cells: list[int] | None  # a notebook's cell for each program line
    project: ImportedView | None  # the functions it imports from other scanned modules
    source: str | None  # the decoded text, when the caller has it (cheap text prefilters)
    path: str
    package: str
    rescan: Callable[[str, Iterable[str]], int | None] | None
    imports: ImportTable
    functions: list[Function]
    classes: dict[str, ClassInfo]
    class_of_body: dict[int, ClassInfo]
    function_of_def: dict[cst.FunctionDef, Function]
    lambdas: dict[cst.Lambda, Function]
    module_function: Function
    name_seq: dict[int, int]
    host_callback_functions: set[int]  # ids; filled by the traced pass
    facts: dict[Callable[..., Any], Any]  # every derived answer, by the function that computes it (facts.py)
    trace_roots: list[TraceRoot]
    analysed: bool
    _positions: Positions | None
    _module_values_static: bool
    _kind_cache: dict[tuple, str | None]
    _callee_cache: dict[cst.Call, Callee]

    def release(self) -> None:
        """Break the model's reference cycles (a Function and its Sites and Loops, the model and its
        fact caches) once its file is done: reference counting then frees the file's syntax tree
        and model at once, where the cyclic collector would traverse every node first (a twentieth
        of a cold scan). The model answers nothing after this."""
        for fn in self.functions:
            for loop in fn.loops:
                vars(loop).clear()
            vars(fn).clear()
        for cls in self.classes.values():
            vars(cls).clear()
        vars(self).clear()

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """What a name means: its import, with old re-exports read as what they were
        (`from jax import partial` is `functools.partial`; JAX601 reports the spelling)."""
        q = self.imports.resolve(expr)
        return apis.REEXPORTED.get(q, q) if q is not None else None

    def reaching_binding(self, use: cst.Name, fn: Function) -> Assignment | None:
        """The latest binding of `use`'s name in `fn` before the use, in walk order; None before
        any (a parameter, a captured or loop-carried value)."""
        seq = self.name_seq.get(id(use))
        if seq is None:
            return None
        before = [a for a in fn.bindings(use.value) if a.seq < seq]
        return before[-1] if before else None

    @property
    def positions(self) -> Positions:
        """Node positions, computed on first use and only for the statements asked about."""
        if self._positions is None:
            self._positions = Positions(self.module, self.source)
        return self._positions

    def line_of(self, node: cst.CSTNode) -> int:
        span = self.positions.get(node)
        return span.line if span is not None else 0

    def source_line(self, line: int) -> str:
        """The text of source line `line` (1-based), as parsed; empty past the end."""
        return self.positions.line(line)

    def cell_of(self, node: cst.CSTNode) -> int | None:
        """The notebook cell holding the node; None outside notebooks."""
        line = self.line_of(node)
        if self.cells is None or not 0 < line <= len(self.cells):
            return None
        return self.cells[line - 1] or None

    def traced_functions(self) -> Iterator[Function]:
        return (fn for fn in self.functions if fn.traced)

