"""The project-wide pass: a cheap summary of each scanned module, so a call into another module of
the same project is resolved like a local one ("is this callee jitted", "does it do array work",
"which of its arguments are static").

Each file's summary comes from the semantic model its scan builds anyway (one parse per file, in
the worker pool); the parent resolves
each file's imports against the scanned files (relative imports through the `__init__.py` chain,
absolute ones from the importer's directory or its top package's parent) and hands each file only
the summaries it imports (an `ImportedView`). A module outside the scanned files is unknown: the
rules stay silent about it, as before. A method called in traced code on an object an imported
function made (`sampler = make_sampler()`, then `jax.jit(lambda k: sampler.run(k))`) is traced in
the modules behind that import: its class is not known, so every method of that name there is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import NamedTuple

import libcst as cst

from ..knowledge import apis
from ..model import Function, Loop, SemanticModel
from ..model.eager import WORTH_JIT, eager_ops, host_side
from ..model.step_size import small_step_ops
from ..model.summaries import FunctionSummary, ImportedView
from ..syntax.names import dotted
from .discovery import package_of


class ImportRef(NamedTuple):
    """`local` (as spelled in calls) names `module`, or its attribute `attr`, `level` dots up."""

    local: str
    module: str
    attr: str | None
    level: int


class ModuleSummary(NamedTuple):
    path: str
    functions: dict[str, FunctionSummary]
    imports: tuple[ImportRef, ...]
    loop_calls: frozenset[str]  # spellings of imported callables called inside a loop here
    # spellings of imported callables this module traces: called from its traced code, or handed
    # to jit or a tracing transform (`jax.jit(helpers.step)`, `lax.scan(body, ...)`)
    traced_calls: frozenset[str] = frozenset()

    def to_json(self) -> list:
        return [self.path, {k: [*f[:3], sorted(f.static_params), *f[4:]] for k, f in self.functions.items()},
                [list(r) for r in self.imports], sorted(self.loop_calls), sorted(self.traced_calls)]

    @classmethod
    def from_json(cls, data: list) -> ModuleSummary:
        path, functions, imports, calls, traced = data
        return cls(path, {k: FunctionSummary(f[0], tuple(f[1]), f[2], frozenset(f[3]), *f[4:])
                          for k, f in functions.items()},
                   tuple(ImportRef(*r) for r in imports), frozenset(calls), frozenset(traced))


def _imports(module: cst.Module) -> list[ImportRef]:
    refs: list[ImportRef] = []
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for a in small.names:  # `import a.b` is spelled `a.b.f`, `import a.b as m` is `m.f`
                    full = dotted(a.name) or ""
                    local = a.asname.name.value if a.asname and isinstance(a.asname.name, cst.Name) else full
                    refs.append(ImportRef(local, full, None, 0))
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                module_name = dotted(small.module) if small.module is not None else ""
                for a in small.names:
                    name = dotted(a.name) or ""
                    local = a.asname.name.value if a.asname and isinstance(a.asname.name, cst.Name) else name
                    refs.append(ImportRef(local, module_name or "", name, len(small.relative)))
    return refs


# The last names of jit wrappers and tracing transforms (`jit`, `vmap`, `scan`, ...).
_WRAPPER_NAMES = frozenset(q.rsplit(".", 1)[-1] for q in (*apis.JIT_WRAPPERS, *apis.TRACING_TRANSFORMS))


def summarise_model(model: SemanticModel) -> ModuleSummary:
    """The module's top-level functions, class methods and `name = jax.jit(f, ...)` bindings, from
    the facts its model already has (one parse, one answer per fact), and what it imports."""
    top = model.module_function
    functions: dict[str, FunctionSummary] = {}
    for fn in model.functions:
        if fn.parent is not top or fn.name == "<lambda>" or fn.is_module:
            continue
        params = tuple(fn.params[1:] if fn.cls is not None and fn.params else fn.params)
        if not fn.direct_jit and not fn.array_ops:
            continue  # no JAX work to tell: an unknown callee gets the same answers
        loops = bool(fn.loops)
        # host_side costs a walk: asked only where imported_candidate would look at it
        ops = eager_ops(model, fn)
        host = not fn.direct_jit and ops >= WORTH_JIT and not loops and fn.cls is None and host_side(model, fn)
        small = small_step_ops(model, fn)  # the size of a compiled step, jitted here or where it is imported
        functions[fn.qualname] = FunctionSummary(
            fn.qualname, params, fn.direct_jit, frozenset(fn.static_params), ops, host, loops, small)
    for a in top.assignments:  # `fast = jax.jit(step, static_argnums=...)`
        if len(a.targets) == 1 and a.value is not None and a.attribute_target is None:
            wrapped = model._jit_of(a.value, top)
            if wrapped is not None and wrapped.function is not None \
                    and wrapped.function.qualname in functions:
                base = functions[wrapped.function.qualname]
                functions[a.targets[0]] = base._replace(name=a.targets[0], jitted=True)
    imports = _imports(model.module)
    roots = {ref.local.split(".")[0] for ref in imports}

    def imported(expr: cst.BaseExpression) -> str | None:
        spelled = dotted(expr)
        return spelled if spelled is not None and spelled.split(".")[0] in roots else None

    calls, traced = set(), set()
    for fn in model.functions:
        for site in fn.calls:
            call = site.node
            if site.loop is not None or fn.traced:
                spelled = imported(call.func)
                if spelled is not None and site.loop is not None:
                    calls.add(spelled)
                if spelled is not None and fn.traced:
                    traced.add(spelled)
                elif fn.traced and (made := _method_of_made_object(fn, call.func, imported)) is not None:
                    traced.add(made)
            func = call.func
            last = func.attr if isinstance(func, cst.Attribute) else func
            if not call.args or not isinstance(last, cst.Name) or last.value not in _WRAPPER_NAMES:
                continue  # resolved only when spelled like a jit or a transform
            q = model.resolve(func)
            positions = (0,) if q in apis.JIT_WRAPPERS else apis.TRACING_TRANSFORMS.get(q or "", ())
            for i in positions:
                if i < len(call.args) and call.args[i].keyword is None:
                    handed = imported(call.args[i].value)
                    if handed is not None:
                        traced.add(handed)
                        if q in apis.JIT_WRAPPERS:  # `fast = jax.jit(step)`: its wrapper may be called in a loop
                            calls.add(handed)
    return ModuleSummary(os.path.abspath(model.path), functions, tuple(imports), frozenset(calls),
                         frozenset(traced))


def _method_of_made_object(fn: Function, func: cst.BaseExpression,
                           imported: Callable[[cst.BaseExpression], str | None]) -> str | None:
    """`diffusion.sample_loop` called in traced code, where `diffusion = make_diffusion(...)` in
    this function or one around it and `make_diffusion` is imported: spelled
    `make_diffusion().sample_loop`. The object's class is not known, only that it comes from the
    modules behind that import (Project.traced_elsewhere looks there)."""
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
        return None
    name = func.value.value
    scope: Function | None = fn
    while scope is not None:
        for a in scope.assignments:
            if a.targets == (name,) and a.attribute_target is None and isinstance(a.value, cst.Call):
                maker = imported(a.value.func)
                return f"{maker}().{func.attr.value}" if maker is not None else None
        if name in scope.params:
            return None
        scope = scope.parent
    return None


def summarise_file(path: str) -> ModuleSummary:
    """One file's summary on its own (tests, tools); the scan takes it from the model it builds."""
    with open(path, "rb") as handle:
        module = cst.parse_module(handle.read())
    return summarise_model(SemanticModel(module, path, package_of(path)))


