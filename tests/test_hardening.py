"""Hostile input (issue 12): nothing one file does stops the scan, special files are never opened,
bad configuration and output paths are usage errors before any work, and nothing the user owns
is replaced by something of another kind."""

from __future__ import annotations

import gc
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import libcst as cst
import pytest

from jaxopt_audit import fileio
from jaxopt_audit.fileio import OutputPathError, check_output_dir, check_output_file, write_text_atomic
from jaxopt_audit.static.pipeline import engine
from jaxopt_audit.static.pipeline.engine import scan_paths
from jaxopt_audit.static.pipeline.isolation import call_with_deep_stack

from conftest import SYNC_IN_LOOP, run_cli

PREVIEW = ["--extend-select", "PREVIEW"]  # the speed rules exercised here are preview rules

DEEP = {  # valid Python that CPython compiles, nested past the default recursion limit of a walk
    "plus.py": "y = " + " + ".join(["x"] * 1000) + "\n",
    "attr.py": "y = x" + ".a" * 1000 + "\n",
    "brackets.py": "y = " + "[" * 500 + "]" * 500 + "\n",
}


def _good_files(folder: Path, count: int = 8) -> None:
    for i in range(count):
        (folder / f"good{i}.py").write_text(SYNC_IN_LOOP)


# ---------------------------------------------------------------- per-file isolation

@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_deeply_nested_files_are_scanned_beside_good_ones(tmp_path, jobs):
    _good_files(tmp_path)
    for name, text in DEEP.items():
        (tmp_path / name).write_text(text)
    result = scan_paths([str(tmp_path)], config=engine.Config(), jobs=jobs, extend_select=["PREVIEW"])
    assert result.errors == []
    assert result.files_scanned == 8 + len(DEEP)
    assert {Path(f.path).name for f in result.findings} == {f"good{i}.py" for i in range(8)}


@pytest.mark.slow
def test_nesting_as_deep_as_cpython_compiles():
    # the deepest `x + x + ...` CPython compiles at its default recursion limit (about 3,000)
    depth = 2000
    source = "y = " + " + ".join(["x"] * depth) + "\n"
    compile(source, "<deep>", "exec")
    rules = [r() for r in engine.load_rules()]
    result = call_with_deep_stack(engine.scan_source, source, "deep.py", rules)
    assert result.error is None and result.lines == 1


@pytest.mark.slow
def test_libcst_parses_the_deep_files_in_the_deep_thread():
    for text in DEEP.values():
        module = call_with_deep_stack(cst.parse_module, text)
        assert call_with_deep_stack(lambda m: m.code, module) == text


def test_recursion_beyond_the_limit_is_that_files_error(tmp_path, monkeypatch):
    _good_files(tmp_path, 2)
    (tmp_path / "endless.py").write_text("x = 1\n")
    real_model = engine.SemanticModel

    def model(module, path, *rest, **options):
        if path.endswith("endless.py"):
            def down(n):
                return down(n + 1)
            down(0)
        return real_model(module, path, *rest, **options)

    monkeypatch.setattr(engine, "SemanticModel", model)
    result = scan_paths([str(tmp_path)], config=engine.Config(), jobs=1, extend_select=["PREVIEW"])
    assert [(Path(e.path).name, e.message.split(":")[0]) for e in result.errors] == [("endless.py", "not scanned")]
    assert "nested too deeply" in result.errors[0].message
    assert {Path(f.path).name for f in result.findings} == {"good0.py", "good1.py"}
    assert sys.getrecursionlimit() < 10_000  # put back after the deep call


