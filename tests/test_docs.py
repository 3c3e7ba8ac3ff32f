"""docs/ is part of the repository's contract: the rule catalog is generated from the rule files
and must match them, and nothing in the code points at documents outside the repository."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from jaxopt_audit.commands.scan import rule_catalog
from jaxopt_audit.static.pipeline.registry import load_rules

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


def test_the_documented_team_rule_runs_as_written(tmp_path, capsys):
    """docs/team_rules.md's example, copied out as a user would, loads, passes its own examples
    and reports through `--rules-dir` with nothing but the `jaxopt_audit.static` surface."""
    from jaxopt_audit.cli import main

    section = (ROOT / "docs" / "team_rules.md").read_text()
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


def _readme() -> str:
    return (ROOT / "README.md").read_text()


def test_the_readme_is_a_short_guide():
    assert len(_readme().splitlines()) <= 250


def test_the_quick_start_is_two_commands_the_first_installs_and_runs_the_main_job():
    section = _readme().split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2, commands
    assert "pip install" in commands[0] and "jaxopt-audit " in commands[0]
    assert "pytest" in commands[1]


def _documented_flags() -> dict[str, set[str]]:
    """Subcommand -> the long options the README's synopses and examples give it."""
    flags: dict[str, set[str]] = {}
    for language, block in re.findall(r"^```(\w*)\n(.*?)^```", _readme(), re.S | re.M):
        if language not in ("", "bash"):
            continue
        command = None
        for line in block.splitlines():
            found = re.search(r"jaxopt-audit (scan|run|bench|report|rules?)\b", line)
            if found:
                command = found.group(1)
            elif not line.startswith(" "):
                command = None
            if command:
                flags.setdefault(command, set()).update(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line))
    return flags


def test_every_flag_the_readme_documents_exists():
    from jaxopt_audit.cli import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    documented = _documented_flags()
    assert {"scan", "run", "bench", "report"} <= set(documented)
    missing = []
    for command, flags in sorted(documented.items()):
        known = {option for action in subparsers.choices[command]._actions for option in action.option_strings}
        missing += [f"{command} {flag}" for flag in sorted(flags - known)]
    assert not missing, "documented but not accepted: " + ", ".join(missing)


def test_the_readme_links_only_files_that_exist():
    targets = re.findall(r"\]\(((?!https?:)[^)#]+)\)", _readme())
    assert targets
    assert [t for t in targets if not (ROOT / t).exists()] == []
