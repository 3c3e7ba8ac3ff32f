"""Every code `jaxopt-audit run` prints has a page: a static rule's, or the run-time page of
`runtime.run.catalog` (JAX103); and the JAX103 page's examples behave as the page says when run."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from jaxopt_audit.runtime.run import findings as run_findings
from jaxopt_audit.runtime.run.catalog import JAX103, RUN_CODES, RUNTIME_ONLY, runtime_page
from jaxopt_audit.static.registry import load_rules

STATIC = {rule.CODE: rule for rule in load_rules()}


def test_every_code_run_reports_has_exactly_one_page_with_one_name() -> None:
    for code, name in RUN_CODES.items():
        static = STATIC.get(code)
        assert (static is None) == (code in RUNTIME_ONLY), code
        assert (static.NAME if static else RUNTIME_ONLY[code].name) == name


def test_the_findings_emit_only_catalogued_codes() -> None:
    source = Path(run_findings.__file__).read_text()
    emitted = {node.value for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.Constant) and isinstance(node.value, str)
               and len(node.value) == 6 and node.value.startswith("JAX") and node.value[3:].isdigit()}
    assert emitted and emitted <= set(RUN_CODES)


def test_the_jax103_page_reads_like_a_rule_page_and_says_it_is_found_at_run_time() -> None:
    page = runtime_page("jax103")
    assert page is not None and page.startswith("# JAX103 recompile-on-changing-input (warning)\n")
    for section in ("## What it does", "## Why is this bad?", "## How to fix", "## Example", "## Use instead"):
        assert section in page
    assert "Found at run time only" in page
    assert runtime_page("JAX101") is None  # a static rule: its page is the rule's


def _codes(tmp_path: Path, source: str) -> list[str]:
    from jaxopt_audit.cli import main

    script, out = tmp_path / "example.py", tmp_path / "report.json"
    script.write_text(source)
    assert main(["run", "--no-scan", "--json", str(out), str(script)]) == 0
    return [finding["code"] for finding in json.loads(out.read_text())["findings"]]


@pytest.mark.slow
def test_the_jax103_examples_are_found_and_fixed_as_the_page_says(tmp_path: Path) -> None:
    assert _codes(tmp_path, JAX103.example) == ["JAX103"]
    assert _codes(tmp_path, JAX103.instead) == []
