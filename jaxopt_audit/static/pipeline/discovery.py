"""Which files to scan: `.py` and `.ipynb` files under the given paths, minus the usual junk and
excludes. MyST markdown notebooks are scanned when named (or matched by `extend-include`)."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from .isolation import special_file_kind

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".env", "env",
                          "build", "dist", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
                          ".ruff_cache", "node_modules", "site-packages", ".eggs",
                          # Jupyter's autosaved copies of notebooks and files: an editor's leftovers,
                          # not the project's code (a stale `-checkpoint.py` would be scanned twice)
                          ".ipynb_checkpoints"})


SCANNED_SUFFIXES = (".py", ".ipynb")


class Discovery(NamedTuple):
    files: list[str]
    errors: list[tuple[str, str]]  # (path, message)


def _excluded(path: str, patterns: Sequence[str]) -> bool:
    posix = Path(path).as_posix()
    name = os.path.basename(posix)
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if fnmatch.fnmatch(posix, pattern) or fnmatch.fnmatch(name, pattern) \
                or fnmatch.fnmatch(posix, f"*/{pattern}") or fnmatch.fnmatch(posix, f"{pattern}/*") \
                or fnmatch.fnmatch(posix, f"*/{pattern}/*"):
            return True
    return False


def discover(paths: list[str], exclude: list[str], include: Sequence[str] = ()) -> Discovery:
    """Files in a stable order; unreadable directories and missing paths become errors.
    `include`: globs of further files to scan (`docs/**/*.md` for MyST notebooks)."""
    files: list[str] = []
    errors: list[tuple[str, str]] = []
    seen: set[tuple[int, int] | str] = set()

    def add(file: str) -> None:
        # Only regular files are read: a FIFO named x.py would block the scan forever on open.
        kind = special_file_kind(file)
        if kind is not None:
            if os.path.normpath(file) not in seen:
                seen.add(os.path.normpath(file))
                errors.append((os.path.normpath(file), f"not scanned: it is {kind}, not a regular file"))
            return
        try:  # one file named by two paths (a symlink, `a/../a`) is scanned once
            info = os.stat(file)
            key: tuple[int, int] | str = (info.st_dev, info.st_ino)
        except OSError:
            key = os.path.normpath(file)  # reading it will report why
        if key not in seen:
            seen.add(key)
            files.append(os.path.normpath(file))

    for root in paths:
        if not os.path.exists(root):
            errors.append((root, "no such file or directory"))
            continue
        if not os.path.isdir(root):  # named explicitly: scanned even if excluded or not .py
            add(root)
            continue

        def onerror(exc: OSError) -> None:
            errors.append((exc.filename or root, f"cannot read directory: {exc.strerror}"))  # noqa: B023 - walk below

        # Excludes match below the named root: naming a directory scans it even when a
        # pattern (`tests/fixtures/**`) excludes it from a scan of the whole project.
        def relative(path: str) -> str:
            return os.path.relpath(path, root)  # noqa: B023 - used only by the walk below

        for directory, dirnames, filenames in os.walk(root, onerror=onerror):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS
                                 and not d.endswith(".egg-info")
                                 and not _excluded(relative(os.path.join(directory, d)), exclude))
            for filename in sorted(filenames):
                full = os.path.join(directory, filename)
                wanted = filename.endswith(SCANNED_SUFFIXES) or (include and _excluded(relative(full), include))
                if wanted and not _excluded(relative(full), exclude):
                    add(full)
    return Discovery(files, errors)


def package_of(path: str) -> str:
    """Dotted package of a file, from the __init__.py files above it (for relative imports)."""
    parts: list[str] = []
    directory = os.path.dirname(os.path.abspath(path))
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        parts.append(os.path.basename(directory))
        directory = os.path.dirname(directory)
    return ".".join(reversed(parts))
