"""Where a file uses a listed deprecated, removed or legacy JAX API, and which of its code no run
evaluates: the questions JAX601 (deprecated and removed APIs) and JAX602 (legacy APIs) ask.

A use is reported where its name is spelled: at the import (`from jax import tree_map`) or the
attribute (`jax.tree_map(...)`), resolved through the file's imports as spelled. Code that selects
an API by what the installed JAX provides is no use: an `if` on the JAX version or on
`hasattr(...)`, a `try` with one spelling in its body and the other in an `except ImportError` /
`AttributeError` handler, and the names a file puts back itself (`random.KeyArray = jax.Array`).
The table of APIs and keywords is data (`knowledge/deprecations.py`); the wording of the advice
lives beside it.
"""

from __future__ import annotations

import re
from typing import NamedTuple, cast

import libcst as cst

from ..knowledge.deprecations import DEPRECATIONS, KEYWORDS_BY_FUNCTION, Deprecation, Keyword, lookup
from ..syntax.names import canonical, dotted
from ..syntax.walk import child_fields, walk
from .core import SemanticModel
from .facts import fact
from .index import Function


class DeprecatedUse(NamedTuple):
    """One spelled use of a listed API: the node that spells it, its entry, and the name as
    resolved (`jax.experimental.maps.Mesh` for a use of `jax.experimental.maps`'s member)."""

    node: cst.CSTNode
    entry: Deprecation
    spelled: str


@fact
def deprecated_uses(model: SemanticModel) -> tuple[DeprecatedUse, ...]:
    """Every use of a listed API (any status) the file spells, in source order, leaving out
    version-compatibility code and the uses of names the file itself puts back."""
    if not any(q.split(".", 1)[0] in ("jax", "jaxlib") for q in model.imports.bound.values()):
        return ()  # every deprecated name resolves through an import of jax
    if model.source is not None and _LAST_SEGMENT.search(model.source) is None:
        return ()  # every use spells the listed name's last segment, in an import or an attribute
    found = _walk(model, model.module)
    restored = _restored(model) if found else set()
    return tuple(use for use in found if use.spelled not in restored)


@fact
def deprecated_keyword_uses(model: SemanticModel) -> tuple[tuple[cst.Arg, Keyword], ...]:
    """Calls of a listed function that pass one of its removed or deprecated keywords, each with
    the keyword's entry; a deprecated keyword counts only where a value is given (JAX warns only
    then)."""
    if model.source is not None and _KEYWORD_SPELLED.search(model.source) is None:
        return ()
    found: list[tuple[cst.Arg, Keyword]] = []
    for fn in model.functions:
        for site in fn.calls:
            table = KEYWORDS_BY_FUNCTION.get(_called_function(model, site.node) or "")
            if table is None:
                continue
            for arg in site.node.args:
                if arg.keyword is None or arg.keyword.value not in table:
                    continue
                keyword = table[arg.keyword.value]
                if keyword.status == "deprecated" and _forwards_nothing(arg.value, fn):
                    continue
                found.append((arg, keyword))
    return tuple(found)


@fact
def unevaluated_nodes(model: SemanticModel) -> dict[int, str]:
    """Ids of the nodes no run evaluates, with where they sit: inside annotations when the module
    postpones their evaluation (`from __future__ import annotations`), and inside
    `if TYPE_CHECKING:` blocks (an import of the removed `jaxlib.xla_extension` for a type hint).
    The block is recognised by its test's name, the spelling `typing` gives it."""
    module = model.module
    out: dict[int, str] = {}
    for block in walk(module):
        if isinstance(block, cst.If) and isinstance(block.test, (cst.Name, cst.Attribute)) \
                and (dotted(block.test) or "").rsplit(".", 1)[-1] == "TYPE_CHECKING":
            out.update((id(n), "in an `if TYPE_CHECKING:` block") for n in walk(block.body))
    imports = [s for line in module.body if isinstance(line, cst.SimpleStatementLine) for s in line.body
               if isinstance(s, cst.ImportFrom) and isinstance(s.module, cst.Name) and s.module.value == "__future__"]
    if any(not isinstance(s.names, cst.ImportStar) and any(a.evaluated_name == "annotations" for a in s.names)
           for s in imports):
        out.update((id(n), "in an annotation that `from __future__ import annotations` leaves unevaluated")
                   for a in walk(module) if isinstance(a, cst.Annotation) for n in walk(a.annotation))
    return out


