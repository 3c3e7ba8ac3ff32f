"""Markdown building blocks for the case-study report: tables and number formats."""

from __future__ import annotations

from collections.abc import Sequence


def escape(text: object) -> str:
    """Cell text that cannot break a markdown table."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> str:
    """A GitHub-flavoured markdown table; align is one character per column: l, r or c."""
    align = align or "l" * len(headers)
    marks = {"l": ":---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(escape(h) for h in headers) + " |",
             "| " + " | ".join(marks[a] for a in align) + " |"]
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# number formats live in one place; re-exported for the report modules that say `md.seconds`
from ..units import count, percent, quantity, seconds, share, speedup  # noqa: E402,F401
