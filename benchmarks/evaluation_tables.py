"""The evaluation record's tables, generated from docs/evaluation_data.json.

    python benchmarks/evaluation_tables.py          # rewrite the generated parts of the docs
    python benchmarks/evaluation_tables.py --check  # exit 1 when they differ from the data

The data is the record: which repositories each evaluation set holds and, per rule and question,
how many judged findings were right, wrong or debatable, and the recall readers measured. The
tables in docs/evaluation.md and the short per-rule table in README.md are rendered from it
between `<!-- evaluation:NAME -->` and `<!-- /evaluation:NAME -->` markers, so a figure has one
source. Standard library only: the record renders without the tool installed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "evaluation_data.json"
EVALUATION = ROOT / "docs" / "evaluation.md"
README = ROOT / "README.md"
QUESTIONS = ("fact", "useful", "worth")
RULE_CODE = re.compile(r"^[A-Z]+\d{3}$")


@dataclass
class Tally:
    right: int = 0
    wrong: int = 0
    debatable: int = 0

    def add(self, entry: dict[str, Any]) -> None:
        self.right += entry["right"]
        self.wrong += entry["wrong"]
        self.debatable += entry["debatable"]

    @property
    def judged(self) -> int:
        return self.right + self.wrong + self.debatable

    def cell(self) -> str:
        if not self.judged:
            return ""
        share = f"{100 * self.right / self.judged:.0f}%"
        extra = f"; {self.debatable} debatable" if self.debatable else ""
        return f"{self.right} of {self.judged} ({share}{extra})"


def load(path: Path = DATA) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _counted(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The judged entries that count toward current figures: held-out sets and samples."""
    entries = [e for s in data["sets"] if s.get("held_out", True) for e in s["judged"]]
    return entries + [e for s in data.get("samples", []) for e in s["judged"]]


def per_rule(data: dict[str, Any]) -> dict[str, dict[str, Tally]]:
    """Rule code -> question -> tally, over the held-out sets and the samples."""
    table: dict[str, dict[str, Tally]] = {}
    for entry in _counted(data):
        if RULE_CODE.match(entry["rules"]):
            table.setdefault(entry["rules"], {}).setdefault(entry["question"], Tally()).add(entry)
    return dict(sorted(table.items()))


def _questions(data: dict[str, Any]) -> list[str]:
    asked = {e["question"] for e in _counted(data)}
    return [q for q in QUESTIONS if q in asked]


def _judged_cell(judged: list[dict[str, Any]]) -> str:
    parts = []
    for entry in judged:
        tally = Tally()
        tally.add(entry)
        label = entry["rules"] if entry["question"] == "worth" else f"{entry['rules']} {entry['question'].upper()}"
        extra = f" (+{entry['debatable']} debatable)" if entry["debatable"] else ""
        parts.append(f"{label} {entry['right']}/{entry['right'] + entry['wrong']}{extra}")
    return "; ".join(parts)


def render_readme(data: dict[str, Any]) -> str:
    """The current figures: the sets marked `current` (judged on the rules as they are now, each
    finding by two judges), per rule and question, and their recall."""
    current = [s for s in data["sets"] if s.get("current")]
    entries = [e for s in current for e in s["judged"]]
    questions = [q for q in QUESTIONS if any(e["question"] == q for e in entries)]
    table: dict[str, dict[str, Tally]] = {}
    for entry in entries:
        if RULE_CODE.match(entry["rules"]):
            table.setdefault(entry["rules"], {}).setdefault(entry["question"], Tally()).add(entry)
            table.setdefault("all", {}).setdefault(entry["question"], Tally()).add(entry)
    lines = ["| rule | " + " | ".join(q.upper() for q in questions) + " |",
             "|---|" + "---|" * len(questions)]
    for code in sorted(table, key=lambda c: (c == "all", c)):
        label = "all findings" if code == "all" else code
        lines.append(f"| {label} | " + " | ".join(table[code].get(q, Tally()).cell() for q in questions) + " |")
    recalls = [s["recall"] for s in current if "recall" in s]
    if recalls:
        listed, found = sum(r["mistakes"] for r in recalls), sum(r["found"] for r in recalls)
        major = sum(r.get("major", 0) for r in recalls)
        major_found = sum(r.get("major_found", 0) for r in recalls)
        files = sum(r["files_read"] for r in recalls)
        lines += ["", f"Recall: readers who had not seen the findings listed {listed} real JAX mistakes in {files}",
                  f"files; {found} ({100 * found / listed:.0f}%) were reported, {major_found} of the {major} "
                  f"they called major."]
    names = ", ".join(s["name"] for s in current)
    lines += ["", f"(Sets: {names}; a debatable answer counts as not right.)"]
    return "\n".join(lines)


