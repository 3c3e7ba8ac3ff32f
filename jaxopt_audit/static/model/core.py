"""The semantic model of one file, built once and shared by every rule.

One walk over the libcst tree indexes each function (the module body and lambdas count as
functions) with its calls, loops, tests, subscripts and bindings, each tagged with its innermost
enclosing loop and whether it sits under a guard that selects some iterations (`if step % k == 0`,
or a recovery under `if np.isnan(loss):`). A few fixpoint
passes then answer the questions rules ask (docs/design.md): what each name is bound to, which
functions are jitted or traced and which of their parameters are static, which expressions are
JAX arrays, which loops are step loops, and which functions run once per step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import libcst as cst

import jaxopt_audit.static.knowledge.apis as apis  # the module, not the package: the package imports the model

from ..syntax.names import ImportTable, dotted
from ..syntax.positions import Positions
from ..syntax.walk import children, int_value, names_in, own_nodes, string_value, target_names, walk

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


def _param_list(params: cst.Parameters) -> tuple[list[str], dict[str, str | None]]:
    names: list[str] = []
    annotations: dict[str, str | None] = {}
    all_params = [*params.posonly_params, *params.params]
    if isinstance(params.star_arg, cst.Param):
        all_params.append(params.star_arg)
    all_params.extend(params.kwonly_params)
    if isinstance(params.star_kwarg, cst.Param):
        all_params.append(params.star_kwarg)
    for p in all_params:
        names.append(p.name.value)
        annotation = p.annotation.annotation if p.annotation is not None else None
        text = dotted(annotation) if annotation is not None else None
        if isinstance(annotation, cst.Subscript) and dotted(annotation.value) is not None:
            # `tuple[int, ...]` -> "tuple[int]": the container and its first element type
            first = annotation.slice[0].slice if annotation.slice else None
            element = dotted(first.value) if isinstance(first, cst.Index) else None
            text = f"{dotted(annotation.value)}[{element or ''}]"
        annotations[p.name.value] = text
    return names, annotations


# Node types `_Builder.visit` records nothing for (none is tested in its dispatch): it walks
# their children and nothing else. Leaves without children cost one type test.
_NOTHING_TO_RECORD = frozenset({
    cst.Attribute, cst.Arg, cst.SimpleStatementLine, cst.IndentedBlock, cst.Param,
    cst.Parameters, cst.Tuple, cst.List, cst.Dict, cst.Set, cst.Element, cst.StarredElement,
    cst.DictElement, cst.StarredDictElement, cst.Index, cst.SubscriptElement, cst.Slice,
    cst.Annotation, cst.ConcatenatedString, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
    cst.Ellipsis, cst.Pass, cst.Break, cst.Continue, cst.Else, cst.FormattedStringExpression,
    cst.FormattedStringText, cst.Module,
})


class _Builder:
    """The one walk: fills Functions, Loops and Sites."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.seq = 0
        self.class_depth = 0  # inside a class body: its assignments are attributes, not module names
        # inside an `if` or an `except ImportError:`: its imports are alternatives (`import numpy
        # as jnp` when JAX is absent), and a name some alternative binds to JAX stays JAX's
        self.conditional_depth = 0

    def _assignment(self, fn: Function, targets: tuple[str, ...], value: cst.BaseExpression | None,
                    site: Site, **kwargs: Any) -> Assignment:
        self.seq += 1
        a = Assignment(targets, value, site, seq=self.seq, **kwargs)
        fn.assignments.append(a)
        return a

    def function(self, node: FunctionNode, name: str, parent: Function | None,
                 cls: ClassInfo | None) -> Function:
        params: list[str]
        annotations: dict[str, str | None]
        decorators: list[cst.Decorator]
        if isinstance(node, cst.Module):
            params, annotations, decorators = [], {}, []
        else:
            params, annotations = _param_list(node.params)
            decorators = list(node.decorators) if isinstance(node, cst.FunctionDef) else []
        if parent is None or parent.is_module:
            qualname = f"{cls.name}.{name}" if cls else name
        else:
            qualname = f"{parent.qualname}.<locals>.{name}"
        fn = Function(node, name, qualname, parent, cls, params, annotations, decorators)
        self.model.functions.append(fn)
        return fn

    def walk_body(self, fn: Function, body: cst.CSTNode, loop: Loop | None, guarded: bool) -> None:
        for child in children(body):
            self.visit(child, fn, loop, guarded)

    def visit(self, node: cst.CSTNode, fn: Function, loop: Loop | None, guarded: bool,
              in_test: bool = False) -> None:
        t = type(node)
        model = self.model
        if t is cst.Name:
            self.seq += 1
            model.name_seq[id(node)] = self.seq
            return
        if t in _NOTHING_TO_RECORD:  # most nodes: skip the dispatch below
            for child in children(node):
                self.visit(child, fn, loop, guarded, in_test)
            return
        # dispatch on the exact type (isinstance on libcst's ABCs dominated a walk); cast() tells
        # the type checker what the identity test established
        if t is cst.Call:
            fn.calls.append(Site(cast(cst.Call, node), fn, loop, guarded, in_test))
        elif t is cst.Expr:
            effect = cast(cst.Expr, node).value
            if isinstance(effect, cst.Call):  # a call made for its effect
                fn.calls.append(Site(effect, fn, loop, guarded, in_test, discarded=True))
                for child in children(effect):
                    self.visit(child, fn, loop, guarded, in_test)
                return
        elif t is cst.FunctionDef:
            self._function_def(cast(cst.FunctionDef, node), fn, loop, guarded)
            return
        elif t is cst.Lambda:
            lam = cast(cst.Lambda, node)
            inner = self.function(lam, "<lambda>", fn, None)
            model.lambdas[lam] = inner
            inner.returns.append(lam.body)
            self.visit(lam.body, inner, None, False)
            return
        elif t is cst.ClassDef:
            self._class_def(cast(cst.ClassDef, node), fn, loop, guarded)
            return
        elif t is cst.For or t is cst.While:
            self._loop(cast(LoopNode, node), fn, loop, guarded)
            return
        elif t is cst.If:
            self._if(cast(cst.If, node), fn, loop, guarded)
            return
        elif t is cst.IfExp:
            fn.tests.append(Site(cast(cst.IfExp, node), fn, loop, guarded, True))
        elif t is cst.BooleanOperation or (t is cst.UnaryOperation
                                           and type(cast(cst.UnaryOperation, node).operator) is cst.Not):
            fn.tests.append(Site(cast(cst.BaseExpression, node), fn, loop, guarded, in_test))
        elif t is cst.Subscript:
            fn.subscripts.append(Site(cast(cst.Subscript, node), fn, loop, guarded, in_test))
        elif t is cst.BinaryOperation or t is cst.Comparison:
            fn.operations.append(Site(cast("cst.BinaryOperation | cst.Comparison", node), fn, loop, guarded,
                                      in_test))
        elif t is cst.FormattedString:
            fn.fstrings.append(Site(cast(cst.FormattedString, node), fn, loop, guarded, in_test))
        elif t is cst.Assign:
            assign = cast(cst.Assign, node)
            self.visit(assign.value, fn, loop, guarded, in_test)
            for target in assign.targets:
                self._bind(fn, target.target, assign.value, loop, guarded)
            return
        elif t is cst.AnnAssign:
            annotated = cast(cst.AnnAssign, node)
            if annotated.value is not None:
                self.visit(annotated.value, fn, loop, guarded, in_test)
            self._bind(fn, annotated.target, annotated.value, loop, guarded)
            return
        elif t is cst.AugAssign:
            aug = cast(cst.AugAssign, node)
            self.visit(aug.value, fn, loop, guarded, in_test)
            self._bind(fn, aug.target, aug.value, loop, guarded, augmented=True)
            return
        elif t is cst.NamedExpr:
            named = cast(cst.NamedExpr, node)
            self.visit(named.value, fn, loop, guarded, in_test)
            self._bind(fn, named.target, named.value, loop, guarded)
            return
        elif t is cst.Return:
            value = cast(cst.Return, node).value
            if value is not None:
                fn.returns.append(value)
        elif t is cst.Import or t is cst.ImportFrom:
            model.imports.add_import(cast("cst.Import | cst.ImportFrom", node), model.package,
                                     alternative=self.conditional_depth > 0)
            return
        elif t is cst.ExceptHandler and _catches_import_error(cast(cst.ExceptHandler, node)):
            self.conditional_depth += 1
            for child in children(node):
                self.visit(child, fn, loop, guarded, in_test)
            self.conditional_depth -= 1
            return
        elif t is cst.Global:
            fn.global_names.update(n.name.value for n in cast(cst.Global, node).names)
        elif t is cst.Nonlocal:
            fn.nonlocal_names.update(n.name.value for n in cast(cst.Nonlocal, node).names)
        elif t is cst.WithItem and cast(cst.WithItem, node).asname is not None:
            item = cast(cst.WithItem, node)
            self.visit(item.item, fn, loop, guarded, in_test)
            assert item.asname is not None
            for name in target_names(item.asname.name):
                self._assignment(fn, (name,), item.item, Site(item, fn, loop, guarded))
            return
        elif t in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            comprehension = cast(Comprehension, node)
            fn.comprehensions.append(Site(comprehension, fn, loop, guarded, in_test))
            # comprehension variables are bound from the iterated value
            comp: cst.CompFor | None = comprehension.for_in
            while comp is not None:
                for name in target_names(comp.target):
                    self._assignment(fn, (name,), None, Site(comp, fn, loop, guarded))
                comp = comp.inner_for_in
        for child in children(node):
            self.visit(child, fn, loop, guarded, in_test)

    def _bind(self, fn: Function, target: cst.BaseExpression, value: cst.BaseExpression | None,
              loop: Loop | None, guarded: bool, augmented: bool = False) -> None:
        site = Site(target, fn, loop, guarded)
        names = target_names(target)
        if names:
            self._assignment(fn, tuple(names), value, site, augmented=augmented)
            if self.class_depth:
                pass  # `track: bool = False` in a dataclass does not rebind the module's `track`
            elif fn.is_module and value is not None and len(names) == 1 and not augmented:
                self.model.imports.add_alias(names[0], value)
            elif fn.is_module:
                self.model.imports.defined.update(names)
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            self._assignment(fn, (), value, site, attribute_target=target.attr.value, augmented=augmented)
            if target.value.value == "self" and fn.cls is not None and value is not None:
                fn.cls.attribute_values.setdefault(target.attr.value, []).append((value, fn))
        else:  # `x[i] = v`, `a.b.c = v`: visit for reads, record for side-effect rules
            self._assignment(fn, (), value, site, augmented=augmented)
            self.visit(target, fn, loop, guarded)

    def _function_def(self, node: cst.FunctionDef, parent: Function, loop: Loop | None,
                      guarded: bool) -> None:
        for decorator in node.decorators:
            self.visit(decorator.decorator, parent, loop, guarded)
        params = node.params
        for p in [*params.posonly_params, *params.params, *params.kwonly_params]:
            if p.default is not None:
                self.visit(p.default, parent, loop, guarded)
        cls = self.model.class_of_body.get(id(node))
        fn = self.function(node, node.name.value, parent, cls)
        self.model.function_of_def[node] = fn
        if cls is not None:
            cls.methods.setdefault(node.name.value, fn)
        else:
            parent.nested.setdefault(node.name.value, fn)
        if parent.is_module:
            self.model.imports.defined.add(node.name.value)
        self._assignment(parent, (node.name.value,), None, Site(node, parent, loop, guarded))
        self.walk_body(fn, node.body, None, False)

    def _class_def(self, node: cst.ClassDef, parent: Function, loop: Loop | None, guarded: bool) -> None:
        bases = [self.model.imports.resolve(a.value) or dotted(a.value) for a in node.bases]
        info = ClassInfo(node, node.name.value, bases)
        self.model.classes[node.name.value] = info
        self.model.imports.defined.add(node.name.value)
        for base in node.bases:
            self.visit(base.value, parent, loop, guarded)
        self.class_depth += 1
        for stmt in node.body.body:
            if isinstance(stmt, cst.FunctionDef):
                self.model.class_of_body[id(stmt)] = info
            self.visit(stmt, parent, loop, guarded)
        self.class_depth -= 1

    def _loop(self, node: LoopNode, fn: Function, parent: Loop | None, guarded: bool) -> None:
        loop = Loop(node, fn, parent, guarded)
        fn.loops.append(loop)
        if parent is not None:
            parent.children.append(loop)
        if isinstance(node, cst.For):
            targets = target_names(node.target)
            loop.targets = tuple(targets)
            self._assignment(fn, tuple(targets), None, Site(node, fn, loop, guarded))
            loop.counters.update(_counter_targets(node.target, node.iter, self.model.imports.resolve,
                                                  lambda name: [a.value for a in fn.bindings(name)]))
            self.visit(node.iter, fn, parent, guarded)
            self.visit(node.target, fn, loop, guarded)
        else:
            # `while i < n`: names compared in the test are counters
            if isinstance(node.test, cst.Comparison):
                loop.counters.update(n for n in names_in(node.test.left))
            self.visit(node.test, fn, loop, guarded, in_test=True)
            fn.tests.append(Site(node, fn, loop, guarded, True))
        # `step += 1` in the body makes `step` a counter too, and so does `step = update + 1`
        # (arithmetic on a counter of this loop or an enclosing one)
        known = loop.counters_in_scope()
        for stmt in _simple_statements(node.body):
            if isinstance(stmt, cst.AugAssign) and isinstance(stmt.target, cst.Name) \
                    and isinstance(stmt.operator, cst.AddAssign) and isinstance(stmt.value, cst.Integer):
                loop.counters.add(stmt.target.value)
            elif isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0].target, cst.Name) and _counter_arithmetic(stmt.value, known):
                loop.counters.add(stmt.targets[0].target.value)
        self.walk_body(fn, node.body, loop, False)
        if node.orelse is not None:
            self.walk_body(fn, node.orelse, parent, guarded)

    def _if(self, node: cst.If, fn: Function, loop: Loop | None, guarded: bool) -> None:
        fn.tests.append(Site(node, fn, loop, guarded, True))
        self.visit(node.test, fn, loop, guarded, in_test=True)
        periodic = guarded or (loop is not None and (_is_periodic_guard(node.test, loop)
                                                     or _names_a_periodic_test(node.test, fn, loop)
                                                     or is_divergence_guard(node.test))) \
            or (loop is None and _periodic_on_parameter(node.test, fn))
        # `if False:` (code switched off by hand) never runs, nor the `else:` of `if True:`
        truth = _constant_truth(node.test)
        self.conditional_depth += 1
        if truth is not False:
            self.walk_body(fn, node.body, loop, periodic)
        if node.orelse is not None and truth is not True:
            self.visit(node.orelse, fn, loop, periodic)
        self.conditional_depth -= 1


