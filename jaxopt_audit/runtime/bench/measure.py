"""The measurement core: first call versus steady state, synchronised, with what JAX did per call.

    m = measure(train_epoch, params, data)
    m.first_call_s, m.compile.compile_s        # first call and the compilation inside it
    m.steady.median, m.steady.spread           # steady state, every sample synchronised
    m.compiles_per_call, m.transfers_per_call  # a steady-state compile or transfer is a finding
    m.cost.flops, m.flops_per_s                # XLA's cost analysis and the achieved rate

The protocol, in order:
1. first call under a CompileMonitor: its wall time, and the trace / lower / XLA compile seconds
   JAX reports through `jax.monitoring` (so the compile cost is known, not guessed);
2. warm-up call(s), the first of them under a TransferMonitor: host<->device transfers of one
   steady-state call (counted there, not in timed calls, because counting has a cost);
3. timed calls until `repeats`, or until `budget_s` has been spent and at least `min_repeats`
   are done; each sample is clock, call, `jax.block_until_ready(outputs)`, clock, under a
   CompileMonitor: a compilation here means the function recompiles in steady state;
4. cost analysis of the compiled function when it is a jitted function (`fn.lower`): FLOPs and
   bytes accessed per call, hence achieved FLOP/s and bytes/s.
The harness's own per-sample cost (clock reads, the sync of ready outputs, bookkeeping) is
measured on a no-op with the same loop and recorded as `harness_overhead_s`.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jax

from ..monitors import CompileCounts, CompileMonitor, TransferCounts, TransferMonitor
from .machine import MachineInfo, machine_info

Clock = Callable[[], float]
Progress = Callable[[str, int, "int | None"], None]  # (phase, done, total or None)


@dataclass(frozen=True)
class Stats:
    """Steady-state samples in seconds."""

    median: float
    min: float
    max: float
    mean: float
    stdev: float
    repeats: int
    samples: tuple[float, ...] = field(repr=False, default=())

    @property
    def spread(self) -> float:
        """(max - min) / median: how far apart the fastest and slowest samples are."""
        return (self.max - self.min) / self.median if self.median > 0 else 0.0

    @classmethod
    def of(cls, samples: list[float]) -> Stats:
        if not samples:
            raise ValueError("no samples to summarise; measure at least one call")
        return cls(median=statistics.median(samples), min=min(samples), max=max(samples),
                   mean=statistics.fmean(samples),
                   stdev=statistics.stdev(samples) if len(samples) > 1 else 0.0,
                   repeats=len(samples), samples=tuple(samples))

    def to_json(self) -> dict[str, Any]:
        return {"median": self.median, "min": self.min, "max": self.max, "mean": self.mean,
                "stdev": self.stdev, "spread": self.spread, "repeats": self.repeats}


@dataclass(frozen=True)
class CostEstimate:
    """XLA's compiled cost analysis of one call."""

    flops: float | None
    bytes_accessed: float | None
    transcendentals: float | None
    # XLA counts a while loop's body once whatever the trip count (scan, fori_loop), so with
    # loops in the program the numbers are lower bounds.
    loops_counted_once: bool

    def to_json(self) -> dict[str, Any]:
        return {"flops": self.flops, "bytes_accessed": self.bytes_accessed,
                "transcendentals": self.transcendentals, "lower_bound": self.loops_counted_once}


