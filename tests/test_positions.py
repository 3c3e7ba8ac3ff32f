"""Positions computed on the enclosing statement only must equal libcst's whole-module
PositionProvider, for every kind of node a rule reports, in real files."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from jaxopt_audit.static.syntax.positions import Positions
from jaxopt_audit.static.syntax.walk import walk

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted([*ROOT.glob("rules/*.py"), *ROOT.glob("jaxopt_audit/static/**/*.py"),
                *ROOT.glob("tests/fixtures/**/*.py"), *ROOT.glob("reference_pipelines/*/stage*.py")])
REPORTED = (cst.Call, cst.Name, cst.Attribute, cst.Subscript, cst.For, cst.While, cst.If, cst.FunctionDef,
            cst.Comparison, cst.BinaryOperation, cst.FormattedString, cst.DictComp, cst.ListComp,
            cst.Lambda, cst.IfExp, cst.BooleanOperation, cst.UnaryOperation, cst.ImportFrom, cst.Arg)


def assert_same(module: cst.Module, label: str) -> int:
    reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    positions = Positions(module, module.code)
    checked = 0
    for node in walk(module):
        if not isinstance(node, REPORTED):
            continue
        expected = reference[node]
        got = positions.get(node)
        assert got is not None, f"{label}: no position for {type(node).__name__}"
        assert tuple(got) == (expected.start.line, expected.start.column, expected.end.line,
                              expected.end.column), f"{label}: {type(node).__name__} at {expected.start}"
        checked += 1
    return checked


# the analyzer's own modules are the largest files here: checked in the full run only
@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if "jaxopt_audit" in p.parts else p
                                  for p in FILES], ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_positions_match_the_full_provider(path):
    assert_same(cst.parse_module(path.read_bytes()), str(path))


def test_the_comparison_covers_many_nodes():
    assert sum(assert_same(cst.parse_module(p.read_bytes()), str(p)) for p in FILES[:10]) > 1000


def test_awkward_layouts():
    source = textwrap.dedent('''\
        # leading comment

        @decorator(
            arg=1,
        )

        def f(x,
              y):  # continuation lines
            if x: y = g(x); z = h(
                y,
                    odd_indent)
            class Inner:
                def m(self):
                    return [v * 2 for v in self.xs
                            if v]
            else_ = x if y else (lambda q: q + 1)(y)
            return f"{x!r} and {y:>4}"
        ''')
    assert assert_same(cst.parse_module(source), "layouts") > 30
