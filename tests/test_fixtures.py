"""Fixture files are the expected output as data (TorchFix's shape): every line that must be
reported carries a trailing `# <- CODE` mark, and a scan with all rules on must report exactly
those (line, code) pairs. `seeds/` holds the seed documents' own before/after code; `real/` holds
realistic code written after reading real JAX projects, which must stay (nearly) quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxopt_audit.static.pipeline.engine import scan_file
from jaxopt_audit.static.pipeline.registry import load_rules

from conftest import marked

FIXTURES = Path(__file__).parent / "fixtures"
FILES = sorted(p for sub in ("seeds", "real") for p in (FIXTURES / sub).glob("*.py"))
RULES = load_rules()
expected = marked  # the `# <- CODE` marks, parsed as the rules' own INVALID examples parse theirs


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_fixture(path):
    result = scan_file(str(path), [r() for r in RULES])
    assert result.error is None, result.error
    got = sorted((f.line, f.code) for f in result.findings)
    assert got == expected(path), "\n".join(f"{f.line}:{f.column} {f.code} {f.message}" for f in result.findings)


def test_seed_before_code_is_flagged_and_after_code_is_clean():
    seeds = FIXTURES / "seeds"
    assert {c for _, c in expected(seeds / "seed001_original.py")} >= {"JAX101", "JAX302"}
    assert {c for _, c in expected(seeds / "seed002_pitfalls.py")} >= {"JAX401", "JAX402"}
    assert expected(seeds / "seed001_optimized.py") == [] and expected(seeds / "seed002_fixed.py") == []