# Text prefilters over the source, so that files that cannot hold a use skip the walks: every
# listed keyword as passed (`a_min=`), and the last segment of every listed name.
_KEYWORD_SPELLED = re.compile(r"\b(?:" + "|".join(
    sorted({k for table in KEYWORDS_BY_FUNCTION.values() for k in table})) + r")\s*=")
_LAST_SEGMENT = re.compile(r"\b(?:" + "|".join(sorted({re.escape(e.name.rsplit(".", 1)[-1]) for e in DEPRECATIONS},
                                                       key=len, reverse=True)) + r")\b")
# The last segment of every listed name: a use spells it, so a chain naming none cannot match.
_LAST_SEGMENTS = frozenset(entry.name.rsplit(".", 1)[-1] for entry in DEPRECATIONS)
# Leaves and literals: nothing below them can name an API.
_LEAVES = frozenset({cst.Name, cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary, cst.Pass,
                     cst.Break, cst.Continue, cst.Ellipsis, cst.Global, cst.Nonlocal})


def _node_types(base: type) -> set[type]:
    out: set[type] = {base}
    subclasses: list[type] = base.__subclasses__()
    for sub in subclasses:
        out |= _node_types(sub)
    return out


# Node types worth entering (exact types: libcst's ABC isinstance checks dominate a walk).
_BRANCHES = frozenset(t for t in _node_types(cst.CSTNode) if t not in _LEAVES)


def _called_function(model: SemanticModel, call: cst.Call) -> str | None:
    """`jnp.clip(...)` -> jax.numpy.clip; `partial(jax.jit, ...)` -> jax.jit (its keywords are jit's)."""
    q = model.resolve(call.func)
    if q == "functools.partial" and call.args:
        q = model.resolve(call.args[0].value)
    return q


def _forwards_nothing(value: cst.BaseExpression, fn: Function) -> bool:
    """`device=None`, or `device=device` forwarding a wrapper's own parameter (None unless its
    caller passes one: the caller's call is where the deprecated use would be)."""
    return isinstance(value, cst.Name) and (value.value == "None" or value.value in fn.params)


def _restored(model: SemanticModel) -> set[str]:
    """Removed names the file puts back (`random.KeyArray = jax.Array`, a shim so an old library
    keeps importing): the assignment is no use, and uses after it find the name."""
    out: set[str] = set()
    for node in walk(model.module):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Attribute):
                    q = model.imports.resolve(target.target)
                    if q is not None and lookup(q) is not None:
                        out.add(q)
    return out


def _walk(model: SemanticModel, root: cst.CSTNode) -> list[DeprecatedUse]:
    """The uses under `root`, in source order, skipping version-compatibility code."""
    found: list[DeprecatedUse] = []
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        t = type(node)
        if t in _LEAVES:
            continue
        # dispatch on the exact type, as the model does; cast() records what the test established
        if t is cst.Attribute:
            attribute = cast(cst.Attribute, node)
            hit = _attribute_use(model, attribute)
            if hit is not None:
                found.append(hit)
                continue
            if dotted(attribute) is not None:
                continue  # a plain dotted name: its sub-chains were checked with it
        elif t is cst.Import or t is cst.ImportFrom:
            found.extend(_import_uses(cast("cst.Import | cst.ImportFrom", node)))
            continue
        elif t is cst.If and _is_version_check(cast(cst.If, node).test):
            continue  # `if hasattr(jax, "typeof"): ... else: jax.core.get_aval(x)`: handled on purpose
        elif (t is cst.Try or t is cst.TryStar) and _catches_missing_api(cast("cst.Try | cst.TryStar", node)):
            tried = cast("cst.Try | cst.TryStar", node)
            # version-compatibility code: the body tries one spelling and the handlers hold the
            # other (old first and new as the fallback, or the reverse); only else/finally run
            # whatever the JAX version. Unless every spelling is gone (`sharded_jit`'s
            # PartitionSpec, then `pxla`'s): then the last handler's error escapes.
            handlers = [_walk(model, handler.body) for handler in tried.handlers]
            if handlers and all(_removes(uses) for uses in handlers) and _removes(_walk(model, tried.body)):
                found.extend(use for uses in handlers for use in uses)
            stack.extend(reversed([n for n in (tried.orelse, tried.finalbody) if n is not None]))
            continue
        pushed: list[cst.CSTNode] = []
        for name in child_fields(t):
            value = getattr(node, name)
            vt = type(value)
            if vt is tuple or vt is list:
                pushed.extend(v for v in value if type(v) in _BRANCHES)
            elif vt in _BRANCHES:
                pushed.append(value)
        pushed.reverse()
        stack.extend(pushed)
    return found


