"""What one `lax.scan` or one `vmap` would save over a Python loop of jitted calls, measured.

For a jitted function called again and again from one line (JAX201, JAX202), the
counterfactual is timed after the program has finished, on device arrays of the recorded
shapes and dtypes filled with ones, never on the program's own arrays (and never NumPy ones:
copying those is JAX302's saving); the function is the program's own jitted function (its
compiled code is what the loop ran):

- a carried loop (JAX201): when the function's output, or an element of its output tuple, has
  the structure, shapes and dtypes of one of its positional arguments (the state it carries),
  `K` calls in a Python loop that feeds each output back as that argument are timed against one
  jitted `lax.scan` of length `K` doing the same, its other arguments passed in unchanged; when
  no argument is shaped like the output (the state passes through other code: a policy whose
  input another jitted step makes), `K` calls against one `lax.scan` over `K` stacked inputs of
  the arguments that changed between calls (this function's part of the loop only);
- independent calls (JAX202): the argument leaves that changed from call to call (a learning
  rate, a batch) are stacked and one jitted `vmap` over them is timed against `K` calls, the
  unchanged arguments shared; the batch is all the calls, as in the fix, where they took at
  most `VMAP_BUDGET_S` and fit `MAX_BATCH_BYTES`, else `K` (a vmap's cost per value falls
  with its batch, so a smaller batch understates the saving).

`K` is the number of calls, at most `MAX_K` and at most what fits `BUDGET_S` at the call's
recorded time. The saving is the calls seen times the difference per call, less what the
compiled loop costs to compile beyond the function's own compilation (both timed now, under the
same load: the program's own compile time was measured in other conditions). Where no
version applies (a static argument changes, nothing changes, the calls differ in structure),
the answer is "no estimate" with the reason. Whatever the measurement raises is such an answer too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...units import seconds
from .arguments import ArraySpec, CallSample, with_leaves
from .instrument import FunctionRecord
from .jit_saving import filled

MAX_K = 256  # calls timed in each version
MIN_K = 8
BUDGET_S = 0.5  # ... fewer when K calls at the recorded time would take longer than this
REPEATS = 3  # timed runs of each version, alternating (the median)
VMAP_BUDGET_S = 2.0  # the vmap is timed over all the calls when they took at most this long ...
MAX_BATCH_BYTES = 1 << 26  # ... and their stacked changing values fit in this many bytes


@dataclass(frozen=True)
class LoopSaving:
    """saving_s None when no counterfactual could be made; method says what was measured, or why not."""

    saving_s: float | None
    method: str


def measure(record: FunctionRecord, carried: bool) -> LoopSaving:
    """The measured saving of scanning (`carried`) or vmapping the loop of `record`'s calls."""
    sample, varying, function = record.loop_sample, record.loop_varying, record.loop_callable
    if sample is None or varying is None or function is None:
        return LoopSaving(None, "no estimate: the calls' arguments were not of one structure, so there is no "
                                "one loop body to scan or vmap")
    k = _calls_to_time(record)
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            if carried:
                return _scan(function, sample, varying, record, k)
            return _vmap(function, sample, varying, record, k)
    except (Exception, SystemExit) as exc:  # the measurement is an extra: say why there is none
        text = (str(exc).strip().splitlines() or [""])[0][:160]
        return LoopSaving(None, f"no estimate: timing the {'scanned' if carried else 'vmapped'} loop failed "
                                f"({type(exc).__name__}: {text})")


def _calls_to_time(record: FunctionRecord) -> int:
    per_call = statistics.median(record.exec_samples) if record.exec_samples else 0.0
    fits = int(BUDGET_S / per_call) if per_call > 0 else MAX_K
    return max(1, min(record.calls, MAX_K, max(MIN_K, fits)))


