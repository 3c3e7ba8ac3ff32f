"""Per-file scan results, reused while nothing that decides them has changed.

A file's entry is keyed by (docs/design.md):
- the file's content (sha256 of its bytes) and its path (findings carry it, and the package a
  file sits in resolves its relative imports);
- the scan's fingerprint: the tool's own source (every module of the package and every rule
  file loaded, so a development checkout never reports what an older rule found), the selected
  rule codes, and the configuration that applies to the file (its per-file ignores);
- the file's extra inputs: `Cache.dependencies(path, content)` returns bytes the file's result
  also depends on (a project-wide pass adds there the summaries of the modules the file imports);
  () by default.

One JSON file per fingerprint in the cache directory (`.jaxopt_audit_cache/` beside the
configuration, or the current directory), with a `.gitignore` of `*`. A cache that cannot be
read, or was written by something else, is ignored and rewritten; one that cannot be written is
skipped. Neither is ever an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from functools import cache

from ... import __version__
from ..framework.results import FileResult, ScanError
from ..framework.rule import Finding, Impact

CACHE_DIR_NAME = ".jaxopt_audit_cache"
ENV_CACHE_DIR = "JAXOPT_AUDIT_CACHE_DIR"
FORMAT = 2
KEEP_FILES = 8  # fingerprints kept (other selections or tool versions); older ones are pruned


def default_cache_dir(config_source: str | None) -> str:
    """$JAXOPT_AUDIT_CACHE_DIR, else beside the pyproject.toml that applies, else the cwd."""
    if os.environ.get(ENV_CACHE_DIR):
        return os.environ[ENV_CACHE_DIR]
    base = os.path.dirname(os.path.abspath(config_source)) if config_source else os.getcwd()
    return os.path.join(base, CACHE_DIR_NAME)


@cache
def _source_digest(paths: tuple[str, ...]) -> str:
    digest = hashlib.sha256(__version__.encode())
    for path in paths:
        digest.update(path.encode())
        try:
            with open(path, "rb") as handle:
                digest.update(handle.read())
        except OSError:
            digest.update(b"<unreadable>")
    return digest.hexdigest()


def tool_digest(rule_files: Iterable[str]) -> str:
    """The tool's own code and the rules in use, so a changed analysis never reuses old results."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    own: list[str] = []
    for directory, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "reference_pipelines"))
        own.extend(os.path.join(directory, f) for f in sorted(files) if f.endswith(".py"))
    return _source_digest(tuple(own) + tuple(sorted(set(rule_files))))


def _finding(stored: list) -> Finding:
    """A finding as `put` stored it: its fields in order, the impact as a list."""
    finding = Finding(*stored)
    if finding.impact is not None:
        finding = finding._replace(impact=Impact(*finding.impact))
    return finding


class Cache:
    def __init__(self, directory: str, fingerprint: str,
                 dependencies: Callable[[str, bytes], Iterable[bytes]] | None = None) -> None:
        self.directory = directory
        self.fingerprint = fingerprint
        self.dependencies = dependencies or (lambda path, content: ())
        self.file = os.path.join(directory, f"scan-{fingerprint[:32]}.json")
        self.entries: dict[str, dict] = self._load()
        self.dirty = False
        self.hits = 0
        self.expected: dict[str, str] = {}  # path -> sha256 of the content its key was made from

    @classmethod
    def for_scan(cls, directory: str, rules: list, config, rules_files: Iterable[str] = (),
                 dependencies: Callable[[str, bytes], Iterable[bytes]] | None = None) -> Cache:
        codes = ",".join(sorted(r.CODE for r in rules))
        fingerprint = hashlib.sha256(f"{FORMAT}\0{tool_digest(rules_files)}\0{codes}".encode()).hexdigest()
        return cls(directory, fingerprint, dependencies)

    # ------------------------------------------------------------------ entries
    def key(self, path: str, content: bytes, ignored: Iterable[str]) -> str:
        digest = hashlib.sha256(content)
        digest.update(b"\0" + ",".join(sorted(ignored)).encode())
        for extra in self.dependencies(path, content):
            digest.update(b"\0" + extra)
        return digest.hexdigest()

    def get(self, path: str, key: str):
        """The cached FileResult for `path` with this key, or None."""
        entry = self.entries.get(os.path.abspath(path))
        if entry is None or entry.get("key") != key:
            return None
        try:
            findings = [_finding(f) for f in entry["findings"]]
            error = ScanError(*entry["error"]) if entry["error"] is not None else None
            result = FileResult(path, findings, error, int(entry["lines"]))
        except (KeyError, TypeError, ValueError):
            return None
        if any(f.path != path for f in findings):
            return None  # stored under another spelling of the path: scan again
        self.hits += 1
        return result

    def put(self, key: str, result) -> None:
        """Keep `result` under `key`, only if the file still holds the content the key was made
        from (`expect`), so a file edited during the scan is never stored under its old key."""
        if result.internal_error:
            return  # a rule crashed: next time may differ
        expected = self.expected.pop(result.path, None)
        if expected is not None:
            try:
                with open(result.path, "rb") as handle:
                    if hashlib.sha256(handle.read()).hexdigest() != expected:
                        return
            except OSError:
                return
        self.entries[os.path.abspath(result.path)] = {
            "key": key, "findings": [list(f) for f in result.findings],
            "error": list(result.error) if result.error is not None else None, "lines": result.lines}
        self.dirty = True

    # ------------------------------------------------------------------ storage
    def _load(self) -> dict[str, dict]:
        try:
            with open(self.file, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("tool") != "jaxopt-audit" or data.get("format") != FORMAT \
                or data.get("fingerprint") != self.fingerprint or not isinstance(data.get("files"), dict):
            return {}  # foreign or from another version: rewritten on save
        return {p: e for p, e in data["files"].items() if isinstance(e, dict)}

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            os.makedirs(self.directory, exist_ok=True)
            ignore = os.path.join(self.directory, ".gitignore")
            if not os.path.exists(ignore):
                with open(ignore, "w", encoding="utf-8") as handle:
                    handle.write("# Automatically created by jaxopt-audit.\n*\n")
            data = {"tool": "jaxopt-audit", "format": FORMAT, "fingerprint": self.fingerprint,
                    "files": self.entries}
            fd, tmp = tempfile.mkstemp(prefix=".scan-", suffix=".tmp", dir=self.directory)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, separators=(",", ":"))
            os.replace(tmp, self.file)
            self._prune()
        except OSError:
            pass  # a read-only or full disk costs the cache, never the scan
        self.dirty = False

    def _prune(self) -> None:
        ours = [os.path.join(self.directory, n) for n in os.listdir(self.directory)
                if n.startswith("scan-") and n.endswith(".json")]
        ours.sort(key=lambda p: os.path.getmtime(p), reverse=True)
        for stale in ours[KEEP_FILES:]:
            try:
                os.unlink(stale)
            except OSError:
                pass
