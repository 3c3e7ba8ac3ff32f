"""The suite of small slow JAX programs in tests/programs is well formed, and its twins agree.

Each program folder holds `slow.py` (labelled mistakes, `# <- CODE` on the line a scanner
should report, `major` on the costliest one), `major_fixed.py` (only the major mistake fixed),
`fixed.py` (every mistake fixed) and `manifest.toml` (what each mistake is and whether fixing
it changes the numbers). Folders named `NN_clean_*` hold one `clean.py` with no mistakes.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from jaxopt_audit.static.pipeline.registry import load_rules

PROGRAMS = Path(__file__).parent / "programs"
MARK = re.compile(r"#\s*<-\s*(?P<code>JAX\d{3})(?P<major>\s+major)?\s*$")
# JAX103 is found at run time only, so no static rule module carries its code
RUNTIME_ONLY_CODES = {"JAX103"}
VARIANTS = ("slow.py", "major_fixed.py", "fixed.py")

program_dirs = sorted(p for p in PROGRAMS.iterdir() if p.is_dir() and re.match(r"\d\d_", p.name))
mistake_dirs = [p for p in program_dirs if "_clean_" not in p.name]
clean_dirs = [p for p in program_dirs if "_clean_" in p.name]


def marks(path: Path) -> list[tuple[int, str, bool]]:
    """(line, code, major) for every `# <- CODE` mark in a file."""
    found = []
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        match = MARK.search(text)
        if match:
            found.append((number, match["code"], bool(match["major"])))
    return found


def manifest(folder: Path) -> dict:
    return tomllib.loads((folder / "manifest.toml").read_text())


def test_suite_size():
    assert len(mistake_dirs) >= 12
    assert len(clean_dirs) >= 3


@pytest.mark.parametrize("folder", mistake_dirs, ids=lambda p: p.name)
def test_program_is_well_formed(folder):
    for name in (*VARIANTS, "manifest.toml"):
        assert (folder / name).is_file(), f"{folder.name} lacks {name}"
    data = manifest(folder)
    assert data["description"].strip()
    known = {rule.CODE for rule in load_rules()} | RUNTIME_ONLY_CODES
    listed = data["mistake"]
    for mistake in listed:
        assert mistake["code"] in known, mistake
        assert mistake["fix"].strip(), mistake
        assert isinstance(mistake["changes_numbers"], bool), mistake
    labelled = {(m["line"], m["code"], m["major"]) for m in listed}
    assert labelled == set(marks(folder / "slow.py")), "manifest and marks in slow.py disagree"
    assert len(labelled) == len(listed), "a mistake is listed twice"
    majors = [m for m in listed if m["major"]]
    assert len(majors) == 1, "exactly one major mistake per program"


@pytest.mark.parametrize("folder", mistake_dirs, ids=lambda p: p.name)
def test_twins_keep_the_right_marks(folder):
    slow = marks(folder / "slow.py")
    major_fixed = marks(folder / "major_fixed.py")
    assert not any(major for _, _, major in major_fixed), "major_fixed.py still marks a major mistake"
    assert Counter(code for _, code, _ in major_fixed) == Counter(code for _, code, major in slow if not major)
    assert marks(folder / "fixed.py") == []


@pytest.mark.parametrize("folder", program_dirs, ids=lambda p: p.name)
def test_every_file_compiles(folder):
    files = sorted(folder.glob("*.py"))
    assert files
    for path in files:
        compile(path.read_text(), str(path), "exec")


@pytest.mark.parametrize("folder", clean_dirs, ids=lambda p: p.name)
def test_clean_control_has_no_marks(folder):
    assert (folder / "clean.py").is_file()
    assert marks(folder / "clean.py") == []


def run_program(path: Path, out: Path) -> dict[str, np.ndarray]:
    env = {**os.environ, "JAXOPT_PROGRAM_OUT": str(out), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{path} failed:\n{done.stderr[-2000:]}"
    assert done.stdout.strip(), f"{path} printed no summary"
    with np.load(out) as saved:
        return {key: saved[key] for key in saved.files}


def assert_same_outputs(reference: dict, other: dict, rtol: float, atol: float, what: str) -> None:
    assert reference.keys() == other.keys(), what
    for key in reference:
        np.testing.assert_allclose(other[key], reference[key], rtol=rtol, atol=atol, err_msg=f"{what}: {key}")


@pytest.mark.slow
@pytest.mark.parametrize("folder", mistake_dirs, ids=lambda p: p.name)
def test_twins_compute_the_same(folder, tmp_path):
    data = manifest(folder)
    rtol, atol = data.get("rtol", 1e-4), data.get("atol", 1e-5)
    outputs = {name: run_program(folder / name, tmp_path / f"{name}.npz") for name in VARIANTS}
    major_changes = any(m["changes_numbers"] for m in data["mistake"] if m["major"])
    any_changes = any(m["changes_numbers"] for m in data["mistake"])
    if not major_changes:
        assert_same_outputs(outputs["slow.py"], outputs["major_fixed.py"], rtol, atol, "major_fixed.py")
    if not any_changes:
        assert_same_outputs(outputs["slow.py"], outputs["fixed.py"], rtol, atol, "fixed.py")
    else:
        # a PRNG fix changes the draws, not what is saved
        assert outputs["fixed.py"].keys() == outputs["slow.py"].keys()


@pytest.mark.slow
@pytest.mark.parametrize("folder", clean_dirs, ids=lambda p: p.name)
def test_clean_control_runs(folder, tmp_path):
    assert run_program(folder / "clean.py", tmp_path / "clean.npz")
