"""The scan's side of the cache: open the one that fits this selection, serve the files it has."""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable

from .cache import Cache


def open_cache(directory: str, rules: list, config, dependencies=None) -> Cache:
    """`dependencies(path, content)`: the extra inputs a file's result depends on (bytes each,
    e.g. the summaries of the modules it imports, from a project-wide pass)."""
    files = []
    for rule in rules:
        try:
            files.append(inspect.getsourcefile(rule) or "")
        except TypeError:
            files.append(rule.__module__)
    return Cache.for_scan(directory, rules, config, files, dependencies)


def cached_results(cache: Cache, files: list[str], config, collect: Callable, progress=None):
    """(files still to scan, their cache keys). Files whose entry matches are `collect`ed now;
    a file that cannot be read is left to the scan, which reports it."""
    todo: list[str] = []
    keys: dict[str, str] = {}
    for path in files:
        try:
            with open(path, "rb") as handle:
                content = handle.read()
        except OSError:
            todo.append(path)
            continue
        key = cache.key(path, content, config.ignored_for(path))
        hit = cache.get(path, key)
        if hit is None:
            todo.append(path)
            keys[path] = key
            cache.expected[path] = hashlib.sha256(content).hexdigest()
        else:
            collect(hit)
            if progress is not None:
                progress()
    return todo, keys
