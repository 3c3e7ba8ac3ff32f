"""Compile and transfer monitors: exact counts on small functions whose behaviour we know."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxopt_audit.runtime.monitors import CompileMonitor, TransferMonitor  # noqa: E402

pytestmark = pytest.mark.slow


def test_compile_monitor_sees_first_call_only() -> None:
    double = jax.jit(lambda x: x * 2.0)
    x = jnp.arange(4.0)
    with CompileMonitor() as first:
        double(x).block_until_ready()
    with CompileMonitor() as again:
        double(x).block_until_ready()
    assert first.counts().compiles == 1
    assert first.counts().traces == 1
    assert first.counts().compile_s > 0
    assert again.counts().compiles == 0


def test_compile_monitor_counts_a_recompile_per_new_shape() -> None:
    square = jax.jit(lambda x: x * x)
    inputs = [jnp.ones(n) for n in (2, 3, 4)]  # eager jnp.ones compiles too: outside the window
    with CompileMonitor() as monitor:
        for x in inputs:
            square(x).block_until_ready()
    counts = monitor.counts()
    assert counts.compiles == 3
    assert len(counts.compiled_functions()) == 3
    assert square._cache_size() == 3


def test_compile_monitor_snapshots_subtract() -> None:
    x = jnp.ones(5)
    with CompileMonitor() as monitor:
        jax.jit(lambda v: v + 1.0)(x)
        before = monitor.counts()
        jax.jit(lambda v: v - 1.0)(x)
        delta = monitor.counts() - before
    assert delta.compiles == 1
    assert delta.events[-1].kind == "compile"


def _k_transfers(k: int, step) -> list[float]:
    out = []
    for i in range(k):
        device_value = jnp.asarray(np.full(3, i, np.float32))  # one host-to-device
        out.append(float(step(device_value)))  # one device-to-host
    return out


@pytest.mark.parametrize("k", [1, 4])
def test_transfer_counts_are_exact(k: int) -> None:
    step = jax.jit(lambda v: jnp.sum(v * 2.0))
    _k_transfers(2, step)  # warm: compile outside the window
    with TransferMonitor() as monitor:
        _k_transfers(k, step)
    counts = monitor.counts()
    assert counts.h2d == k
    assert counts.d2h == k
    assert counts.total == 2 * k


def test_numpy_arguments_to_jit_are_one_transfer_per_leaf() -> None:
    add = jax.jit(lambda t: t[0] + t[1])
    pair = (np.ones(3, np.float32), np.ones(3, np.float32))
    add(pair).block_until_ready()
    with TransferMonitor() as monitor:
        add(pair).block_until_ready()
    assert monitor.counts().h2d == 2
    assert monitor.counts().d2h == 0


def test_device_arguments_do_not_transfer() -> None:
    scale = jax.jit(lambda v: v * 3.0)
    x = jnp.ones(8)
    scale(x).block_until_ready()
    with TransferMonitor() as monitor:
        for _ in range(5):
            x = scale(x)
        x.block_until_ready()
    assert monitor.counts().h2d == 0
    assert monitor.counts().d2h == 0


def test_host_reads_through_each_entry_point_and_once_per_array() -> None:
    make = jax.jit(lambda v: v + 1.0)
    x = jnp.arange(3.0)
    make(x).block_until_ready()
    with TransferMonitor(call_sites=True) as monitor:
        a = make(x)
        np.asarray(a)
        np.asarray(a)  # same array again: already on the host
        np.array(make(x))
        jax.device_get({"b": make(x)})
        make(x).tolist()
        str(make(x))
    counts = monitor.counts()
    assert counts.d2h == 5
    sites = [site for site in counts.sites if site.direction == "d2h"]
    assert all(site.path == __file__ for site in sites)


def test_hooks_are_removed_on_exit() -> None:
    original = np.asarray
    with TransferMonitor():
        assert np.asarray is not original
    assert np.asarray is original
    with TransferMonitor() as monitor:
        pass
    y = jnp.ones(2) + 1.0
    float(y[0])
    assert monitor.counts().d2h == 0


def test_nested_monitors_each_see_their_window() -> None:
    step = jax.jit(lambda v: jnp.sum(v))
    _k_transfers(1, step)
    with TransferMonitor() as outer:
        _k_transfers(2, step)
        with TransferMonitor() as inner:
            _k_transfers(3, step)
    assert inner.counts().h2d == 3
    assert outer.counts().h2d == 5
    assert outer.counts().d2h == 5


def test_other_stderr_output_is_forwarded(capfd: pytest.CaptureFixture[str]) -> None:
    with TransferMonitor() as monitor:
        os.write(2, b"a line from C code\n")
        print("a line from Python", file=sys.stderr, flush=True)
        jnp.asarray(np.ones(2))
    err = capfd.readouterr().err
    assert "a line from C code" in err
    assert "a line from Python" in err
    assert "host-to-device transfer" not in err
    assert monitor.counts().h2d == 1


def test_silenced_jaxlib_log_reports_unknown_not_zero() -> None:
    code = ("import numpy as np, jax.numpy as jnp\n"
            "from jaxopt_audit.runtime.monitors import TransferMonitor\n"
            "with TransferMonitor() as m:\n"
            "    jnp.asarray(np.ones(2))\n"
            "print(m.counts().h2d)\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"


def test_the_capture_file_rotates_without_losing_counts(monkeypatch: pytest.MonkeyPatch,
                                                        capfd: pytest.CaptureFixture[str]) -> None:
    from jaxopt_audit.runtime import monitors

    monkeypatch.setattr(monitors._StderrLog, "ROTATE_BYTES", 512)  # a few guard lines per file
    host = [np.full(2, i, np.float32) for i in range(40)]
    with TransferMonitor() as monitor:
        for i, batch in enumerate(host):
            jnp.asarray(batch)
            if i % 5 == 0:
                os.write(2, f"note {i}\n".encode())
                monitor.counts()  # polls, and rotates once the file is past 512 bytes
    assert monitor.counts().h2d == len(host)
    err = capfd.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("note")] == [f"note {i}" for i in range(0, 40, 5)]


def test_a_progress_bar_without_newline_is_forwarded_at_once(capfd: pytest.CaptureFixture[str]) -> None:
    with TransferMonitor() as monitor:
        os.write(2, b"\r 50%|#####     |")
        monitor.counts()
        assert "50%" in capfd.readouterr().err  # not held back until a newline
        jnp.asarray(np.ones(2))
    assert monitor.counts().h2d == 1


def test_read_once_counts_live_arrays_once_and_drops_freed_ones_in_bulk():
    from jaxopt_audit.runtime.monitors import ReadOnce

    class Box:  # weak-referenceable, like jax.Array
        pass

    seen = ReadOnce()
    seen._prune_at = 4
    kept = [Box() for _ in range(3)]
    assert all(seen.first(box) for box in kept)
    assert not any(seen.first(box) for box in kept)
    for _ in range(20):  # read once each, then freed
        assert seen.first(Box())
    assert len(seen._refs) <= 3 + 5  # the dead entries were pruned
    assert not any(seen.first(box) for box in kept)  # pruning kept the live ones
