"""Automatic fixes: every fix applied to its rule's own examples, and `scan --fix/--diff` end to end."""

from __future__ import annotations

import json
import os

import pytest

from jaxopt_audit.cli import main
from jaxopt_audit.static.engine import scan_source
from jaxopt_audit.static.fixes import fix_source
from jaxopt_audit.static.registry import load_rules
from jaxopt_audit.static.rule import Rule

RULES = load_rules()
FIXING = [r for r in RULES if r.fix is not Rule.fix]
EXAMPLES = [pytest.param(r, i, id=f"{r.CODE}-{i}") for r in FIXING for i in range(len(r.INVALID))]


def test_the_rules_the_issue_names_can_fix():
    assert {"JAX101", "JAX502", "JAX601", "JAX701"} <= {r.CODE for r in FIXING}
    for rule in FIXING:
        assert "## Automatic fix" in rule.doc(), rule.CODE


@pytest.mark.parametrize("rule, index", EXAMPLES)
def test_fix_on_the_rules_own_examples(rule, index):
    instances = [r() for r in RULES]
    source = rule.INVALID[index].source
    before = scan_source(source, "example.py", instances).findings
    fixable = [f for f in before if f.code == rule.CODE and f.fix_applicability is not None]
    outcome = fix_source(source, "example.py", instances, unsafe=True)
    if not fixable:
        assert outcome.fixed == source
        return
    assert {a.code for a in outcome.applied} >= {rule.CODE}
    compile(outcome.fixed, "fixed.py", "exec")  # still Python
    for line in source.splitlines():  # comments kept, (the `# <- CODE` markers among them)
        if "#" in line:
            assert line[line.index("#"):] in outcome.fixed
    after = scan_source(outcome.fixed, "example.py", instances).findings
    assert not [f for f in after if f.code == rule.CODE and f.fix_applicability is not None]
    assert len([f for f in after if f.code == rule.CODE]) == \
        len([f for f in before if f.code == rule.CODE]) - len(fixable)
    again = fix_source(outcome.fixed, "example.py", instances, unsafe=True)
    assert again.fixed == outcome.fixed and again.applied == []  # idempotent


def test_safe_fixes_only_without_unsafe_flag():
    instances = [r() for r in RULES]
    jax101 = next(r for r in RULES if r.CODE == "JAX101")
    source = jax101.INVALID[-1].source
    assert fix_source(source, "x.py", instances).fixed == source
    assert "@jax.jit" in fix_source(source, "x.py", instances, unsafe=True).fixed


TIMED = """\
import time

import jax
import jax.numpy as jnp

x = jnp.ones((100, 100))
start = time.time()
y = jnp.dot(x, x.T)  # the work
print("dot:", time.time() - start)
leaves = jax.tree_map(lambda v: v + 1, {"a": x})
"""


def test_cli_fix_diff_and_what_is_left(tmp_path, capsys):
    target = tmp_path / "timed.py"
    target.write_text(TIMED)
    os.chmod(target, 0o755)
    untouched = tmp_path / "clean.py"
    untouched.write_text("x = 1\n")
    clean_mtime = untouched.stat().st_mtime_ns

    assert main(["scan", str(tmp_path), "--diff", "--no-cache"]) == 1
    out, err = capsys.readouterr()
    assert "+y = jax.block_until_ready(jnp.dot(x, x.T))  # the work" in out
    assert "+leaves = jax.tree.map(" in out and "Would fix 2 findings in 1 file" in err
    assert target.read_text() == TIMED  # --diff writes nothing

    code = main(["scan", str(tmp_path), "--fix", "--no-cache", "--format", "json"])
    out, err = capsys.readouterr()
    assert "fixed JAX701" in err and "fixed JAX601" in err and "Fixed 2 findings in 1 file." in err
    data = json.loads(out)
    assert not [f for f in data["findings"] if f["code"] in ("JAX601", "JAX701")]
    assert code == (1 if data["findings"] else 0)
    fixed = target.read_text()
    compile(fixed, "timed.py", "exec")
    assert "jax.tree.map(" in fixed and os.stat(target).st_mode & 0o777 == 0o755
    assert untouched.stat().st_mtime_ns == clean_mtime  # only fixed files are written

    main(["scan", str(tmp_path), "--fix", "--no-cache"])
    _, err = capsys.readouterr()
    assert "Fixed 0 findings" in err and target.read_text() == fixed


def test_fix_through_a_symlink_writes_the_target(tmp_path, capsys):
    real = tmp_path / "real.py"
    real.write_text(TIMED)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    main(["scan", str(link), "--fix", "--no-cache"])
    capsys.readouterr()
    assert link.is_symlink() and "jax.tree.map(" in real.read_text()


def test_json_marks_fix_applicability(tmp_path, capsys):
    (tmp_path / "t.py").write_text(TIMED)
    main(["scan", str(tmp_path), "--format", "json", "--no-cache"])
    data = json.loads(capsys.readouterr().out)
    kinds = {f["code"]: f["fix_applicability"] for f in data["findings"]}
    assert kinds["JAX601"] == "safe" and kinds["JAX701"] == "safe"


@pytest.mark.parametrize("body", [
    "def check(x, y):\n    if jnp.all(x > 0):\n        raise ValueError('negative')\n    return x * y + jnp.sum(y)\n",
    "def step(state, batch, size):\n    return jnp.tanh(make_model(size)(batch)) * jnp.mean(state)\n",
    "def step(w, *rest):\n    return jnp.tanh(w) * jnp.mean(w)\n",
])
def test_jit_is_not_offered_where_an_argument_may_need_to_be_static(body):
    source = ("import jax\nimport jax.numpy as jnp\nfrom models import make_model\n\n" + body +
              "\n\ndef loop(a, b, c):\n    for _ in range(9):\n        a = " + body.split("(")[0][4:] + "(a, b, c)\n    return a\n")
    instances = [r() for r in RULES]
    findings = scan_source(source, "x.py", instances).findings
    assert [f.fix_applicability for f in findings if f.code == "JAX101"] == [None]
    assert "@jax.jit" not in fix_source(source, "x.py", instances, unsafe=True).fixed
