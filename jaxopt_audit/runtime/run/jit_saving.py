"""What jitting an un-jitted function would save, measured after the program has finished.

For a function `run` saw running JAX ops one by one (JAX101), the counterfactual is made
directly: `jax.jit` of the function, with its array arguments as traced inputs of the recorded
shapes and dtypes, its Python numbers traced as a plain `jax.jit` takes them (static, when
tracing them fails: a step count, a size) and its other arguments (strings, objects) fixed as
a static argument would be, compiled once per distinct argument signature and timed on the most common
one (one warm-up call that compiles, then `REPEATS` calls, each waited for, the median), and
so is the function as the program ran it, op by op, its calls alternating with the jitted ones
(a change in the machine's load falls on both): the saving is the difference per call over
the calls seen, plus the eager ops' compilation time in the run, less the jitted function's
compilations. (The run's own eager cost_s times only the dispatch of each op, not the device
work it queues, so it is not the baseline.) The inputs are filled with ones: the time of a
compiled program does not depend on the values, except through data-dependent control flow,
which a jitted function cannot have anyway.

The measurement runs with the instruments off and the program's output silenced; whatever it
raises (a tracer converted on the host, `.item()`, a return value that is not an array) is the
answer "cannot be jitted as written", with the error's first line.
"""

from __future__ import annotations

import contextlib
import gc
import io
import math
import statistics
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...units import seconds
from .arguments import ArgumentSample, ArraySpec, is_number, traced_numbers_key, with_leaves

REPEATS = 5
BUDGET_S = 2.0  # timed calls stop after this long (a slow compiled call needs fewer samples)


@dataclass(frozen=True)
class JitSaving:
    """The measured counterfactual of one function: saving_s None when it could not be made."""

    saving_s: float | None
    method: str
    # what was timed, where it was: seconds per eager call and per jitted call (compilation apart)
    eager_call_s: float | None = None
    jitted_call_s: float | None = None


def measure(function: Callable[..., Any] | None, samples: dict[Any, ArgumentSample], calls: int,
            eager_compile_s: float) -> JitSaving:
    """Time `function` jitted and as it ran (eagerly) on the most common recorded arguments.

    The saving: `calls` times the difference per call, plus the eager ops' compilations in the
    run (`eager_compile_s`), less the jitted function's compilations."""
    if function is None:
        return JitSaving(None, "no estimate: the function object could not be found after the run to jit it")
    if not samples:
        return JitSaving(None, "no estimate: its arguments could not be recorded as a pytree to jit it on")
    sample = max(samples.values(), key=lambda s: s.calls)
    sink = io.StringIO()
    errors = []
    timed = None
    # Python numbers traced, as a plain jax.jit takes them; else static (a step count, a size)
    for traced_numbers in (True, False):
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                timed = _time_jitted(function, sample, traced_numbers)
            break
        except (Exception, SystemExit) as exc:  # the function as written does not trace: say why
            errors.append(exc)
            if not any(is_number(leaf) for leaf in sample.leaves):
                break
    if timed is None:
        error = errors[-1]
        text = (str(error).strip().splitlines() or [""])[0][:160]
        return JitSaving(None, f"no estimate: jax.jit of it as written fails on the recorded arguments "
                               f"({type(error).__name__}: {text}); move the host work out of it, then jit it")
    compile_s, per_call_s, eager_s, printed_once = timed
    if printed_once:
        return JitSaving(None, "no estimate: jitted as written, its output (print) would happen only while "
                               "tracing; move the printing out of it, then jit it")
    signatures = len({traced_numbers_key(key) for key in samples}) if traced_numbers else len(samples)
    # the eager calls' own compilations (cost_s less their op time) go, the jitted ones come
    saving = calls * (eager_s - per_call_s) + eager_compile_s - signatures * compile_s
    compiled = (f"{signatures} compilations x {seconds(compile_s)}" if signatures > 1
                else f"one compilation ({seconds(compile_s)})")
    return JitSaving(round(max(0.0, saving), 6),
                     f"measured: the function jitted on the recorded argument shapes, {calls} calls x "
                     f"{seconds(per_call_s)} each and {compiled}, against {calls} eager calls x "
                     f"{seconds(eager_s)} each (timed alike) and the {seconds(eager_compile_s)} its eager "
                     "ops compiled in the run", eager_s, per_call_s)


def _time_jitted(function: Callable[..., Any], sample: ArgumentSample,
                 traced_numbers: bool) -> tuple[float, float, float, bool]:
    """(compile seconds, median jitted call, median eager call, printed only while tracing)."""
    positions = [i for i, leaf in enumerate(sample.leaves)
                 if isinstance(leaf, ArraySpec) or (traced_numbers and is_number(leaf))]
    call = with_leaves(function, sample.treedef, sample.leaves, positions)
    inputs = [filled(sample.leaves[i]) if isinstance(sample.leaves[i], ArraySpec) else sample.leaves[i]
              for i in positions]
    jitted = jax.jit(call)
    sink = _current_sink()
    start = time.perf_counter()
    jax.block_until_ready(jitted(*inputs))
    compile_s = time.perf_counter() - start
    printed = sink.tell() if sink is not None else 0
    jax.block_until_ready(jitted(*inputs))
    printed_once = printed > 0 and sink is not None and sink.tell() == printed
    jax.block_until_ready(call(*inputs))  # eager ops compiled in the run; this warms the rest
    per_call, eager = _median_calls(jitted, call, inputs)
    return max(0.0, compile_s - per_call), per_call, eager, printed_once


def _median_calls(jitted: Callable[..., Any], eager: Callable[..., Any], inputs: list[Any]) -> tuple[float, float]:
    """Median seconds of `REPEATS` calls of each, each waited for (fewer past `BUDGET_S`), the two
    alternating so that a change in the machine's load falls on both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    deadline = time.perf_counter() + BUDGET_S
    for _ in range(REPEATS):
        for function, kept in zip((jitted, eager), times, strict=True):
            start = time.perf_counter()
            jax.block_until_ready(function(*inputs))
            kept.append(time.perf_counter() - start)
        if time.perf_counter() > deadline:
            break
    return statistics.median(times[0]), statistics.median(times[1])


def _current_sink() -> io.StringIO | None:
    import sys

    return sys.stdout if isinstance(sys.stdout, io.StringIO) else None


def filled(spec: ArraySpec) -> Any:
    """An input of the spec's shape and dtype: ones (keys: split from one key)."""
    if jax.dtypes.issubdtype(spec.dtype, jax.dtypes.prng_key):
        count = math.prod(spec.shape)
        return jax.random.split(jax.random.key(0), max(count, 1)).reshape(spec.shape)
    if spec.host:
        return np.ones(spec.shape, spec.dtype)
    return jnp.ones(spec.shape, spec.dtype)


def function_of(code: types.CodeType) -> Callable[..., Any] | None:
    """The (one, or first) live function object whose code is `code`."""
    for referrer in gc.get_referrers(code):
        if isinstance(referrer, types.FunctionType) and referrer.__code__ is code:
            return referrer
    return None