def test_a_crash_outside_the_rules_is_that_files_internal_error(tmp_path, monkeypatch, capsys):
    _good_files(tmp_path, 2)
    (tmp_path / "boom.py").write_text("x = 1\n")
    real_model = engine.SemanticModel

    def model(module, path, *rest, **options):
        if path.endswith("boom.py"):
            raise KeyError("oops")
        return real_model(module, path, *rest, **options)

    monkeypatch.setattr(engine, "SemanticModel", model)
    code, out, _ = run_cli(["scan", *PREVIEW, str(tmp_path), "--no-config", "-j", "1", "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 2  # the tool's own bug
    assert [Path(e["path"]).name for e in data["errors"]] == ["boom.py"]
    assert "internal error: KeyError" in data["errors"][0]["message"]
    assert "please report" in data["errors"][0]["message"]
    assert {Path(f["path"]).name for f in data["findings"]} == {"good0.py", "good1.py"}


def test_a_rules_crash_keeps_the_other_files_and_rules(tmp_path, capsys):
    rules_dir = tmp_path / "myrules"
    rules_dir.mkdir()
    (rules_dir / "crashy.py").write_text(textwrap.dedent('''\
        from jaxopt_audit.static.framework.rule import Rule

        class Crashy(Rule):
            """
            ## What it does
            Crashes on files named bad.py.
            ## Why is this bad?
            It tests isolation.
            ## How to fix
            Nothing.
            """
            CODE = "USR901"
            NAME = "crashy"
            SEVERITY = "warning"
            SUMMARY = "crashes on files named bad.py"
            FIX = "nothing"

            def check(self, model):
                if model.path.endswith("bad.py"):
                    raise ZeroDivisionError("rule bug")
                return []
    '''))
    src = tmp_path / "src"
    src.mkdir()
    _good_files(src, 2)
    (src / "bad.py").write_text(SYNC_IN_LOOP)
    code, out, _ = run_cli(["scan", *PREVIEW, str(src), "--no-config", "-j", "1", "--rules-dir", str(rules_dir),
                            "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 2
    assert [Path(e["path"]).name for e in data["errors"]] == ["bad.py"]
    assert "internal error in rule USR901" in data["errors"][0]["message"]
    # the other rules still ran on bad.py itself
    assert {Path(f["path"]).name for f in data["findings"]} == {"good0.py", "good1.py", "bad.py"}


def test_undecodable_and_nul_files_are_errors_at_their_position(tmp_path):
    _good_files(tmp_path, 1)
    (tmp_path / "latin.py").write_bytes(b"x = '\xff\xfe'\n")
    (tmp_path / "nul.py").write_bytes(b"x = 1\ny = \x002\n")
    result = scan_paths([str(tmp_path)], config=engine.Config(), jobs=1, extend_select=["PREVIEW"])
    messages = {Path(e.path).name: e.message for e in result.errors}
    assert set(messages) == {"latin.py", "nul.py"}
    assert messages["nul.py"].startswith("syntax error at 2:5: source contains a NUL byte")
    assert result.files_scanned == 1 and result.findings


def test_every_file_failed_is_not_all_checks_passed(tmp_path, capsys):
    (tmp_path / "a.py").write_text("def (:\n")
    code, out, _ = run_cli(["scan", *PREVIEW, str(tmp_path), "--no-config"], capsys)
    assert code == 1
    assert "All checks passed" not in out
    assert "No findings in 0 files scanned" in out and "1 file could not be scanned" in out


def test_the_same_file_named_twice_is_scanned_once(tmp_path):
    (tmp_path / "train.py").write_text(SYNC_IN_LOOP)
    (tmp_path / "alias.py").symlink_to(tmp_path / "train.py")
    paths = [str(tmp_path / "train.py"), str(tmp_path / "sub" / ".." / "train.py"), str(tmp_path)]
    (tmp_path / "sub").mkdir()
    result = scan_paths(paths, config=engine.Config(), jobs=1, extend_select=["PREVIEW"])
    assert result.files_scanned == 1
    assert len({(f.line, f.code) for f in result.findings}) == len(result.findings)


# ---------------------------------------------------------------- special files

@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_reported_and_never_opened(tmp_path):
    _good_files(tmp_path, 1)
    os.mkfifo(tmp_path / "x.py")
    cmd = [sys.executable, "-m", "jaxopt_audit.cli", "scan", "--no-config", "--format", "json"]
    for args in ([str(tmp_path)], [str(tmp_path / "x.py")], [str(tmp_path), str(tmp_path / "x.py")]):
        proc = subprocess.run(cmd + args, capture_output=True, text=True, timeout=60)
        data = json.loads(proc.stdout)
        assert data["errors"] == [{"path": str(tmp_path / "x.py"),
                                   "message": "not scanned: it is a FIFO, not a regular file"}]
        assert data["files_scanned"] == (1 if str(tmp_path) in args else 0)


def test_a_device_named_explicitly_is_reported(tmp_path):
    if not os.path.exists(os.devnull) or not stat.S_ISCHR(os.stat(os.devnull).st_mode):
        pytest.skip("no character device to name")
    result = scan_paths([os.devnull], config=engine.Config(), jobs=1, extend_select=["PREVIEW"])
    assert [e.message for e in result.errors] == ["not scanned: it is a character device, not a regular file"]


# ---------------------------------------------------------------- configuration and arguments

@pytest.mark.parametrize("option, value, hint", [
    ("--select", "NOPE", None),
    ("--select", "JAX3O1", "did you mean JAX301?"),
    ("--ignore", "JAX30l", "did you mean JAX30"),
    ("--extend-select", "JAX301,BOGUS9", None),
])
def test_unknown_codes_on_the_command_line_are_usage_errors(tmp_path, capsys, option, value, hint):
    (tmp_path / "a.py").write_text(SYNC_IN_LOOP)
    code, out, err = run_cli(["scan", *PREVIEW, str(tmp_path), "--no-config", option, value], capsys)
    assert code == 2 and out == ""
    assert f"in {option}" in err and "unknown rule code or prefix" in err and len(err.splitlines()) == 1
    assert (hint in err) if hint else "did you mean" not in err


def test_known_prefixes_and_all_still_select(tmp_path, capsys):
    (tmp_path / "a.py").write_text(SYNC_IN_LOOP)
    for select in ("JAX3", "JAX", "ALL", "jax301"):
        code, _, err = run_cli(["scan", str(tmp_path), "--no-config", "--select", select,
                                   "--extend-select", "PREVIEW"], capsys)
        assert code == 1, (select, err)


@pytest.mark.parametrize("section", [
    'select = ["NOPE"]', 'ignore = ["JAX3O1"]', 'extend-select = ["XYZ"]',
    '[tool.jaxopt-audit.per-file-ignores]\n"tests/*" = ["JAX9999"]',
])
def test_unknown_codes_in_pyproject_are_usage_errors(tmp_path, capsys, section):
    (tmp_path / "pyproject.toml").write_text(f"[tool.jaxopt-audit]\n{section}\n")
    (tmp_path / "a.py").write_text(SYNC_IN_LOOP)
    code, out, err = run_cli(["scan", *PREVIEW, str(tmp_path)], capsys)
    assert code == 2 and out == ""
    assert "unknown rule code or prefix" in err and "pyproject.toml" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("text, expected", [
    (b"tool = 3\n", "`tool` must be a table"),
    (b"[tool]\njaxopt-audit = 3\n", "must be a table"),
    (b"[tool.jaxopt-audit]\nselect = 3\n", "select must be a list of strings"),
    (b"[tool.jaxopt-audit]\nper-file-ignores = 1\n", "per-file-ignores must be a table"),
    (b"\xff\xfe[tool", "not valid TOML"),
    (b"[tool.jaxopt-audit\n", "not valid TOML"),
])
def test_malformed_pyproject_is_one_line(tmp_path, capsys, text, expected):
    (tmp_path / "pyproject.toml").write_bytes(text)
    (tmp_path / "a.py").write_text("x = 1\n")
    code, out, err = run_cli(["scan", *PREVIEW, str(tmp_path)], capsys)
    assert code == 2 and out == ""
    assert expected in err and len(err.strip().splitlines()) == 1


def test_a_rules_module_that_exits_is_an_error(tmp_path, capsys):
    rules_dir = tmp_path / "myrules"
    rules_dir.mkdir()
    (rules_dir / "quits.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "a.py").write_text(SYNC_IN_LOOP)
    code, out, err = run_cli(["scan", *PREVIEW, str(tmp_path / "a.py"), "--no-config", "--rules-dir", str(rules_dir)],
                             capsys)
    assert code == 2 and out == ""
    assert "quits.py: called sys.exit(0) while being imported" in err


# ---------------------------------------------------------------- output paths

def test_scan_o_writes_through_a_symlink(tmp_path, capsys):
    (tmp_path / "a.py").write_text(SYNC_IN_LOOP)
    target = tmp_path / "target.json"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, _, _ = run_cli(["scan", *PREVIEW, str(tmp_path / "a.py"), "--no-config", "--format", "json", "-o", str(link)],
                         capsys)
    assert code == 1
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["files_scanned"] == 1
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the replaced file keeps its mode


def test_scan_o_writes_into_a_device_and_a_fifo_without_replacing_them(tmp_path, capsys):
    (tmp_path / "a.py").write_text(SYNC_IN_LOOP)
    code, _, _ = run_cli(["scan", *PREVIEW, str(tmp_path / "a.py"), "--no-config", "-o", os.devnull], capsys)
    assert code == 1 and stat.S_ISCHR(os.stat(os.devnull).st_mode)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    code, _, _ = run_cli(["scan", *PREVIEW, str(tmp_path / "a.py"), "--no-config", "--format", "json", "-o", str(fifo)],
                         capsys)
    reader.join(timeout=30)
    assert code == 1 and stat.S_ISFIFO(fifo.stat().st_mode)
    assert json.loads(received[0])["files_scanned"] == 1


@pytest.mark.parametrize("where, expected", [
    ("{tmp}", "it is a directory"),
    ("{tmp}/a.py/out.json", "is a file, not a directory"),
    ("{tmp}/a.py/deeper/out.json", "is a file, not a directory"),
    ("/proc/jaxopt-audit-test.json", "cannot create files in /proc"),
])
def test_scan_o_bad_paths_are_usage_errors_before_the_scan(tmp_path, capsys, monkeypatch, where, expected):
    if where.startswith("/proc") and not os.path.isdir("/proc/self"):
        pytest.skip("no /proc")
    (tmp_path / "a.py").write_text(SYNC_IN_LOOP)
    monkeypatch.setattr("jaxopt_audit.commands.scan.scan_paths",
                        lambda *a, **k: pytest.fail("scanned before checking -o"))
    code, out, err = run_cli(["scan", *PREVIEW, str(tmp_path), "--no-config", "-o", where.format(tmp=tmp_path)], capsys)
    assert code == 2 and out == ""
    assert expected in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_check_output_file_and_dir(tmp_path):
    check_output_file(tmp_path / "new" / "deeper" / "out.json", "-o")  # parents are created on write
    assert not (tmp_path / "new").exists()  # the check creates nothing
    (tmp_path / "dangling").symlink_to(tmp_path / "elsewhere.json")
    check_output_file(tmp_path / "dangling", "-o")
    write_text_atomic(tmp_path / "dangling", "x")
    assert (tmp_path / "dangling").is_symlink() and (tmp_path / "elsewhere.json").read_text() == "x"
    check_output_dir(tmp_path / "traces", "--trace")
    (tmp_path / "afile").write_text("")
    with pytest.raises(OutputPathError, match="not a directory"):
        check_output_dir(tmp_path / "afile", "--trace")
    with pytest.raises(OutputPathError, match="it is a directory"):
        check_output_file(tmp_path, "-o")
    with pytest.raises(IsADirectoryError):
        fileio.write_text_atomic(tmp_path, "x")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_check_output_file_read_only_directory(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(OutputPathError, match="cannot create files"):
            check_output_file(ro / "x.json", "-o")
    finally:
        ro.chmod(0o700)


# ---------------------------------------------------------------- bench, run, report

@pytest.fixture
def no_benchmark(monkeypatch):
    pytest.importorskip("jax")
    from jaxopt_audit.commands import bench

    monkeypatch.setattr(bench, "run_pipeline", lambda *a, **k: pytest.fail("measured before checking paths"))


@pytest.mark.parametrize("args, expected", [
    (["--out", "/proc/jaxopt-audit-test.json"], "cannot create files in /proc"),
    (["--trace", "{tmp}/afile"], "--trace needs a directory"),
    (["--out", "{tmp}"], "it is a directory"),
])
def test_bench_checks_output_paths_before_measuring(tmp_path, capsys, no_benchmark, args, expected):
    (tmp_path / "afile").write_text("")
    code, _, err = run_cli(["bench", "jit_basics", *[a.format(tmp=tmp_path) for a in args]], capsys)
    assert code == 2 and expected in err and "Traceback" not in err


@pytest.mark.parametrize("args, expected", [
    (["--trace", "{tmp}/afile"], "--trace needs a directory"),
    (["--trace", "/proc/jaxopt-audit-trace"], "cannot create files in /proc"),
    (["--json", "{tmp}"], "it is a directory"),
    (["--json", "/proc/jaxopt-audit-test.json"], "cannot create files in /proc"),
])
def test_run_checks_output_paths_before_running(tmp_path, capsys, args, expected):
    pytest.importorskip("jax")
    (tmp_path / "afile").write_text("keep")
    script = tmp_path / "script.py"
    script.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    code, _, err = run_cli(["run", *[a.format(tmp=tmp_path) for a in args], str(script)], capsys)
    assert code == 2 and expected in err and "Traceback" not in err
    assert not (tmp_path / "ran").exists() and (tmp_path / "afile").read_text() == "keep"


def _bench_result() -> dict:
    variant = {"name": "stage0_original", "stage": 0, "addresses": [], "compile_s": 0.1,
               "steady_s": {"median": 1.0, "min": 1.0, "max": 1.0, "repeats": 3}, "extrapolated": False,
               "throughput": {"value": 10.0, "unit": "samples/s"}, "compiles_per_call": 0,
               "host_transfers_per_call": 0, "speedup_vs_stage0": 1.0,
               "validation": {"ok": True, "metric": "max_abs_err", "value": 0.0, "tolerance": 1e-5}}
    return {"pipeline": "demo", "size": "small", "platform": "cpu", "device": "cpu", "jax_version": "0.4.30",
            "variants": [variant]}


@pytest.mark.parametrize("make, expected", [
    (lambda p: p.write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe\x00binary"), "is not a JSON text"),
    (lambda p: p.write_text(json.dumps({**_bench_result(), "variants": [
        {k: v for k, v in _bench_result()["variants"][0].items() if k != "stage"}]})), "has no 'stage'"),
    (lambda p: p.write_text(json.dumps({**_bench_result(), "variants": [
        {**_bench_result()["variants"][0], "steady_s": {}}]})), "steady_s has no 'median'"),
    (lambda p: p.write_text(json.dumps({**_bench_result(), "pipeline": "../../.."})), "not a plain name"),
])
def test_report_refuses_bad_results_in_one_line(tmp_path, capsys, monkeypatch, make, expected):
    pytest.importorskip("matplotlib")
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    make(work / "results.json")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    code, _, err = run_cli(["report", "results.json"], capsys)
    assert code == 2 and expected in err and len(err.splitlines()) == 1
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before  # nothing written anywhere


def test_report_checks_its_output_before_rendering(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    (tmp_path / "r.json").write_text(json.dumps(_bench_result()))
    (tmp_path / "afile").write_text("")
    for output, expected in ((tmp_path, "it is a directory"), (tmp_path / "afile" / "r.md", "is a file"),
                             ("/proc/jaxopt-audit-report.md", "cannot create files in /proc")):
        code, _, err = run_cli(["report", str(tmp_path / "r.json"), "-o", str(output)], capsys)
        assert code == 2 and expected in err and "Traceback" not in err


# ---------------------------------------------------------------- the tool's own bugs, Ctrl-C

def test_the_tools_own_bug_asks_for_a_report(tmp_path, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("jaxopt_audit.commands.scan.scan_paths", broken)
    code, _, err = run_cli(["scan", *PREVIEW, str(tmp_path), "--no-config"], capsys)
    assert code == 2
    assert "Traceback" in err and "internal error" in err and "please report it" in err


SLOW_RULE = textwrap.dedent('''\
    import os, time
    from jaxopt_audit.static.framework.rule import Rule

    class Slow(Rule):
        """
        ## What it does
        Sleeps, so the test can interrupt a scan in progress.
        ## Why is this bad?
        It is a test.
        ## How to fix
        Nothing.
        """
        CODE = "USR902"
        NAME = "slow"
        SEVERITY = "info"
        SUMMARY = "sleeps, so the test can interrupt a scan in progress"
        FIX = "nothing"

        def check(self, model):
            open(os.environ["SCAN_STARTED"], "w").close()
            time.sleep(0.5)
            return []
''')


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_in_a_pooled_scan_exits_quietly_with_130(tmp_path):
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    (rules_dir / "slow.py").write_text(SLOW_RULE)
    src = tmp_path / "src"
    src.mkdir()
    _good_files(src, 40)
    started = tmp_path / "started"
    proc = subprocess.Popen([sys.executable, "-m", "jaxopt_audit.cli", "scan", str(src), "--no-config",
                             "-j", "2", "--rules-dir", str(rules_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "SCAN_STARTED": str(started)}, start_new_session=True,
                            # as from a terminal: a background job of a non-interactive shell (a CI
                            # step run with `&`) inherits SIGINT ignored, and so would the scan
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert started.exists(), proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: the whole process group
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip() == "jaxopt-audit: interrupted"


def test_each_files_model_is_freed_after_its_scan_and_the_collector_left_as_found(tmp_path):
    # a model holds reference cycles: the scan collects each file's objects once it is done
    from jaxopt_audit.static.model import SemanticModel

    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(SYNC_IN_LOOP)
    assert gc.isenabled()
    result = scan_paths([str(tmp_path)], jobs=1, extend_select=["PREVIEW"])
    assert result.findings and gc.isenabled()
    assert not [o for o in gc.get_objects() if isinstance(o, SemanticModel)]
    gc.disable()  # a caller that turned collection off keeps it off
    try:
        scan_paths([str(tmp_path)], jobs=1)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_scanned_files_objects_are_freed_by_reference_counting_not_left_in_cycles(tmp_path):
    # SemanticModel.release breaks the model's cycles: nothing of the file waits for the collector
    from jaxopt_audit.static.pipeline.engine import scan_source
    from jaxopt_audit.static.pipeline.registry import load_rules

    rules = [r() for r in load_rules([])]
    source = SYNC_IN_LOOP + textwrap.dedent("""
        import time

        class Net:
            def step(self, x):
                start = time.perf_counter()
                for i in range(3):
                    if i > 5:
                        return x
                    x = self.f(x)
                print(time.perf_counter() - start)
                return x
        """)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = scan_source(source, str(tmp_path / "m.py"), rules)
        gc.collect()
        kept = [o for o in gc.garbage if type(o).__module__.startswith(("libcst", "jaxopt_audit"))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert result.findings  # the rules ran on the model
    assert kept == []
