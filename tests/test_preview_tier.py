"""The preview tier: rules below the held-out precision bar are off by default and come back with
the `PREVIEW` selector, from the command line or pyproject.toml (docs/rules.md, "Preview")."""
import textwrap

from jaxopt_audit.cli import main
from jaxopt_audit.static.config import Config
from jaxopt_audit.static.engine import scan_paths
from jaxopt_audit.static.registry import load_rules

# a host sync every step (JAX301, preview), a boolean-mask index under jit (JAX401, preview)
# and a removed API (JAX601, on)
SOURCE = """\
import jax
import jax.numpy as jnp

def norms(tree):
    return jax.tree_map(jnp.linalg.norm, tree)

@jax.jit
def positives(x):
    return x[x > 0]

@jax.jit
def step(w, x):
    return w - 0.1 * jax.grad(lambda w: jnp.sum((x @ w) ** 2))(w)

def train(w, batches):
    for x in batches:
        w = step(w, x)
        print(float(jnp.sum(w)))
    return w
"""


def _codes(folder, **options):
    return sorted({f.code for f in scan_paths([str(folder)], config=Config(), jobs=1, **options).findings})


def test_every_rule_has_one_tier_and_the_speed_rules_are_preview():
    tiers = {r.CODE: r.tier() for r in load_rules()}
    assert set(tiers.values()) <= {"on", "preview", "opt-in"}
    assert tiers["JAX301"] == "preview" and tiers["JAX401"] == "preview" and tiers["JAX602"] == "opt-in"
    assert [code for code, tier in tiers.items() if tier == "on"] == ["JAX601"]


def test_preview_rules_are_off_by_default_and_on_with_the_selector(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    assert _codes(tmp_path) == ["JAX601"]
    assert _codes(tmp_path, extend_select=["PREVIEW"]) == ["JAX301", "JAX401", "JAX601"]
    assert _codes(tmp_path, extend_select=["JAX301"]) == ["JAX301", "JAX601"]  # by its exact code
    assert _codes(tmp_path, select=["JAX3"]) == []  # a prefix alone does not turn a preview rule on
    assert _codes(tmp_path, select=["JAX3", "PREVIEW"]) == ["JAX301"]  # in preview mode it does
    assert _codes(tmp_path, select=["PREVIEW"]) == ["JAX301", "JAX401", "JAX601"]
    assert _codes(tmp_path, extend_select=["PREVIEW"], ignore=["JAX3"]) == ["JAX401", "JAX601"]
    assert _codes(tmp_path, select=["ALL"]) == ["JAX301", "JAX401", "JAX601"]


def test_preview_from_pyproject(tmp_path, monkeypatch, capsys):
    (tmp_path / "train.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    assert main(["scan", ".", "--no-cache", "--format", "concise"]) == 1
    assert "JAX301" not in capsys.readouterr().out
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.jaxopt-audit]
        extend-select = ["PREVIEW"]
        """))
    assert main(["scan", ".", "--no-cache", "--format", "concise"]) == 1
    assert "JAX301" in capsys.readouterr().out


def test_the_full_output_says_how_to_see_the_preview_rules(tmp_path, monkeypatch, capsys):
    (tmp_path / "train.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    main(["scan", ".", "--no-cache"])
    assert "--extend-select PREVIEW" in capsys.readouterr().out
    main(["scan", ".", "--no-cache", "--extend-select", "PREVIEW"])
    assert "--extend-select PREVIEW" not in capsys.readouterr().out
    main(["scan", ".", "--no-cache", "--format", "concise"])  # machine-friendly formats stay as they were
    assert "PREVIEW" not in capsys.readouterr().out
