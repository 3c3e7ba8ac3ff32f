"""Every code `jaxopt-audit run` prints is a rule of the catalog with the same name, and JAX103's
page says what `run` measures; the run-time JAX103 examples behave as that page says."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from jaxopt_audit.runtime.run import findings as run_findings
from jaxopt_audit.runtime.run.catalog import RUN_CODES
from jaxopt_audit.static.pipeline.registry import load_rules

STATIC = {rule.CODE: rule for rule in load_rules()}

# a jitted loss given five batch lengths: five compilations
RECOMPILES = """\
import jax
import jax.numpy as jnp

@jax.jit
def loss(w, batch):
    return jnp.mean((batch @ w) ** 2)

w = jnp.ones((8, 1))
data = jnp.ones((1000, 8))
losses = [loss(w, data[:size]) for size in (32, 48, 64, 80, 96)]
print(jnp.stack(losses))
"""

# one padded shape, the real size in a mask: compiled once
PADDED = """\
import jax
import jax.numpy as jnp

@jax.jit
def loss(w, batch, mask):
    return jnp.sum(mask * (batch @ w)[:, 0] ** 2) / jnp.sum(mask)

w = jnp.ones((8, 1))
data = jnp.ones((1000, 8))
losses = [loss(w, data[:96], jnp.arange(96) < size) for size in (32, 48, 64, 80, 96)]
print(jnp.stack(losses))
"""


def test_every_code_run_reports_is_a_rule_with_the_same_name() -> None:
    for code, name in RUN_CODES.items():
        assert code in STATIC, code
        assert STATIC[code].NAME == name


def test_the_findings_emit_only_catalogued_codes() -> None:
    source = Path(run_findings.__file__).read_text()
    emitted = {node.value for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.Constant) and isinstance(node.value, str)
               and len(node.value) == 6 and node.value.startswith("JAX") and node.value[3:].isdigit()}
    assert emitted and emitted <= set(RUN_CODES)


def test_the_jax103_page_says_what_run_measures(capsys) -> None:
    from jaxopt_audit.cli import main

    assert main(["rule", "JAX103"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("# JAX103 recompile-on-changing-input (warning)\n")
    assert "## At run time" in page and "jax_explain_cache_misses" in page


def _codes(tmp_path: Path, source: str) -> list[str]:
    from jaxopt_audit.cli import main

    script, out = tmp_path / "example.py", tmp_path / "report.json"
    script.write_text(source)
    assert main(["run", "--no-scan", "--json", str(out), str(script)]) == 0
    return [finding["code"] for finding in json.loads(out.read_text())["findings"]]


@pytest.mark.slow
def test_recompiles_are_found_and_the_padded_fix_is_clean(tmp_path: Path) -> None:
    assert _codes(tmp_path, RECOMPILES) == ["JAX103"]
    assert _codes(tmp_path, PADDED) == []
