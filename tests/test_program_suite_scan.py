"""The default `scan` on the suite of slow programs (tests/programs): every labelled mistake of
each slow.py is reported at its line with its code, and the fixed twins and the clean controls
get nothing (the opt-in advice rules aside, which a plain scan does not run).

A mistake whose manifest says `scan = false` is one the static rules leave to `run` by design:
a Python loop around a compiled gradient step, which `lax.scan` would fold in, but whose cost a
file cannot show next to the step's own."""

from __future__ import annotations

import pytest

from jaxopt_audit.static.pipeline.config import Config
from jaxopt_audit.static.pipeline.engine import scan_paths

from test_program_suite import PROGRAMS, clean_dirs, manifest, mistake_dirs


@pytest.fixture(scope="module")
def findings() -> dict[str, set[tuple[int, str]]]:
    # named inside tests/, the suite is scanned with every default rule
    result = scan_paths([str(PROGRAMS)], config=Config(), jobs=1)
    assert result.errors == []
    found: dict[str, set[tuple[int, str]]] = {}
    for f in result.findings:
        found.setdefault(f.path, set()).add((f.line, f.code))
    return found


@pytest.mark.parametrize("folder", mistake_dirs, ids=lambda p: p.name)
def test_every_labelled_mistake_is_reported_at_its_line(folder, findings):
    expected = {(m["line"], m["code"]) for m in manifest(folder)["mistake"] if m.get("scan", True)}
    got = findings.get(str(folder / "slow.py"), set())
    assert expected <= got, f"missed: {sorted(expected - got)}"


@pytest.mark.parametrize("folder", mistake_dirs, ids=lambda p: p.name)
def test_the_fixed_twin_is_clean(folder, findings):
    assert findings.get(str(folder / "fixed.py"), set()) == set()


@pytest.mark.parametrize("folder", clean_dirs, ids=lambda p: p.name)
def test_the_clean_controls_are_clean(folder, findings):
    assert findings.get(str(folder / "clean.py"), set()) == set()
