"""The packages import downwards only: no module of `static` or `runtime` imports `report` or
`commands`, and nothing below `commands` imports it (docs/design.md, "Layout")."""

from __future__ import annotations

import ast
from pathlib import Path

import jaxopt_audit

ROOT = Path(jaxopt_audit.__file__).parent
FORBIDDEN = {"static": {"report", "commands"}, "runtime": {"report", "commands"}, "report": {"commands"}}


def _imported_packages(path: Path) -> set[str]:
    """Top-level jaxopt_audit packages a module imports (absolute or relative)."""
    module = path.relative_to(ROOT.parent).with_suffix("").parts
    package = module[:-1] if path.name != "__init__.py" else module[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - (node.level - 1)])
                names.append(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        for name in names:
            parts = name.split(".")
            if parts[0] == "jaxopt_audit" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_no_domain_imports_the_report_or_the_commands_above_it():
    offences = []
    for layer, forbidden in FORBIDDEN.items():
        for path in sorted((ROOT / layer).rglob("*.py")):
            bad = _imported_packages(path) & forbidden
            if bad:
                offences.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert offences == []


def test_the_checker_sees_relative_and_absolute_imports():
    fake = ROOT / "static" / "engine.py"
    assert "fileio" in _imported_packages(ROOT / "commands" / "scan.py")
    assert "static" in _imported_packages(ROOT / "commands" / "scan.py")
    assert "report" not in _imported_packages(fake)
