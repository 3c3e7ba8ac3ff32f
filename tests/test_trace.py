"""Trace capture: the summary finds the op, the steps and the copies the test put in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxopt_audit.runtime.trace import TraceCapture, find_xplane, step_marker, summarize_trace  # noqa: E402

pytestmark = pytest.mark.slow

STEPS = 3


@jax.jit
def _sort_heavy(x: Any) -> Any:
    # a sort dominates: the summary's top op must be it
    return jnp.sort(x, axis=-1)[:, :8].sum()


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TraceCapture]:
    log_dir = tmp_path_factory.mktemp("trace")
    x = jnp.asarray(np.random.default_rng(0).random((256, 512), dtype=np.float32))
    _sort_heavy(x).block_until_ready()
    with TraceCapture(log_dir) as trace:
        for step in range(STEPS):
            with step_marker(step):
                fresh = jnp.asarray(np.full((256, 512), step, np.float32))  # one host-to-device copy
                float(_sort_heavy(x + fresh))  # one device-to-host read
    return log_dir, trace


def test_trace_is_an_xplane_in_the_tensorboard_layout(captured: tuple[Path, TraceCapture]) -> None:
    log_dir, trace = captured
    assert trace.path is not None
    assert trace.path.name.endswith(".xplane.pb")
    assert trace.path.relative_to(log_dir).parts[:2] == ("plugins", "profile")
    assert find_xplane(log_dir) == trace.path
    assert "--logdir" in trace.where()


def test_summary_finds_the_sort_op(captured: tuple[Path, TraceCapture]) -> None:
    summary = captured[1].summary()
    assert summary.top_ops, summary.render()
    top = summary.top_ops[0]
    assert top.module == "jit__sort_heavy", summary.render()
    if jax.default_backend() == "cpu":  # XLA:GPU fuses the sort into an op named "fusion"
        assert top.name.startswith("sort"), summary.render()
    assert top.total_s > 0


def test_summary_has_the_steps_and_copies(captured: tuple[Path, TraceCapture]) -> None:
    summary = captured[1].summary()
    assert [s.step for s in summary.steps] == list(range(STEPS))
    assert all(s.seconds > 0 for s in summary.steps)
    # CPU may alias an aligned NumPy buffer instead of copying it, so only the reads are certain
    d2h_reads = [c for c in summary.copies if c.name == "np.asarray(jax.Array)"]
    assert d2h_reads and d2h_reads[0].count == STEPS


def test_summary_reads_a_directory_and_renders(captured: tuple[Path, TraceCapture]) -> None:
    summary = summarize_trace(captured[0])
    text = summary.render()
    assert "top XLA ops" in text and "jit__sort_heavy" in text
    assert summary.to_json()["top_ops"][0]["module"] == "jit__sort_heavy"


def test_xprof_tools_open_the_trace(captured: tuple[Path, TraceCapture]) -> None:
    raw_to_tool_data = pytest.importorskip("xprof.convert.raw_to_tool_data")
    path = [str(captured[1].path)]
    assert "trace_viewer@" in raw_to_tool_data.xspace_to_tool_names(path)
    data, _ = raw_to_tool_data.xspace_to_tool_data(path, "trace_viewer@", {})
    assert data and b"traceEvents" in data and b"sort" in data


def test_missing_trace_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="--trace"):
        find_xplane(tmp_path)
