"""Automatic fixes: every fix applied to its rule's own examples, and `scan --fix/--diff` end to end."""

from __future__ import annotations

import json
import os

import pytest

from jaxopt_audit.cli import main
from jaxopt_audit.static.autofix.apply import fix_source
from jaxopt_audit.static.framework.rule import Rule
from jaxopt_audit.static.pipeline.engine import scan_source
from jaxopt_audit.static.pipeline.registry import load_rules

RULES = load_rules()
FIXING = [r for r in RULES if r.fix is not Rule.fix]
EXAMPLES = [pytest.param(r, i, id=f"{r.CODE}-{i}") for r in FIXING for i in range(len(r.INVALID))]

PREVIEW = ["--extend-select", "PREVIEW"]  # the speed rules exercised here are preview rules


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
    outcome = fix_source(source, "example.py", instances, unsafe=True, scan=scan_source)
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
    again = fix_source(outcome.fixed, "example.py", instances, unsafe=True, scan=scan_source)
    assert again.fixed == outcome.fixed and again.applied == []  # idempotent


def test_safe_fixes_only_without_unsafe_flag():
    instances = [r() for r in RULES]
    jax101 = next(r for r in RULES if r.CODE == "JAX101")
    source = jax101.INVALID[-1].source
    assert fix_source(source, "x.py", instances, scan=scan_source).fixed == source
    assert "@jax.jit" in fix_source(source, "x.py", instances, unsafe=True, scan=scan_source).fixed


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

    assert main(["scan", *PREVIEW, str(tmp_path), "--diff", "--no-cache"]) == 1
    out, err = capsys.readouterr()
    assert "+y = jax.block_until_ready(jnp.dot(x, x.T))  # the work" in out
    assert "+leaves = jax.tree.map(" in out and "Would fix 2 findings in 1 file" in err
    assert target.read_text() == TIMED  # --diff writes nothing

    code = main(["scan", *PREVIEW, str(tmp_path), "--fix", "--no-cache", "--format", "json"])
    out, err = capsys.readouterr()
    assert "fixed JAX701" in err and "fixed JAX601" in err and "Fixed 2 findings in 1 file." in err
    data = json.loads(out)
    assert not [f for f in data["findings"] if f["code"] in ("JAX601", "JAX701")]
    assert code == (1 if data["findings"] else 0)
    fixed = target.read_text()
    compile(fixed, "timed.py", "exec")
    assert "jax.tree.map(" in fixed and os.stat(target).st_mode & 0o777 == 0o755
    assert untouched.stat().st_mtime_ns == clean_mtime  # only fixed files are written

    main(["scan", *PREVIEW, str(tmp_path), "--fix", "--no-cache"])
    _, err = capsys.readouterr()
    assert "Fixed 0 findings" in err and target.read_text() == fixed


def test_fix_through_a_symlink_writes_the_target(tmp_path, capsys):
    real = tmp_path / "real.py"
    real.write_text(TIMED)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    main(["scan", *PREVIEW, str(link), "--fix", "--no-cache"])
    capsys.readouterr()
    assert link.is_symlink() and "jax.tree.map(" in real.read_text()


def test_json_marks_fix_applicability(tmp_path, capsys):
    (tmp_path / "t.py").write_text(TIMED)
    main(["scan", *PREVIEW, str(tmp_path), "--format", "json", "--no-cache"])
    data = json.loads(capsys.readouterr().out)
    kinds = {f["code"]: f["fix_applicability"] for f in data["findings"]}
    assert kinds["JAX601"] == "safe" and kinds["JAX701"] == "safe"


@pytest.mark.parametrize("body, reported", [
    # Branching on a device value makes it host-side work: JAX101 itself is silent, no fix either.
    ("def check(x, y):\n    if jnp.all(x > 0):\n        raise ValueError('negative')\n"
     "    return x * y + jnp.sum(y)\n", 0),
    ("def step(state, batch, size):\n    return jnp.tanh(make_model(size)(batch)) * jnp.mean(state) + jnp.std(state)\n",
     1),
    ("def step(w, *rest):\n    return jnp.tanh(w) * jnp.mean(w) + jnp.std(w)\n", 1),
])
def test_jit_is_not_offered_where_an_argument_may_need_to_be_static(body, reported):
    source = ("import jax\nimport jax.numpy as jnp\nfrom models import make_model\n\n" + body +
              "\n\na, b, c = jnp.ones(3), jnp.ones(3), 3\nfor _ in range(1000):\n    a = "
              + body.split("(")[0][4:] + "(a, b, c)\n")
    instances = [r() for r in RULES]
    findings = scan_source(source, "x.py", instances).findings
    assert [f.fix_applicability for f in findings if f.code == "JAX101"] == [None] * reported
    assert "@jax.jit" not in fix_source(source, "x.py", instances, unsafe=True, scan=scan_source).fixed


def write_notebook(path, cells, **dump):
    raw = [{"cell_type": kind, "execution_count": None, "metadata": {}, "outputs": [],
            "source": source.splitlines(keepends=True)} if kind == "code" else
           {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)} for kind, source in cells]
    document = {"cells": raw, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(document, **dump) + "\n", encoding="utf-8")