def imported_candidate(fn: FunctionSummary) -> bool:
    """An imported function worth jitting, as far as its summary shows: plain (not a method: the
    class may be a flax/equinox module traced through apply), enough array operations to be worth
    compiling (`eager.WORTH_JIT`), no host work and no loop of its own (it may hold the training
    loop)."""
    return not fn.jitted and "." not in fn.name and fn.eager_ops >= WORTH_JIT and not fn.host_work \
        and not fn.has_loop


def counted_steps(model: SemanticModel, loop: Loop | None) -> bool:
    """The loop, or one around it, counts steps (`range`, `enumerate`, `step += 1`, `while`) and
    does not walk a structure: a loop over a call's arguments inside library code is not a training
    loop, whatever the imported callee does."""
    while loop is not None:
        if not model.walks_structure(loop) and (loop.counters or isinstance(loop.node, cst.While)):
            return True
        loop = loop.parent
    return False


# ----------------------------------------------------------------- resolution (in the parent)
def _package_dir(path: str, level: int) -> str:
    directory = os.path.dirname(path)
    for _ in range(level - 1):
        directory = os.path.dirname(directory)
    return directory


def _top_package_parent(path: str) -> str:
    directory = os.path.dirname(path)
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory = os.path.dirname(directory)
    return directory


