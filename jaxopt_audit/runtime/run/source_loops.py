"""Where a line of the user's source sits: the innermost function and the innermost `for` or
`while` statement around it, from the file's syntax tree (read once per file)."""

from __future__ import annotations

import ast
import linecache
from functools import lru_cache
from typing import NamedTuple

from .sites import SourceLine


class Enclosing(NamedTuple):
    """The innermost function (None: module level) and loop (None: no loop of that function)
    around a line: (first, last) lines of each."""

    function: str | None
    function_span: tuple[int, int] | None
    loop: tuple[int, int] | None


def enclosing(site: SourceLine) -> Enclosing:
    """The innermost function and, inside it, the innermost loop containing `site`'s line."""
    return _enclosing(site.path, site.line, len(linecache.getlines(site.path)))


@lru_cache(maxsize=4096)
def _enclosing(path: str, line: int, _length: int) -> Enclosing:
    tree = _tree(path, _length)
    if tree is None:
        return Enclosing(None, None, None)
    function: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in ast.walk(tree):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None
                and node.lineno <= line <= node.end_lineno
                and (function is None or node.lineno >= function.lineno)):
            function = node
    scope: ast.AST = function if function is not None else tree
    best: tuple[int, int] | None = None
    for node in _own_nodes(scope):
        if (isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and node.end_lineno is not None
                and node.lineno <= line <= node.end_lineno
                and (best is None or node.end_lineno - node.lineno < best[1] - best[0])):
            best = (node.lineno, node.end_lineno)
    if function is None:
        return Enclosing(None, None, best)
    return Enclosing(function.name, (function.lineno, function.end_lineno or function.lineno), best)


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of `scope`'s body, not those of functions or classes defined inside it."""
    found: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


@lru_cache(maxsize=64)
def _tree(path: str, _length: int) -> ast.Module | None:
    try:
        return ast.parse("".join(linecache.getlines(path)))
    except (SyntaxError, ValueError):
        return None


def loop_carries_into_call(site: SourceLine, loop: tuple[int, int]) -> bool | None:
    """Whether a call on `site`'s line inside the loop spanning `loop` takes a value the loop
    carries from one iteration to the next (a name assigned in the loop's body and read in it
    no later than it is first assigned: `theta = theta - step * g`, `key, sub = split(key)`),
    as opposed to values made afresh each iteration (`xs[i]`) or left unchanged. None when the
    source cannot tell (no such loop or call)."""
    node = _loop_node(site.path, loop)
    if node is None:
        return None
    called: set[str] = set()
    for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
        if isinstance(inner, ast.Call) and inner.lineno <= site.line <= (inner.end_lineno or inner.lineno):
            for argument in [*inner.args, *(k.value for k in inner.keywords)]:
                called.update(n.id for n in ast.walk(argument) if isinstance(n, ast.Name))
    if not called:
        return None
    return bool(called & _carried_names(node))


def loop_carries(path: str, loop: tuple[int, int]) -> bool | None:
    """Whether the loop spanning `loop` carries any name from one iteration to the next (as in
    `loop_carries_into_call`); None when there is no such loop in the source."""
    node = _loop_node(path, loop)
    return None if node is None else bool(_carried_names(node))


def _loop_node(path: str, loop: tuple[int, int]) -> ast.For | ast.AsyncFor | ast.While | None:
    tree = _tree(path, len(linecache.getlines(path)))
    if tree is None:
        return None
    return next((n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))
                 and (n.lineno, n.end_lineno) == loop), None)


def _carried_names(node: ast.For | ast.AsyncFor | ast.While) -> set[str]:
    """The names the loop's body reads no later than it first assigns them (the loop's own
    target, set by its header each iteration, excepted)."""
    header = ({n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
              if isinstance(node, (ast.For, ast.AsyncFor)) else set())
    first_assigned: dict[str, int] = {}
    loaded: dict[str, int] = {}
    for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
        if isinstance(inner, ast.Name):
            if isinstance(inner.ctx, ast.Store) and inner.id not in header:
                first_assigned[inner.id] = min(first_assigned.get(inner.id, inner.lineno), inner.lineno)
            elif isinstance(inner.ctx, ast.Load):
                loaded[inner.id] = min(loaded.get(inner.id, inner.lineno), inner.lineno)
        elif isinstance(inner, ast.AugAssign) and isinstance(inner.target, ast.Name):
            loaded[inner.target.id] = min(loaded.get(inner.target.id, inner.lineno), inner.lineno)
    return {name for name, line in first_assigned.items() if loaded.get(name, line + 1) <= line}
