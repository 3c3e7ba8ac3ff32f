"""Every rule's embedded examples are its tests (Fixit's shape): each INVALID example yields
exactly the findings marked `# <- CODE`, each VALID example yields none — with ALL rules on, so
the examples also prove the rules do not trip over each other's code."""

from __future__ import annotations

import pytest

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
