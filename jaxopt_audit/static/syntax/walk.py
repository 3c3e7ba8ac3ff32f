"""Fast traversal of libcst trees.

libcst's own visitor rebuilds every node it passes through and its metadata providers cost ~10x
the parse (docs/style.md), so the analyzer walks the dataclass fields itself, skipping whitespace and
punctuation, which costs about 5% of the parse.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import cast

import libcst as cst

# Fields that only hold formatting (whitespace, commas, brackets) or plain strings.
_SKIPPED_FIELDS = frozenset({
    "lpar", "rpar", "leading_lines", "lines_after_decorators", "header", "footer", "semicolon",
    "comma", "equal", "colon", "dot", "star", "arrow", "lbracket", "rbracket", "lbrace", "rbrace",
    "first_line", "empty_lines", "indent", "newline", "trailing_whitespace", "posonly_ind",
    "asynchronous", "type_parameters",
})
_fields_by_type: dict[type, tuple[str, ...]] = {}


def child_fields(node_type: type) -> tuple[str, ...]:
    fields = _fields_by_type.get(node_type)
    if fields is None:
        fields = tuple(
            f.name for f in dataclasses.fields(node_type)
            if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
        )
        _fields_by_type[node_type] = fields
    return fields


_is_node_type: dict[type, bool] = {}


def _is_node(value: object) -> bool:
    """isinstance(value, CSTNode) through a per-type cache (CSTNode is an ABC: slow to check)."""
    t = type(value)
    known = _is_node_type.get(t)
    if known is None:
        known = _is_node_type[t] = isinstance(value, cst.CSTNode)
    return known


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The syntactic children of `node` in field order (roughly source order)."""
    for name in child_fields(type(node)):
        value = getattr(node, name)
        t = type(value)
        if t is tuple or t is list:
            for item in value:
                if _is_node(item):
                    yield item
        elif _is_node(value):
            yield value


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and all its descendants, depth first."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(children(current))))


def own_nodes(body: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`body` and its descendants outside the functions, lambdas and classes nested in it (their
    names and statements are their own scope's)."""
    stack = [body]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(c for c in children(current) if not isinstance(c, (cst.FunctionDef, cst.Lambda, cst.ClassDef)))


def names_in(node: cst.CSTNode, counted: bool = True) -> Iterator[str]:
    """Every bare name read anywhere inside an expression: `a.b(c)` reads `a` and `c`; the
    attribute name `b` and keyword names are not reads. With `counted=False`, names whose
    length alone is read (`len(history)`) are left out: their values are not."""
    stack = [node]
    while stack:
        current = stack.pop()
        t = type(current)
        if not counted and t is cst.Call and _is_len(cast(cst.Call, current)):
            continue
        if t is cst.Name:
            yield cast(cst.Name, current).value
        elif t is cst.Attribute:
            stack.append(cast(cst.Attribute, current).value)
        elif t is cst.Arg:
            stack.append(cast(cst.Arg, current).value)
        else:
            stack.extend(children(current))


def _is_len(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value == "len"


def read_names(node: cst.CSTNode) -> set[str]:
    """`names_in` as a set."""
    return set(names_in(node))


def callee_name(call: cst.Call) -> str:
    """The name a call is spelled with, without its owner: `render` for `env.render(...)`,
    `print` for `print(...)`; "" for anything else (`fns[0](...)`)."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def target_names(target: cst.BaseExpression) -> list[str]:
    """Names bound by an assignment or loop target (`a`, `a, (b, c)`, `*rest`)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        out: list[str] = []
        for element in target.elements:
            out.extend(target_names(element.value))
        return out
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def string_value(node: cst.CSTNode) -> str | None:
    """The value of a plain string literal, or None."""
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # noqa: BLE001 - malformed escapes: treat as unknown
            return None
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        try:
            joined = node.evaluated_value
        except Exception:  # noqa: BLE001
            return None
        return joined if isinstance(joined, str) else None
    return None


def literal_texts(node: cst.CSTNode) -> Iterator[str]:
    """The literal text inside `node`: plain strings and the literal parts of f-strings."""
    for current in walk(node):
        if isinstance(current, (cst.SimpleString, cst.ConcatenatedString)):
            text = string_value(current)
        elif isinstance(current, cst.FormattedString):
            text = "".join(p.value for p in current.parts if isinstance(p, cst.FormattedStringText))
        else:
            continue
        if text:
            yield text


def int_value(node: cst.CSTNode) -> int | None:
    if isinstance(node, cst.Integer):
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = int_value(node.expression)
        return None if inner is None else -inner
    return None


def describe(node: cst.CSTNode, limit: int = 40) -> str:
    """Short source text of a node for messages (`float(loss)`), elided when long."""
    try:
        text = cst.Module(body=[]).code_for_node(node)
    except Exception:  # noqa: BLE001 - some nodes cannot be rendered alone
        return type(node).__name__
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."

