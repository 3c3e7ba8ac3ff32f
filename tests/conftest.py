"""Shared test helpers: scanning source text with the bundled rules."""

from __future__ import annotations

import textwrap

import pytest

from jaxopt_audit.static.engine import scan_source
from jaxopt_audit.static.registry import load_rules


@pytest.fixture(autouse=True)
def _cache_outside_the_repository(tmp_path_factory, monkeypatch):
    """CLI scans keep their result cache in a temporary directory, never in the repository."""
    monkeypatch.setenv("JAXOPT_AUDIT_CACHE_DIR", str(tmp_path_factory.mktemp("scan-cache")))


@pytest.fixture(scope="session")
def all_rules():
    return load_rules()


def scan_text(source: str, rules, path: str = "example.py"):
    """Findings for a snippet: (line, code) pairs, sorted."""
    result = scan_source(textwrap.dedent(source).strip("\n") + "\n", path, [r() for r in rules])
    assert result.error is None, result.error
    return result.findings
