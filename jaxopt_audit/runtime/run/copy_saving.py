"""What moving a jitted call's NumPy arguments to the device once would save, measured.

A NumPy array passed to a jitted function is copied (and converted to the function's dtype:
float64 to float32 without x64) on every call. After the program has finished, `run` times
that copy for each (shape, dtype, alignment) it saw at a line: a tiny jitted function called with
a NumPy array of that shape and dtype and with the same array already on the device, each call
waited for; the difference, median of `REPEATS`, is the copy. The alignment matters on CPU: a
64-byte aligned buffer is handed to XLA without a copy, any other is copied, so the array timed
sits at the address alignment the program's did. The fix keeps one copy, so the saving is
every copy after the first at its measured time.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter

import jax
import numpy as np

from ...units import seconds

CopySpec = tuple[tuple[int, ...], np.dtype | str, bool]  # a NumPy argument's shape, dtype, 64-byte alignment
REPEATS = 15  # the copy is a difference of two short times: many samples, their median


def copies_saving(specs: Counter[CopySpec], copies: int | None = None) -> tuple[float | None, str]:
    """(saving_s, method) for the copies of arrays of these (shape, dtype, 64-byte aligned)
    counts; with `copies`, the counts are a sample of that many copies, in proportion."""
    sampled = sum(specs.values())
    scale = copies / sampled if copies and sampled else 1.0
    total = 0.0
    parts = []
    try:
        for (shape, dtype, aligned), count in specs.most_common():
            each = _copy_time(shape, np.dtype(dtype), aligned)
            made = round(count * scale)
            total += max(0, made - 1) * each
            parts.append(f"{made} x {seconds(each)}")
    except Exception as exc:  # an array that cannot be made or copied: no measurement, the run goes on
        return None, f"no estimate: timing the copy failed ({type(exc).__name__})"
    shown = ", ".join(parts[:4]) + (", ..." if len(parts) > 4 else "")
    of = f" (their shapes as on {sampled} sampled copies)" if scale != 1.0 else ""
    return round(total, 6), (f"measured: a jitted call given NumPy arrays of the passed shapes, dtypes and "
                             f"alignment against device arrays, {shown}{of} (every copy after the first is saved)")


def _copy_time(shape: tuple[int, ...], dtype: np.dtype, aligned: bool) -> float:
    """A jitted call's extra time when given the NumPy array instead of a device array."""
    host = host_array(shape, dtype, aligned)
    device = jax.device_put(host)
    first = jax.jit(lambda a: a.ravel()[:1])  # touches the argument, computes almost nothing
    jax.block_until_ready((first(host), first(device)))  # compiled for both, first transfer made
    extra = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        jax.block_until_ready(first(device))
        middle = time.perf_counter()
        jax.block_until_ready(first(host))
        extra.append((time.perf_counter() - middle) - (middle - start))
    return max(0.0, statistics.median(extra))


def host_array(shape: tuple[int, ...], dtype: np.dtype, aligned: bool) -> np.ndarray:
    """A NumPy array of ones whose buffer starts on a 64-byte boundary, or 16 bytes past one."""
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(size + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + (0 if aligned else 16)
    host = raw[start:start + size].view(dtype).reshape(shape)
    host[...] = 1
    return host
