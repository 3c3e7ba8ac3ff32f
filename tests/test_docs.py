"""docs/ is part of the repository's contract: the rule catalog is generated from the rule files
and must match them, and nothing in the code points at documents outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

from jaxopt_audit.commands.scan import rule_catalog
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



def test_code_cites_only_documents_in_the_repository():
    outside = re.compile(r"\b(DESIGN|RULES|STYLE)\.md\b|\bshared/")
    offenders = []
    for folder in ("jaxopt_audit", "rules", "reference_pipelines", "benchmarks", "tests", ".ci"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in (".py", "") and path != Path(__file__).resolve():
                for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
                    if outside.search(line):
                        offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