def _inputs(sample: CallSample) -> list[Any]:
    """The sample's leaves with arrays filled in (ones of the recorded shape and dtype), all on
    the device."""
    return [filled(dataclasses.replace(leaf, host=False)) if isinstance(leaf, ArraySpec) else leaf
            for leaf in sample.leaves]


def _scan(function: Callable[..., Any], sample: CallSample, varying: list[bool], record: FunctionRecord,
          k: int) -> LoopSaving:
    leaves = _inputs(sample)
    args, kwargs = jax.tree_util.tree_unflatten(sample.treedef, leaves)
    out = jax.eval_shape(function, *args, **kwargs)
    positions = _leaf_positions(sample)
    static = {p for p, flag in zip(positions, sample.static, strict=True) if flag and isinstance(p, int)}
    changing = {p for p, flag in zip(positions, varying, strict=True) if flag and isinstance(p, int)}
    pairs = _carry_pairs(out, args, static, changing)
    if not pairs:
        return _scan_given_inputs(function, args, kwargs, static, changing, record, k)
    carried = [position for _, position in pairs]
    # the other non-static arguments enter the compiled loop as its inputs, as in the fixed program
    passed = [i for i in range(len(args)) if i not in carried and i not in static]

    def step(carry: tuple[Any, ...], others: tuple[Any, ...]) -> tuple[Any, ...]:
        positional = list(args)
        for position, value in zip(carried, carry, strict=True):
            positional[position] = value
        for position, value in zip(passed, others, strict=True):
            positional[position] = value
        result = function(*positional, **kwargs)
        return tuple(result if part is None else result[part] for part, _ in pairs)

    def scanned(carry: tuple[Any, ...], others: tuple[Any, ...]) -> tuple[Any, ...]:
        return jax.lax.scan(lambda c, _: (step(c, others), None), carry, None, length=k)[0]

    carry0 = tuple(args[p] for p in carried)
    others0 = tuple(args[p] for p in passed)
    compiled = jax.jit(scanned)

    def direct() -> Any:
        carry = carry0
        for _ in range(k):
            carry = step(carry, others0)
        return carry

    loop_s, scan_s, extra = _timed(direct, lambda: compiled(carry0, others0),
                                   lambda: _own_compile_s(step, carry0, others0))
    saving = record.calls * (loop_s - scan_s) / k - extra
    names = ", ".join(_argument_name(record, p) for p in carried)
    return LoopSaving(round(max(0.0, saving), 6), (
        f"measured: {k} calls in a Python loop carrying {names} took {seconds(loop_s)}, one jitted lax.scan "
        f"of the same {k} steps {seconds(scan_s)} (inputs of the recorded shapes), scaled to the {record.calls} "
        f"calls seen, less {seconds(extra)} of extra compilation"))


