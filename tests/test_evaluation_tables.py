"""The evaluation record: docs/evaluation_data.json is the data, and the tables of
docs/evaluation.md and README.md are generated from it (benchmarks/evaluation_tables.py)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import evaluation_tables as tables  # noqa: E402

sys.path.remove(str(ROOT / "benchmarks"))


@pytest.fixture(scope="module")
def data():
    return tables.load()


@pytest.mark.parametrize("path", sorted(tables.SECTIONS), ids=lambda p: p.name)
def test_the_generated_tables_match_the_data(path, data):
    assert path.read_text() == tables.rendered(path, data), (
        f"{path.name} is stale: regenerate it with `python benchmarks/evaluation_tables.py`")


def test_the_record_is_well_formed(data):
    names = [s["name"] for s in data["sets"]]
    assert len(names) == len(set(names))
    for entry in [e for s in data["sets"] + data["samples"] for e in s["judged"]]:
        assert entry["question"] in tables.QUESTIONS, entry
        assert all(isinstance(entry[k], int) and entry[k] >= 0 for k in ("right", "wrong", "debatable")), entry
    for s in data["sets"]:
        assert s["repositories"] or s.get("description"), s["name"]
        if "recall" in s:
            assert 0 <= s["recall"]["found"] <= s["recall"]["mistakes"], s["name"]


def test_a_rules_figure_sums_its_held_out_judgements(data):
    changed = copy.deepcopy(data)
    entry = next(e for s in changed["sets"] if s.get("held_out", True)
                 for e in s["judged"] if tables.RULE_CODE.match(e["rules"]))
    before = tables.per_rule(data)[entry["rules"]][entry["question"]]
    entry["wrong"] += 3
    after = tables.per_rule(changed)[entry["rules"]][entry["question"]]
    assert (after.right, after.wrong, after.judged) == (before.right, before.wrong + 3, before.judged + 3)
    assert tables.render_rules(changed) != tables.render_rules(data)


def test_the_readme_shows_the_current_sets_only(data):
    current = next(s for s in data["sets"] if s.get("current"))
    changed = copy.deepcopy(data)
    older = next(s for s in changed["sets"] if not s.get("current") and s["judged"])
    older["judged"][0]["wrong"] += 5
    assert tables.render_readme(changed) == tables.render_readme(data)
    entry = next(e for s in changed["sets"] if s.get("current") for e in s["judged"])
    entry["wrong"] += 1
    assert tables.render_readme(changed) != tables.render_readme(data)
    assert f"Sets: {current['name']}" in tables.render_readme(data)


def test_a_set_not_held_out_counts_in_no_figure(data):
    changed = copy.deepcopy(data)
    extra = {"name": "tuned", "held_out": False, "repositories": ["example"], "files": 1,
             "judged": [{"question": "fact", "rules": "JAX101", "right": 0, "wrong": 50, "debatable": 0}],
             "recall": {"files_read": 1, "mistakes": 9, "found": 0}}
    changed["sets"].append(extra)
    assert tables.per_rule(changed) == tables.per_rule(data)
    assert tables.recall_totals(changed) == tables.recall_totals(data)
    assert "| tuned |" in tables.render_sets(changed)


def test_the_readme_has_a_column_per_question_asked_of_the_current_sets(data):
    changed = copy.deepcopy(data)
    for s in changed["sets"]:
        s.pop("current", None)
    changed["sets"].append({"name": "facts", "held_out": True, "current": True, "repositories": ["example"],
                            "judged": [{"question": "fact", "rules": "JAX301", "right": 9, "wrong": 1,
                                        "debatable": 0}]})
    rendered = tables.render_readme(changed)
    assert rendered.splitlines()[0] == "| rule | FACT |"
    assert "| JAX301 | 9 of 10 (90%) |" in rendered and "| all findings | 9 of 10 (90%) |" in rendered


def test_missing_markers_are_an_error(tmp_path):
    with pytest.raises(ValueError, match="evaluation:rules"):
        tables.replace_section("no markers here", "rules", "x")


def test_check_reports_stale_docs(tmp_path, monkeypatch, capsys, data):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- evaluation:rules -->\nold\n<!-- /evaluation:rules -->\n")
    monkeypatch.setattr(tables, "SECTIONS", {readme: {"rules": tables.render_readme}})
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    assert tables.main(["--check"]) == 1 and "README.md" in capsys.readouterr().err
    assert readme.read_text().count("old") == 1
    assert tables.main([]) == 0 and tables.main(["--check"]) == 0
    assert "| JAX601 |" in readme.read_text() and "| all findings |" in readme.read_text()
