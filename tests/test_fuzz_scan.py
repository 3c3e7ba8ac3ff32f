"""Property-based fuzzing of `scan` (issue 12): generated valid Python (hypothesmith, made for
libcst-based tools), mutations of real files (truncated, bytes injected, nesting deepened,
re-encoded) and generated notebooks. Whatever the input, the scan never raises, never hangs and
reports every file either as scanned or as an `errors` entry of one line; the tool's own bugs
(`internal error`) fail the test.

The budget here is short so that it runs in the normal suite (the `ci` profile);
`benchmarks/fuzz_scan.py` runs the same properties with the `long` profile.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxopt_audit.static.pipeline.config import Config
from jaxopt_audit.static.pipeline.discovery import discover
from jaxopt_audit.static.pipeline.engine import scan_paths

REPO = Path(__file__).resolve().parent.parent
# Real JAX code that ships with the repository: the reference pipelines' stages and the rules.
REAL_FILES = sorted(str(p) for p in (REPO / "reference_pipelines").rglob("*.py") if p.stat().st_size > 200)
GOOD = "import jax\n\nstep = jax.jit(lambda w: w * 0.9)\n\ndef train(w):\n    for i in range(100):\n" \
       "        w = step(w)\n        print(float(w.sum()))\n    return w\n"
HANG_S = 120  # a scan of two small files taking this long is a hang, not slowness

_common: dict[str, Any] = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck))
settings.register_profile("ci", max_examples=25, **_common)
settings.register_profile("long", max_examples=int(os.environ.get("JAXOPT_AUDIT_FUZZ_EXAMPLES", "1000")),
                          **_common)
PROFILE = os.environ.get("JAXOPT_AUDIT_FUZZ_PROFILE", "ci")
settings.load_profile(PROFILE)  # the per-test settings below inherit deadline and database


def _examples(ci: int) -> int:
    """Examples for one property: `ci` on the short budget, the profile's count otherwise."""
    return ci if PROFILE == "ci" else settings.get_profile(PROFILE).max_examples


@contextmanager
def _watchdog(seconds: int):
    def expire(signum, frame):
        raise AssertionError(f"scan did not finish in {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def _default_recursion_limit():
    """The limit a user's `jaxopt-audit` process has: hypothesis raises it while a test runs,
    which would hide what deep nesting does to the scan."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def assert_scans(files: dict[str, bytes]) -> None:
    """Scan a folder holding `files` (plus a known-good file): no exception, no hang, every file
    accounted for, every error one line, and the good file's findings still there."""
    with tempfile.TemporaryDirectory() as folder:
        for name, data in {**files, "good.py": GOOD.encode()}.items():
            Path(folder, name).write_bytes(data)
        expected = len(discover([folder], []).files)
        with _watchdog(HANG_S), _default_recursion_limit():
            result = scan_paths([folder], config=Config(), jobs=1, extend_select=["PREVIEW"])
        internal = [e for e in result.errors if "internal error" in e.message]
        assert not internal, internal
        assert result.files_scanned + len(result.errors) == expected == len(files) + 1, result.errors
        assert all("\n" not in e.message and e.message for e in result.errors), result.errors
        assert any(Path(f.path).name == "good.py" for f in result.findings)


@pytest.mark.slow
@settings(max_examples=_examples(25))
@given(source=hypothesmith.from_grammar())
def test_generated_python_from_the_grammar(source: str) -> None:
    assert_scans({"generated.py": source.encode("utf-8", "surrogatepass")})


@pytest.mark.slow
@settings(max_examples=_examples(5))
@given(source=hypothesmith.from_node())
def test_generated_python_from_libcst_nodes(source: str) -> None:
    assert_scans({"generated.py": source.encode("utf-8", "surrogatepass")})


def _deepen(text: bytes, how: str, depth: int) -> bytes:
    if how == "plus":
        return text + b"\ny = " + b" + ".join([b"x"] * depth) + b"\n"
    if how == "attr":
        return text + b"\ny = x" + b".a" * depth + b"\n"
    if how == "call":
        return text + b"\ny = f" + b"(x" * min(depth, 190) + b")" * min(depth, 190) + b"\n"
    # blocks: the whole file inside nested ifs (CPython allows 100 levels of indentation)
    levels = min(depth, 99)
    body = b"".join(b"    " * levels + line if line.strip() else line
                    for line in text.splitlines(keepends=True))
    return b"".join(b"    " * i + b"if True:\n" for i in range(levels)) + body


@st.composite
def mutated_real_file(draw) -> bytes:
    text = Path(draw(st.sampled_from(REAL_FILES))).read_bytes()
    # deepening twice as often: it needs large depths, which a uniform draw rarely reaches
    kind = draw(st.sampled_from(["truncate", "inject", "deepen", "deepen", "encode", "combine"]))
    if kind in ("truncate", "combine"):
        text = text[:draw(st.integers(0, len(text)))]
    if kind in ("inject", "combine"):
        at = draw(st.integers(0, len(text)))
        junk = draw(st.one_of(st.binary(min_size=1, max_size=16),
                              st.sampled_from([b"\x00", b"\xff\xfe", b"\r", b"\t", b"\x0c", b"\xef\xbb\xbf",
                                               b"(", b"]", b":", b"\\", b"'''", b'"', b"\n    ", b"# type: ",
                                               b"\xe2\x80\xa8", b"\x1a", b"@", b"lambda"])))
        text = text[:at] + junk + text[at:]
    if kind == "deepen":
        text = _deepen(text, draw(st.sampled_from(["plus", "attr", "call", "blocks"])),
                       draw(st.sampled_from([5, 100, 400, 1000, 1500])))
    if kind == "encode":
        how = draw(st.sampled_from(["crlf", "cr", "bom", "latin1-cookie", "utf16"]))
        if how == "crlf":
            text = text.replace(b"\n", b"\r\n")
        elif how == "cr":
            text = text.replace(b"\n", b"\r")
        elif how == "bom":
            text = b"\xef\xbb\xbf" + text
        elif how == "latin1-cookie":
            text = b"# -*- coding: latin-1 -*-\n" + text + b"\nname = '\xe9'\n"
        else:
            text = text.decode("utf-8", "replace").encode("utf-16")
    return text


@pytest.mark.slow
@settings(max_examples=_examples(60))
@given(data=mutated_real_file())
def test_mutated_real_files(data: bytes) -> None:
    assert_scans({"mutated.py": data})


def _notebooks_supported() -> bool:
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "probe.ipynb").write_text("{}")
        return bool(discover([folder], []).files)


