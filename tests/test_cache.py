"""The per-file result cache: reused while nothing that decides a result changed, never stale."""

from __future__ import annotations

import glob
import json
import os

from jaxopt_audit.cli import main
from jaxopt_audit.static.pipeline.cache import Cache
from jaxopt_audit.static.pipeline.engine import scan_paths

from conftest import SYNC_IN_LOOP as LOOP

PREVIEW = ["--extend-select", "PREVIEW"]  # the speed rules exercised here are preview rules


def cache_file(cache_dir) -> str:
    (path,) = glob.glob(os.path.join(cache_dir, "scan-*.json"))
    return path


def codes(result):
    return [(os.path.basename(f.path), f.line, f.code) for f in result.findings]


def test_warm_scan_reuses_results_and_an_edit_is_rechecked(tmp_path):
    src, cache_dir = tmp_path / "src", str(tmp_path / "cache")
    src.mkdir()
    (src / "a.py").write_text(LOOP)
    (src / "b.py").write_text("x = 1\n")
    cold = scan_paths([str(src)], config=None, cache_dir=cache_dir, extend_select=["PREVIEW"])
    assert open(os.path.join(cache_dir, ".gitignore")).read().splitlines()[-1] == "*"

    # The stored entry is what a warm scan reports: mark it to see that it is read.
    path = cache_file(cache_dir)
    data = json.load(open(path))
    for entry in data["files"].values():
        for finding in entry["findings"]:
            finding[8] = "from the cache"
    json.dump(data, open(path, "w"))
    warm = scan_paths([str(src)], config=None, cache_dir=cache_dir, extend_select=["PREVIEW"])
    assert codes(warm) == codes(cold) and {f.message for f in warm.findings} == {"from the cache"}
    assert warm.files_scanned == cold.files_scanned == 2

    (src / "b.py").write_text(LOOP.replace("float(w.sum())", "w.sum().item()"))
    edited = scan_paths([str(src)], config=None, cache_dir=cache_dir, extend_select=["PREVIEW"])
    assert [c for c in codes(edited) if c[0] == "b.py"] == [("b.py", 6, "JAX201"), ("b.py", 8, "JAX301")]
    assert all(f.message != "from the cache" for f in edited.findings if f.path.endswith("b.py"))


def test_selection_and_configuration_are_part_of_the_key(tmp_path):
    (tmp_path / "a.py").write_text(LOOP)
    cache_dir = str(tmp_path / "cache")
    assert {c[2] for c in codes(scan_paths([str(tmp_path / "a.py")], config=None, cache_dir=cache_dir,
                                           select=["JAX301"]))} == {"JAX301"}
    assert {c[2] for c in codes(scan_paths([str(tmp_path / "a.py")], config=None, cache_dir=cache_dir,
                                           extend_select=["PREVIEW"]))} == {"JAX201", "JAX301"}
    assert {c[2] for c in codes(scan_paths([str(tmp_path / "a.py")], config=None, cache_dir=cache_dir,
                                           ignore=["JAX2"]))} == {"JAX301"}
    (tmp_path / "pyproject.toml").write_text('[tool.jaxopt-audit]\nper-file-ignores = {"a.py" = ["JAX301"]}\n')
    assert {c[2] for c in codes(scan_paths([str(tmp_path / "a.py")], cache_dir=cache_dir,
                                           extend_select=["PREVIEW"]))} == {"JAX201"}


def test_corrupt_or_foreign_cache_is_ignored_and_rewritten(tmp_path):
    (tmp_path / "a.py").write_text(LOOP)
    cache_dir = str(tmp_path / "cache")
    expected = codes(scan_paths([str(tmp_path / "a.py")], config=None, cache_dir=cache_dir, extend_select=["PREVIEW"]))
    path = cache_file(cache_dir)
    for garbage in ("{not json", json.dumps({"tool": "other", "files": {}}), json.dumps([1, 2]),
                    json.dumps({"tool": "jaxopt-audit", "format": 1, "fingerprint": "x", "files": {}}),
                    "\x00" * 10):
        with open(path, "w") as handle:
            handle.write(garbage)
        assert codes(scan_paths([str(tmp_path / "a.py")], config=None, cache_dir=cache_dir,
                                extend_select=["PREVIEW"])) == expected
        assert json.load(open(path))["tool"] == "jaxopt-audit"
    data = json.load(open(path))
    next(iter(data["files"].values()))["findings"] = [["not", "a", "finding"]]
    json.dump(data, open(path, "w"))
    assert codes(scan_paths([str(tmp_path / "a.py")], config=None, cache_dir=cache_dir,
                            extend_select=["PREVIEW"])) == expected


def test_unwritable_cache_is_not_an_error(tmp_path):
    (tmp_path / "a.py").write_text(LOOP)
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    result = scan_paths([str(tmp_path / "a.py")], config=None, cache_dir=str(blocker / "cache"),
                        extend_select=["PREVIEW"])
    assert result.errors == [] and len(result.findings) == 2


def test_cli_cache_beside_the_configuration_and_no_cache(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("JAXOPT_AUDIT_CACHE_DIR")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(LOOP)
    monkeypatch.chdir(tmp_path / "pkg")
    assert main(["scan", *PREVIEW, ".", "--no-cache", "--format", "concise"]) == 1
    assert not (tmp_path / ".jaxopt_audit_cache").exists()
    assert main(["scan", *PREVIEW, ".", "--format", "concise"]) == 1
    assert (tmp_path / ".jaxopt_audit_cache" / ".gitignore").is_file()
    assert main(["scan", *PREVIEW, ".", "--format", "concise", "--cache-dir", str(tmp_path / "elsewhere")]) == 1
    assert glob.glob(str(tmp_path / "elsewhere" / "scan-*.json"))
    capsys.readouterr()


def test_dependency_inputs_are_part_of_a_files_key(tmp_path):
    """A project-wide pass adds the summaries a file imports through `dependencies`."""
    summaries = {"v": b"summary 1"}
    cache = Cache(str(tmp_path), "f" * 64, dependencies=lambda path, content: [summaries["v"]])
    first = cache.key("a.py", b"x = 1\n", [])
    summaries["v"] = b"summary 2"
    assert cache.key("a.py", b"x = 1\n", []) != first


def test_a_file_edited_during_the_scan_is_not_stored_under_its_old_key(tmp_path):
    from jaxopt_audit.static.pipeline.cache_use import cached_results, open_cache
    from jaxopt_audit.static.pipeline.config import Config
    from jaxopt_audit.static.pipeline.engine import scan_file
    from jaxopt_audit.static.pipeline.registry import load_rules

    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    rules = load_rules()
    cache = open_cache(str(tmp_path / "cache"), rules, Config())
    todo, keys = cached_results(cache, [str(path)], Config(), lambda r: None)
    path.write_text(LOOP)  # edited between the key and the scan
    cache.put(keys[str(path)], scan_file(str(path), [r() for r in rules]))
    assert cache.entries == {}
