"""What scanning one file gives: its findings, or the error that stopped it (engine.py makes them,
the cache stores them, notebooks.py maps them back to cells)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, Protocol

from .rule import Finding, Rule


class ScanError(NamedTuple):
    path: str
    message: str

    def as_dict(self) -> dict:
        return {"path": self.path, "message": self.message}


class FileResult(NamedTuple):
    path: str
    findings: list[Finding]
    error: ScanError | None
    lines: int
    internal_error: bool = False


class ScanSource(Protocol):
    """`engine.scan_source`, handed to the parts that scan text again (notebooks, fixes), which
    sit below the engine."""

    def __call__(self, source: str | bytes, path: str, rules: Iterable[Rule], ignored_codes: Iterable[str] = (),
                 *, cells: list[int] | None = None) -> FileResult: ...
