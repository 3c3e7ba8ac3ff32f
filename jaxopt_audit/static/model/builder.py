"""The one walk that builds a file's index: each function with its calls, loops, tests, subscripts
and bindings, each tagged with its innermost loop and whether a guard selects some iterations
(`if step % k == 0`, a recovery under `if np.isnan(loss):`); loop counters and literal trip
counts are read here too."""


from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import libcst as cst

from ..syntax.names import dotted
from ..syntax.walk import children, names_in, target_names, walk

if TYPE_CHECKING:
    pass
from .index import Assignment, ClassInfo, Comprehension, Function, FunctionNode, Loop, LoopNode, ModelIndex, Site


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


# Node types `Builder.visit` records nothing for (none is tested in its dispatch): it walks
# their children and nothing else. Leaves without children cost one type test.
_NOTHING_TO_RECORD = frozenset({
    cst.Attribute, cst.Arg, cst.SimpleStatementLine, cst.IndentedBlock, cst.Param,
    cst.Parameters, cst.Tuple, cst.List, cst.Dict, cst.Set, cst.Element, cst.StarredElement,
    cst.DictElement, cst.StarredDictElement, cst.Index, cst.SubscriptElement, cst.Slice,
    cst.Annotation, cst.ConcatenatedString, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
    cst.Ellipsis, cst.Pass, cst.Break, cst.Continue, cst.Else, cst.FormattedStringExpression,
    cst.FormattedStringText, cst.Module,
})


class Builder:
    """The one walk: fills Functions, Loops and Sites."""

    def __init__(self, model: ModelIndex) -> None:
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
