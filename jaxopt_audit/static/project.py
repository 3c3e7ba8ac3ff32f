"""The project-wide pass: a cheap summary of each scanned module, so a call into another module of
the same project is resolved like a local one ("is this callee jitted", "does it do array work",
"which of its arguments are static").

The first pass summarises every file (stdlib `ast`, in the scan's worker pool); the parent resolves
each file's imports against the scanned files (relative imports through the `__init__.py` chain,
absolute ones from the importer's directory or its top package's parent) and hands each file only
the summaries it imports (an `ImportedView`). A module outside the scanned files is unknown: the
rules stay silent about it, as before.
"""

from __future__ import annotations

import ast
import builtins
import os
import warnings
from typing import NamedTuple

_BUILTINS = frozenset(dir(builtins))
# what makes a call array work, by resolved prefix (the first pass has no semantic model)
_ARRAY_PREFIXES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.random.", "jax.scipy.", "jax.tree",
                   "optax.")
_JIT_NAMES = frozenset({"jax.jit", "jax.pmap", "equinox.filter_jit", "flax.linen.jit", "flax.nnx.jit",
                        "jax.experimental.pjit.pjit", "jax.pjit"})
# a function whose result or job is a host value cannot be jitted; its callers' loops are host loops
_HOST_CALLS = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.print",
                         "builtins.open", "numpy.asarray", "numpy.array", "jax.device_get"})
_HOST_METHODS = frozenset({"item", "tolist", "block_until_ready", "numpy"})


class FunctionSummary(NamedTuple):
    """One top-level function or class method (`Cls.method`) of a scanned module."""

    name: str
    params: tuple[str, ...]
    jitted: bool  # its own name calls compiled code: decorated, or `name = jax.jit(f)` at module level
    static_params: frozenset[str]
    array_ops: int  # calls to jax.numpy/lax/nn/random/... in its body
    host_work: bool  # converts to Python values, prints, syncs, reads files
    has_loop: bool


class ImportRef(NamedTuple):
    """`local` names `module` (an attribute of it when `attr` is set), `level` dots up."""

    local: str
    module: str
    attr: str | None
    level: int


class ModuleSummary(NamedTuple):
    path: str
    functions: dict[str, FunctionSummary]
    imports: tuple[ImportRef, ...]


