"""Source positions of libcst nodes, computed only where findings are.

libcst's PositionProvider re-generates the code of the whole module, which costs about as much
as parsing it. Here the stdlib `ast` parser (written in C, several times faster) gives the
absolute line and indentation of the innermost statement that holds a node, and the provider
runs on that statement alone. Results equal the provider's (tests compare them on real files).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import NamedTuple, cast

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from .walk import children

# Compound statements whose indented body is descended into (`ast` has the same `.body`).
_DESCEND = (cst.FunctionDef, cst.ClassDef, cst.For, cst.While, cst.With, cst.If, cst.Try)


class Span(NamedTuple):
    line: int  # 1-based
    column: int  # 0-based, as libcst
    end_line: int
    end_column: int


class Positions:
    def __init__(self, module: cst.Module, source: str | None = None) -> None:
        self.module = module
        self._source = source  # the parsed text; `module.code` would re-generate it (slow)
        self._source_lines = source.splitlines() if source is not None else None
        self._parents: dict[int, cst.CSTNode] | None = None
        self._tree: ast.Module | None = None
        # fallback: the full PositionProvider mapping
        self._whole: Mapping[cst.CSTNode, CodeRange] | None = None
        # id(statement) -> its positions rendered alone, the rendered node, its first line, its lines
        self._rendered: dict[int, tuple[Mapping[cst.CSTNode, CodeRange], cst.CSTNode, int, list[str]]] = {}
        self._indexes: dict[int, dict[int, int]] = {}  # id(module or block) -> see _ast_index

    def get(self, node: cst.CSTNode) -> Span | None:
        try:
            return self._local(node)
        except (SyntaxError, ValueError, RecursionError, KeyError, IndexError):
            return self._fallback(node)

    # ------------------------------------------------------------------ internals
    def _fallback(self, node: cst.CSTNode) -> Span | None:
        if self._whole is None:
            self._whole = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        code_range = self._whole.get(node)
        if code_range is None:
            return None
        return Span(code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column)

    def _parent_map(self) -> dict[int, cst.CSTNode]:
        if self._parents is None:
            parents: dict[int, cst.CSTNode] = {}
            stack: list[cst.CSTNode] = [self.module]
            while stack:
                current = stack.pop()
                for child in children(current):
                    parents[id(child)] = current
                    stack.append(child)
            self._parents = parents
        return self._parents

    def _ast(self) -> ast.Module:
        if self._tree is None:
            self._tree = ast.parse(self._source if self._source is not None else self.module.code)
        return self._tree

    def _statement_of(self, node: cst.CSTNode) -> tuple[cst.CSTNode, ast.stmt]:
        """The innermost statement holding `node` that ast and libcst both index, with its ast twin."""
        parents = self._parent_map()
        path = [node]
        while path[-1] is not self.module:
            path.append(parents[id(path[-1])])
        path.reverse()  # module ... node
        container: cst.CSTNode = self.module
        ast_list: list[ast.stmt] = self._ast().body
        depth = 1
        while True:
            statement = path[depth]
            twin = ast_list[self._ast_index(container)[id(statement)]]
            if isinstance(statement, cst.SimpleStatementLine) or not isinstance(statement, _DESCEND):
                return statement, twin
            body = statement.body
            if depth + 2 < len(path) and path[depth + 1] is body and isinstance(body, cst.IndentedBlock):
                container, ast_list = body, twin.body  # type: ignore[attr-defined]  # compound, as in libcst
                depth += 2
                continue
            return statement, twin

    def _ast_index(self, container: cst.CSTNode) -> dict[int, int]:
        """id(statement) -> index of its ast twin in the same body, once per body: a lookup per
        finding would be linear in the body's length (thousands of statements in a big module)."""
        key = id(container)
        if key not in self._indexes:
            index: dict[int, int] = {}
            ast_index = 0
            for statement in container.body:  # type: ignore[attr-defined]
                index[id(statement)] = ast_index
                ast_index += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
            self._indexes[key] = index
        return self._indexes[key]

    def _local(self, node: cst.CSTNode) -> Span | None:
        if node is self.module:
            return self._fallback(node)
        statement, twin = self._statement_of(node)
        key = id(statement)
        if key not in self._rendered:
            stripped = statement.with_changes(leading_lines=()) if hasattr(statement, "leading_lines") else statement
            module = cst.Module(body=[cast("cst.SimpleStatementLine | cst.BaseCompoundStatement", stripped)],
                                default_indent=self.module.default_indent,
                                default_newline=self.module.default_newline)
            mapping = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
            first_line = twin.lineno
            for decorator in getattr(twin, "decorator_list", ()):
                first_line = min(first_line, decorator.lineno)
            self._rendered[key] = (mapping, stripped, first_line, module.code.splitlines())
        mapping, stripped, first_line, rendered = self._rendered[key]
        code_range = mapping.get(stripped if node is statement else node)
        if code_range is None:
            return None
        start_line = first_line + code_range.start.line - 1
        end_line = first_line + code_range.end.line - 1
        # The standalone rendering leaves out the block's indentation on the lines libcst
        # re-indents, but not on raw ones (inside a multi-line string): compare each line with
        # the original to know how much was left out.
        return Span(start_line, code_range.start.column + self._shift(start_line, rendered, code_range.start.line),
                    end_line, code_range.end.column + self._shift(end_line, rendered, code_range.end.line))

    def line(self, number: int) -> str:
        """The text of source line `number` (1-based); empty past the end."""
        if self._source_lines is None:
            self._source_lines = self.module.code.splitlines()
        return self._source_lines[number - 1] if 0 < number <= len(self._source_lines) else ""

    def _shift(self, line: int, rendered: list[str], rendered_line: int) -> int:
        original = self.line(line)
        ours = rendered[rendered_line - 1] if rendered_line - 1 < len(rendered) else ""
        return len(original) - len(ours)