# Saved outputs as notebooks hold them, and as damaged ones might: the scanner reads their text and
# error names (static/pipeline/notebooks.py) and must never fail on them.
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6)
_OUTPUT = st.one_of(
    st.fixed_dictionaries({"output_type": st.just("stream"), "name": st.just("stdout"),
                           "text": st.one_of(st.text(max_size=40), st.lists(st.text(max_size=20), max_size=3), _JSON)}),
    st.fixed_dictionaries({"output_type": st.just("error"), "ename": st.one_of(st.text(max_size=30), _JSON),
                           "evalue": st.text(max_size=20), "traceback": st.lists(st.text(max_size=20), max_size=2)}),
    st.fixed_dictionaries({"output_type": st.just("execute_result"), "data": _JSON}),
    _JSON)


@st.composite
def notebook(draw) -> bytes:
    cells = draw(st.lists(st.tuples(st.sampled_from(["code", "markdown", "raw"]),
                                    st.one_of(hypothesmith.from_grammar(), st.text(max_size=40)),
                                    st.booleans(), st.one_of(st.lists(_OUTPUT, max_size=3), _JSON)), max_size=5))
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": kind, "metadata": {}, "source": text.splitlines(True) if as_lines else text,
                     **({"outputs": outputs, "execution_count": None} if kind == "code" else {})}
                    for kind, text, as_lines, outputs in cells]}
    data = json.dumps(nb).encode()
    if draw(st.booleans()):  # a damaged notebook: cut short, or a field of the wrong type
        data = data[:draw(st.integers(0, len(data)))] if draw(st.booleans()) else \
            json.dumps({**nb, "cells": draw(st.sampled_from([None, 3, "x", [1], [{"cell_type": "code"}]]))}).encode()
    return data


# Notebooks are scanned once discovery picks up .ipynb files (another change adds them). Slow: the
# grammar-generated cells take half a minute, most of the fast loop's time.
@pytest.mark.slow
@pytest.mark.skipif(not _notebooks_supported(), reason="this build does not scan .ipynb notebooks")
@settings(max_examples=_examples(20))
@given(data=notebook())
def test_generated_notebooks(data: bytes) -> None:
    assert_scans({"generated.ipynb": data})
