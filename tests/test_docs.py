"""docs/ is part of the repository's contract: the rule catalog is generated from the rule files
and must match them, and nothing in the code points at documents outside the repository."""

from __future__ import annotations

from pathlib import Path

from jaxopt_audit.static.command import rule_catalog
from jaxopt_audit.static.registry import load_rules

ROOT = Path(__file__).resolve().parent.parent


def test_rule_catalog_is_generated_from_the_rule_files():
    written = (ROOT / "docs" / "rules.md").read_text()
    assert written == rule_catalog(load_rules()), (
        "docs/rules.md is stale: regenerate it with `jaxopt-audit rules --format markdown > docs/rules.md`")


def test_every_rule_has_its_section_in_the_catalog():
    written = (ROOT / "docs" / "rules.md").read_text()
    for rule in load_rules():
        assert f"\n## {rule.CODE}\n" in written

