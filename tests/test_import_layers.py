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
    fake = ROOT / "static" / "pipeline" / "engine.py"
    assert "fileio" in _imported_packages(ROOT / "commands" / "scan.py")
    assert "static" in _imported_packages(ROOT / "commands" / "scan.py")
    assert "report" not in _imported_packages(fake)


# ----------------------------------------------------------------- the module graph has no cycle

# `try: from ..x import y` / `except ImportError:` around a first-party import that cannot fail
# (libcst is a base dependency): none is allowed.
KNOWN_FIRST_PARTY_IMPORT_GUARDS: set[str] = set()


def _modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at `root` (and, in a source
    checkout, the rules beside it, which the package serves as `jaxopt_audit.rules`)."""
    files = {p: p.relative_to(root.parent).with_suffix("").parts for p in root.rglob("*.py")}
    rules = root.parent / "rules"
    if not (root / "rules").is_dir() and (rules / "__init__.py").is_file():
        files.update({p: (root.name, "rules", *p.relative_to(rules).with_suffix("").parts)
                      for p in rules.rglob("*.py")})
    return {".".join(parts[:-1] if parts[-1] == "__init__" else parts): path for path, parts in files.items()}


def import_graph(root: Path) -> dict[str, dict[str, str]]:
    """module -> {module it imports: "file:line"}, with every import statement counted: at module
    level, inside functions and under `if TYPE_CHECKING:`, relative or absolute. `from p import n`
    imports the module `p` and, when `n` is a submodule, `p.n` too: the package's `__init__`
    runs first, so an import of a sibling through the package is an edge to the package."""
    modules = _modules(root)
    graph: dict[str, dict[str, str]] = {name: {} for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            else:
                targets = [a.name for a in node.names]
            for target in targets:
                if target in modules and target != name:
                    graph[name].setdefault(target, f"{path.relative_to(root.parent)}:{node.lineno}")
    return graph


def cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """One shortest cycle through each strongly connected group of modules, as the list of its
    modules with the first repeated at the end."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    found = []
    for group in groups:
        start = min(group)
        paths = {start: [start]}
        queue = [start]
        while queue:  # breadth first, inside the group, back to `start`
            v = queue.pop(0)
            for w in sorted(graph[v]):
                if w == start:
                    found.append([*paths[v], start])
                    queue = []
                    break
                if w in group and w not in paths:
                    paths[w] = [*paths[v], w]
                    queue.append(w)
    return found


def _described(cycle: list[str], graph: dict[str, dict[str, str]]) -> str:
    return " -> ".join(f"{a} ({graph[a][b]})" for a, b in zip(cycle, cycle[1:], strict=False)) + f" -> {cycle[-1]}"


def test_no_module_of_the_package_imports_itself_through_others():
    graph = import_graph(ROOT)
    assert "jaxopt_audit.static.pipeline.engine" in graph["jaxopt_audit.commands.scan"]
    found = [_described(c, graph) for c in cycles(graph)]
    assert found == [], "import cycles:\n" + "\n".join(found)


def test_the_cycle_check_sees_function_level_type_checking_and_package_imports(tmp_path):
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("from .a import A\n")
    (root / "a.py").write_text("A = 1\n\ndef f():\n    from .b import B\n    return B\n")
    (root / "b.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg.sub import c\n")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "c.py").write_text("from .. import a\n")
    graph = import_graph(root)
    assert graph["pkg.a"] == {"pkg.b": "pkg/a.py:4"}
    assert set(graph["pkg.b"]) == {"pkg.sub", "pkg.sub.c"}
    assert set(graph["pkg.sub.c"]) == {"pkg", "pkg.a"}
    assert cycles(graph) == [["pkg", "pkg.a", "pkg.b", "pkg.sub.c", "pkg"]]
    assert "pkg.a (pkg/a.py:4) -> pkg.b" in _described(cycles(graph)[0], graph)


def _first_party_import_guards(path: Path) -> list[int]:
    """Lines of `try:` blocks that import a module of this package and catch ImportError."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Try):
            continue
        catches = any(h.type is not None and {n.id for n in ast.walk(h.type) if isinstance(n, ast.Name)}
                      & {"ImportError", "ModuleNotFoundError"} for h in node.handlers)
        imports = [s for stmt in node.body for s in ast.walk(stmt) if isinstance(s, (ast.Import, ast.ImportFrom))]
        first_party = any(
            (isinstance(s, ast.ImportFrom) and (s.level or (s.module or "").startswith("jaxopt_audit")))
            or (isinstance(s, ast.Import) and any(a.name.startswith("jaxopt_audit") for a in s.names))
            for s in imports)
        if catches and first_party:
            lines.append(node.lineno)
    return lines


def test_no_first_party_import_is_guarded_against_an_import_error():
    found = {str(p.relative_to(ROOT)): _first_party_import_guards(p) for p in sorted(ROOT.rglob("*.py"))}
    offences = {path: lines for path, lines in found.items() if lines and path not in KNOWN_FIRST_PARTY_IMPORT_GUARDS}
    assert offences == {}


def test_the_guard_check_sees_relative_and_absolute_first_party_imports(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("try:\n    from .engine import scan\nexcept ImportError:\n    scan = None\n"
                      "try:\n    import jaxopt_audit.static\nexcept (ValueError, ModuleNotFoundError):\n    pass\n"
                      "try:\n    import jax\nexcept ImportError:\n    jax = None\n"
                      "try:\n    from . import x\nexcept ValueError:\n    pass\n")
    assert _first_party_import_guards(source) == [1, 5]


# ------------------------------------------------------------- the parts of the static analyzer

# Each part imports only the parts before it (jaxopt_audit/static/__init__.py says what each is).
STATIC_PARTS = ("syntax", "knowledge", "model", "framework", "pipeline", "autofix")


def _static_part(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["jaxopt_audit", "static"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in STATIC_PARTS else None


def test_each_part_of_the_static_analyzer_imports_only_the_parts_below_it():
    graph = import_graph(ROOT)
    offences = []
    for module, targets in graph.items():
        part = _static_part(module)
        if part is None:
            continue
        for target, where in targets.items():
            other = _static_part(target)
            if other is None and target.startswith("jaxopt_audit.static") and target != "jaxopt_audit.static":
                offences.append(f"{where}: {target} belongs to no part")
            elif target == "jaxopt_audit.static" or (
                    other is not None and STATIC_PARTS.index(other) > STATIC_PARTS.index(part)):
                offences.append(f"{where}: {part} imports {target}")
    assert offences == []


def test_every_module_of_the_static_analyzer_is_in_a_part():
    loose = [p.name for p in (ROOT / "static").glob("*.py") if p.name != "__init__.py"]
    assert loose == []


def test_rules_import_only_the_static_surface():
    rules = Path(__file__).resolve().parent.parent / "rules"
    offences = []
    for path in sorted(rules.glob("jax*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jaxopt_audit") \
                    and node.module != "jaxopt_audit.static":
                offences.append(f"{path.name}:{node.lineno} imports {node.module}")
    assert offences == []