def _constant_truth(test: cst.BaseExpression) -> bool | None:
    """The truth of a literal test (`False`, `True`, `None`, `0`, `1`); None for anything else."""
    if isinstance(test, cst.Name) and test.value in ("True", "False", "None"):
        return test.value == "True"
    if isinstance(test, cst.Integer):
        return int(test.value, 0) != 0
    return None


def _simple_statements(body: cst.CSTNode) -> Iterator[cst.BaseSmallStatement]:
    if isinstance(body, cst.IndentedBlock):
        for stmt in body.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                yield from stmt.body
    elif isinstance(body, cst.SimpleStatementSuite):
        yield from body.body


def _wrapped_iterable(it: cst.Call, q: str) -> cst.BaseExpression | None:
    """`tqdm(range(n))`, `track(enumerate(xs), ...)`, `tqdm(steps)`: a progress bar (any
    non-builtin call) whose first argument is the iterable it yields from."""
    if q.startswith("builtins.") or not it.args or it.args[0].keyword is not None:
        return None
    inner = it.args[0].value
    return inner if isinstance(inner, (cst.Call, cst.Name)) else None


def _counts(it: cst.BaseExpression, resolve, bound=None, seen: tuple[str, ...] = ()) -> bool:
    """`range(n)`, `trange(n)`, a progress bar around a range, or a name bound only to those
    (`steps = range(n)`, then maybe `steps = tqdm(steps)`): the items are indices. `bound(name)`
    gives the values a name is bound to in the loop's function (None for a loop target)."""
    if isinstance(it, cst.Name):
        if bound is None or it.value in seen:
            return False
        values = bound(it.value)
        if not values or any(v is None for v in values):
            return False
        seen = (*seen, it.value)
        counted = [_counts(v, resolve, bound, seen) for v in values]
        # `steps = tqdm(steps)` wraps whatever the name held before: it follows the other bindings
        rewraps = [isinstance(v, cst.Call) and isinstance(w := _wrapped_iterable(v, resolve(v.func) or ""), cst.Name)
                   and w.value == it.value for v in values]
        return any(counted) and all(c or r for c, r in zip(counted, rewraps, strict=True))
    if not isinstance(it, cst.Call):
        return False
    q = resolve(it.func) or ""
    if _range_like(it.func, resolve):
        return True
    if isinstance(it.func, cst.Name) and bound is not None and it.func.value not in seen:
        # `range_fn = partial(trange, desc=...) if bar else range`, then `for step in range_fn(n)`
        values = bound(it.func.value)
        if values and all(v is not None and _range_like(v, resolve) for v in values):
            return True
    inner = _wrapped_iterable(it, q)
    return inner is not None and _counts(inner, resolve, bound, seen)


def _range_like(func: cst.BaseExpression, resolve) -> bool:
    """`range`, `trange`, or `partial(trange, desc=...)`: calling it gives indices."""
    if isinstance(func, cst.Call) and resolve(func.func) == "functools.partial" and func.args:
        func = func.args[0].value
    q = resolve(func) or ""
    return q == "builtins.range" or q.rsplit(".", 1)[-1] == "trange"


def _counter_targets(target: cst.BaseExpression, it: cst.BaseExpression, resolve, bound=None) -> set[str]:
    """Loop variables that count iterations: `for i in range(n)`, `for i, b in enumerate(xs)`,
    `for i, b in zip(range(n), loader)`, `for step in tqdm(range(n))`, `for step in steps` with
    `steps = range(n)` (`bound`: see `_counts`)."""
    if _counts(it, resolve, bound):
        return {target.value} if isinstance(target, cst.Name) else set()
    if not isinstance(it, cst.Call) or not isinstance(target, cst.Tuple):
        return set()
    q = resolve(it.func) or ""
    inner = _wrapped_iterable(it, q)
    if inner is not None:
        return _counter_targets(target, inner, resolve, bound)
    elements = [e.value for e in target.elements]
    if q == "builtins.enumerate" and elements and isinstance(elements[0], cst.Name):
        return {elements[0].value}
    if q == "builtins.zip":
        args = [a.value for a in it.args if a.keyword is None]
        return {e.value for e, a in zip(elements, args, strict=False)
                if isinstance(e, cst.Name) and _counts(a, resolve, bound)}
    return set()


