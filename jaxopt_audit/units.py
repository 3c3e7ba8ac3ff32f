"""How the tool writes numbers for people: durations, speedups, quantities, shares. One
formatter per kind, used by the terminal, the markdown case studies and the bench tables."""

from __future__ import annotations


def seconds(value: float | None) -> str:
    """0.000012 -> '12 µs', 0.0345 -> '34.5 ms', 3.2 -> '3.20 s', 4000 -> '1.1 h'."""
    if value is None:
        return "—"
    if value >= 3600:
        return f"{value / 3600:.1f} h"
    if value >= 120:
        return f"{value / 60:.1f} min"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def speedup(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}x" if value < 10 else f"{value:.1f}x" if value < 100 else f"{value:,.0f}x"


def quantity(value: float | None, unit: str = "") -> str:
    """1.2e6 -> '1.20 M', with an optional unit after it."""
    if value is None:
        return "—"
    text = f"{value:.3g}"
    for scale, suffix in ((1e12, " T"), (1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(value) >= scale:
            text = f"{value / scale:.3g}{suffix}"
            break
    return f"{text} {unit}".strip() if unit else text


def share(fraction: float) -> str:
    """A fraction of the work as a percentage that never reads 0% for a measured part:
    0.25 -> '25%', 0.0002 -> '0.02%'."""
    if fraction >= 0.01 or fraction <= 0:
        return f"{fraction:.0%}"
    return f"{fraction * 100:.2g}%"


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def count(value: float | int | None) -> str:
    if value is None:
        return "?"
    return f"{value:g}" if isinstance(value, float) else str(value)
