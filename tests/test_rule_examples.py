"""Every rule's embedded examples are its tests (Fixit's shape): each INVALID example yields
exactly the findings marked `# <- CODE`, each VALID example yields none — with ALL rules on, so
the examples also prove the rules do not trip over each other's code."""

from __future__ import annotations

import pytest

from jaxopt_audit.static import Rule
from jaxopt_audit.static.autofix.apply import fix_source
from jaxopt_audit.static.pipeline.engine import scan_source
from jaxopt_audit.static.pipeline.registry import load_rules

from conftest import scan_text

RULES = load_rules()
CASES = [pytest.param(rule, kind, i, example, id=f"{rule.CODE}-{kind}-{i}")
         for rule in RULES
         for kind, examples in (("invalid", rule.INVALID), ("valid", rule.VALID))
         for i, example in enumerate(examples)]


def test_every_rule_has_examples():
    for rule in RULES:
        assert rule.INVALID and rule.VALID, f"{rule.CODE} needs INVALID and VALID examples"
        for example in rule.INVALID:
            assert any(code == rule.CODE for _, code in example.expected()), \
                f"{rule.CODE}: an INVALID example marks no line with # <- {rule.CODE}"


@pytest.mark.parametrize("rule,kind,index,example", CASES)
def test_example(rule, kind, index, example):
    findings = scan_text(example.source, RULES)
    got = sorted((f.line, f.code) for f in findings)
    if kind == "invalid":
        assert got == example.expected(), "\n" + "\n".join(
            f"{f.line}:{f.column} {f.code} {f.message}" for f in findings)
    else:
        assert got == [], "\n" + "\n".join(f"{f.line}:{f.column} {f.code} {f.message}" for f in findings)


FIXED = [pytest.param(rule, i, example, id=f"{rule.CODE}-fixed-{i}")
         for rule in RULES for i, example in enumerate(rule.INVALID) if example.fixed is not None]


def test_every_rule_with_a_fix_shows_it_on_an_example():
    missing = [rule.CODE for rule in RULES
               if rule.fix is not Rule.fix and not any(e.fixed is not None for e in rule.INVALID)]
    assert missing == []


@pytest.mark.parametrize("rule,index,example", FIXED)
def test_fixed_example(rule, index, example):
    outcome = fix_source(example.source, "example.py", [rule()], unsafe=True, scan=scan_source)
    assert outcome.fixed == example.fixed_source
    assert all(applied.code == rule.CODE for applied in outcome.applied)