def _attribute_use(model: SemanticModel, node: cst.Attribute) -> DeprecatedUse | None:
    """The longest sub-chain of `a.b.c.d` that names a listed API where its last segment is spelled
    (an imported alias is reported at its import instead)."""
    spelled = _attribute_names(node)
    if spelled.isdisjoint(_LAST_SEGMENTS):
        return None
    current: cst.BaseExpression = node
    while isinstance(current, cst.Attribute):
        q = model.imports.resolve(current)  # the name as spelled, not what the model reads it as
        entry = lookup(q) if q is not None else None
        if q is not None and entry is not None and entry.name.rsplit(".", 1)[-1] in _attribute_names(current):
            return DeprecatedUse(current, entry, q)
        current = current.value
    return None


def _import_uses(node: cst.Import | cst.ImportFrom) -> list[DeprecatedUse]:
    """The listed names an import statement imports, each at its alias; a removed module at the
    statement, unless every name imported from it has a listed replacement of its own."""
    out: list[DeprecatedUse] = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            name = canonical(dotted(alias.name) or "")
            entry = lookup(name)
            if entry is not None:
                out.append(DeprecatedUse(alias, entry, name))
        return out
    if node.relative or node.module is None:
        return out
    module = canonical(dotted(node.module) or "")
    module_entry = lookup(module)
    if isinstance(node.names, cst.ImportStar):
        return [DeprecatedUse(node, module_entry, module)] if module_entry is not None else out
    for alias in node.names:
        name = canonical(f"{module}.{dotted(alias.name)}")
        entry = lookup(name)
        if entry is not None and entry is not module_entry:
            out.append(DeprecatedUse(alias, entry, name))
    if module_entry is not None and len(out) < len(node.names):
        # a removed module: its own advice, unless every name imported has a listed replacement
        # of its own (`from jaxlib.xla_extension import DeviceArray` -> `jax.Array`)
        return [DeprecatedUse(node, module_entry, module)]
    return out


def _is_version_check(test: cst.BaseExpression) -> bool:
    """A test that selects code by JAX version or by what the installed JAX provides: a call of
    `hasattr`, or a name or attribute whose name contains "version" (`jax.__version__`,
    `JAX_VERSION`, `version.parse(...)`). Matching the name is the point: a version is whatever
    the project calls it, and no model fact knows which values are versions."""
    for node in walk(test):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "hasattr":
            return True
        if isinstance(node, cst.Name) and "version" in node.value.lower():
            return True
        if isinstance(node, cst.Attribute) and "version" in node.attr.value.lower():
            return True
    return False


def _removes(uses: list[DeprecatedUse]) -> bool:
    return any(use.entry.status == "removed" for use in uses)


def _catches_missing_api(node: cst.Try | cst.TryStar) -> bool:
    """`try: from jax.experimental import maps` / `except ImportError:`: a deliberate fallback.
    A broad handler (`except Exception:`, bare `except:`) counts when the body only imports:
    then what it catches is a missing name. Around other code it may be catching anything."""
    imports_only = all(isinstance(line, cst.SimpleStatementLine)
                       and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in line.body)
                       for line in node.body.body)
    for handler in node.handlers:
        if handler.type is None:
            if imports_only:
                return True
            continue
        names = {n.value for n in walk(handler.type) if isinstance(n, cst.Name)}
        if names & {"ImportError", "ModuleNotFoundError", "AttributeError"}:
            return True
        if imports_only and names & {"Exception", "BaseException"}:
            return True
    return False


def _attribute_names(node: cst.Attribute) -> set[str]:
    names: set[str] = set()
    current: cst.BaseExpression = node
    while isinstance(current, cst.Attribute):
        names.add(current.attr.value)
        current = current.value
    return names