@dataclass(frozen=True)
class Measurement:
    name: str
    first_call_s: float  # wall time of the first call, compilation included
    compile: CompileCounts  # what the first call traced, lowered and compiled
    steady: Stats
    steady_compiles: int  # XLA compilations during the timed calls: should be 0
    recompiled: tuple[str, ...]  # functions compiled during the timed calls
    transfers: TransferCounts | None  # one warm-up call; None when not counted
    cost: CostEstimate | None
    cost_note: str  # why cost is None, or ""
    harness_overhead_s: float  # per-sample cost of the harness itself
    machine: MachineInfo
    outputs: Any = field(repr=False, compare=False, default=None)

    @property
    def compile_s(self) -> float:
        """Trace + lower + XLA compile seconds of the first call."""
        return self.compile.total_s

    @property
    def startup_s(self) -> float:
        """What the first call costs beyond a steady-state call (mostly compilation)."""
        return max(self.first_call_s - self.steady.median, 0.0)

    @property
    def compiles_per_call(self) -> float:
        return self.steady_compiles / self.steady.repeats

    @property
    def transfers_per_call(self) -> int | None:
        return None if self.transfers is None else self.transfers.total

    @property
    def flops_per_s(self) -> float | None:
        if self.cost is None or self.cost.flops is None or self.steady.median <= 0:
            return None
        return self.cost.flops / self.steady.median

    @property
    def bytes_per_s(self) -> float | None:
        if self.cost is None or self.cost.bytes_accessed is None or self.steady.median <= 0:
            return None
        return self.cost.bytes_accessed / self.steady.median

    def to_json(self) -> dict[str, Any]:
        transfers = self.transfers
        return {
            "name": self.name,
            "first_call_s": self.first_call_s,
            "compile_s": self.compile_s,
            "compile": {"trace_s": self.compile.trace_s, "lower_s": self.compile.lower_s,
                        "backend_compile_s": self.compile.compile_s,
                        "compiles": self.compile.compiles},
            "steady_s": self.steady.to_json(),
            "compiles_per_call": self.compiles_per_call,
            "recompiled": list(self.recompiled),
            "h2d_transfers_per_call": None if transfers is None else transfers.h2d,
            "d2h_transfers_per_call": None if transfers is None else transfers.d2h,
            "host_transfers_per_call": self.transfers_per_call,
            "cost": None if self.cost is None else self.cost.to_json(),
            "cost_note": self.cost_note,
            "flops_per_s": self.flops_per_s,
            "bytes_per_s": self.bytes_per_s,
            "harness_overhead_s": self.harness_overhead_s,
            "machine": self.machine.to_json(),
        }


