"""Automatic fixes: libcst codemods that rules offer through their `fix` hook.

A fix replaces nodes of the parsed module with new nodes; everything it does not replace keeps its
exact text (formatting and comments), since libcst writes the untouched tree back verbatim.
`fix_source` applies them in rounds, as ruff does: scan, apply the fixes whose nodes do not
overlap, parse the result again and repeat until no fix is left, so each file compiles after
every round and a second run changes nothing. A round whose output does not parse or compile is
thrown away (the file keeps the previous round's text).

Applicability: "safe" fixes cannot change what the program computes; "unsafe" ones may (they
need `--unsafe-fixes`).
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from collections.abc import Iterable
from typing import NamedTuple

import libcst as cst

from ..framework.fix import allowed, offered_fix
from ..framework.results import ScanSource
from ..model import SemanticModel
from ..pipeline.discovery import package_of
from ..pipeline.registry import finding_counter

MAX_ROUNDS = 8


class Applied(NamedTuple):
    code: str
    line: int
    column: int
    description: str
    cell: int | None = None  # notebooks: line/column are inside this cell


class FixOutcome(NamedTuple):
    path: str
    original: str
    fixed: str
    applied: list[Applied]

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.original.splitlines(keepends=True),
                                            self.fixed.splitlines(keepends=True),
                                            fromfile=self.path, tofile=self.path))


class _Replace(cst.CSTTransformer):
    def __init__(self, mapping: dict[int, cst.CSTNode | cst.FlattenSentinel]) -> None:
        super().__init__()
        self.mapping = mapping

    def on_leave(self, original_node, updated_node):
        return self.mapping.get(id(original_node), updated_node)


def _compiles(text: str) -> bool:
    try:
        compile(text, "<fixed>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _one_round(text: str, path: str, rules: list, ignored: Iterable[str], unsafe: bool,
               package: str, scan: ScanSource) -> tuple[str, list[Applied]]:
    """Apply every non-overlapping allowed fix once; (new text, what was applied)."""
    wanted = {(f.code, f.line, f.column) for f in scan(text, path, rules, ignored).findings
              if allowed(f.fix_applicability, unsafe)}
    if not wanted:
        return text, []
    module = cst.parse_module(text)
    model = SemanticModel(module, path, package, text, rescan=finding_counter(scan, path))
    positions = model.positions
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    mapping: dict[int, cst.CSTNode | cst.FlattenSentinel] = {}
    applied: list[Applied] = []
    for rule in rules:
        if rule.CODE not in {code for code, _, _ in wanted}:
            continue
        for report in rule.check(model):
            span = positions.get(report.node)
            if span is None or (rule.CODE, span.line, span.column + 1) not in wanted:
                continue
            fix = offered_fix(rule, model, report)
            if fix is None or not allowed(fix.applicability, unsafe):
                continue
            spans = []
            for old, _ in fix.replacements:
                s = positions.get(old)
                if s is None or id(old) in mapping:
                    break
                spans.append(((s.line, s.column), (s.end_line, s.end_column)))
            else:
                if any(a[0] < b[1] and b[0] < a[1] for a in spans for b in taken):
                    continue  # overlaps a fix of this round: the next round gets it
                taken.extend(spans)
                mapping.update((id(old), new) for old, new in fix.replacements)
                applied.append(Applied(rule.CODE, span.line, span.column + 1, fix.description))
    if not mapping:
        return text, []
    fixed = module.visit(_Replace(mapping)).code
    try:
        cst.parse_module(fixed)
    except cst.ParserSyntaxError:
        return text, []
    if not _compiles(fixed):
        return text, []
    return fixed, applied


def fix_source(text: str, path: str, rules: list, ignored: Iterable[str] = (), unsafe: bool = False,
               package: str = "", *, scan: ScanSource) -> FixOutcome:
    """Fix one file's text in rounds until nothing fixable is left."""
    current, applied = text, []
    ignored = tuple(ignored)
    for _ in range(MAX_ROUNDS):
        current, done = _one_round(current, path, rules, ignored, unsafe, package, scan)
        if not done:
            break
        applied.extend(done)
    return FixOutcome(path, text, current, applied)


def fix_file(path: str, rules: list, ignored: Iterable[str] = (), unsafe: bool = False, *,
             scan: ScanSource) -> FixOutcome | None:
    """Fix a .py file's text (nothing written). None when it cannot be read or parsed."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        module = cst.parse_module(data)
    except (OSError, cst.ParserSyntaxError, UnicodeDecodeError, LookupError, SyntaxError):
        return None
    text = data.decode(module.encoding)
    return fix_source(text, path, rules, ignored, unsafe, package_of(path), scan=scan)


def write_fixed(outcome: FixOutcome, encoding: str = "utf-8") -> None:
    """Replace the file atomically with its fixed text, keeping its mode; through a symlink, the
    target is replaced, not the link."""
    target = os.path.realpath(outcome.path)
    directory = os.path.dirname(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".fix", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(outcome.fixed.encode(encoding))
        shutil.copymode(target, tmp)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
