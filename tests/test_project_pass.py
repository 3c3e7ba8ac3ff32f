"""The project-wide pass (static/pipeline/project.py): a function defined in one scanned module and called
in a loop of another is resolved like a local one. Multi-file projects written for these tests."""

from __future__ import annotations

import os
import textwrap

import pytest

from jaxopt_audit.static.pipeline.engine import scan_paths
from jaxopt_audit.static.pipeline.project import Project, summarise_file

MODEL = """
    import jax
    import jax.numpy as jnp

    {decorator}
    def update(w, x, y):
        err = jnp.dot(x, w) - y
        return w - 0.1 * jnp.dot(x.T, err)
"""

TRAIN_LOCAL_JIT = """
    import jax
    import jax.numpy as jnp

    @jax.jit
    def update(w, x, y):
        err = jnp.dot(x, w) - y
        return w - 0.1 * jnp.dot(x.T, err)

    def fit(w, x, y):
        for _ in range(500):
            w = update(w, x, y)
            print(w.sum().item())
        return w
"""


def _write(root, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _codes(result, name: str) -> list[tuple[int, str]]:
    return sorted((f.line, f.code) for f in result.findings if os.path.basename(f.path) == name)


def _train(import_line: str, call: str, readback: bool = False) -> str:
    sync = "\n            print(w.sum().item())" if readback else ""
    return f"""
    {import_line}

    def fit(w, x, y):
        for _ in range(500):
            w = {call}(w, x, y){sync}
        return w
    """


@pytest.mark.parametrize(("import_line", "call"), [
    ("from .model import update", "update"),
    ("from . import model", "model.update"),
    ("from app.model import update", "update"),
    ("import app.model as m", "m.update"),
    ("import app.model", "app.model.update"),
])
def test_unjitted_step_from_another_module_is_missing_jit(tmp_path, import_line, call):
    _write(tmp_path, {"app/__init__.py": "", "app/model.py": MODEL.format(decorator=""),
                      "app/train.py": _train(import_line, call)})
    result = scan_paths([str(tmp_path)], select=["JAX101"], jobs=1)
    assert _codes(result, "train.py") == [(6, "JAX101")]  # at the call: the def is in another file


def test_script_directory_import(tmp_path):
    _write(tmp_path, {"model.py": MODEL.format(decorator=""), "train.py": _train("from model import update", "update")})
    assert _codes(scan_paths([str(tmp_path)], select=["JAX101"], jobs=1), "train.py") == [(6, "JAX101")]


def test_jitted_step_from_another_module_is_a_step_like_a_local_one(tmp_path):
    _write(tmp_path, {"app/__init__.py": "", "app/model.py": MODEL.format(decorator="@jax.jit"),
                      "app/train.py": _train("from .model import update", "update", readback=True),
                      "app/local.py": TRAIN_LOCAL_JIT})
    result = scan_paths([str(tmp_path)], select=["JAX101", "JAX301"], jobs=1)
    assert _codes(result, "train.py") == [(7, "JAX301")]  # no JAX101; the per-step .item() is a sync
    assert _codes(result, "local.py") == [(13, "JAX301")]  # the same verdict as for a local step


def test_module_level_jit_binding_with_static_arguments(tmp_path):
    model = textwrap.dedent(MODEL.format(decorator="")) + "\nfast = jax.jit(update, static_argnums=(2,))\n"
    _write(tmp_path, {"model.py": model, "train.py": _train("from model import fast", "fast")})
    summary = summarise_file(str(tmp_path / "model.py"))
    assert summary is not None and summary.functions["fast"].jitted
    assert summary.functions["fast"].static_params == frozenset({"y"})
    assert not summary.functions["update"].jitted
    assert _codes(scan_paths([str(tmp_path)], select=["JAX101"], jobs=1), "train.py") == []


def test_host_helper_and_methods_from_another_module_stay_silent(tmp_path):
    helpers = """
        import jax.numpy as jnp

        def report(w, x, y):
            loss = jnp.mean((jnp.dot(x, w) - y) ** 2)
            return float(loss)

        class Learner:
            def update(self, w, x, y):
                return w - jnp.dot(x.T, jnp.dot(x, w) - y)
    """
    train = """
        from helpers import report, Learner

        def fit(w, x, y, learner: Learner):
            for _ in range(500):
                report(w, x, y)
                w = learner.update(w, x, y)
            return w
    """
    _write(tmp_path, {"helpers.py": helpers, "train.py": train})
    assert _codes(scan_paths([str(tmp_path)], select=["JAX101"], jobs=1), "train.py") == []


def test_module_outside_the_scanned_roots_is_unknown(tmp_path):
    _write(tmp_path, {"lib/model.py": MODEL.format(decorator=""),
                      "app/train.py": _train("from model import update", "update")})
    # lib/ is not scanned, and `from model import` would not find it from app/ anyway
    assert _codes(scan_paths([str(tmp_path / "app")], select=["JAX101"], jobs=1), "train.py") == []
    # a single file: nothing else is scanned, so the call stays unknown (the scan as before)
    _write(tmp_path, {"app/model.py": MODEL.format(decorator="")})
    assert scan_paths([str(tmp_path / "app" / "train.py")], select=["JAX101"], jobs=1).findings == []


def test_project_resolution_through_the_init_chain(tmp_path):
    _write(tmp_path, {"top/__init__.py": "", "top/sub/__init__.py": "",
                      "top/sub/model.py": MODEL.format(decorator=""),
                      "top/sub/deep/__init__.py": "",
                      "top/sub/deep/train.py": ("from ..model import update\nfrom top.sub.model import update as u2\n"
                                                "for w in range(3):\n    update(w, 1, 2)\n    u2(w, 1, 2)\n")})
    paths = [str(p) for p in tmp_path.rglob("*.py")]
    project = Project({s.path: s for s in map(summarise_file, paths) if s is not None})
    view = project.view(str(tmp_path / "top/sub/deep/train.py"))
    assert set(view.functions) == {"update", "u2"}


def test_cache_rescans_importer_when_imported_summary_changes(tmp_path):
    src, cache = tmp_path / "src", str(tmp_path / "cache")
    _write(src, {"model.py": MODEL.format(decorator=""), "train.py": _train("from model import update", "update")})
    first = scan_paths([str(src)], select=["JAX101"], jobs=1, cache_dir=cache)
    assert _codes(first, "train.py") == [(6, "JAX101")]
    _write(src, {"model.py": MODEL.format(decorator="@jax.jit")})  # train.py's text is unchanged
    second = scan_paths([str(src)], select=["JAX101"], jobs=1, cache_dir=cache)
    assert _codes(second, "train.py") == []
    # the summary goes back to un-jitted
    _write(src, {"model.py": textwrap.dedent(MODEL.format(decorator="")) + "\n# a comment\n"})
    assert _codes(scan_paths([str(src)], select=["JAX101"], jobs=1, cache_dir=cache), "train.py") == [(6, "JAX101")]


def test_a_warm_scan_parses_nothing_unchanged(tmp_path, monkeypatch):
    # files without a summary of their own (a notebook, a file that does not parse) are known
    # from the cache too: none is parsed again while its text is unchanged
    import json

    import libcst

    src, cache = tmp_path / "src", str(tmp_path / "cache")
    _write(src, {"model.py": MODEL.format(decorator=""), "train.py": _train("from model import update", "update"),
                 "broken.py": "def f(:\n"})
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": ["import jax\n", "print(jax.tree_map(abs, [1]))\n"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (src / "demo.ipynb").write_text(json.dumps(notebook))
    cold = scan_paths([str(src)], jobs=1, cache_dir=cache)
    parsed: list[int] = []
    real = libcst.parse_module

    def counting(*args, **kwargs):
        parsed.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(libcst, "parse_module", counting)
    warm = scan_paths([str(src)], jobs=1, cache_dir=cache)
    assert parsed == []
    assert warm.findings == cold.findings and warm.errors == cold.errors
    assert {f.code for f in warm.findings} >= {"JAX101", "JAX601"}


def test_parallel_scan_gives_the_same_findings(tmp_path):
    files = {"app/__init__.py": "", "app/model.py": MODEL.format(decorator="")}
    for i in range(10):  # enough files for the worker pool
        files[f"app/train{i}.py"] = _train("from .model import update", "update")
    _write(tmp_path, files)
    serial = scan_paths([str(tmp_path)], select=["JAX101"], jobs=1)
    parallel = scan_paths([str(tmp_path)], select=["JAX101"], jobs=2)
    assert serial.findings == parallel.findings and len(serial.findings) == 10



def test_batches_inside_an_epoch_loop_count_as_steps(tmp_path):
    # the inner loop has no counter of its own; the epoch loop around it counts the steps
    train = """
        from model import update

        def fit(w, batches, epochs):
            for epoch in range(epochs):
                for x, y in batches:
                    w = update(w, x, y)
            return w
    """
    _write(tmp_path, {"model.py": MODEL.format(decorator=""), "train.py": train})
    assert _codes(scan_paths([str(tmp_path)], select=["JAX101"], jobs=1), "train.py") == [(7, "JAX101")]


HELPERS = """
    import jax.numpy as jnp

    def edge_flux(u, i):
        shifted = jnp.roll(u, i)
        return 0.5 * jnp.sin(shifted) + jnp.cos(u)

    def total_flux(u):
        out = jnp.zeros_like(u)
        for i in range(64):
            out = out + edge_flux(u, i)
        return out

    if __name__ == "__main__":
        print(total_flux(jnp.linspace(0.0, 1.0, 64)))
"""

SIMULATE = """
    import jax
    import jax.numpy as jnp
    from helpers import total_flux

    @jax.jit
    def advance(u):
        return u + 0.01 * total_flux(u)

    def run(u, forcing, n):
        for i in range(n):
            u = advance(u) + forcing[i]
        return u
"""


def test_a_helper_traced_from_another_modules_jitted_code_is_traced(tmp_path):
    # `helpers.py` alone reads as eager code (its demo runs a loop calling an un-jitted array
    # helper and carrying state); `simulate.py` calls it inside `jax.jit`, where the loop unrolls
    # at trace time
    _write(tmp_path, {"helpers.py": HELPERS})
    alone = scan_paths([str(tmp_path)], jobs=1, extend_select=["PREVIEW"])
    assert {code for _, code in _codes(alone, "helpers.py")} == {"JAX101", "JAX201"}
    _write(tmp_path, {"simulate.py": SIMULATE})
    together = scan_paths([str(tmp_path)], jobs=1, extend_select=["PREVIEW"])
    assert _codes(together, "helpers.py") == []
    assert _codes(together, "simulate.py") == [(11, "JAX201")]  # its own step loop still counts
    summaries = [summarise_file(str(tmp_path / name)) for name in ("helpers.py", "simulate.py")]
    project = Project({s.path: s for s in summaries})
    assert project.view(str(tmp_path / "helpers.py")).traced == frozenset({"total_flux"})
    assert project.view(str(tmp_path / "simulate.py")).traced == frozenset()


# A sampler class whose loop calls an array-heavy method: read alone, an eager loop.
SAMPLER = """
    import jax
    import jax.numpy as jnp


    class Sampler:
        def denoise(self, x, t, key):
            noise = jax.random.normal(key, x.shape)
            scale = jnp.exp(-0.5 * t) * jnp.tanh(x)
            return x - 0.1 * scale + jnp.sqrt(0.01) * noise * jnp.mean(x)

        def run(self, shape, key):
            x = jax.random.normal(key, shape)
            for i in range(1000):
                key, sub = jax.random.split(key)
                x = self.denoise(x, jnp.float32(i), sub)
            return x
"""
FACTORY = """
    from .sampler import Sampler


    def make_sampler():
        return Sampler()
"""


def _runner(wrapped: bool) -> str:
    body = "sampler.run((4, 8), k)"
    call = f"jax.jit(lambda k: {body})" if wrapped else f"lambda k: {body}"
    return f"""
    import jax
    from gen.factory import make_sampler


    def main():
        sampler = make_sampler()
        draw = {call}
        return draw(jax.random.key(0))
    """


@pytest.mark.parametrize("wrapped", [True, False])
def test_a_method_of_an_object_a_jitted_lambda_in_another_module_calls_is_traced(tmp_path, wrapped):
    # `scripts/` has no `__init__.py`: run from the repository root, it imports `gen` from there
    _write(tmp_path, {"gen/__init__.py": "", "gen/sampler.py": SAMPLER, "gen/factory.py": FACTORY,
                      "scripts/sample.py": _runner(wrapped)})
    result = scan_paths([str(tmp_path)], select=["JAX101"], jobs=1)
    assert _codes(result, "sampler.py") == ([] if wrapped else [(7, "JAX101")])
    names = ("gen/__init__.py", "gen/sampler.py", "gen/factory.py", "scripts/sample.py")
    summaries = [summarise_file(str(tmp_path / name)) for name in names]
    project = Project({s.path: s for s in summaries})
    # only the method called: `denoise` is traced through it in the sampler's own model
    expected = frozenset({"Sampler.run"}) if wrapped else frozenset()
    assert project.view(str(tmp_path / "gen/sampler.py")).traced == expected


STENCIL = """
    import jax
    import jax.numpy as jnp

    @jax.jit
    def relax(u, rate):
        padded = jnp.pad(u, 1)
        return u + rate * (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:] - 4 * u)

    @jax.jit
    def relax_many(u, rate):
        return jax.lax.fori_loop(0, 3000, lambda _, v: relax(v, rate), u)
"""

RELAX_LOOP = """import jax
from stencil import relax, relax_many

u = jax.random.uniform(jax.random.key(0), (64, 64))
for i in range(3000):
    u = relax(u, 0.2)
u = relax_many(u, 0.2)
"""


def test_a_tiny_jitted_step_imported_into_a_script_or_a_notebook_is_reported_like_a_local_one(tmp_path):
    import json

    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": text}
             for text in RELAX_LOOP.split("\n\n")]
    _write(tmp_path, {"stencil.py": STENCIL, "run.py": RELAX_LOOP})
    (tmp_path / "run.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                    "nbformat_minor": 5}))
    result = scan_paths([str(tmp_path)], select=["JAX201"], jobs=1)
    assert _codes(result, "run.py") == [(5, "JAX201")]
    assert [(f.cell, f.line) for f in result.findings if f.path.endswith("run.ipynb")] == [(2, 2)]
    assert all("through the jitted `relax` (" in f.message for f in result.findings)
    summary = summarise_file(str(tmp_path / "stencil.py"))
    assert summary is not None and summary.functions["relax"].small_step_ops is not None
    assert summary.functions["relax_many"].small_step_ops is None  # a compiled loop of its own
