"""Finding rules: every `Rule` subclass in the bundled `rules/` package and in `--rules-dir` folders.

Nothing is registered by hand: a rule file is picked up by being there.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import pkgutil
from collections.abc import Callable, Iterable
from pathlib import Path

from ...modules import NotImportable, import_file
from ..framework.results import ScanSource
from ..framework.rule import Rule

BUNDLED_PACKAGE = "jaxopt_audit.rules"


class RuleLoadError(Exception):
    pass


def _rules_in(module) -> list[type[Rule]]:
    return [obj for _, obj in inspect.getmembers(module, inspect.isclass)
            if issubclass(obj, Rule) and obj is not Rule and obj.__module__ == module.__name__]


def bundled_rule_modules() -> list[str]:
    package = importlib.import_module(BUNDLED_PACKAGE)
    return sorted(f"{BUNDLED_PACKAGE}.{m.name}" for m in pkgutil.iter_modules(package.__path__)
                  if not m.name.startswith("_"))


def _load_dir(directory: str) -> list[type[Rule]]:
    path = Path(directory)
    if not path.is_dir():
        raise RuleLoadError(f"--rules-dir {directory}: not a directory")
    found: list[type[Rule]] = []
    for file in sorted(path.glob("*.py")):
        if file.name.startswith("_"):
            continue
        try:
            module = import_file(f"jaxopt_audit_user_rules.{file.stem}", file)
        except NotImportable:
            raise RuleLoadError(f"{file}: cannot be imported as a rule module") from None
        except SystemExit as exc:  # would otherwise end the scan silently with its status
            raise RuleLoadError(f"{file}: called sys.exit({exc.code!r}) while being imported; a rule "
                                "module must only define rules") from None
        except Exception as exc:  # noqa: BLE001 - a broken user rule is a usage error
            raise RuleLoadError(f"{file}: failed to import: {type(exc).__name__}: {exc}") from exc
        found.extend(_rules_in(module))
    return found


def load_rules(rules_dirs: Iterable[str] = ()) -> list[type[Rule]]:
    """All rule classes, sorted by code; raises RuleLoadError on duplicates or bad metadata."""
    classes: list[type[Rule]] = []
    for module_name in bundled_rule_modules():
        classes.extend(_rules_in(importlib.import_module(module_name)))
    for directory in rules_dirs:
        classes.extend(_load_dir(directory))
    by_code: dict[str, type[Rule]] = {}
    for cls in classes:
        problems = cls.validate_metadata()
        if problems:
            raise RuleLoadError("; ".join(problems))
        if cls.CODE in by_code and by_code[cls.CODE] is not cls:
            raise RuleLoadError(f"rule code {cls.CODE} is defined twice "
                                f"({by_code[cls.CODE].__module__} and {cls.__module__})")
        by_code[cls.CODE] = cls
    return [by_code[code] for code in sorted(by_code)]


def select_rules(rules: list[type[Rule]], select: Iterable[str] | None,
                 ignore: Iterable[str] = (), extend_select: Iterable[str] = ()) -> list[type[Rule]]:
    """Codes or prefixes (`JAX3`, `JAX301`, `ALL`, `PREVIEW`); ignore wins over select.
    `select=None` is the default set: the rules whose tier is "on". A prefix does not turn on an
    opt-in or preview rule: only its exact code or `ALL` does. `PREVIEW` (in select or
    extend-select) is a mode: the default set gains the preview rules and prefixes match them.
    `extend_select` adds to the selection."""
    ignore = list(ignore)
    extend = list(extend_select)

    # PREVIEW is a mode, as ruff's --preview: the default set gains the preview rules, and
    # prefixes (`JAX3`) match them too
    preview = "PREVIEW" in (list(select or []) + extend)

    def on(rule: type[Rule]) -> bool:
        return rule.tier() == "on" or (preview and rule.tier() == "preview")

    def matches(rule: type[Rule], patterns: list[str]) -> bool:
        return any(p == "ALL" or p == rule.CODE or (on(rule) and p != "PREVIEW" and rule.CODE.startswith(p))
                   for p in patterns)

    def selected(rule: type[Rule]) -> bool:
        base = on(rule) if select is None or list(select) == ["PREVIEW"] else matches(rule, list(select))
        return base or matches(rule, extend)

    return [r for r in rules if selected(r) and not any(r.CODE.startswith(p) for p in ignore)]


def check_patterns(rules: list[type[Rule]], patterns: Iterable[str], origin: str) -> None:
    """Raise RuleLoadError for a code or prefix that matches no rule: an unknown code in --select
    would otherwise select nothing and report a clean run."""
    codes = [r.CODE for r in rules]
    for pattern in patterns:
        if pattern in ("ALL", "PREVIEW") or (pattern and any(code.startswith(pattern) for code in codes)):
            continue
        close = difflib.get_close_matches(pattern.upper(), codes, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]}? " if close else ""
        raise RuleLoadError(f"unknown rule code or prefix {pattern!r} in {origin}; {hint}"
                            "`jaxopt-audit rules` lists the codes (a prefix such as JAX3 selects a group)")


def find_rule(rules: list[type[Rule]], key: str) -> type[Rule] | None:
    key = key.strip()
    for rule in rules:
        if rule.CODE == key.upper() or rule.NAME == key.lower():
            return rule
    return None


def finding_counter(scan: ScanSource, path: str) -> Callable[[str, Iterable[str]], int | None]:
    """How many findings the rules named by `codes` report on a text at `path`, None when it
    cannot be scanned: the `rescan` a model gets (model/trace_check.py asks it whether a
    rewrite of the file would still trace)."""
    def count(text: str, codes: Iterable[str]) -> int | None:
        wanted = set(codes)
        result = scan(text, path, [rule() for rule in load_rules() if rule.CODE in wanted])
        return None if result.error else len(result.findings)
    return count
