"""Which rules run: the default set (every rule whose findings state facts about the code), the
opt-in rules (by exact code or ALL), and the preview selector for rules a team marks preview
(docs/rules.md, "Default, opt-in and preview rules")."""
import textwrap

from jaxopt_audit.cli import main
from jaxopt_audit.static.pipeline.config import Config
from jaxopt_audit.static.pipeline.engine import scan_paths
from jaxopt_audit.static.pipeline.registry import load_rules, select_rules

# a host sync every step (JAX301), a boolean-mask index under jit (JAX401), a removed API (JAX601)
# and a hand-written optimizer update (JAX702, opt-in)
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

DEFAULT_SET = ["JAX101", "JAX102", "JAX103", "JAX201", "JAX202", "JAX301", "JAX302", "JAX401", "JAX402", "JAX403",
               "JAX404", "JAX501", "JAX502", "JAX601", "JAX701"]

# a team's rule marked preview: reports every `print` call
TEAM_RULE = '''\
import libcst as cst
from jaxopt_audit.static import Invalid, Report, Rule, Valid, walk


class PrintCalls(Rule):
    """Reports print calls.

    ## What it does
    Finds `print(...)`.

    ## Why is this bad?
    The team logs through its logger.

    ## How to fix
    Call the logger.
    """

    CODE = "TEAM001"
    NAME = "print-call"
    SEVERITY = "info"
    SUMMARY = "print call"
    FIX = "Use the logger."
    PREVIEW = True
    ANALYSIS = False
    INVALID = [Invalid("print(1)  # <- TEAM001\\n")]
    VALID = [Valid("log(1)\\n")]

    def check(self, model):
        for node in walk(model.module):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "print":
                yield Report(node, "print call")
'''


def _codes(folder, **options):
    return sorted({f.code for f in scan_paths([str(folder)], config=Config(), jobs=1, **options).findings})


def test_the_default_set_is_every_rule_but_the_opt_in_advice():
    tiers = {r.CODE: r.tier() for r in load_rules()}
    assert [code for code, tier in tiers.items() if tier == "on"] == DEFAULT_SET
    assert [code for code, tier in tiers.items() if tier == "opt-in"] == ["JAX602", "JAX702"]
    assert [code for code, tier in tiers.items() if tier == "preview"] == []


def test_a_plain_scan_reports_the_headline_mistakes(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    assert _codes(tmp_path) == ["JAX301", "JAX401", "JAX601"]
    assert _codes(tmp_path, extend_select=["JAX702"]) == ["JAX301", "JAX401", "JAX601"]  # no manual update here
    assert _codes(tmp_path, select=["JAX3"]) == ["JAX301"]
    assert _codes(tmp_path, ignore=["JAX3", "JAX4"]) == ["JAX601"]


def test_opt_in_rules_need_their_exact_code(tmp_path):
    rules = load_rules()
    assert "JAX702" not in [r.CODE for r in select_rules(rules, ["JAX7"])]
    assert "JAX702" in [r.CODE for r in select_rules(rules, None, extend_select=["JAX702"])]
    assert "JAX702" in [r.CODE for r in select_rules(rules, ["ALL"])]


def test_preview_rules_wait_for_the_selector(tmp_path):
    team = tmp_path / "team_rules"
    team.mkdir()
    (team / "prints.py").write_text(TEAM_RULE)
    rules = load_rules([str(team)])
    assert {r.CODE: r.tier() for r in rules}["TEAM001"] == "preview"
    assert "TEAM001" not in [r.CODE for r in select_rules(rules, None)]
    assert "TEAM001" not in [r.CODE for r in select_rules(rules, ["TEAM"])]  # a prefix alone: no
    assert "TEAM001" in [r.CODE for r in select_rules(rules, ["TEAM", "PREVIEW"])]  # in preview mode: yes
    assert "TEAM001" in [r.CODE for r in select_rules(rules, None, extend_select=["PREVIEW"])]
    assert "TEAM001" in [r.CODE for r in select_rules(rules, None, extend_select=["TEAM001"])]


def test_preview_from_pyproject_and_the_hint(tmp_path, monkeypatch, capsys):
    team = tmp_path / "team_rules"
    team.mkdir()
    (team / "prints.py").write_text(TEAM_RULE)
    (tmp_path / "train.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    assert main(["scan", "train.py", "--no-cache", "--rules-dir", "team_rules"]) == 1
    out = capsys.readouterr().out
    assert "TEAM001" not in out and "--extend-select PREVIEW" in out
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.jaxopt-audit]
        extend-select = ["PREVIEW"]
        """))
    assert main(["scan", "train.py", "--no-cache", "--rules-dir", "team_rules"]) == 1
    out = capsys.readouterr().out
    assert "TEAM001" in out and "--extend-select PREVIEW" not in out
    main(["scan", "train.py", "--no-cache", "--format", "concise"])  # no preview rule installed: no hint
    assert "PREVIEW" not in capsys.readouterr().out
