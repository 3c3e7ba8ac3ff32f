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


def test_the_readme_team_rule_runs_as_written(tmp_path, capsys):
    """The README's team-rule example, copied out as a user would, loads, passes its own examples
    and reports through `--rules-dir` with nothing but the `jaxopt_audit.static` surface."""
    from jaxopt_audit.cli import main

    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Team rules"):]
    source = re.search(r"```python\n(# team_rules/no_debug_print.py\n.*?)```", section, re.S).group(1)
    assert "from jaxopt_audit.static import" in source and "jaxopt_audit.static." not in source
    (tmp_path / "team_rules").mkdir()
    (tmp_path / "team_rules" / "no_debug_print.py").write_text(source)
    (tmp_path / "train.py").write_text("import jax\n\n\n@jax.jit\ndef f(x):\n"
                                       "    jax.debug.print('{x}', x=x)\n    return x\n")
    code = main(["scan", str(tmp_path / "train.py"), "--rules-dir", str(tmp_path / "team_rules"),
                 "--select", "TEAM", "--format", "concise", "--no-cache", "--no-config"])
    out = capsys.readouterr().out
    assert code == 1 and "train.py:6:5: TEAM001" in out