class Project:
    """Every scanned module's summary, by absolute path."""

    def __init__(self, summaries: dict[str, ModuleSummary]) -> None:
        self.summaries = summaries
        self._traced: dict[str, frozenset[str]] | None = None

    def _module(self, base: str, dotted: str) -> ModuleSummary | None:
        stem = os.path.join(base, *dotted.split(".")) if dotted else base
        return self.summaries.get(stem + ".py") or self.summaries.get(os.path.join(stem, "__init__.py"))

    def _find(self, importer: str, module: str, level: int) -> ModuleSummary | None:
        if level:
            return self._module(_package_dir(importer, level), module)
        # a script in a folder without `__init__.py`, run from the repository root, imports its
        # siblings through that folder's name (`from scripts.diffusion import ...`)
        top = _top_package_parent(importer)
        for base in dict.fromkeys((os.path.dirname(importer), top, os.path.dirname(top))):
            found = self._module(base, module)
            if found is not None:
                return found
        return None

    def view(self, path: str) -> ImportedView:
        """The imported functions `path` can call, keyed by the spelling used there (`step`,
        `model.step`, `m.Trainer.update`); empty when none of them is called in a loop there, so
        such a file keeps the result of its first (and only) scan."""
        own = self.summaries.get(os.path.abspath(path))
        if own is None:
            return _EMPTY
        traced = self.traced_elsewhere().get(own.path, frozenset())
        functions: dict[str, FunctionSummary] = {}
        if own.loop_calls:
            imported = {spelling: fn for spelling, (_, fn) in self._imported(own).items()}
            if any(c in imported for c in own.loop_calls):
                functions = imported
        return ImportedView(functions, traced) if functions or traced else _EMPTY

    def traced_elsewhere(self) -> dict[str, frozenset[str]]:
        """Module path -> its functions that another scanned module traces (calls from jitted
        code, or hands to jit or a transform): their bodies run under tracing there."""
        if self._traced is None:
            found: dict[str, set[str]] = {}
            for own in self.summaries.values():
                if own.traced_calls:
                    resolved = self._imported(own)
                    for spelling in own.traced_calls:
                        if spelling in resolved:
                            path, fn = resolved[spelling]
                            found.setdefault(path, set()).add(fn.name)
                        elif "()." in spelling:
                            for path, name in self._methods_behind(own, *spelling.split("().")):
                                found.setdefault(path, set()).add(name)
            self._traced = {path: frozenset(names) for path, names in found.items()}
        return self._traced

    def _methods_behind(self, own: ModuleSummary, maker: str, method: str) -> list[tuple[str, str]]:
        """The methods named `method` (`Cls.method`) of the modules that the module defining
        `maker` (as `own` imports it) reaches through its imports: where the object `maker`
        returns can get its class from."""
        start = None
        for ref in own.imports:
            if ref.attr is not None and ref.local == maker:
                start = self._find(own.path, ref.module, ref.level)
            elif ref.attr is None and maker.startswith(ref.local + "."):
                start = self._find(own.path, ref.module, 0)
            if start is not None:
                break
        seen: dict[str, ModuleSummary] = {}
        todo = [start] if start is not None else []
        while todo:
            module = todo.pop()
            if module.path in seen or module.path == own.path:
                continue
            seen[module.path] = module
            for ref in module.imports:
                found = self._find(module.path, ref.module, ref.level)
                if ref.attr is not None and (found is None or ref.attr not in found.functions):
                    sub = self._find(module.path, f"{ref.module}.{ref.attr}" if ref.module else ref.attr, ref.level)
                    found = sub or found
                if found is not None:
                    todo.append(found)
        return [(path, name) for path, module in seen.items() for name in module.functions
                if name.count(".") == 1 and name.endswith("." + method)]

    def _imported(self, own: ModuleSummary) -> dict[str, tuple[str, FunctionSummary]]:
        """Spelling in `own` -> (the path of the module that defines it, its summary)."""
        functions: dict[str, tuple[str, FunctionSummary]] = {}
        for ref in own.imports:
            if ref.attr is not None:  # from X import attr: a function of X, or a submodule X.attr
                target = self._find(own.path, ref.module, ref.level)
                if target is not None and ref.attr in target.functions:
                    functions[ref.local] = (target.path, target.functions[ref.attr])
                    continue
                sub = f"{ref.module}.{ref.attr}" if ref.module else ref.attr
                module = self._find(own.path, sub, ref.level)
            else:
                module = self._find(own.path, ref.module, 0)
            if module is not None and module.path != own.path:
                functions.update((f"{ref.local}.{name}", (module.path, fn)) for name, fn in module.functions.items())
        return functions


_EMPTY = ImportedView({})


class SummaryStore:
    """Summaries kept beside the result cache, by path and content digest, so a warm scan knows
    every module's summary without parsing it."""

    def __init__(self, directory: str | None) -> None:
        self.file = os.path.join(directory, "project-summaries.json") if directory else None
        self.entries: dict[str, tuple[str, list | None]] = {}
        if self.file is not None:
            try:
                with open(self.file, encoding="utf-8") as handle:
                    self.entries = {k: tuple(v) for k, v in json.load(handle).items()}
            except (OSError, ValueError, AttributeError):
                self.entries = {}  # missing or damaged: rebuilt by this scan

    def lookup(self, path: str, digest: str) -> tuple[bool, ModuleSummary | None]:
        """(known, summary): known when this content of the file was summarised before; the
        summary is None for a file that has none (a notebook, a file that does not parse), so a
        warm scan parses neither kind again."""
        entry = self.entries.get(os.path.abspath(path))
        if entry is None or entry[0] != digest:
            return False, None
        if entry[1] is None:
            return True, None
        try:
            return True, ModuleSummary.from_json(entry[1])
        except (TypeError, ValueError):
            return False, None

    def put(self, path: str, digest: str, summary: ModuleSummary | None) -> None:
        self.entries[os.path.abspath(path)] = (digest, summary.to_json() if summary is not None else None)

    def save(self) -> None:
        if self.file is None or not os.path.isdir(os.path.dirname(self.file)):
            return
        temporary = f"{self.file}.{os.getpid()}.tmp"
        try:
            with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w",
                      encoding="utf-8") as handle:  # private, like the result cache
                json.dump(self.entries, handle, separators=(",", ":"))
            os.replace(temporary, self.file)
        except OSError:
            try:
                os.unlink(temporary)
            except OSError:
                pass