NB_CELLS = [
    ("markdown", "# Timing ünïcode"),
    ("code", "%matplotlib inline\nimport time\nimport jax\nimport jax.numpy as jnp\n"),
    ("code", "x = jnp.ones((10, 10))\nstart = time.time()\ny = jnp.dot(x, x.T)\nprint(time.time() - start)\n"),
    ("code", "step = jax.jit(lambda w, m: w * m)\n\ndef fit(w, batches):\n    !echo fitting\n"
             "    for batch in batches:\n"
             "        key = jax.random.key(42)\n        mask = jax.random.bernoulli(key, 0.9, batch.shape)\n"
             "        w = step(w, jnp.where(mask, batch, 0.0))\n    return w\n"),
    ("code", "tree = jax.tree_map(lambda v: v, {'a': x})"),
]


def test_notebook_fix_rewrites_cells_and_keeps_the_rest(tmp_path, capsys):
    path = tmp_path / "nb.ipynb"
    write_notebook(path, NB_CELLS, indent=1, sort_keys=True, ensure_ascii=False)
    original = json.loads(path.read_text())
    main(["scan", *PREVIEW, str(path), "--fix", "--unsafe-fixes", "--no-cache", "--format", "json"])
    out, err = capsys.readouterr()
    assert f"{path}:cell 3:4:7: fixed JAX701" in err and f"{path}:cell 5:1:8: fixed JAX601" in err
    assert f"{path}:cell 4:6:15: fixed JAX502" in err
    fixed = json.loads(path.read_text())
    sources = ["".join(c["source"]) for c in fixed["cells"]]
    assert sources[0] == NB_CELLS[0][1] and sources[1] == NB_CELLS[1][1]  # markdown, magic cell intact
    assert sources[2].splitlines()[2] == "y = jax.block_until_ready(jnp.dot(x, x.T))"
    assert sources[3] == NB_CELLS[3][1].replace(
        "    for batch in batches:\n        key = jax.random.key(42)\n",
        "    key_carry = jax.random.key(42)\n    for batch in batches:\n"
        "        key_carry, key = jax.random.split(key_carry)\n")
    assert "    !echo fitting\n" in sources[3]
    assert sources[4] == "tree = jax.tree.map(lambda v: v, {'a': x})"  # no newline added
    assert {k: v for k, v in fixed.items() if k != "cells"} == {k: v for k, v in original.items() if k != "cells"}
    assert path.read_text() == json.dumps(fixed, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert not [f for f in json.loads(out)["findings"] if f["code"] in ("JAX502", "JAX601", "JAX701")]
    before = path.read_text()
    main(["scan", *PREVIEW, str(path), "--fix", "--unsafe-fixes", "--no-cache"])
    capsys.readouterr()
    assert path.read_text() == before  # idempotent


def test_notebook_in_an_unknown_layout_is_left_alone(tmp_path, capsys):
    path = tmp_path / "nb.ipynb"
    write_notebook(path, NB_CELLS, indent=3)
    before = path.read_bytes()
    main(["scan", *PREVIEW, str(path), "--fix", "--no-cache"])
    _, err = capsys.readouterr()
    assert "not fixed: its JSON layout" in err and path.read_bytes() == before


@pytest.mark.parametrize("source, expected", [
    ("from jax.experimental import pallas as pl\nfrom jax.experimental.pallas import tpu as pltpu\n"
     "kind = pltpu.DeviceIdType.MESH\n", "kind = pl.DeviceIdType.MESH\n"),
    ("import jax\nimport jax.numpy as jnp\nok = isinstance(x, jnp.DeviceArray)\n", "ok = isinstance(x, jax.Array)\n"),
    ("import jax.numpy as jnp\nok = isinstance(x, jnp.DeviceArray)\n", None),  # no `jax` name to spell it with
    ("from jax.experimental.pallas import tpu as pltpu\nkind = pltpu.DeviceIdType.MESH\n", None),
])
def test_renames_keep_the_rest_of_the_chain_and_spell_modules_that_are_there(source, expected):
    instances = [r() for r in RULES]
    fixed = fix_source(source, "x.py", instances, scan=scan_source).fixed
    if expected is None:
        assert fixed == source
    else:
        assert fixed.endswith(expected) and fixed.splitlines()[:-1] == source.splitlines()[:-1]


def test_jit_is_offered_on_a_gradient_step_and_not_where_it_would_freeze_rebound_globals():
    instances = [r() for r in RULES]
    jax101 = next(r for r in RULES if r.CODE == "JAX101")
    gradient_step = next(e.source for e in jax101.INVALID if "value_and_grad" in e.source)
    findings = [f for f in scan_source(gradient_step, "x.py", instances).findings if f.code == "JAX101"]
    assert [f.fix_applicability for f in findings] == ["unsafe"]
    assert "@jax.jit\ndef train_step" in fix_source(gradient_step, "x.py", instances, unsafe=True,
                                                    scan=scan_source).fixed

    frozen = ("import jax.numpy as jnp\nimport jax\n\nW = jnp.ones((4, 4))\n\n"
              "def forward(x):\n    return jnp.tanh(x @ W) * 2.0 - jnp.mean(x) + jnp.std(x)\n\n"
              "x = jnp.ones(4)\nfor step in range(100):\n    x = forward(x)\n    W = W * 0.99\n")
    findings = [f for f in scan_source(frozen, "x.py", instances).findings if f.code == "JAX101"]
    assert [f.fix_applicability for f in findings] == [None]
    assert "`W`, a module-level array that the program rebinds" in findings[0].message
    assert findings[0].fix.startswith("Pass `W` as argument,")
    assert "@jax.jit" not in fix_source(frozen, "x.py", instances, unsafe=True, scan=scan_source).fixed