def cost_analysis(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[CostEstimate | None, str]:
    """FLOPs and bytes of one call from XLA's compiled cost analysis (jitted functions only)."""
    if not hasattr(fn, "lower"):
        return None, "not a jitted function: XLA cost analysis needs one compiled program"
    try:
        compiled = fn.lower(*args, **kwargs).compile()
        analysis = compiled.cost_analysis()
        hlo_text = compiled.as_text() or ""
    except Exception as exc:  # a backend without cost analysis, or an un-lowerable call
        return None, f"cost analysis unavailable: {type(exc).__name__}: {exc}".splitlines()[0]
    if isinstance(analysis, (list, tuple)):  # older JAX: one dict per device program
        analysis = analysis[0] if analysis else {}
    if not analysis:
        return None, "the backend returned no cost analysis"

    def number(key: str) -> float | None:
        value = analysis.get(key)
        return float(value) if value is not None and math.isfinite(float(value)) and value >= 0 else None

    return CostEstimate(flops=number("flops"), bytes_accessed=number("bytes accessed"),
                        transcendentals=number("transcendentals"),
                        loops_counted_once=" while(" in hlo_text), ""


def _timed_calls(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *,
                 repeats: int | None, min_repeats: int, max_repeats: int, budget_s: float,
                 clock: Clock, monitor: CompileMonitor,
                 on_sample: Callable[[int], None] | None = None) -> tuple[list[float], list[int], Any]:
    """The steady-state loop: clock, call, synchronise, clock; compiles counted per sample."""
    samples: list[float] = []
    compiles: list[int] = []
    outputs: Any = None
    started = clock()
    while True:
        before = monitor.compiles
        t0 = clock()
        outputs = fn(*args, **kwargs)
        jax.block_until_ready(outputs)
        t1 = clock()
        samples.append(t1 - t0)
        compiles.append(monitor.compiles - before)
        if on_sample is not None:
            on_sample(len(samples))
        if repeats is not None:
            if len(samples) >= repeats:
                break
        elif len(samples) >= max_repeats or (len(samples) >= min_repeats and t1 - started >= budget_s):
            break
    return samples, compiles, outputs


def _noop() -> None:
    return None


@lru_cache(maxsize=1)
def harness_overhead(samples: int = 2000) -> float:
    """Median per-sample cost of the timed loop itself, measured on a no-op."""
    with CompileMonitor() as monitor:
        times, _, _ = _timed_calls(_noop, (), {}, repeats=samples, min_repeats=samples,
                                   max_repeats=samples, budget_s=0.0, clock=time.perf_counter,
                                   monitor=monitor)
    return statistics.median(times)


def measure(fn: Callable[..., Any], *args: Any, name: str | None = None,
            repeats: int | None = None, min_repeats: int = 3, max_repeats: int = 1000,
            budget_s: float = 1.0, warmup: int = 1, count_transfers: bool = True,
            analyse_cost: bool = True, clock: Clock = time.perf_counter,
            on_progress: Progress | None = None, **kwargs: Any) -> Measurement:
    """Measure `fn(*args, **kwargs)`: first call, warm-up, synchronised steady-state samples.

    repeats: exact number of timed calls; None: adaptive (at least `min_repeats`, then until
    `budget_s` seconds of timed calls or `max_repeats`).
    warmup: untimed calls after the first (the first of them counts transfers); at least one is
    made when transfers are counted.
    """
    if repeats is not None and repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    label: str = name or getattr(fn, "__name__", None) or repr(fn)

    def progress(phase: str, done: int, total: int | None) -> None:
        if on_progress is not None:
            on_progress(phase, done, total)

    progress("first call", 0, None)
    with CompileMonitor() as first_monitor:
        t0 = clock()
        outputs = fn(*args, **kwargs)
        jax.block_until_ready(outputs)
        first_call_s = clock() - t0
    first_compile = first_monitor.counts()

    transfers: TransferCounts | None = None
    for index in range(max(warmup, 1 if count_transfers else 0)):
        progress("warm-up", index, warmup)
        if index == 0 and count_transfers:
            with TransferMonitor() as transfer_monitor:
                jax.block_until_ready(fn(*args, **kwargs))
            transfers = transfer_monitor.counts()
        else:
            jax.block_until_ready(fn(*args, **kwargs))

    progress("timing", 0, repeats)
    with CompileMonitor() as steady_monitor:
        samples, compiles, outputs = _timed_calls(
            fn, args, kwargs, repeats=repeats, min_repeats=min_repeats, max_repeats=max_repeats,
            budget_s=budget_s, clock=clock, monitor=steady_monitor,
            on_sample=lambda n: progress("timing", n, repeats))
    steady_counts = steady_monitor.counts()

    cost, cost_note = (None, "not requested")
    if analyse_cost:
        progress("cost analysis", 0, None)
        cost, cost_note = cost_analysis(fn, *args, **kwargs)

    return Measurement(
        name=label,
        first_call_s=first_call_s,
        compile=first_compile,
        steady=Stats.of(samples),
        steady_compiles=sum(compiles),
        recompiled=tuple(steady_counts.compiled_functions()),
        transfers=transfers,
        cost=cost,
        cost_note=cost_note,
        harness_overhead_s=harness_overhead(),
        machine=machine_info(),
        outputs=outputs,
    )


def break_even_calls(startup_s: float, steady_s: float, baseline_startup_s: float,
                     baseline_steady_s: float) -> int | None:
    """Calls after which this version's extra start-up cost (compilation) is paid back against
    the baseline stage it is compared with.

    startup_s is what the first call costs beyond a steady one. 0 when this version starts no
    slower than the baseline; None when it is never paid back (not faster per call).
    """
    extra_startup = startup_s - baseline_startup_s
    if extra_startup <= 0:
        return 0
    saved_per_call = baseline_steady_s - steady_s
    if saved_per_call <= 0:
        return None
    return ceil_count(extra_startup / saved_per_call)


def ceil_count(value: float) -> int:
    """The ceiling of a count, ignoring float noise (0.1 / 0.1 may be 1.0000000000000002)."""
    return math.ceil(value * (1 - 1e-12))
