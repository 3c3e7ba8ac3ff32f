"""JAX601 deprecated-api."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import cast

import libcst as cst

from jaxopt_audit.static import (
    DEPRECATIONS,
    KEYWORDS_BY_FUNCTION,
    TREE_MODULE_SINCE,
    Deprecation,
    Invalid,
    Keyword,
    Report,
    Rule,
    SemanticModel,
    Valid,
    canonical,
    child_fields,
    dotted,
    lookup,
    older_spelling,
    rename_deprecated,
    rename_keyword,
    walk,
)


class DeprecatedApi(Rule):
    """
    ## What it does
    Finds uses of JAX APIs that current JAX removed or deprecates, and names the replacement:
    the `jax.tree_map` family (→ `jax.tree.map`, `jax.tree.leaves`, ...),
    `jax.experimental.pjit.pjit` (→ `jax.jit`), `jax.experimental.maps.xmap`,
    `jax.experimental.host_callback` (→ `jax.debug.callback` / `jax.pure_callback`),
    `jax.abstract_arrays`, `jax.ShapedArray`, `DeviceArray` (→ `jax.Array`), the `jax.ops.index_*`
    updates, and every entry of the `_deprecations` tables JAX itself keeps. Reported where the
    name is spelled: at the import (`from jax import tree_map`) or the attribute
    (`jax.tree_map(...)`). Also keyword arguments that current functions dropped:
    `jnp.clip(x, a_min=..., a_max=...)` (now `min=`, `max=`), `jnp.reshape(x, newshape=...)`
    (now `shape=`), `jax.scipy.linalg.solve(..., sym_pos=True)`, and `jax.jit(..., device=...,
    backend=...)` given a value (deprecated), reported at the argument.

    ## Why is this bad?
    A removed API fails with `AttributeError` or `ImportError` (a removed keyword with
    `TypeError`) on current JAX, so the code does
    not run after an upgrade (reported as a warning). A deprecated one warns today and will be
    removed (info). In an annotation that `from __future__ import annotations` leaves
    unevaluated, or in an `if TYPE_CHECKING:` block, a removed name fails no run; type checkers
    and documentation tools still reject it (info, and the message says so).

    APIs that still work without a warning but have a modern replacement (`jax.random.PRNGKey`,
    `jax.pmap`) are not deprecated: they are JAX602 legacy-api, which is off by default.
    JAX601 is the one family still reported in test files by default: a removed API breaks a
    test suite on upgrade like any other code.

    ## How to fix
    Use the replacement the message names. Where it is a migration rather than a rename, the
    message says what else changes: `jax.shard_map` takes `mesh`, `in_specs` and `out_specs` as
    keywords and calls `check_rep` `check_vma`; `jax.jit` replacing `pjit` needs a mesh in
    context (`jax.set_mesh`) for bare `PartitionSpec`s; `device_put` takes a sharding where
    `device_put_sharded`/`device_put_replicated` stacked per-device arrays. The list is data
    (`jaxopt_audit/static/knowledge/deprecations.py`) and is checked against the installed JAX in the
    test suite.

    Version-compatibility code is left alone: an `if` on the JAX version or `hasattr(jax, ...)`,
    and a `try` that imports one spelling with the other in its `except ImportError` /
    `AttributeError` handler (or any handler, when the `try` holds nothing but imports).

    ## Automatic fix
    Safe: `scan --fix` re-spells a use of a renamed function, class or constant as its current
    name where it is a drop-in replacement (`jax.tree_map` -> `jax.tree.map`, `jnp.trapz` ->
    `jnp.trapezoid`, `jnp.DeviceArray` -> `jax.Array`), and renames a removed keyword whose
    replacement takes the same value (`a_min=` -> `min=`, `newshape=` -> `shape=`). Imports,
    legacy APIs (`PRNGKey`, `pmap`)
    and replacements with another signature or meaning (`in1d`, `device_put_replicated`) are left
    for you.
    """

    CODE = "JAX601"
    NAME = "deprecated-api"
    ANALYSIS = False  # names and imports only
    SEVERITY = "info"
    IMPACT = "api"
    SUMMARY = "Use of a JAX API that is deprecated or removed"
    FIX = "Use the replacement API named in the message."

    INVALID = [
        Invalid("""
            import jax
            from jax import tree_map  # <- JAX601
            from jax.experimental import host_callback as hcb  # <- JAX601

            def scale(params, factor):
                return jax.tree_map(lambda p: p * factor, params)  # <- JAX601

            def report(x):
                hcb.id_print(x)
                return tree_map(lambda v: v + 1, x)

            key = jax.random.PRNGKey(0)  # <- JAX602
            other = jax.random.PRNGKey(1)
            leaves = jax.tree_util.tree_multimap(lambda a, b: a + b, key, other)  # <- JAX601
        """),
        Invalid("""
            import jax.numpy as jnp
            from jax.experimental.pjit import pjit  # <- JAX601

            def is_array(x):
                return isinstance(x, jnp.DeviceArray)  # <- JAX601

            step = pjit(lambda x: jnp.trapz(x))  # <- JAX601
        """),
    ]
    VALID = [
        Valid("""
            import jax
            import jax.numpy as jnp
            from jax import tree_util
            from jax.sharding import Mesh, PartitionSpec

            key = jax.random.key(0)
            params = {"w": jnp.ones(3)}
            scaled = jax.tree.map(lambda p: p * 2, params)
            leaves = tree_util.tree_leaves(scaled)
            total = jax.tree_util.tree_reduce(lambda a, b: a + b, scaled)
            checked = isinstance(scaled["w"], jax.Array)
            area = jnp.trapezoid(jnp.arange(4.0))
            spec = PartitionSpec("data")
        """),
    ]

    def fix(self, model: SemanticModel, report: Report):
        if isinstance(report.node, cst.Arg):
            return rename_keyword(report.node, _keyword_entry(model, report.node))
        return rename_deprecated(model, report.node)

    def check(self, model: SemanticModel) -> Iterator[Report]:
        unevaluated_at: dict[int, str] | None = None
        for node, entry, spelled in _find(model):
            if entry.status == "legacy":  # legacy advice is JAX602's, opt-in
                continue
            # under `from __future__ import annotations` an annotation is never evaluated: a
            # removed name there fails no run, though type checkers and doc tools still read it
            if entry.status == "removed" and unevaluated_at is None:
                unevaluated_at = _unevaluated_nodes(model.module)  # only files with a removed name pay the walk
            unevaluated = None if unevaluated_at is None else unevaluated_at.get(id(node))
            evaluated = unevaluated is None
            imported = isinstance(node, (cst.ImportAlias, cst.ImportFrom))
            yield Report(node, _message(entry, spelled, unevaluated), fix=_fix(entry, imported),
                         severity="warning" if entry.status == "removed" and evaluated else "info")
        for arg, keyword in _keyword_uses(model):
            yield Report(arg, _keyword_message(keyword), fix=_keyword_fix(keyword),
                         severity="warning" if keyword.status == "removed" else "info")


# Every listed keyword, spelled as passed: files without one skip the walk over their calls.
_KEYWORD_SPELLED = re.compile(r"\b(?:" + "|".join(
    sorted({k for table in KEYWORDS_BY_FUNCTION.values() for k in table})) + r")\s*=")


def _called_function(model: SemanticModel, call: cst.Call) -> str | None:
    """`jnp.clip(...)` -> jax.numpy.clip; `partial(jax.jit, ...)` -> jax.jit (its keywords are jit's)."""
    q = model.resolve(call.func)
    if q == "functools.partial" and call.args:
        q = model.resolve(call.args[0].value)
    return q


def _keyword_uses(model: SemanticModel) -> Iterator[tuple[cst.Arg, Keyword]]:
    """Calls of a listed function that pass one of its removed or deprecated keywords."""
    if model.source is not None and _KEYWORD_SPELLED.search(model.source) is None:
        return
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
                    continue  # JAX warns only when a value is given
                yield arg, keyword


def _forwards_nothing(value: cst.BaseExpression, fn) -> bool:
    """`device=None`, or `device=device` forwarding a wrapper's own parameter (None unless its
    caller passes one: the caller's call is where the deprecated use would be)."""
    return isinstance(value, cst.Name) and (value.value == "None" or value.value in fn.params)


def _keyword_entry(model: SemanticModel, arg: cst.Arg) -> Keyword | None:
    return next((k for a, k in _keyword_uses(model) if a is arg), None)


def _plain_name(replacement: str) -> bool:
    return replacement.isidentifier()


def _keyword_message(keyword: Keyword) -> str:
    subject = f"the `{keyword.keyword}=` argument of `{keyword.function}`"
    if keyword.status == "removed":
        what = "was removed from JAX: the call fails with TypeError on current versions"
    else:
        what = "is deprecated in JAX and will be removed"
    if _plain_name(keyword.replacement):
        return f"{subject} {what}; pass `{keyword.replacement}=` instead (same meaning)"
    if keyword.replacement.startswith("nothing: "):
        return f"{subject} {what}; drop it and {keyword.replacement[len('nothing: '):]}"
    return f"{subject} {what}; pass {keyword.replacement} instead"


def _keyword_fix(keyword: Keyword) -> str:
    if _plain_name(keyword.replacement):
        return f"Rename the keyword: `{keyword.keyword}=` -> `{keyword.replacement}=`."
    if keyword.replacement.startswith("nothing: "):
        return f"Drop `{keyword.keyword}=` and {keyword.replacement[len('nothing: '):]}."
    return f"Replace `{keyword.keyword}=` with {keyword.replacement}."


def _unevaluated_nodes(module: cst.Module) -> dict[int, str]:
    """Ids of the nodes no run evaluates, with where they sit: inside annotations when the module
    postpones their evaluation, and inside `if TYPE_CHECKING:` blocks (an import of the
    removed `jaxlib.xla_extension` for a type hint)."""
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


def _find(model: SemanticModel) -> list[tuple[cst.CSTNode, Deprecation, str]]:
    """(node, entry, resolved name) for every spelled use, in source order."""
    found: list[tuple[cst.CSTNode, Deprecation, str]] = []
    if not any(q.split(".", 1)[0] in ("jax", "jaxlib") for q in model.imports.bound.values()):
        return found  # every deprecated name resolves through an import of jax
    if model.source is not None and _LAST_SEGMENT.search(model.source) is None:
        return found  # every use spells the listed name's last segment, in an import or an attribute
    found = _walk(model, model.module)
    restored = _restored(model) if found else set()
    return [use for use in found if use[2] not in restored]


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


def _walk(model: SemanticModel, root: cst.CSTNode) -> list[tuple[cst.CSTNode, Deprecation, str]]:
    found: list[tuple[cst.CSTNode, Deprecation, str]] = []
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


def _attribute_use(model: SemanticModel, node: cst.Attribute) -> tuple[cst.CSTNode, Deprecation, str] | None:
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
            return current, entry, q
        current = current.value
    return None


def _import_uses(node: cst.Import | cst.ImportFrom) -> list[tuple[cst.CSTNode, Deprecation, str]]:
    out: list[tuple[cst.CSTNode, Deprecation, str]] = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            name = canonical(dotted(alias.name) or "")
            entry = lookup(name)
            if entry is not None:
                out.append((alias, entry, name))
        return out
    if node.relative or node.module is None:
        return out
    module = canonical(dotted(node.module) or "")
    module_entry = lookup(module)
    if isinstance(node.names, cst.ImportStar):
        return [(node, module_entry, module)] if module_entry is not None else out
    for alias in node.names:
        name = canonical(f"{module}.{dotted(alias.name)}")
        entry = lookup(name)
        if entry is not None and entry is not module_entry:
            out.append((alias, entry, name))
    if module_entry is not None and len(out) < len(node.names):
        # a removed module: its own advice, unless every name imported has a listed replacement
        # of its own (`from jaxlib.xla_extension import DeviceArray` -> `jax.Array`)
        return [(node, module_entry, module)]
    return out


def _is_version_check(test: cst.BaseExpression) -> bool:
    """A test that selects code by JAX version or by what the installed JAX provides."""
    for node in walk(test):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "hasattr":
            return True
        if isinstance(node, cst.Name) and "version" in node.value.lower():
            return True
        if isinstance(node, cst.Attribute) and "version" in node.attr.value.lower():
            return True
    return False


def _removes(uses: list[tuple[cst.CSTNode, Deprecation, str]]) -> bool:
    return any(entry.status == "removed" for _, entry, _ in uses)


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


def _message(entry: Deprecation, spelled: str, unevaluated: str | None = None) -> str:
    subject = f"`{entry.name}`" if spelled == entry.name else f"`{spelled}` (from `{entry.name}`)"
    if entry.status == "removed" and unevaluated is not None:
        what = (f"was removed from JAX; {unevaluated} it fails no run, but type checkers and documentation "
                "tools reject it")
    elif entry.status == "removed":
        what = "was removed from JAX: it fails with AttributeError or ImportError on current versions"
    elif entry.status == "deprecated":
        what = "is deprecated in JAX and will be removed"
    else:
        what = "is a legacy API that JAX recommends replacing"
    if not entry.replacement:
        return f"{subject} {what}; JAX plans no replacement"
    if entry.replacement.startswith(_NOTHING):
        # "nothing: drop the call": what to do, not an API to use instead
        why = f" ({entry.caveat})" if entry.caveat else ""
        return f"{subject} {what}; nothing replaces it: {entry.replacement[len(_NOTHING):]}{why}"
    if entry.caveat:
        return f"{subject} {what}; use {_code(entry.replacement)} instead (not a rename: {entry.caveat})"
    older = older_spelling(entry.replacement)
    if older is not None:
        return (f"{subject} {what}; use {_code(entry.replacement)} instead (JAX {TREE_MODULE_SINCE} or newer; "
                f"`{older}` works on older versions too)")
    return f"{subject} {what}; use {_code(entry.replacement)} instead"


_NOTHING = "nothing: "


def _code(replacement: str) -> str:
    """Backticks around API names, not around prose ("nothing: drop the call")."""
    if replacement.startswith(("nothing", "the same", "pass ")):
        return replacement
    parts = replacement.split(", or ") if ", or " in replacement else replacement.split(" or ")
    if len(parts) > 1:
        return " or ".join(_code(p) for p in parts)
    if "," in replacement and "(" not in replacement:
        return ", ".join(_code(p.strip()) for p in replacement.split(","))
    if replacement.startswith(("jax", "x.", "-", "optax", "flax")) and " with " not in replacement \
            and " and " not in replacement and " in " not in replacement:
        return f"`{replacement}`"
    return replacement


def _fix(entry: Deprecation, imported: bool = False) -> str:
    if not entry.replacement:
        return f"Remove the use of `{entry.name}`; JAX offers no replacement."
    if entry.replacement.startswith(_NOTHING):
        step = entry.replacement[len(_NOTHING):]
        return f"{step[0].upper()}{step[1:]}" + (f": {entry.caveat}." if entry.caveat else ".")
    if imported and not entry.caveat and re.fullmatch(r"[\w.]+", entry.replacement):
        # `from jax import tree_map`: the name is bound here and used elsewhere in the file
        return (f"Change the import to `{entry.replacement}` (instead of `{entry.name}`); where the "
                "imported name changes, update its uses in the file.")
    if entry.caveat:
        return f"Migrate from `{entry.name}` to {_code(entry.replacement)}: {entry.caveat}."
    return f"Replace `{entry.name}` with {_code(entry.replacement)}."