def _counter_arithmetic(value: cst.BaseExpression, counters: set[str]) -> bool:
    """`update + 1`, `epoch * steps_per_epoch + i`: integer arithmetic on a loop counter."""
    if not isinstance(value, cst.BinaryOperation) or not isinstance(
            value.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide)):
        return False
    nodes = list(walk(value))
    return any(isinstance(n, cst.Name) and n.value in counters for n in nodes) and not any(
        isinstance(n, (cst.Call, cst.Subscript, cst.Float)) for n in nodes)


def _is_periodic_guard(test: cst.BaseExpression, loop: Loop) -> bool:
    """`if step % k == 0`, `if i == last`, `if (i + 1) % k:`: runs on some iterations only.

    Any test that reads a counter of an enclosing loop counts: it selects iterations by index.
    """
    counters = loop.counters_in_scope()
    return bool(counters) and any(name in counters for name in names_in(test))


def _periodic_on_parameter(test: cst.BaseExpression, fn: Function) -> bool:
    """`if i % 10 == 0:` outside any loop of a function given `i`: the step number its caller's
    loop passes in, so the block runs every k-th call (a notebook's `gradient_step(i, state)`
    printing every 10 iterations reads the host once in 10 steps, not every step)."""
    if fn.is_module:
        return False
    return any(isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Modulo)
               and isinstance(n.left, cst.Name) and n.left.value in fn.params for n in walk(test))


def _names_a_periodic_test(test: cst.BaseExpression, fn: Function, loop: Loop) -> bool:
    """`show = epoch % every == 0 or epoch == last`, then `if show:`: a name the loop binds, every
    time, to a comparison of a counter (the bindings walked so far are the ones before this `if`).
    A flag computed from data the counter picks (`short = xs[i].shape[0] < n`) is not one."""
    counters = loop.counters_in_scope()
    if not counters:
        return False
    around = set(loop.outward())
    for name in names_in(test):
        bindings = [a for a in fn.assignments if name in a.targets]
        if bindings and all(a.value is not None and a.site.loop in around and not a.augmented
                            and _compares_counter(a.value, counters) for a in bindings):
            return True
    return False


def _compares_counter(value: cst.BaseExpression, counters: set[str]) -> bool:
    """A comparison one side of which is arithmetic on a counter (`epoch % k == 0`, `i == n - 1`)."""
    for node in walk(value):
        if isinstance(node, cst.Comparison):
            operands = [node.left, *(c.comparator for c in node.comparisons)]
            if any(_on_counter(o, counters) for o in operands):
                return True
    return False


def _on_counter(expr: cst.BaseExpression, counters: set[str]) -> bool:
    """`epoch`, `(step + 1) % args.every`: names, attributes, ints and operators, reading a counter."""
    found = False
    for node in walk(expr):
        if isinstance(node, cst.Name):
            found = found or node.value in counters
        elif not isinstance(node, (cst.BinaryOperation, cst.Attribute, cst.Integer, cst.BaseBinaryOp,
                                   cst.LeftParen, cst.RightParen, cst.Dot, cst.BaseParenthesizableWhitespace)):
            return False
    return found


def unpacks(value: cst.BaseExpression | None, count: int) -> bool:
    """A literal tuple or list of `count` plain elements (`return x, y` for `a, b = f()`)."""
    return isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == count \
        and not any(isinstance(e, cst.StarredElement) for e in value.elements)


def _catches_import_error(handler: cst.ExceptHandler) -> bool:
    """`except ImportError:`, `except (ImportError, ModuleNotFoundError):`."""
    return handler.type is not None and any(
        isinstance(n, cst.Name) and n.value in ("ImportError", "ModuleNotFoundError") for n in walk(handler.type))


# Tests for a diverged value: the branch under them recovers (restarts from a checkpoint,
# lowers the learning rate), which happens on a few steps of a run, not every step.
_DIVERGENCE_TESTS = frozenset({"isnan", "isinf", "isfinite", "isposinf", "isneginf"})


def is_divergence_guard(test: cst.BaseExpression) -> bool:
    """`if np.isnan(loss) and restarts < limit:`, `if not math.isfinite(loss):`."""
    for node in walk(test):
        if isinstance(node, cst.Call):
            func = node.func
            name = func.attr if isinstance(func, cst.Attribute) else func
            if isinstance(name, cst.Name) and name.value in _DIVERGENCE_TESTS:
                return True
    return False


# Annotations that say a parameter holds a host value, never an array.
_HOST_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "bytes", "Shape", "DimSize", "Callable"})
_CONTAINERS = frozenset({"tuple", "Tuple", "list", "List", "Sequence"})


def _host_annotation(annotation: str | None) -> bool:
    """`n: int`, `shape: tuple[int, ...]`: callers' arrays do not flow into it."""
    if annotation is None:
        return False
    base, _, element = annotation.partition("[")
    base = base.rsplit(".", 1)[-1]
    return base in _HOST_ANNOTATIONS or (base in _CONTAINERS and element.rstrip("]") in _HOST_ANNOTATIONS)


def _item_values(node: cst.For | cst.CompFor, targets: tuple[str, ...],
                 iterates_arrays: Callable[[cst.BaseExpression], bool]) -> tuple[str, ...]:
    """Which loop targets hold array items: `for k, v in d.items()` only the values; `for i, x in
    enumerate(xs)` only `x` (the index is a Python int); `for a, b in zip(xs, names)` only the
    targets whose iterable holds arrays."""
    it, target = node.iter, node.target
    if not isinstance(it, cst.Call) or not isinstance(target, cst.Tuple):
        return targets
    elements = [e.value for e in target.elements]
    if isinstance(it.func, cst.Attribute) and it.func.attr.value == "items" and len(elements) == 2:
        return tuple(target_names(elements[1]))
    args = [a.value for a in it.args if a.keyword is None and not a.star]
    if isinstance(it.func, cst.Name) and it.func.value == "enumerate" and len(elements) == 2 and args:
        return tuple(target_names(elements[1]))
    if isinstance(it.func, cst.Name) and it.func.value == "zip" and len(elements) == len(args):
        return tuple(n for e, a in zip(elements, args, strict=True) if iterates_arrays(a) for n in target_names(e))
    return targets


def _only_syncs(body: cst.BaseExpression, model: SemanticModel) -> bool:
    """A lambda body that only waits for or reads back its argument."""
    if not isinstance(body, cst.Call):
        return False
    if isinstance(body.func, cst.Attribute) and body.func.attr.value in (apis.SYNC_METHODS | apis.HOST_METHODS):
        return True
    q = model.resolve(body.func)
    return q in apis.SYNC_FUNCTIONS or (q in apis.HOST_PULL_FUNCTIONS and q != "builtins.print")


