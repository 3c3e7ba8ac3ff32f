"""Shared test helpers: scanning source text with the bundled rules, the CLI with its captured
output, the `# <- CODE` marks of fixture files, and the reference pipelines at small size."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from jaxopt_audit.static.framework.rule import Example
from jaxopt_audit.static.pipeline.engine import scan_source
from jaxopt_audit.static.pipeline.registry import load_rules


@pytest.fixture(autouse=True)
def _cache_outside_the_repository(tmp_path_factory, monkeypatch):
    """CLI scans keep their result cache in a temporary directory, never in the repository."""
    monkeypatch.setenv("JAXOPT_AUDIT_CACHE_DIR", str(tmp_path_factory.mktemp("scan-cache")))


@pytest.fixture(scope="session")
def all_rules():
    return load_rules()


def scan_text(source: str, rules, path: str = "example.py"):
    """Findings for a snippet: (line, code) pairs, sorted."""
    result = scan_source(textwrap.dedent(source).strip("\n") + "\n", path, [r() for r in rules])
    assert result.error is None, result.error
    return result.findings


def rules_with_code(code: str) -> list:
    """The bundled rule class with `code`, as the one-element list `scan_text` takes."""
    return [r for r in load_rules() if r.CODE == code]


def scanners(rules) -> tuple[Callable[[str], list], Callable[[str], list[int]]]:
    """`findings(source)` and `lines(source)` for snippets scanned with `rules` only."""
    def findings(source: str) -> list:
        return scan_text(source, rules)

    def lines(source: str) -> list[int]:
        return [f.line for f in findings(source)]

    return findings, lines


def marked(path: Path) -> list[tuple[int, str]]:
    """(line, code) pairs a file marks with `# <- CODE`, read as rule examples read theirs."""
    text = path.read_text()
    # Example.source strips leading blank lines, which would shift every line number
    assert not text.startswith(("\n", " ", "\t")), f"{path}: starts with blank or indented text"
    return Example(text).expected()


def run_cli(args, capsys) -> tuple[int, str, str]:
    """`jaxopt-audit ARGS` in process: exit code, stdout, stderr."""
    from jaxopt_audit.cli import main

    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


# A jitted step called in a loop whose `float(...)` at line 8 synchronises every iteration.
SYNC_IN_LOOP = textwrap.dedent("""\
    import jax

    step = jax.jit(lambda w: w * 0.9)

    def train(w):
        for i in range(100):
            w = step(w)
            print(float(w.sum()))
        return w
""")


@pytest.fixture(scope="module")
def pipeline(request):
    """The reference pipeline the test module names in its `PIPELINE` constant."""
    from jaxopt_audit.runtime.bench.pipeline import load_pipeline

    return load_pipeline(request.module.PIPELINE)


@pytest.fixture(scope="module")
def workload(pipeline):
    return pipeline.make_workload("small")


@pytest.fixture(scope="module")
def outputs(pipeline, workload) -> dict[str, dict]:
    """Every stage's outputs on the small workload, computed once for the whole module."""
    import jax

    return {stage.module: jax.block_until_ready(pipeline.stage_module(stage).run(workload))
            for stage in pipeline.stages}


BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"  # jax.monitoring: one per compile


@contextmanager
def backend_compiles() -> Iterator[list[str]]:
    """One entry per XLA backend compile while the block runs (jax.monitoring's compile event)."""
    import jax.monitoring

    compiles: list[str] = []

    def listener(event: str, duration_secs: float, **kwargs: str | int) -> None:
        if event == BACKEND_COMPILE_EVENT:
            compiles.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield compiles
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
