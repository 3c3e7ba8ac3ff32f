"""Name resolution: what a dotted expression refers to, through imports and aliases.

`import jax.numpy as np` makes `np.sum` resolve to `jax.numpy.sum`; `from jax import jit` makes
`jit` resolve to `jax.jit`; `jit = jax.jit` at module level is an alias. Rules match on resolved
names, never on spellings.
"""

from __future__ import annotations

import builtins

import libcst as cst

_BUILTINS = frozenset(dir(builtins))

# Canonical spellings: several public paths name the same API.
_CANONICAL_PREFIXES = (
    ("jax._src.numpy.", "jax.numpy."),
    ("jax.experimental.numpy.", "jax.numpy."),
    ("flax.nnx.bridge.", "flax.nnx."),
)


def dotted(expr: cst.BaseExpression) -> str | None:
    """`a.b.c` as text, or None if the expression is not a plain dotted name."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        base = dotted(expr.value)
        return None if base is None else f"{base}.{expr.attr.value}"
    return None


def _module_name(node: cst.BaseExpression) -> str:
    return dotted(node) or ""


def _imported_names(node: cst.Import | cst.ImportFrom, package: str) -> list[tuple[str, str]]:
    """(local name, fully qualified name) for each name an import statement binds."""
    if isinstance(node, cst.Import):
        out = []
        for alias in node.names:
            full = _module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                out.append((alias.asname.name.value, full))
            else:  # `import jax.numpy` binds `jax`
                head = full.split(".")[0]
                out.append((head, head))
        return out
    if isinstance(node.names, cst.ImportStar):
        return []
    module = _module_name(node.module) if node.module is not None else ""
    if node.relative:  # relative import: resolve against the file's package when known
        module = ".".join(p for p in (package, module) if p) or module
    out = []
    for alias in node.names:
        name = _module_name(alias.name)
        local = (alias.asname.name.value
                 if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                 else name)
        out.append((local, f"{module}.{name}" if module else name))
    return out


def _reexport(a: str, b: str) -> str | None:
    """Of two imports of one name, the library's when the other is a project module's name for it
    (`pkg.utils.partial` re-exports `functools.partial`)."""
    if a.rsplit(".", 1)[-1] != b.rsplit(".", 1)[-1]:
        return None
    a_lib, b_lib = a.split(".")[0] in _ALIAS_ROOTS, b.split(".")[0] in _ALIAS_ROOTS
    return a if a_lib and not b_lib else b if b_lib and not a_lib else None


class ImportTable:
    """Local name -> fully qualified name, from the imports and simple aliases of one file."""

    def __init__(self) -> None:
        self.bound: dict[str, str] = {}
        self.defined: set[str] = set()  # names defined in the module (defs, classes, assignments)
        # names imported as two different things (`import jax.numpy as np`, later `import numpy as
        # np`): which one a function sees depends on when it runs, so they resolve to nothing
        self.ambiguous: set[str] = set()
        self.star = False  # a `from m import *` may bind any name
        # conventional names (`jax`, `jnp`) the file reads but binds nowhere: it is a fragment run
        # in a namespace that imported them (a script `exec`'d after another, cells saved one per
        # file), so they name what they name everywhere else
        self.unbound: frozenset[str] = frozenset()

    def add_import(self, node: cst.Import | cst.ImportFrom, package: str = "", alternative: bool = False) -> None:
        """Bind the names `node` imports. An `alternative` (an import under an `if` or an
        `except ImportError:`) does not replace a binding to JAX with one elsewhere: `import numpy
        as jnp` for when JAX is absent is not what traced code calls."""
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            self.star = True
        for local, full in _imported_names(node, package):
            if alternative and self.bound.get(local, "").split(".")[0] == "jax" and full.split(".")[0] != "jax":
                continue
            before = self.bound.get(local, full)
            if before != full:
                reexport = _reexport(before, full)
                if reexport is not None:  # `from pkg.utils import partial` and `from functools import partial`
                    self.bound[local] = reexport
                    continue
                self.ambiguous.add(local)
            self.bound[local] = full

    def add_alias(self, name: str, value: cst.BaseExpression) -> None:
        """`jit = jax.jit` / `np_ = jnp` at module level: an alias when the value resolves."""
        qualified = self.resolve(value)
        if qualified is not None and qualified.split(".")[0] in _ALIAS_ROOTS:
            self.bound[name] = qualified
        else:
            self.defined.add(name)

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """Fully qualified name of a dotted expression, or None when it is not an import."""
        if isinstance(expr, cst.Name):
            name = expr.value
            if name in self.ambiguous:
                return None
            if name in self.bound:
                return canonical(self.bound[name])
            if name in _BUILTINS and name not in self.defined:
                return f"builtins.{name}"
            if (self.star or name in self.unbound) and name in _STAR_CONVENTIONS and name not in self.defined:
                return _STAR_CONVENTIONS[name]
            return None
        if isinstance(expr, cst.Attribute):
            base = self.resolve(expr.value)
            return None if base is None else canonical(f"{base}.{expr.attr.value}")
        return None


# Only aliases of library names are followed; `x = y` between local values is dataflow, not naming.
_ALIAS_ROOTS = frozenset({
    "jax", "jaxlib", "numpy", "optax", "flax", "equinox", "haiku", "functools", "time", "timeit",
    "math", "builtins", "chex", "scipy",
})


# Under `from project.common import *` a module uses `jax`, `jnp` or `partial` that the star
# import binds (or a fragment uses them unbound): these spellings name one library each by
# universal convention. (`np`, `random`,
# `nn`, `jit` do not: older JAX code writes `import jax.numpy as np`; Python's or JAX's random,
# flax's or torch's nn, JAX's or numba's jit.)
_STAR_CONVENTIONS = {
    "jax": "jax", "jnp": "jax.numpy", "lax": "jax.lax", "partial": "functools.partial",
    "optax": "optax", "flax": "flax", "eqx": "equinox", "hk": "haiku",
}


def canonical(name: str) -> str:
    for prefix, replacement in _CANONICAL_PREFIXES:
        if name.startswith(prefix):
            return replacement + name[len(prefix):]
    return name


def conventional_names() -> frozenset[str]:
    """The spellings a file may use without binding them (see `_STAR_CONVENTIONS`)."""
    return frozenset(_STAR_CONVENTIONS)
