"""The test-file policy: by default test files get only JAX6xx (deprecated and removed APIs); the
rest is one flag (`--include-tests`) or one setting (`test-files-ignore = []`) away."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from jaxopt_audit.cli import main
from jaxopt_audit.static.pipeline.config import TEST_FILES, is_test_file

PREVIEW = ["--extend-select", "PREVIEW"]  # the speed rules exercised here are preview rules

# A per-step host sync (JAX301), a reused key (JAX501) and a removed API (JAX601).
SOURCE = textwrap.dedent("""\
    import jax

    step = jax.jit(lambda w: w * 0.9)

    def train(w):
        for i in range(100):
            w = step(w)
            print(float(w.sum()))
        return w

    def inputs():
        key = jax.random.key(0)
        return jax.random.normal(key, (3,)), jax.random.normal(key, (3,))

    leaves = jax.tree_leaves({"a": 1})
""")
LAYOUT = ["src/train.py", "tests/test_train.py", "src/train_test.py", "src/conftest.py",
          "test/helpers.py", "src/test_utils/data.py"]


@pytest.mark.parametrize("rel, expected", [
    ("tests/test_train.py", True), ("tests/helpers/data.py", True), ("test/helpers.py", True),
    ("src/test_train.py", True), ("src/train_test.py", True), ("conftest.py", True),
    ("src/train.py", False), ("src/latest.py", False), ("src/test_utils/data.py", False),
    ("contest.py", False), ("attest/x.py", False),
])
def test_conventional_test_paths(rel, expected):
    assert is_test_file(rel, TEST_FILES) is expected


def _scan(tmp_path, capsys, *args, pyproject=""):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n" + pyproject)
    for rel in LAYOUT:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(SOURCE)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        main(["scan", *PREVIEW, ".", "--format", "json", *args])
    finally:
        os.chdir(cwd)
    data = json.loads(capsys.readouterr().out)
    by_path: dict[str, set[str]] = {}
    for f in data["findings"]:
        by_path.setdefault(f["path"], set()).add(f["code"])
    return by_path


def test_test_files_get_only_deprecations_by_default(tmp_path, capsys):
    found = _scan(tmp_path, capsys)
    everything = found["src/train.py"]
    assert everything >= {"JAX301", "JAX501", "JAX601"}
    assert found["src/test_utils/data.py"] == everything  # a package named test_utils is not a test
    for rel in ("tests/test_train.py", "src/train_test.py", "src/conftest.py", "test/helpers.py"):
        assert found[rel] == {"JAX601"}, rel


def test_include_tests_flag_reports_everything(tmp_path, capsys):
    found = _scan(tmp_path, capsys, "--include-tests")
    assert len(found) == len(LAYOUT) and all(codes == found["src/train.py"] for codes in found.values())


def test_pyproject_sets_the_patterns_and_the_codes(tmp_path, capsys):
    found = _scan(tmp_path, capsys, pyproject=textwrap.dedent("""\
        [tool.jaxopt-audit]
        test-files = ["tests/"]
        test-files-ignore = ["JAX3"]
    """))
    assert found["tests/test_train.py"] == found["src/train.py"] - {"JAX301"}
    assert found["src/train_test.py"] == found["src/train.py"]  # no longer a test file


def test_empty_ignore_list_turns_the_policy_off(tmp_path, capsys):
    found = _scan(tmp_path, capsys, pyproject='[tool.jaxopt-audit]\ntest-files-ignore = []\n')
    assert found["tests/test_train.py"] == found["src/train.py"]


def test_a_folder_named_inside_tests_is_scanned_with_every_rule(tmp_path, capsys):
    """Naming a folder asks for its files to be checked: files below a named folder that itself sits
    in a test folder are judged by their place below it; test-named files there stay test files."""
    from conftest import SYNC_IN_LOOP, run_cli

    seeds = tmp_path / "tests" / "fixtures" / "seeds"
    seeds.mkdir(parents=True)
    (seeds / "train.py").write_text(SYNC_IN_LOOP)
    (seeds / "test_train.py").write_text(SYNC_IN_LOOP)
    (tmp_path / "tests" / "helper.py").write_text(SYNC_IN_LOOP)
    _, out, _ = run_cli(["scan", str(seeds), "--no-cache", "--no-config", "--format", "concise"], capsys)
    reported = {line.split(":")[0].rsplit("/", 1)[-1] for line in out.splitlines() if "JAX301" in line}
    assert reported == {"train.py"}
    _, out, _ = run_cli(["scan", str(tmp_path), "--no-cache", "--no-config", "--format", "concise"], capsys)
    assert "JAX301" not in out  # walked into from above, the test folder keeps its policy