def _scan_given_inputs(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                       static: set[int], changing: set[int], record: FunctionRecord, k: int) -> LoopSaving:
    """The state passes through other code (another jitted call makes this one's input): one
    jitted lax.scan over `k` stacked inputs of the changing arguments, each step its own, against
    `k` calls. Stacked, not carried, so that no step's work is the same as another's."""
    scanned_positions = sorted(p for p in changing if p not in static)
    if not scanned_positions:
        return LoopSaving(None, "no estimate: its output is not shaped like any of its arguments and none of "
                                "its array arguments changed between calls; scan the whole loop body to measure "
                                "the fix")
    one = tuple(args[p] for p in scanned_positions)
    size = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree_util.tree_leaves(one)) * k
    if size > MAX_BATCH_BYTES:
        return LoopSaving(None, f"no estimate: its output is not shaped like any of its arguments, and {k} "
                                "stacked inputs of the ones that change would not fit the measurement's memory")
    passed = [i for i in range(len(args)) if i not in static and i not in scanned_positions]

    def step(values: tuple[Any, ...], others: tuple[Any, ...]) -> Any:
        positional = list(args)
        for position, value in zip(scanned_positions, values, strict=True):
            positional[position] = value
        for position, value in zip(passed, others, strict=True):
            positional[position] = value
        return function(*positional, **kwargs)

    def scanned(stacked: tuple[Any, ...], others: tuple[Any, ...]) -> Any:
        return jax.lax.scan(lambda c, values: (c, step(values, others)), None, stacked)[1]

    stacked = jax.tree_util.tree_map(lambda leaf: jnp.broadcast_to(leaf, (k, *leaf.shape)) + jnp.zeros((), leaf.dtype),
                                     one)
    others0 = tuple(args[p] for p in passed)
    compiled = jax.jit(scanned)

    def direct() -> Any:
        return [step(one, others0) for _ in range(k)]

    loop_s, scan_s, extra = _timed(direct, lambda: compiled(stacked, others0),
                                   lambda: _own_compile_s(step, one, others0))
    saving = record.calls * (loop_s - scan_s) / k - extra
    names = ", ".join(_argument_name(record, p) for p in scanned_positions)
    return LoopSaving(round(max(0.0, saving), 6), (
        f"measured: {k} calls took {seconds(loop_s)}, one jitted lax.scan of {k} steps over stacked inputs of "
        f"{names} {seconds(scan_s)} (inputs of the recorded shapes; its output is not shaped like an argument, "
        f"so the state passes through other code and each step is given its input), scaled to the "
        f"{record.calls} calls seen, less {seconds(extra)} of extra compilation; scanning the whole loop body "
        "saves the other calls' dispatch too"))


def _vmap(function: Callable[..., Any], sample: CallSample, varying: list[bool], record: FunctionRecord,
          k: int) -> LoopSaving:
    batched = [i for i, changed in enumerate(varying) if changed]
    if not batched:
        return LoopSaving(None, "no estimate: the calls' arguments did not change between calls, so there is "
                                "nothing to vmap over")
    if any(sample.static[i] or not _traceable(sample.leaves[i]) for i in batched):
        return LoopSaving(None, "no estimate: a static or non-array argument changes between calls, which "
                                "vmap cannot batch")
    leaves = _inputs(sample)
    call = with_leaves(function, sample.treedef, leaves, batched)
    one = [jnp.asarray(leaves[i]) for i in batched]
    # the fix's own batch (all the calls) where it fits: a vmap's cost per value falls with its size
    per_call = statistics.median(record.exec_samples) if record.exec_samples else math.inf
    size = sum(value.size * value.dtype.itemsize for value in one) * record.calls
    batch = record.calls if record.calls * per_call <= VMAP_BUDGET_S and size <= MAX_BATCH_BYTES else k
    stacked = [jnp.broadcast_to(value, (batch, *value.shape)) + jnp.zeros((), value.dtype) for value in one]
    compiled = jax.jit(jax.vmap(call))
    passed = [leaves[i] for i in batched]  # as the program passed them: a NumPy scalar is copied per call

    def direct() -> Any:
        return [call(*passed) for _ in range(k)]

    loop_s, vmap_s, extra = _timed(direct, lambda: compiled(*stacked), lambda: _own_compile_s(call, *passed))
    saving = record.calls * (loop_s / k - vmap_s / batch) - extra
    what = ", ".join(dict.fromkeys(_leaf_name(sample, record, i) for i in batched))
    return LoopSaving(round(max(0.0, saving), 6), (
        f"measured: {k} calls one by one took {seconds(loop_s)}, one jitted vmap over {batch} stacked values of "
        f"{what} {seconds(vmap_s)} (inputs of the recorded shapes), scaled to the {record.calls} calls seen, "
        f"less {seconds(extra)} of extra compilation"))


