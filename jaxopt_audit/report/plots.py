"""PNG plots for the case studies: time per stage (log scale) and throughput, one bar group per
run, with error bars from the fastest to the slowest measured call; a run study's time split.

Numbers read as a person writes them: `29.1 h`, `340 ms`, `1,144x`, never `1.14e+03x`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display on CI or over ssh

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from ..results import BenchResult, StageResult  # noqa: E402


def _stage_labels(runs: Sequence[BenchResult]) -> list[tuple[int, str]]:
    seen: dict[int, str] = {}
    for run in runs:
        for variant in run.variants:
            seen.setdefault(variant.stage, variant.name)
    return sorted(seen.items())


def _measured(run: BenchResult, stage: int) -> StageResult | None:
    variant = run.stage(stage)
    return variant if variant is not None and variant.measured else None


def _value(run: BenchResult, stage: int, key: str) -> tuple[float | None, bool, tuple[float, float] | None]:
    """(median, extrapolated, (low, high) of the measured spread) of one stage."""
    variant = _measured(run, stage)
    if variant is None or variant.steady_s is None:
        return None, False, None
    steady = variant.steady_s
    median, low, high = steady.median, steady.min, steady.max
    spread = (low, high) if low and high and steady.repeats > 1 else None
    if key == "time":
        return median, variant.extrapolated, spread
    value = variant.throughput.value if variant.throughput is not None else None
    if value is None or spread is None or not median:
        return value, variant.extrapolated, None
    # throughput is work / time: the slowest call gives the lowest throughput
    return value, variant.extrapolated, (value * median / high, value * median / low)


def _speedup(run: BenchResult, stage: int) -> float | None:
    variant = _measured(run, stage)
    return None if variant is None else variant.speedup_vs_stage0


def _bars(runs: Sequence[BenchResult], labels: Sequence[str], key: str, ylabel: str, title: str,
          path: Path) -> Path:
    stages = _stage_labels(runs)
    width = 0.8 / max(len(runs), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(stages) + 2), 4.2), dpi=120)
    positions = np.arange(len(stages))
    all_values: list[float] = []
    for r, (run, label) in enumerate(zip(runs, labels, strict=False)):
        values: list[float] = []
        hatches: list[str] = []
        speedups: list[float | None] = []
        errors: list[list[float]] = [[], []]
        for stage, _ in stages:
            value, extrapolated, spread = _value(run, stage, key)
            values.append(np.nan if value is None else value)
            hatches.append("//" if extrapolated else "")
            speedups.append(_speedup(run, stage) if stage else None)
            if value is None:
                errors[0].append(0.0)
                errors[1].append(0.0)
                continue
            low, high = spread if spread is not None else (value, value)
            errors[0].append(max(value - low, 0.0))
            errors[1].append(max(high - value, 0.0))
        offsets = positions - 0.4 + width * (r + 0.5)
        bars = ax.bar(offsets, values, width, label=label, yerr=errors, capsize=3,
                      error_kw={"elinewidth": 0.8, "ecolor": "#333333"})
        all_values += [v for v in values if np.isfinite(v)]
        all_values += [v + e for v, e in zip(values, errors[1], strict=True) if np.isfinite(v)]
        for bar, hatch, value, speedup in zip(bars, hatches, values, speedups, strict=True):
            bar.set_hatch(hatch)
            if np.isfinite(value):
                text = _short(value, key) + (f"\n{speedup_text(speedup)}" if speedup is not None else "")
                ax.annotate(text, (bar.get_x() + bar.get_width() / 2, value), ha="center", va="bottom",
                            fontsize=7, xytext=(0, 2), textcoords="offset points")
    ax.set_yscale("log")
    if all_values:  # room above the tallest bar for its two-line label
        ax.set_ylim(min(all_values) / 1.5, max(all_values) * 2.2)
    if key == "time":  # ticks at times a person names (10 s, 5 min, 1 h), not at powers of ten of seconds
        low, high = ax.get_ylim()
        ticks = [t for t in _TIME_TICKS if low <= t <= high]
        if len(ticks) > 12:
            ticks = ticks[::2]
        ax.yaxis.set_major_locator(FixedLocator(ticks))
    else:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _short(v, key)))
    ax.yaxis.set_minor_formatter(NullFormatter())  # minor log ticks unlabelled: no "4x10^0" clutter
    ax.set_xticks(positions, [f"{i}\n{name.split('_', 1)[-1]}" for i, name in stages], fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", which="both", alpha=0.3)
    if len(runs) > 1:
        ax.legend(fontsize=8)
    notes = ["error bars: fastest to slowest measured call"]
    if any(v.extrapolated for run in runs for v in run.variants):
        notes.append("hatched: measured on a prefix, extrapolated")
    ax.text(0.99, 0.98, "; ".join(notes), transform=ax.transAxes, ha="right", va="top", fontsize=7)
    return _save(fig, path)


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png")
    plt.close(fig)
    tmp.replace(path)  # atomic: a reader never sees half a PNG
    return path


def speedup_text(value: float) -> str:
    """3.21 -> '3.21x', 31.2 -> '31.2x', 1143.6 -> '1,144x'."""
    return f"{value:.3g}x" if value < 100 else f"{value:,.0f}x"


_TIME_TICKS = sorted({m * 10.0 ** e for e in range(-9, 2) for m in (1, 2, 5)}
                     | {120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0, 18000.0, 36000.0, 86400.0, 172800.0,
                        432000.0})


def _three_digits(value: float) -> str:
    """123.4 -> '123', 12.34 -> '12.3', 1.234 -> '1.23' (never scientific notation)."""
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _short(value: float, key: str) -> str:
    if key == "time":
        for scale, suffix in ((86400.0, " d"), (3600.0, " h"), (60.0, " min"), (1.0, " s"), (1e-3, " ms"),
                              (1e-6, " µs")):
            if scale >= 60 and value < 2 * scale and value % scale:  # 90 s, not 1.50 min; but 1 h
                continue
            if value >= scale:
                return _three_digits(value / scale) + suffix
        return f"{_three_digits(value * 1e9)} ns"
    for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return _three_digits(value / scale) + suffix
    return _three_digits(value)


def time_plot(runs: Sequence[BenchResult], labels: Sequence[str], path: Path) -> Path:
    """Steady-state time of the whole workload per stage, log scale."""
    return _bars(runs, labels, "time", "time per run (median, log scale)",
                 f"{runs[0].pipeline}: time per stage ({runs[0].size} workload)", path)


def throughput_plot(runs: Sequence[BenchResult], labels: Sequence[str], path: Path) -> Path:
    """Throughput per stage in the pipeline's unit, log scale."""
    measured = [v.throughput.unit for v in runs[0].variants if v.throughput is not None]
    unit = runs[0].throughput_unit or (measured[0] if measured else "")
    return _bars(runs, labels, "throughput", f"{unit} (log scale)",
                 f"{runs[0].pipeline}: throughput per stage", path)


