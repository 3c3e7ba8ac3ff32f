"""The project speaks of itself as it is: no account of how it got here (evaluation rounds, work
sessions, the original programs' "seed" numbers, what was "fixed after" what) in the README, the
docs, the code and its comments, the rules, the reports or the tests. The evaluation record in
docs/evaluation.md names its sets neutrally; comments say why the code is as it is."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEARCHED = ("README.md", "docs", "jaxopt_audit", "rules", "reference_pipelines", "benchmarks", "reports", "tests")
SKIPPED = (ROOT / "tests" / "fixtures", Path(__file__).resolve())
TEXT_SUFFIXES = {".py", ".md", ".json", ".toml", ".txt", ".yaml", ".yml", ".cfg", ".ipynb", ""}

_ORDINAL = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
            "fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|\\d+(?:st|nd|rd|th)")
# English words of one or two letters that may follow "round" in plain prose ("round to", "round up").
_NOT_A_LABEL = "to|up|of|in|on|by|is|it|or|if|no|so|do|be|we|me|my|a"

HISTORY = {
    "an evaluation round": re.compile(rf"\b[Rr]ounds? (?!(?:{_NOT_A_LABEL})\b)[a-z]{{1,2}}\d*\b"),
    "a seed number": re.compile(r"\b[Ss]eeds? 00\d\b|\btest_seed_?00\d"),
    "what was fixed when": re.compile(r"\bfixed after(?:wards)?\b"),
    "a work session": re.compile(
        rf"\b(?:{_ORDINAL}|this|that|last|previous|next|each|one) sessions?(?:'s)?\b(?! (?:log|features?|rows?)\b)"
        r"|\bmid-session\b|\bthe session's (?:code|start|end|final|fixes|last|first|changes)\b", re.I),
    "who judged what": re.compile(
        r"\bby the lead\b|\bthe lead(?:'s| engineer)\b|\b(?:was|were) judged\b|\bjudged (?:wrong|right)\b", re.I),
    "a change told as a story": re.compile(
        r"\bno longer (?:reported|flagged|fires|reports|a finding)\b|\bpreviously (?:reported|flagged|judged)\b"
        r"|\bheld out until now\b", re.I),
}


def _searched_files() -> list[Path]:
    files = []
    for name in SEARCHED:
        top = ROOT / name
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            if not path.is_file() or path.suffix not in TEXT_SUFFIXES or "__pycache__" in path.parts:
                continue
            if any(path == skipped or skipped in path.parents for skipped in SKIPPED):
                continue
            files.append(path)
    return files


def history_in(text: str) -> list[tuple[int, str, str]]:
    """(line number, what kind of history, the line) for each line that tells how the project got here."""
    hits = []
    for number, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in HISTORY.items():
            if pattern.search(line):
                hits.append((number, kind, line.strip()))
                break
    return hits


def test_the_patterns_find_history_and_leave_ordinary_words_alone():
    told = ["# Round s: a decode loop", "rounds b to at", "on rounds h9 to ac", "(seed 001: 65% of the time)",
            "Seed 000's case study", "def test_seed002_dot_timed():", "a shim, fixed after",
            "the fifteenth session's code", "judged after round ar's fixes", "26 by the lead",
            "JAX301 was judged right", "mid-session",
            "(three findings, judged wrong)"]
    ordinary = ["x = round(y, 2)", "jax.random.key(seed)", "30 seeds each", "a round trip to the host",
                "round to the nearest integer", "the session log every run reads", "each session features",
                "session_duration_min", "waits no longer", "all previously seen cache keys differ",
                "seeds=range(30)", "PRNG seed 0", "def test_committed_results_round_trip():"]
    assert [line for line in told if not history_in(line)] == []
    assert [line for line in ordinary if history_in(line)] == []


def test_no_history_in_the_project():
    found = []
    for path in _searched_files():
        raw = path.read_bytes()
        if b"\0" in raw:
            continue
        for number, kind, line in history_in(raw.decode("utf-8", errors="replace")):
            found.append(f"{path.relative_to(ROOT)}:{number}: {kind}: {line[:120]}")
    assert not found, f"{len(found)} lines tell the project's history:\n" + "\n".join(found)