def _carry_pairs(out: Any, args: tuple[Any, ...], static: set[int],
                 changing: set[int]) -> list[tuple[int | None, int]]:
    """(output element, or None for the whole output; positional argument) for each carried
    argument: one the output (or an element of its tuple) matches in structure, shapes and
    dtypes, those that changed between calls (the state) before those that did not."""
    specs = {i: _spec_tree(arg) for i, arg in enumerate(args) if i not in static}
    order = sorted(specs, key=lambda i: (i not in changing, i))
    whole = _spec_tree(out)
    if len(args) > 1 and not static and whole is not None and whole == _spec_tree(tuple(args)):
        return [(i, i) for i in range(len(args))]  # f(a, b) -> (a, b)
    for position in order:
        if whole is not None and specs[position] == whole:
            return [(None, position)]
    if not isinstance(out, (tuple, list)):
        return []
    pairs: list[tuple[int | None, int]] = []
    for part, element in enumerate(out):
        spec = _spec_tree(element)
        for position in order:
            if spec is not None and specs[position] == spec and position not in {p for _, p in pairs}:
                pairs.append((part, position))
                break
    return pairs


def _leaf_positions(sample: CallSample) -> list[int | str]:
    """For each leaf of the sample, the positional index (or keyword) of the argument it is in."""
    args, kwargs = jax.tree_util.tree_unflatten(sample.treedef, list(range(len(sample.leaves))))
    owner: list[int | str] = [0] * len(sample.leaves)
    for position, arg in enumerate(args):
        for index in jax.tree_util.tree_leaves(arg):
            owner[index] = position
    for name, value in kwargs.items():
        for index in jax.tree_util.tree_leaves(value):
            owner[index] = name
    return owner


def _spec_tree(tree: Any) -> Any:
    """(structure, shapes and dtypes) of a pytree of arrays; None when a leaf is not an array."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    if not leaves or not all(hasattr(leaf, "shape") and hasattr(leaf, "dtype") for leaf in leaves):
        return None
    return treedef, tuple((tuple(leaf.shape), np.dtype(leaf.dtype)) for leaf in leaves)


def _traceable(value: Any) -> bool:
    return isinstance(value, (ArraySpec, jax.Array, np.ndarray, np.generic, int, float, complex, bool))


def _own_compile_s(call: Callable[..., Any], *inputs: Any) -> float:
    """The function's own compilation now, beside the looped version's: a fresh jit of one call
    (the program's compiled copy is cached), so both are timed under the same load."""
    fresh = jax.jit(call)
    start = time.perf_counter()
    jax.block_until_ready(fresh(*inputs))
    first = time.perf_counter() - start
    return max(0.0, first - _median(lambda: fresh(*inputs)))


def _timed(looped: Callable[[], Any], compiled: Callable[[], Any],
           own_compile_s: Callable[[], float]) -> tuple[float, float, float]:
    """(looped s, compiled s, extra compilation s): the compiled replacement's first call is its
    compilation; the loop is warmed first (the program compiled its steps, not for these inputs);
    the extra is what compiling the replacement costs beyond compiling the step alone."""
    start = time.perf_counter()
    jax.block_until_ready(compiled())
    compile_s = time.perf_counter() - start
    jax.block_until_ready(looped())
    loop_s, compiled_s = _medians(looped, compiled)
    return loop_s, compiled_s, max(0.0, compile_s - compiled_s - own_compile_s())


def _medians(looped: Callable[[], Any], compiled: Callable[[], Any]) -> tuple[float, float]:
    """Median seconds of `REPEATS` runs of each, alternating, so that a change in the machine's
    load falls on both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(REPEATS):
        for run, kept in zip((looped, compiled), times, strict=True):
            start = time.perf_counter()
            jax.block_until_ready(run())
            kept.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def _median(run: Callable[[], Any]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        jax.block_until_ready(run())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _argument_name(record: FunctionRecord, position: int) -> str:
    names = record.positional_names
    return names[position] if position < len(names) else f"argument {position}"


def _leaf_name(sample: CallSample, record: FunctionRecord, index: int) -> str:
    owner = _leaf_positions(sample)[index]
    return owner if isinstance(owner, str) else _argument_name(record, owner)