def run_split_plot(runs: Sequence[tuple[str, float, float, float]], path: Path) -> Path:
    """One horizontal bar per run, split into compile, device and host seconds, with the total and
    the speedup against the first run written at the end of each bar."""
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.6 * len(runs)), dpi=120)
    labels = [label for label, *_ in runs]
    positions = np.arange(len(runs))[::-1]
    left = np.zeros(len(runs))
    for index, (part, color) in enumerate((("compile", "#d98c3a"), ("device", "#3a7dd9"), ("host", "#7a7a7a"))):
        widths = np.array([run[1 + index] for run in runs])
        ax.barh(positions, widths, left=left, color=color, label=part, height=0.6)
        left += widths
    first = left[0]
    for y, total in zip(positions, left, strict=True):
        speedup = f"  ({speedup_text(first / total)} vs {labels[0]})" if total > 0 and total != first else ""
        ax.annotate(f" {_short(total, 'time')}{speedup}", (total, y), va="center", fontsize=8)
    ax.set_yticks(positions, labels, fontsize=8)
    ax.set_xlim(0, max(left.max(), 1e-9) * 1.45)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _short(v, "time") if v > 0 else "0"))
    ax.set_xlabel("wall time of the run")
    ax.set_title("time split per run: compile + device + host", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)