def recall_totals(data: dict[str, Any]) -> tuple[int, int, int]:
    """Files read, mistakes listed and mistakes reported, over the held-out sets with a recall count."""
    recalls = [s["recall"] for s in data["sets"] if "recall" in s and s.get("held_out", True)]
    return (sum(r["files_read"] for r in recalls), sum(r["mistakes"] for r in recalls),
            sum(r["found"] for r in recalls))


def render_rules(data: dict[str, Any]) -> str:
    """Per rule and question over every held-out set and sample: right, wrong, debatable."""
    lines = ["| rule | question | judged | right | wrong | debatable | right of judged |",
             "|---|---|---|---|---|---|---|"]
    for code, tallies in per_rule(data).items():
        for question in QUESTIONS:
            if question in tallies:
                t = tallies[question]
                lines.append(f"| {code} | {question.upper()} | {t.judged} | {t.right} | {t.wrong} | "
                             f"{t.debatable} | {100 * t.right / t.judged:.0f}% |")
    return "\n".join(lines)


def render_sets(data: dict[str, Any]) -> str:
    lines = ["| set | repositories (files) | held out | judged: rule right/(right+wrong) |",
             "|---|---|---|---|"]
    for s in data["sets"]:
        repositories = ", ".join(s["repositories"])
        count = len(s["repositories"]) or s.get("repository_count", 0)
        described = f"{count} ({repositories}" if repositories else f"{count} ("
        if s.get("description"):
            described += ("; " if repositories else "") + s["description"]
        if s.get("files"):
            described += f"; {s['files']:,} files"
        held = "yes" if s.get("held_out", True) else "no"
        if not s.get("independent_judges", True):
            held += ", partly judged by a rule author"
        lines.append(f"| {s['name']} | {described}) | {held} | {_judged_cell(s['judged'])} |")
    return "\n".join(lines)


def render_samples(data: dict[str, Any]) -> str:
    lines = ["| sample | judged: rule right/(right+wrong) |", "|---|---|"]
    for s in data.get("samples", []):
        lines.append(f"| {s['description']} | {_judged_cell(s['judged'])} |")
    return "\n".join(lines)


def render_recall(data: dict[str, Any]) -> str:
    lines = ["| set | files read | mistakes listed | reported | share |", "|---|---|---|---|---|"]
    for s in data["sets"]:
        if "recall" in s:
            r = s["recall"]
            lines.append(f"| {s['name']} | {r['files_read']} | {r['mistakes']} | {r['found']} | "
                         f"{100 * r['found'] / r['mistakes']:.0f}% |")
    files, listed, found = recall_totals(data)
    if listed:
        lines.append(f"| all | {files} | {listed} | {found} | {100 * found / listed:.0f}% |")
    return "\n".join(lines)


SECTIONS = {
    EVALUATION: {"rules": render_rules, "sets": render_sets, "samples": render_samples, "recall": render_recall},
    README: {"rules": render_readme},
}


def replace_section(text: str, name: str, body: str) -> str:
    """`text` with the part between the section's markers replaced by `body`."""
    begin, end = f"<!-- evaluation:{name} -->", f"<!-- /evaluation:{name} -->"
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"no `{begin}` ... `{end}` markers")
    return text[:start + len(begin)] + "\n" + body + "\n" + text[stop:]


def rendered(path: Path, data: dict[str, Any]) -> str:
    text = path.read_text()
    for name, render in SECTIONS[path].items():
        text = replace_section(text, name, render(data))
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only report whether the docs are stale")
    args = parser.parse_args(argv)
    data = load()
    stale = []
    for path in SECTIONS:
        text = rendered(path, data)
        if text != path.read_text():
            stale.append(path.relative_to(ROOT).as_posix())
            if not args.check:
                path.write_text(text)
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; run `python benchmarks/evaluation_tables.py`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