class SemanticModel:
    """Everything the rules need to know about one file."""

    def __init__(self, module: cst.Module, path: str = "<string>", package: str = "",
                 source: str | None = None, project: ImportedView | None = None, analyse: bool = True,
                 cells: list[int] | None = None,
                 rescan: Callable[[str, Iterable[str]], int | None] | None = None) -> None:
        """`analyse=False` builds the index (functions, calls, bindings, imports) without the
        fixpoints (jit and traced marks, arrays, step loops): enough for rules that only resolve
        names (Rule.ANALYSIS). `cells`: for a notebook, the cell of each program line. `rescan`:
        the number of findings the rules with the given codes report on a text at this path
        (None when it cannot be scanned), from the scan pipeline (trace_check.py asks it)."""
        self.module = module
        self.rescan = rescan
        self.cells = cells
        self.project = project  # the functions it imports from other scanned modules
        self.source = source  # the decoded text, when the caller has it (cheap text prefilters)
        self.path = path
        self.package = package
        self.imports = ImportTable()
        self.functions: list[Function] = []
        self.classes: dict[str, ClassInfo] = {}
        self.class_of_body: dict[int, ClassInfo] = {}
        self.function_of_def: dict[cst.FunctionDef, Function] = {}
        self.lambdas: dict[cst.Lambda, Function] = {}
        self._positions: Positions | None = None
        self._module_values_static = False
        self._kind_cache: dict[tuple, str | None] = {}
        self.name_seq: dict[int, int] = {}
        self.host_callback_functions: set[int] = set()  # ids; filled by _propagate_traced
        self.facts: dict[Callable[..., Any], Any] = {}  # the fact modules' answers (facts.py)
        self.trace_roots: list[TraceRoot] = []  # filled when the model is analysed
        builder = _Builder(self)
        self.module_function = builder.function(module, "<module>", None, None)
        builder.walk_body(self.module_function, module, None, False)
        self._callee_cache: dict[cst.Call, Callee] = {}
        self.analysed = analyse
        if analyse:
            self._analyse()

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

    # ----------------------------------------------------------------- resolution
    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """What a name means: its import, with old re-exports read as what they were
        (`from jax import partial` is `functools.partial`; JAX601 reports the spelling)."""
        q = self.imports.resolve(expr)
        return apis.REEXPORTED.get(q, q) if q is not None else None

    def lookup_function(self, name: str, scope: Function) -> Function | None:
        """A def named `name` visible from `scope` (nested defs first, then module level); None
        when a parameter or a local variable of that name shadows it (`def loop(x, step): step(x)`
        calls whatever the caller passed, not the module's `step`)."""
        for s in scope.scopes():
            if name in s.nested:
                return s.nested[name]
            if name in s.params:
                return None
            if not s.is_module and s.bindings(name) and name not in s.global_names \
                    and name not in s.nonlocal_names:
                return None  # a local variable: `def square(n): square = table(n)` shadows the def
        return None

    def function_ref(self, expr: cst.BaseExpression, scope: Function) -> Function | None:
        """The same-module function an expression names: `f`, `self.m`, `Cls.m`, `obj.m`, a lambda,
        `partial(f, ...)`."""
        if isinstance(expr, cst.Lambda):
            return self.lambdas.get(expr)
        if isinstance(expr, cst.Name):
            fn = self.lookup_function(expr.value, scope)
            if fn is not None:
                return self._redefinition(expr, fn, scope)
            # `step = some_function` local alias
            for a in scope.bindings(expr.value):
                if a.value is not None and isinstance(a.value, (cst.Name, cst.Attribute)) \
                        and a.value is not expr:
                    target = self.function_ref(a.value, scope) if dotted(a.value) != expr.value else None
                    if target is not None:
                        return target
            return None
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            owner = expr.value.value
            attr = expr.attr.value
            cls = None
            if owner in ("self", "cls") and scope.cls is None and scope.parent is not None:
                # nested function inside a method: `self` is the method's
                method_scope = scope
                while method_scope.parent is not None and method_scope.cls is None:
                    method_scope = method_scope.parent
                cls = method_scope.cls
            elif owner in ("self", "cls"):
                cls = scope.cls
            elif owner in self.classes:
                cls = self.classes[owner]
            else:
                annotation = self._annotation_of(owner, scope)
                if annotation in self.classes:
                    cls = self.classes[annotation]
            if cls is not None:
                return self._method(cls, attr)
            return None
        if isinstance(expr, cst.Call) and self.resolve(expr.func) == "functools.partial" and expr.args:
            return self.function_ref(expr.args[0].value, scope)
        return None

    def _redefinition(self, use: cst.Name, fn: Function, scope: Function) -> Function:
        """A name defined by several `def`s (notebook cells): the one bound when `use` runs, the
        latest before it in the same scope, the last one from a function body run later."""
        owner = fn.parent
        if owner is None:
            return fn
        defs = [a for a in owner.bindings(use.value) if isinstance(a.site.node, cst.FunctionDef)]
        if len(defs) < 2:
            return fn
        seq = self.name_seq.get(id(use))
        before = [a for a in defs if seq is not None and a.seq < seq] if scope is owner else defs
        chosen = self.function_of_def.get(cast(cst.FunctionDef, before[-1].site.node)) if before else None
        return chosen if chosen is not None else fn

    def _annotation_of(self, name: str, scope: Function) -> str | None:
        return next((s.param_annotations[name] for s in scope.scopes() if name in s.param_annotations), None)

    def _method(self, cls: ClassInfo, name: str, depth: int = 0) -> Function | None:
        if name in cls.methods:
            return cls.methods[name]
        if depth < 5:
            for base in cls.bases:
                if base is not None and base in self.classes:
                    found = self._method(self.classes[base], name, depth + 1)
                    if found is not None:
                        return found
        return None

    def callee(self, call: cst.Call, scope: Function) -> Callee:
        """Resolve what `call` calls. Cached per call node."""
        cached = self._callee_cache.get(call)
        if cached is not None:
            return cached
        result = self._resolve_callee(call, scope)
        self._callee_cache[call] = result
        return result

    def _resolve_callee(self, call: cst.Call, scope: Function) -> Callee:
        func = call.func
        # `jax.jit(f)(x)`, `jax.grad(loss)(p)`: calling a transform's result
        if isinstance(func, cst.Call):
            inner = self.resolve(func.func)
            target = self.function_ref(func.args[0].value, scope) if func.args else None
            if inner in apis.JIT_WRAPPERS:
                return Callee(inner, target, jitted=True, transform=inner)
            if inner in apis.TRACING_TRANSFORMS or inner == "functools.partial":
                return Callee(inner, target, transform=inner)
            return Callee(None)
        qualname = self.resolve(func)
        if isinstance(func, cst.Name) and func.value in self.classes and qualname is None:
            return Callee(None, cls=self.classes[func.value])
        fn = self.function_ref(func, scope)
        if fn is not None:
            if not fn.direct_jit:
                # `loss_fn = jax.jit(jax.value_and_grad(loss_fn))`, `self.step = jax.jit(self.step)`
                # under a mode test: the name now holds the wrapper
                rebound = self._jit_binding(func.value, scope) if isinstance(func, cst.Name) \
                    else self._jit_attribute(func, scope)
                if rebound is not None:
                    return rebound
            return Callee(qualname, fn, jitted=fn.direct_jit)
        if qualname is not None and self.project is not None:  # the one cross-module lookup
            imported = self.project.get(dotted(func))
            if imported is not None:
                return Callee(qualname, jitted=imported.jitted, imported=imported)
        if qualname is not None and (qualname.split(".")[0] in apis.JAX_ROOTS
                                     or qualname.startswith("builtins.")
                                     or "." in qualname):
            return Callee(qualname)
        # a name bound to `jax.jit(f)` or to another JAX value
        if isinstance(func, cst.Name):
            bound = self._jit_binding(func.value, scope)
            if bound is not None:
                return bound
        wrapped = self._jit_attribute(func, scope)
        return wrapped if wrapped is not None else Callee(qualname)

    def _jit_attribute(self, func: cst.BaseExpression, scope: Function) -> Callee | None:
        """`self.step` where the class assigns `self.step = jax.jit(...)`: the jitted Callee."""
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            cls = scope.cls or self._enclosing_class(scope)
            if cls is not None:
                for value, owner in cls.attribute_values.get(func.attr.value, []):
                    wrapped = self._jit_of(value, owner)
                    if wrapped is not None:
                        return wrapped
        return None

    def receiver_kind(self, call: cst.Call, scope: Function, depth: int = 0) -> str | None:
        """"array"/"object" when `call` is a method call on a JAX value (`x.sum()`, `model.apply`)."""
        if isinstance(call.func, cst.Attribute) and not (
                isinstance(call.func.value, cst.Name) and call.func.value.value in ("self", "cls")):
            if self.resolve(call.func) is None or self.resolve(call.func.value) is None:
                return self.value_kind(call.func.value, scope, depth + 1)
        return None

    def _enclosing_class(self, scope: Function) -> ClassInfo | None:
        return next((s.cls for s in scope.scopes() if s.cls is not None), None)

    def _jit_of(self, value: cst.BaseExpression, scope: Function, factory: bool = True) -> Callee | None:
        """`jax.jit(f, ...)` (or partial(jax.jit, ...)(f)) -> a jitted Callee of f; also a call of
        a same-module factory every return of which is one (`step = make_step(opt)`, where
        `make_step` ends in `return jax.jit(_step)` or returns a nested `@jax.jit` function)."""
        if not isinstance(value, cst.Call):
            return None
        if factory:
            maker = self.function_ref(value.func, scope)
            if maker is not None and not maker.direct_jit and maker.returns:
                made = [self._jit_of(r, maker, factory=False) or self._jitted_nested(r, maker)
                        for r in maker.returns]
                if all(made) and made[0] is not None:
                    return made[0]
        wrapper = self.resolve(value.func)
        if wrapper in apis.JIT_WRAPPERS:
            target = self.function_ref(value.args[0].value, scope) if value.args else None
            return Callee(wrapper, target, jitted=True)
        if isinstance(value.func, cst.Call) and self.resolve(value.func.func) == "functools.partial" \
                and value.func.args and self.resolve(value.func.args[0].value) in apis.JIT_WRAPPERS:
            target = self.function_ref(value.args[0].value, scope) if value.args else None
            return Callee("jax.jit", target, jitted=True)
        return None

    def _jitted_nested(self, expr: cst.BaseExpression, scope: Function) -> Callee | None:
        """`return step` where `step` is a nested function decorated with jit."""
        if isinstance(expr, cst.Name):
            inner = scope.nested.get(expr.value)
            if inner is not None and inner.direct_jit:
                return Callee(None, inner, jitted=True)
        return None

    def _transformed(self, call: cst.Call, scope: Function) -> Function | None:
        """`batched(x)` where the name's one binding in the nearest scope that binds it is
        `jax.vmap(f, ...)` (or another wrapping transform of a function of this file): `f`, which
        the call runs. Asked only of whether a call reaches a compiled loop (a step whose
        vmapped inner function scans is a whole program). The eager-work facts do not follow
        it: missing-jit and loop-to-scan findings on eager vmapped calls are rarely worth
        making."""
        if not isinstance(call.func, cst.Name):
            return None
        for current in scope.scopes():
            bindings = current.bindings(call.func.value)
            if not bindings:
                continue
            value = bindings[0].value if len(bindings) == 1 else None
            if isinstance(value, cst.Call) and value.args and self.resolve(value.func) in apis.WRAPPING_TRANSFORMS:
                return self.function_ref(value.args[0].value, current)
            return None
        return None

    def _jit_binding(self, name: str, scope: Function) -> Callee | None:
        for current in scope.scopes():
            for a in current.bindings(name):
                if a.value is not None:
                    wrapped = self._jit_of(a.value, current)
                    if wrapped is not None:
                        return wrapped
        return None

    # ----------------------------------------------------------------- value kinds
    def value_kind(self, expr: cst.BaseExpression, scope: Function, depth: int = 0) -> str | None:
        """"array" for JAX arrays (or pytrees of them), "object" for models, optimizers and
        jitted callables, None when the file does not say (silence when unsure).

        Memoised per (expression, scope) until the dataflow facts grow; a recursive query that
        comes back to an expression being computed sees None (unknown)."""
        if depth > 12:
            return None
        key = (id(expr), id(scope), self._module_values_static)
        cache = self._kind_cache
        if key in cache:
            return cache[key]
        cache[key] = None
        result = self._value_kind(expr, scope, depth)
        if cache is self._kind_cache:
            cache[key] = result
        return result

    def _value_kind(self, expr: cst.BaseExpression, scope: Function, depth: int) -> str | None:
        # dispatch on the exact type (see visit); cast() records what the test established
        t = type(expr)
        if t is cst.Name:
            name_node = cast(cst.Name, expr)
            name = name_node.value
            return "array" if self.is_array_name(name, scope, name_node) else self._object_name(name, scope, depth)
        if t is cst.Attribute:
            attribute = cast(cst.Attribute, expr)
            if attribute.attr.value in apis.STATIC_ATTRIBUTES:
                return None
            if isinstance(attribute.value, cst.Name) and attribute.value.value in ("self", "cls"):
                return None  # attributes set at construction: static configuration
            if self._module_values_static and attribute.attr.value not in apis.ARRAY_ATTRIBUTES:
                return None  # a field of a traced pytree may be static config (`state.dynamic_scale`)
            base = self.value_kind(attribute.value, scope, depth + 1)
            return "array" if base == "array" else None
        if t is cst.Subscript:
            subscripted = cast(cst.Subscript, expr).value
            if isinstance(subscripted, cst.Attribute) and subscripted.attr.value in apis.STATIC_ATTRIBUTES:
                return None
            return "array" if self.value_kind(subscripted, scope, depth + 1) == "array" else None
        if t is cst.Call:
            return self._call_kind(cast(cst.Call, expr), scope, depth)
        if t is cst.BinaryOperation:
            binary = cast(cst.BinaryOperation, expr)
            if self.value_kind(binary.left, scope, depth + 1) == "array" \
                    or self.value_kind(binary.right, scope, depth + 1) == "array":
                return "array"
            return None
        if t is cst.UnaryOperation:
            unary = cast(cst.UnaryOperation, expr)
            if type(unary.operator) is cst.Not:
                return None
            return self.value_kind(unary.expression, scope, depth + 1)
        if t is cst.Comparison:
            comparison = cast(cst.Comparison, expr)
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in comparison.comparisons):
                return None
            if self.value_kind(comparison.left, scope, depth + 1) == "array" or any(
                    self.value_kind(c.comparator, scope, depth + 1) == "array" for c in comparison.comparisons):
                return "array"
            return None
        if t is cst.IfExp:
            ifexp = cast(cst.IfExp, expr)
            if "array" in (self.value_kind(ifexp.body, scope, depth + 1),
                           self.value_kind(ifexp.orelse, scope, depth + 1)):
                return "array"
            return None
        if t in (cst.Tuple, cst.List):
            if any(not isinstance(e, cst.StarredElement) and self.value_kind(e.value, scope, depth + 1) == "array"
                   for e in cast("cst.Tuple | cst.List", expr).elements):
                return "array"
            return None
        if t is cst.Dict:
            if any(isinstance(e, cst.DictElement) and self.value_kind(e.value, scope, depth + 1) == "array"
                   for e in cast(cst.Dict, expr).elements):
                return "array"
            return None
        if t is cst.DictComp:
            return "array" if self.value_kind(cast(cst.DictComp, expr).value, scope, depth + 1) == "array" else None
        if t in (cst.ListComp, cst.GeneratorExp):
            element = cast("cst.ListComp | cst.GeneratorExp", expr).elt
            return "array" if self.value_kind(element, scope, depth + 1) == "array" else None
        return None

    def _value_kind_cached(self, expr: cst.BaseExpression, scope: Function) -> str | None:
        """value_kind before the dataflow has run returns None for names: cheap and safe."""
        return self.value_kind(expr, scope) if scope.array_names or scope.array_params else None

    def _call_kind(self, call: cst.Call, scope: Function, depth: int) -> str | None:
        callee = self.callee(call, scope)
        q = callee.qualname
        if callee.transform is not None:
            return "array"
        if callee.jitted:
            return "array"
        if callee.cls is not None:
            return "object" if callee.cls.is_jax_module else None
        if callee.function is not None:
            fn = callee.function
            if isinstance(fn.node, cst.FunctionDef) and fn.node.returns is not None \
                    and _host_annotation(dotted(fn.node.returns.annotation)):
                return None  # `def is_leaf(x) -> bool`: a Python value, whatever it computes
            if fn.traced and fn.does_array_work:
                return "array"
            if any(self.value_kind(r, fn, depth + 1) == "array" for r in fn.returns):
                return "array"
            return None
        if callee.imported is not None:
            return "array" if callee.imported.eager_ops and not callee.imported.host_work else None
        receiver = self.receiver_kind(call, scope, depth) if q is None else None
        if receiver == "array":
            method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
            return None if method in apis.HOST_METHODS or method == "keys" or method in apis.STRING_METHODS \
                or method in apis.FOREIGN_TENSOR_METHODS else "array"
        if receiver == "object":
            method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
            if method in apis.COMPILED_OBJECT_METHODS:
                return "object" if method in ("lower", "compile", "trace") else None
            return "array"  # model.apply(...), optimizer.update(...), state.apply_gradients(...)
        if q is None:
            return None
        root = q.split(".")[0]
        if root not in apis.JAX_ROOTS:
            return None
        if q in apis.RUNS_ITS_FUNCTION:
            return "array"  # `lax.scan(step, init, xs)` runs now: its results are arrays
        if q in apis.JIT_WRAPPERS or q in apis.TRACING_TRANSFORMS:
            return "object"
        if q in apis.JAX_HOST_RESULTS or q.startswith(apis.JAX_HOST_PREFIXES):
            return None
        if q in apis.TREE_MAPS and call.args and self._maps_to_numpy(call.args[0].value, scope):
            return None  # `tree_map(lambda *x: np.stack(x), *steps)` builds NumPy arrays on the host
        return apis.ecosystem_result(q)

    def _maps_to_numpy(self, mapped: cst.BaseExpression, scope: Function) -> bool:
        """A lambda whose body is a NumPy call: what it maps to lives on the host."""
        if not isinstance(mapped, cst.Lambda) or not isinstance(mapped.body, cst.Call):
            return False
        q = self.resolve(mapped.body.func)
        return q is not None and q.split(".")[0] == "numpy"

    def _object_name(self, name: str, scope: Function, depth: int) -> str | None:
        owner = scope.binding_scope(name)
        if owner is not None:
            for a in owner.bindings(name):
                if a.value is not None and len(a.targets) == 1 and isinstance(a.value, cst.Call):
                    if self._call_kind(a.value, owner, depth + 1) == "object":
                        return "object"
        return None

    def is_array_name(self, name: str, scope: Function, use: cst.Name | None = None) -> bool:
        for current in scope.scopes():
            if current.is_module and self._module_values_static:
                return False
            if name in current.array_names:
                if use is not None and current is scope and name in current.host_names:
                    return self._reaching_is_array(name, current, use)
                return True
            if name in current.params or current.bindings(name):
                return False  # bound here, and not to an array
        return False

    def is_array_at(self, use: cst.Name, fn: Function) -> bool:
        """Is the value that reaches this use of a name an array? (Its own later rebinding, as in
        `x = jnp.asarray(x)`, does not count.)"""
        if use.value not in fn.array_names or not fn.bindings(use.value):
            return self.is_array(use, fn)
        return self._reaching_is_array(use.value, fn, use)

    def reaching_binding(self, use: cst.Name, fn: Function) -> Assignment | None:
        """The latest binding of `use`'s name in `fn` before the use, in walk order; None before
        any (a parameter, a captured or loop-carried value)."""
        seq = self.name_seq.get(id(use))
        if seq is None:
            return None
        before = [a for a in fn.bindings(use.value) if a.seq < seq]
        return before[-1] if before else None

    def _reaching_is_array(self, name: str, fn: Function, use: cst.Name) -> bool:
        """A name bound both to arrays and to host values (`loss = loss.item()`): the latest
        binding before the use decides; before any binding (loop-carried), arrays win."""
        last = self.reaching_binding(use, fn)
        if last is None:
            return True
        if last.value is None:
            return name in fn.array_params or (isinstance(last.site.node, cst.For)
                                                and self.value_kind(last.site.node.iter, fn) == "array")
        return not self.is_host_pull(last.value) and self.value_kind(last.value, fn) == "array"

    def is_array(self, expr: cst.BaseExpression, scope: Function) -> bool:
        return self.value_kind(expr, scope) == "array"

    def is_container(self, expr: cst.BaseExpression, scope: Function, depth: int = 0) -> bool:
        """A Python list/tuple/dict/set (of arrays or not): its truth is its length, a static fact."""
        if isinstance(expr, (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
            return True
        if isinstance(expr, cst.Call) and self.resolve(expr.func) in (
                "builtins.list", "builtins.tuple", "builtins.dict", "builtins.set", "jax.tree.leaves",
                "jax.tree_util.tree_leaves"):
            return True
        if isinstance(expr, cst.Name) and depth < 4:
            bindings = scope.bindings(expr.value)
            return bool(bindings) and all(
                a.value is not None and len(a.targets) == 1 and self.is_container(a.value, scope, depth + 1)
                for a in bindings)
        return False

    # ----------------------------------------------------------------- analysis passes
    def _analyse(self) -> None:
        self._mark_jit_and_transforms()
        self._propagate_traced()
        # array values and JAX work feed each other (`x.sum()` is work once x is an array)
        self._compute_jax_work()
        self._propagate_arrays()
        self._compute_jax_work()
        self._propagate_arrays()
        self._mark_step_loops()

    def _static_params(self, fn: Function, args: list[cst.Arg], bound: bool = False) -> set[str]:
        """The parameters `static_argnums`/`static_argnames` in `args` name; `bound`: the function
        is jitted as a bound method (`jax.jit(self.step, static_argnums=(1,))`), whose positions
        do not count `self`."""
        static: set[str] = set()
        positional = fn.params[1:] if bound and fn.params[:1] in (["self"], ["cls"]) else list(fn.params)
        for arg in args:
            if arg.keyword is None:
                continue
            key = arg.keyword.value
            values = (arg.value.elements if isinstance(arg.value, (cst.Tuple, cst.List)) else None)
            items = [e.value for e in values] if values is not None else [arg.value]
            if key in ("static_argnums", "static_broadcasted_argnums"):
                for item in items:
                    index = int_value(item)
                    if index is not None and -len(positional) <= index < len(positional):
                        static.add(positional[index])
            elif key == "static_argnames":
                for item in items:
                    value = string_value(item)
                    if value is not None:
                        static.add(value)
        return static

    def _mark_jit(self, fn: Function, site: cst.CSTNode, args: list[cst.Arg], direct: bool = False,
                  bound: bool = False) -> None:
        fn.jit_sites.append(site)
        fn.static_params |= self._static_params(fn, args, bound)
        fn.direct_jit = fn.direct_jit or direct

    def _bound_method(self, ref: cst.BaseExpression, target: Function) -> bool:
        """`self.step` / `model.step` names a method bound to an instance (`Class.step` does not)."""
        return isinstance(ref, cst.Attribute) and target.cls is not None \
            and not (isinstance(ref.value, cst.Name) and ref.value.value in self.classes)

    def _rebinds_own_name(self, call: cst.Call, target: Function, scope: Function) -> bool:
        """`f = jax.jit(f)`: the function's own name now calls the compiled version."""
        return any(a.value is call and a.targets == (target.name,) for a in scope.assignments)

    def _mark_jit_and_transforms(self) -> None:
        self.trace_roots = list(self._find_trace_roots())
        for fn in self.functions:
            for decorator in fn.decorators:
                d = decorator.decorator
                if isinstance(d, cst.Call):
                    # `@partial(jax.remat, static_argnums=(0,))`: transforms take static arguments too
                    partial = self.resolve(d.func) == "functools.partial"
                    fn.static_params |= self._static_params(fn, list(d.args[1:] if partial else d.args))
        for root in self.trace_roots:
            fn, options = root.function, list(root.options)
            if root.wrapper not in apis.JIT_WRAPPERS:
                fn.transform_roots.append(root.wrapper)
                if isinstance(root.ref, cst.Call):  # partial(f, a, b=...): bound arguments are static
                    bound = root.ref.args[1:]
                    fn.static_params |= set(fn.params[:sum(1 for a in bound if a.keyword is None)])
                    fn.static_params |= {a.keyword.value for a in bound if a.keyword is not None}
            elif root.via == "decorator":
                self._mark_jit(fn, root.site, options, direct=True)
            elif root.via == "factory":
                self._mark_jit(fn, root.site, options)
            elif root.via == "inner":  # jax.jit(jax.grad(loss_fn), static_argnums=...): same positions
                fn.static_params |= self._static_params(fn, options)
            else:
                call = cast(cst.Call, root.site)
                # `partial(jax.jit, ...)(self.step)` is left as it was: no offset for a bound method
                method = root.ref is not None and not isinstance(call.func, cst.Call) \
                    and self._bound_method(root.ref, fn)
                self._mark_jit(fn, call, options, self._rebinds_own_name(call, fn, root.scope), bound=method)

    def _find_trace_roots(self) -> Iterator[TraceRoot]:
        for fn in self.functions:
            for decorator in fn.decorators:
                yield from self._decorator_roots(fn, decorator.decorator)
        for fn in self.functions:
            for site in fn.calls:
                call = site.node
                q = self.resolve(call.func)
                if q in apis.JIT_WRAPPERS and call.args:
                    ref, options = call.args[0].value, tuple(call.args[1:])
                    target = self.function_ref(ref, fn)
                    if target is not None:
                        yield TraceRoot(target, q, options, call, fn, ref, "call")
                        continue
                    for returned in self._factory_returns(ref, fn):
                        yield TraceRoot(returned, q, options, call, fn, ref, "factory")
                    if isinstance(ref, cst.Call) and self.resolve(ref.func) in apis.TRACING_TRANSFORMS and ref.args:
                        transformed = self.function_ref(ref.args[0].value, fn)
                        if transformed is not None:
                            yield TraceRoot(transformed, q, options, call, fn, ref.args[0].value, "inner")
                        # `jax.jit(jax.vmap(make_train(config)))`: the function the factory returns
                        for returned in self._factory_returns(ref.args[0].value, fn):
                            yield TraceRoot(returned, q, options, call, fn, ref.args[0].value, "factory")
                elif isinstance(call.func, cst.Call) and self.resolve(call.func.func) == "functools.partial" \
                        and call.func.args and call.args:
                    wrapper = self.resolve(call.func.args[0].value)
                    target = self.function_ref(call.args[0].value, fn)
                    if wrapper in apis.JIT_WRAPPERS and target is not None:
                        yield TraceRoot(target, wrapper, tuple(call.func.args[1:]), call, fn, call.args[0].value,
                                        "call")
                elif q in apis.TRACING_TRANSFORMS:
                    refs = [call.args[i].value for i in apis.TRACING_TRANSFORMS[q]
                            if i < len(call.args) and call.args[i].keyword is None]
                    refs += [a.value for a in call.args if a.keyword is not None and a.keyword.value in (
                        "f", "fun", "body_fun", "cond_fun", "true_fun", "false_fun", "fn")]  # keyword spellings
                    for expr in refs:
                        exprs = [e.value for e in expr.elements] if isinstance(expr, (cst.Tuple, cst.List)) else [expr]
                        for e in exprs:
                            target = self.function_ref(e, fn)
                            if target is not None:
                                yield TraceRoot(target, q, tuple(call.args), call, fn, e, "call")

    def _decorator_roots(self, fn: Function, decorator: cst.BaseExpression) -> Iterator[TraceRoot]:
        q = self.resolve(decorator)
        options: tuple[cst.Arg, ...] = ()
        if q is None and isinstance(decorator, cst.Call):
            q = self.resolve(decorator.func)
            options = tuple(decorator.args)
            if q == "functools.partial" and decorator.args:  # @partial(jax.jit, static_argnums=...)
                q, options = self.resolve(decorator.args[0].value), options[1:]
            # else `@jax.jit(static_argnames=...)` (newer JAX), `@jax.vmap(in_axes=...)`
        if q in apis.JIT_WRAPPERS or q in apis.TRACING_TRANSFORMS:
            yield TraceRoot(fn, q, options, decorator, fn.parent or fn, None, "decorator")

    def _factory_returns(self, expr: cst.BaseExpression, scope: Function) -> list[Function]:
        """`jax.jit(make_train(config))`: the functions the factory returns."""
        if not isinstance(expr, cst.Call):
            return []
        factory = self.function_ref(expr.func, scope)
        if factory is None:
            return []
        out = []
        for r in factory.returns:
            target = self.function_ref(r, factory)
            if target is not None:
                out.append(target)
        return out

    def _propagate_traced(self) -> None:
        work = []
        # functions handed to host callbacks run on NumPy values
        host_side = self.host_callback_functions
        for fn in self.functions:
            for site in fn.calls:
                call = site.node
                if self.resolve(call.func) in apis.HOST_CALLBACKS and call.args:
                    target = self.function_ref(call.args[0].value, fn)
                    if target is not None:
                        host_side.add(id(target))
        for cls in self.classes.values():
            # flax/equinox/haiku module methods run under apply/filter_jit: traced, but their
            # parameters may be static configuration (`train: bool`), so none is assumed traced
            if cls.is_jax_module:
                for method in cls.methods.values():
                    if method.name != "__init__" and not method.traced:
                        method.traced = True
                        work.append(method)
        for fn in self.functions:
            if fn.jitted or fn.transform_roots:
                fn.traced = True
                fn.array_params = {p for p in fn.params if p not in fn.static_params
                                   and p not in ("self", "cls")}
                work.append(fn)
        # traced by another scanned module (project.py): the body runs under tracing there, but
        # which parameters are arrays is that caller's business, so none is assumed traced
        elsewhere = self.project.traced if self.project is not None else frozenset()
        for fn in self.functions:
            if not fn.traced and fn.qualname in elsewhere and not fn.is_module \
                    and (fn.parent is None or fn.parent.is_module):
                fn.traced = True
                work.append(fn)
        # nested defs and lambdas inside traced functions run at trace time too
        while work:
            fn = work.pop()
            for site in fn.calls:
                target = self.callee(site.node, fn).function
                if target is not None and not target.traced and not target.is_module \
                        and id(target) not in host_side:
                    target.traced = True
                    work.append(target)
            for inner in self.functions:
                if inner.parent is fn and not inner.traced and not inner.is_module \
                        and id(inner) not in host_side:
                    if inner.name == "<lambda>" or inner.transform_roots:
                        inner.traced = True
                        # a lambda handed to a transform gets traced arguments; any other lambda
                        # (`lambda s: jnp.zeros(s)` as an initializer) may get shapes or config
                        if inner.transform_roots:
                            inner.array_params = {p for p in inner.params if p not in inner.static_params}
                        work.append(inner)

    def _library_scan(self, call: cst.Call, fn: Function) -> bool:
        """`loader.scan_epoch(state, carry, update_step)`: a library's scan wrapper, a method named
        for a scan that is handed a step function of this file, runs the steps as one loop."""
        func = call.func
        return isinstance(func, cst.Attribute) and "scan" in func.attr.value.lower() \
            and self.resolve(func) is None \
            and any(self.function_ref(a.value, fn) is not None for a in call.args)

    def _compute_jax_work(self) -> None:
        """Which functions do JAX work (any) and array work (not just calling jitted code)."""
        for fn in self.functions:
            for site in fn.calls:
                callee = self.callee(site.node, fn)
                if callee.qualname in apis.SCAN_LIKE or self._library_scan(site.node, fn):
                    fn.uses_scan = True
        changed = True
        rounds = 0
        while changed and rounds < 20:
            changed = False
            rounds += 1
            for fn in self.functions:
                if fn.is_module:
                    continue
                work, array_work, scan = fn.does_jax_work, fn.does_array_work, fn.uses_scan
                ops = 0
                for site in fn.calls:
                    kind = self.call_work(site.node, fn)
                    if kind:
                        work = True
                    if kind == "array":
                        array_work = True
                        ops += not self._uploads(site.node, fn)
                    target = self.callee(site.node, fn).function or self._transformed(site.node, fn)
                    if target is not None and target.uses_scan:
                        scan = True
                # `x[x < 0]`, `w - lr * g`, `jnp.tanh(x) * 2`: operators and indexing on arrays run
                # eagerly too (operands can be array calls even where no name holds an array yet)
                kind_of = self.value_kind if ops else self._value_kind_cached
                ops += sum(1 for s in fn.operations if kind_of(s.node, fn) == "array")
                # (`out[i]` of a Python list of arrays picks an element: no device work)
                ops += sum(1 for s in fn.subscripts if kind_of(s.node.value, fn) == "array"
                           and not self.is_container(s.node.value, fn))
                fn.array_ops = ops
                if ops:
                    array_work = work = True
                if (work, array_work, scan) != (fn.does_jax_work, fn.does_array_work, fn.uses_scan):
                    fn.does_jax_work, fn.does_array_work, fn.uses_scan = work, array_work, scan
                    self._kind_cache = {}
                    changed = True

    def _uploads(self, call: cst.Call, fn: Function) -> bool:
        """`jnp.array([token_ids])`, `jnp.arange(n)`: an array made from Python values, an upload
        or a constant rather than an operation on arrays (not counted in `array_ops`)."""
        return self.resolve(call.func) in apis.ARRAY_CONSTRUCTORS and not any(
            isinstance(n, cst.Name) and self.is_array_name(n.value, fn)
            for a in call.args for n in walk(a.value))

    def call_work(self, call: cst.Call, scope: Function) -> str | None:
        """"array" when the call itself does array work eagerly (jnp.*, lax.*, grad(f)(x), a
        non-jitted function that does), "dispatch" when it runs compiled or library JAX code
        (a jitted function, model.apply, optimizer.update), None for host work."""
        callee = self.callee(call, scope)
        if callee.jitted:
            return "dispatch"
        if callee.transform is not None:
            return "array"
        if callee.function is not None:
            fn = callee.function
            if fn.does_array_work:
                if fn.direct_jit:
                    return "dispatch"
                if not scope.traced and not self._passes_array(call, scope) and self._works_on_arguments(fn):
                    return None  # operators on what it is given, given no array here (NumPy data)
                return "array"
            return "dispatch" if fn.does_jax_work else None
        if callee.imported is not None:
            return "array" if callee.imported.eager_ops else None
        if callee.cls is not None:
            return None
        q = callee.qualname
        receiver = self.receiver_kind(call, scope) if q is None else None
        if receiver == "array":
            method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
            if method in apis.HOST_METHODS or method in apis.CONTAINER_METHODS or method in apis.SYNC_METHODS \
                    or method in apis.STRING_METHODS or method in apis.FOREIGN_TENSOR_METHODS:
                return None
            return "array"
        if receiver == "object":
            return "dispatch"
        if q is None or q.split(".")[0] not in apis.JAX_ROOTS:
            return None
        if q in apis.JAX_HOST_RESULTS or q.startswith(apis.JAX_HOST_PREFIXES):
            return None
        if q in apis.TREE_MAPS and call.args:
            mapped = self.function_ref(call.args[0].value, scope)
            if mapped is not None and isinstance(mapped.node, cst.Lambda) and _only_syncs(mapped.node.body, self):
                return None  # jax.tree.map(lambda x: x.block_until_ready(), out)
            if mapped is not None and not mapped.does_array_work and not any(
                    self.is_array(a.value, scope) for a in call.args[1:]):
                return "dispatch" if mapped.does_jax_work else None
            return "array"
        if q in apis.RUNS_ITS_FUNCTION:
            return "array"
        if q in apis.JIT_WRAPPERS or q in apis.TRACING_TRANSFORMS:
            return None  # building a wrapper
        kind = self._call_kind(call, scope, 0)
        if kind == "object":
            return None  # building an optimizer or a model is not per-step work
        if q.startswith(("jax.numpy.", "jax.lax.", "jax.nn.", "jax.random.", "jax.scipy.", "jax.tree")):
            return "array"
        if q.startswith("jax.") or kind == "array":
            return "dispatch"
        return None  # a library's utility (`flax.io.exists`, `flax.serialization.to_bytes`)

    def _passes_array(self, call: cst.Call, scope: Function) -> bool:
        """Some argument of the call may be an array (a `*args` or `**kwargs` may)."""
        return any(a.star or self.is_array(a.value, scope) for a in call.args)

    def _works_on_arguments(self, fn: Function, depth: int = 0) -> bool:
        """The function's array work is all operators on what its callers give it: it calls no
        JAX API (nor a helper that does), and reads no array of an enclosing scope (a helper
        shared by a NumPy baseline and its JAX version, `def prediction(w, x): return x * w`,
        which traced callers hand tracers). Memoised with the value kinds."""
        key = ("works on arguments", id(fn))
        cache = self._kind_cache
        if key in cache:
            return cache[key] is not None
        cache[key] = None  # a recursive helper: not shown to be one
        result = depth < 6 and not self._makes_arrays(fn, depth) and not self._reads_outer_arrays(fn)
        cache[key] = "yes" if result else None
        return result

    def _makes_arrays(self, fn: Function, depth: int) -> bool:
        """A call of `fn` does JAX work of its own: a JAX API, or a helper that is not
        `_works_on_arguments` itself."""
        for site in fn.calls:
            callee = self.callee(site.node, fn)
            target = callee.function
            if target is not None and not callee.jitted and callee.transform is None and target is not fn:
                if target.does_jax_work and not self._works_on_arguments(target, depth + 1):
                    return True
            elif self.call_work(site.node, fn) is not None:
                return True
        return False

    def _reads_outer_arrays(self, fn: Function) -> bool:
        """An operator or an index of `fn` reads an array of an enclosing scope."""
        local = set(fn.params) | set(fn.array_names)
        operands: list[cst.CSTNode] = [s.node for s in fn.operations] + [s.node for s in fn.subscripts]
        return any(isinstance(n, cst.Name) and n.value not in local and not fn.bindings(n.value)
                   and self.is_array_name(n.value, fn) for node in operands for n in walk(node))

    def _fed_host_values(self, value: cst.BaseExpression, fn: Function) -> bool:
        """`obs, reward, done, info = env.step(np.array(action))`: a method of another library's
        object given a value pulled to the host returns host values (a gym environment's step)."""
        if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute) \
                or not any(self.is_host_pull(a.value) for a in value.args):
            return False
        q = self.resolve(value.func)
        if q is not None:
            return q.split(".")[0] not in apis.JAX_ROOTS
        callee = self.callee(value, fn)
        return callee.function is None and not callee.jitted and callee.imported is None

    def _propagate_arrays(self) -> None:
        """Fixpoint: which names hold arrays, seeded by traced parameters and JAX calls, and
        carried into same-module callees through their arguments."""
        for fn in self.functions:
            for name, annotation in fn.param_annotations.items():
                if annotation and annotation.split(".")[-1] in ("Array", "ndarray", "ArrayLike", "PRNGKeyArray") \
                        and (annotation.startswith(("jax", "jnp", "chex")) or annotation in ("Array", "PRNGKeyArray")):
                    if annotation != "ndarray" and not annotation.startswith(("np.", "numpy.")):
                        fn.array_params.add(name)
        for fn in self.functions:
            for a in fn.assignments:
                if a.value is not None and a.targets and (
                        self.is_host_pull(a.value) or self._fed_host_values(a.value, fn)):
                    fn.host_names.update(a.targets)  # uses of these look at the binding that reaches them
        for _ in range(8):
            changed = False
            for fn in self.functions:
                before = len(fn.array_names)
                if not fn.array_params <= fn.array_names:
                    fn.array_names |= fn.array_params
                    self._kind_cache = {}
                for _ in range(4):  # local flow-insensitive closure
                    grew = False
                    for a in fn.assignments:
                        if a.value is None or not a.targets:
                            continue
                        if all(t in fn.array_names for t in a.targets):
                            continue
                        if self._binding_is_array(a, fn):
                            if isinstance(a.value, cst.Call) and len(a.targets) == 2 \
                                    and self.resolve(a.value.func) in apis.TREE_FLATTENS:
                                fn.array_names.add(a.targets[0])  # (leaves, treedef): the treedef is static
                                if a.targets[0] in fn.array_names:
                                    continue
                            added = self._array_targets(a, fn) - fn.array_names
                            if added:
                                fn.array_names |= added
                                self._kind_cache = {}
                                grew = True
                    for a in fn.assignments:  # loop and comprehension targets iterate over arrays
                        if a.value is None and isinstance(a.site.node, (cst.For, cst.CompFor)):
                            if self._iterates_arrays(a.site.node.iter, fn):
                                def iterates_arrays(e: cst.BaseExpression, fn: Function = fn) -> bool:
                                    return self._iterates_arrays(e, fn)
                                targets = _item_values(a.site.node, a.targets, iterates_arrays)
                                if not set(targets) <= fn.array_names:
                                    fn.array_names.update(targets)
                                    self._kind_cache = {}
                                    grew = True
                    if not grew:
                        break
                if len(fn.array_names) != before:
                    changed = True
                for site in fn.calls:
                    target = self.callee(site.node, fn).function
                    if target is None or target.is_module:
                        continue
                    params = target.params[1:] if target.cls is not None and target.params[:1] == ["self"] \
                        and isinstance(site.node.func, cst.Attribute) else target.params
                    position = 0
                    for arg in site.node.args:
                        if arg.star:
                            break
                        param = arg.keyword.value if arg.keyword is not None else (
                            params[position] if position < len(params) else None)
                        if arg.keyword is None:
                            position += 1
                        if param is None or param in target.static_params or param in target.array_params \
                                or _host_annotation(target.param_annotations.get(param)):
                            continue
                        if self.is_array(arg.value, fn):
                            target.array_params.add(param)
                            self._kind_cache = {}
                            changed = True
            if not changed:
                break

    def _array_targets(self, a: Assignment, fn: Function) -> set[str]:
        """The targets of an array binding that get arrays: each element on its own when the tuple
        an eager helper of the file returns is unpacked (`state, step = restore(state)` where
        `restore` returns `(arrays, ckpt.step)`); all of them otherwise (a jitted function's
        outputs are all arrays)."""
        value = a.value
        count = len(a.targets)
        if count > 1 and isinstance(value, cst.Call):
            callee = self.callee(value, fn)
            helper = callee.function
            if helper is not None and not helper.is_module and not callee.jitted and callee.transform is None \
                    and helper.returns and all(unpacks(r, count) for r in helper.returns):
                return {t for i, t in enumerate(a.targets)
                        if any(self.value_kind(cast("cst.Tuple | cst.List", r).elements[i].value, helper) == "array"
                               for r in helper.returns)}
        return set(a.targets)

    def _iterates_arrays(self, it: cst.BaseExpression, fn: Function) -> bool:
        """`for x in xs` over an array, or `zip(params, grads)` with an array among its arguments."""
        if isinstance(it, cst.Call) and self.resolve(it.func) in ("builtins.zip", "builtins.enumerate"):
            return any(self._iterates_arrays(a.value, fn) for a in it.args if a.keyword is None)
        return self.value_kind(it, fn) == "array"

    def _binding_is_array(self, a: Assignment, fn: Function) -> bool:
        value = a.value
        if value is None:
            return False
        if fn.traced and not self._module_values_static:
            self._module_values_static = True  # traced code: attributes of pytrees may be config
            try:
                return self._binding_is_array(a, fn)
            finally:
                self._module_values_static = False
        if self.is_host_pull(value):
            return False
        return self.value_kind(value, fn) == "array"

    def is_host_pull(self, value: cst.BaseExpression) -> bool:
        """`float(x)`, `x.item()`, `np.asarray(x)`, `jax.device_get(x)`: a host value."""
        if not isinstance(value, cst.Call):
            return False
        q = self.resolve(value.func)
        if q in apis.HOST_PULL_FUNCTIONS and q != "builtins.print":
            return True
        return q is None and isinstance(value.func, cst.Attribute) and value.func.attr.value in apis.HOST_METHODS

    def _mark_step_loops(self) -> None:
        # which functions contain step loops (for epoch loops around a per-epoch function)
        for _ in range(2):
            for fn in self.functions:
                for loop in fn.loops:
                    if fn.traced:
                        continue
                    loop.is_step = self._loop_does_jax_work(loop)
            for fn in self.functions:
                fn.contains_step_loop = any(loop.is_step and not self.walks_structure(loop)
                                            for loop in fn.loops) or any(
                    (c := self.callee(s.node, fn).function) is not None and c is not fn and c.contains_step_loop
                    for s in fn.calls)
        for fn in self.functions:
            for loop in fn.loops:
                if not loop.is_step:
                    continue
                # an epoch loop: it holds another step loop, or runs a compiled scan per iteration
                loop.is_epoch = any(child.is_step and not self.walks_structure(child)
                                    for child in self._descendants(loop)) or any(
                    ((c := self.callee(s.node, fn).function) is not None
                     and (c.contains_step_loop or (c.uses_scan and c is not fn)))
                    or self.resolve(s.node.func) in apis.SCAN_LIKE
                    for s in fn.calls if loop.encloses(s.loop))
        # per-step functions: called unguarded from a leaf step loop, transitively, untraced
        work: list[Function] = []
        for fn in self.functions:
            for site in fn.calls:
                if site.loop is None or site.guarded or not site.loop.is_step or site.loop.is_epoch:
                    continue
                target = self.callee(site.node, fn).function
                if target is not None and not target.traced and not target.contains_step_loop:
                    target.step_call_sites.append(site)
                    if not target.per_step:
                        target.per_step = True
                        work.append(target)
        while work:
            fn = work.pop()
            for site in fn.calls:
                if site.guarded:
                    continue
                target = self.callee(site.node, fn).function
                if target is not None and not target.traced and not target.per_step \
                        and not target.contains_step_loop:
                    target.per_step = True
                    target.step_call_sites.extend(fn.step_call_sites[:1])
                    work.append(target)

    def walks_structure(self, loop: Loop) -> bool:
        """A loop over a container's entries, not over steps: `for k in params: params[k] ...`,
        `d.items()`, `jax.tree.leaves(t)`. Such a loop inside a step (a hand-written optimizer
        update per parameter) does not make the step a loop nest of its own."""
        node = loop.node
        if not isinstance(node, cst.For):
            return False
        it = node.iter
        if isinstance(it, cst.Call):
            if isinstance(it.func, cst.Attribute) and it.func.attr.value in ("items", "keys", "values") \
                    and self.resolve(it.func) is None:
                return True
            if self.resolve(it.func) in ("builtins.zip", "builtins.enumerate"):
                # `zip(params, grads, state)`: the layers of a pytree, walked side by side
                return any(isinstance(a.value, cst.Name) and apis.STRUCTURE_NAMES.search(a.value.value)
                           for a in it.args if a.keyword is None)
            return self.resolve(it.func) in apis.TREE_LEAVES
        if isinstance(it, cst.Name):  # `for k in params:` indexing `params[k]`
            targets = set(loop.targets)
            return any(loop.encloses(s.loop) and isinstance(s.node.value, cst.Name)
                       and s.node.value.value == it.value
                       and any(set(names_in(e.slice)) & targets for e in s.node.slice)
                       for s in loop.function.subscripts)
        return False

    def _descendants(self, loop: Loop) -> Iterator[Loop]:
        for child in loop.children:
            yield child
            yield from self._descendants(child)

    def _loop_does_jax_work(self, loop: Loop) -> bool:
        fn = loop.function
        return any(loop.encloses(site.loop) and self.call_work(site.node, fn) is not None
                   for site in fn.calls)

    # ----------------------------------------------------------------- queries for rules
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

    def dispatched_per_step(self, site: Site) -> bool:
        """Python dispatches the site once per step: host code in a leaf step loop (unguarded),
        or in a host function called every step, outside any loop of its own and unguarded.
        Traced code and compiled loop bodies run every step too, but are not dispatched by
        Python: `per_step.why_every_step` covers them, with the reason."""
        if site.guarded:
            return False
        if site.loop is not None:
            loop = self._stepping_loop(site.loop)
            return loop.is_step and not loop.is_epoch
        return site.function.per_step

    def _stepping_loop(self, loop: Loop) -> Loop:
        """The loop whose iterations are the steps `loop`'s body runs in: itself, or, for a walk
        over a container's entries inside a step loop (`for k in totals: totals[k] +=
        float(metrics[k])` after each step), the step loop around it: the walk runs every step."""
        parent = loop.parent
        if not loop.is_step and parent is not None and parent.is_step and not parent.is_epoch \
                and self.walks_structure(loop):
            return parent
        return loop

    def step_loop_of(self, site: Site) -> Loop | None:
        """The loop that makes `site` run per step (its own, or a caller's for per-step functions)."""
        stepping = self._stepping_loop(site.loop) if site.loop is not None else None
        if stepping is not None and stepping.is_step:
            return stepping
        fn = site.function
        if fn.per_step and fn.step_call_sites:
            return fn.step_call_sites[0].loop
        return None

    def traced_functions(self) -> Iterator[Function]:
        return (fn for fn in self.functions if fn.traced)