def _jax_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> qualified library name, for the names the summary needs to recognise."""
    table: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                table[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                table[a.asname or a.name] = f"{node.module}.{a.name}"
    return table


def _qualified(expr: ast.expr, table: dict[str, str]) -> str | None:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    head = table.get(expr.id)
    if head is None:
        return f"builtins.{expr.id}" if expr.id in _BUILTINS else None
    return ".".join([head, *reversed(parts)])


def _jit_static(expr: ast.expr, table: dict[str, str], params: tuple[str, ...]) -> frozenset[str] | None:
    """The static parameters when `expr` is a jit wrapper (`jax.jit`, `partial(jax.jit, ...)`,
    `jax.jit(static_argnums=...)`), else None."""
    call = expr if isinstance(expr, ast.Call) else None
    q = _qualified(call.func if call else expr, table)
    if q == "functools.partial" and call is not None and call.args:
        if _qualified(call.args[0], table) not in _JIT_NAMES:
            return None
    elif q not in _JIT_NAMES:
        return None
    static: set[str] = set()
    for kw in call.keywords if call else ():
        values = kw.value.elts if isinstance(kw.value, (ast.Tuple, ast.List)) else [kw.value]
        for v in values:
            if not isinstance(v, ast.Constant):
                continue
            if kw.arg in ("static_argnums", "donate_argnums") and isinstance(v.value, int):
                if kw.arg == "static_argnums" and -len(params) <= v.value < len(params):
                    static.add(params[v.value])
            elif kw.arg == "static_argnames" and isinstance(v.value, str):
                static.add(v.value)
    return frozenset(static)


def _function(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str, table: dict[str, str],
              method: bool) -> FunctionSummary:
    params = tuple(a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs])
    if method and params:
        params = params[1:]
    jitted, static = False, frozenset[str]()
    for decorator in node.decorator_list:
        found = _jit_static(decorator, table, params)
        if found is not None:
            jitted, static = True, found
    array_ops, host, loop = 0, False, False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            q = _qualified(sub.func, table)
            if q is not None and q.startswith(_ARRAY_PREFIXES):
                array_ops += 1
            elif q in _HOST_CALLS or (isinstance(sub.func, ast.Attribute) and sub.func.attr in _HOST_METHODS):
                host = True
        elif isinstance(sub, (ast.For, ast.While, ast.AsyncFor)):
            loop = True
    return FunctionSummary(name, params, jitted, static, array_ops, host, loop)


def summarise(tree: ast.Module, path: str) -> ModuleSummary:
    """The module's top-level functions and class methods, its `name = jax.jit(f)` bindings and
    what it imports from where."""
    table = _jax_aliases(tree)
    functions: dict[str, FunctionSummary] = {}
    imports: list[ImportRef] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[node.name] = _function(node, node.name, table, False)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = f"{node.name}.{item.name}"
                    functions[name] = _function(item, name, table, True)
        elif isinstance(node, ast.Import):
            # `import a.b` is spelled `a.b.f`, `import a.b as m` is spelled `m.f`
            imports.extend(ImportRef(a.asname or a.name, a.name, None, 0) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imports.extend(ImportRef(a.asname or a.name, node.module or "", a.name, node.level)
                           for a in node.names if a.name != "*")
    for node in tree.body:  # `step = jax.jit(_step, static_argnums=...)` at module level
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and node.value.args \
                and isinstance(node.value.args[0], ast.Name) and node.value.args[0].id in functions:
            wrapped = functions[node.value.args[0].id]
            wrapper = node.value.func
            call = node.value
            if isinstance(wrapper, ast.Call):  # partial(jax.jit, static_argnums=...)(f)
                static = _jit_static(wrapper, table, wrapped.params)
            else:
                static = _jit_static(ast.Call(func=wrapper, args=[], keywords=call.keywords), table,
                                     wrapped.params)
            name = node.targets[0].id
            if static is not None:
                functions[name] = wrapped._replace(name=name, jitted=True, static_params=static)
            elif name in functions:
                del functions[name]  # rebound to something the summary cannot follow
    return ModuleSummary(path, functions, tuple(imports))


def summarise_file(path: str) -> ModuleSummary | None:
    """None when the file cannot be read or parsed (the scan reports it)."""
    if not path.endswith(".py"):
        return None
    try:
        with open(path, "rb") as handle, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # `"\."` in the user's strings: not ours to print
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return summarise(tree, os.path.abspath(path))


def imported_candidate(fn: FunctionSummary) -> bool:
    """An imported function worth jitting, as far as its summary shows: plain (not a method: the
    class may be a flax/equinox module traced through apply), two or more array operations to
    fuse, no host work and no loop of its own (it may hold the training loop)."""
    return not fn.jitted and "." not in fn.name and fn.array_ops >= 2 and not fn.host_work \
        and not fn.has_loop


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

    def _module(self, base: str, dotted: str) -> ModuleSummary | None:
        stem = os.path.join(base, *dotted.split(".")) if dotted else base
        return self.summaries.get(stem + ".py") or self.summaries.get(os.path.join(stem, "__init__.py"))

    def _find(self, importer: str, module: str, level: int) -> ModuleSummary | None:
        if level:
            return self._module(_package_dir(importer, level), module)
        for base in dict.fromkeys((os.path.dirname(importer), _top_package_parent(importer))):
            found = self._module(base, module)
            if found is not None:
                return found
        return None

    def view(self, path: str) -> ImportedView:
        """The imported functions `path` can call, keyed by the spelling used there (`step`,
        `model.step`, `m.Trainer.update`)."""
        own = self.summaries.get(os.path.abspath(path))
        if own is None:
            return ImportedView({})
        functions: dict[str, FunctionSummary] = {}
        for ref in own.imports:
            if ref.attr is not None:  # from X import attr: a function of X, or a submodule X.attr
                target = self._find(own.path, ref.module, ref.level)
                if target is not None and ref.attr in target.functions:
                    functions[ref.local] = target.functions[ref.attr]
                    continue
                sub = f"{ref.module}.{ref.attr}" if ref.module else ref.attr
                module = self._find(own.path, sub, ref.level)
            else:
                module = self._find(own.path, ref.module, 0)
            if module is not None and module.path != own.path:
                functions.update((f"{ref.local}.{name}", fn) for name, fn in module.functions.items())
        return ImportedView(functions)


class ImportedView(NamedTuple):
    """What one file's model knows of the functions it imports from the scanned project."""

    functions: dict[str, FunctionSummary]

    def get(self, spelling: str | None) -> FunctionSummary | None:
        return self.functions.get(spelling) if spelling is not None else None

    def digest(self) -> bytes:
        """The cache's dependency input: changes when an imported summary changes."""
        return repr(sorted(self.functions.items())).encode()
