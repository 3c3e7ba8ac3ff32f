"""Which frames are the user's code, and the user's line that caused an event.

A transfer or a jit happens deep inside JAX, NumPy or a library (optax, flax); the report
names the innermost frame of the user's own code above it. "Library" means the standard
library, site-packages and this tool's own package (except the reference pipelines shipped in
it, which are the code under audit when `run` drives them). The answer per file is cached, so
a lookup is a short walk over frame objects and dictionary hits.
"""

from __future__ import annotations

import inspect
import itertools
import operator
import os
import sys
import sysconfig
from types import CodeType, FrameType
from typing import Any, NamedTuple

import jaxopt_audit


class SourceLine(NamedTuple):
    """A line of the user's source."""

    path: str
    line: int


_PACKAGE_DIR = os.path.dirname(os.path.abspath(jaxopt_audit.__file__))


def _library_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    prefixes = {os.path.abspath(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib")
                if key in paths}
    prefixes.update(os.path.abspath(p) for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    prefixes.add(_PACKAGE_DIR)
    return tuple(sorted(p + os.sep for p in prefixes))


class UserFiles:
    """Classifies source files as the user's or a library's, with a cache per filename."""

    def __init__(self, extra_user_paths: tuple[str, ...] = ()) -> None:
        self._library = _library_prefixes()
        # the shipped reference pipelines live inside the package but are user code under `run`
        pipelines = os.path.join(os.path.dirname(_PACKAGE_DIR), "reference_pipelines")
        self._user = tuple(os.path.abspath(p) for p in (*extra_user_paths, pipelines,
                                                         os.path.join(_PACKAGE_DIR, "reference_pipelines")))
        self._cache: dict[str, bool] = {}
        self._sites: dict[tuple[CodeType, int], SourceLine] = {}  # (code, instruction offset) -> its line

    def is_user(self, filename: str) -> bool:
        known = self._cache.get(filename)
        if known is None:
            known = self._cache[filename] = self._classify(filename)
        return known

    def _classify(self, filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False
        path = os.path.abspath(filename)
        if path.startswith(self._user):
            return True
        return not path.startswith(self._library)  # prefixes end with a separator

    def site(self, frame: FrameType | None) -> SourceLine | None:
        """The innermost user frame at or above `frame`."""
        is_user = self.is_user
        while frame is not None:
            code = frame.f_code
            if is_user(code.co_filename):
                # f_lineno decodes the line table on every access: one decode per instruction site
                key = (code, frame.f_lasti)
                found = self._sites.get(key)
                if found is None:
                    found = self._sites[key] = SourceLine(code.co_filename, frame.f_lineno)
                return found
            frame = frame.f_back
        return None

    def passing_site(self, frame: FrameType | None, values: list[Any]) -> SourceLine | None:
        """The user's statement that makes or passes `values` (host arrays being copied): the
        innermost user frame at or above `frame`, or, while all of them are arguments of that
        frame's function (directly or one container deep: a batch tuple or dict), its user
        caller's line: a helper that forwards the data is not where it is made or passed in."""
        is_user = self.is_user
        while frame is not None and not is_user(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None:
            return None
        while values and _all_arguments(frame, values):
            caller = frame.f_back
            while caller is not None and not is_user(caller.f_code.co_filename):
                if _third_party(caller.f_code.co_filename):  # a library's loop made them (an optimizer's x)
                    return self.site(frame)
                caller = caller.f_back
            if caller is None:
                break
            frame = caller
        return self.site(frame)

    def third_party_caller(self, frame: FrameType | None) -> str | None:
        """The third-party package (SciPy, not JAX or NumPy) whose code called the user's code
        running at or above `frame`, below the script's top level: the library drives that code
        in its own loop (an optimizer evaluating the user's objective). None when there is none."""
        is_user = self.is_user
        while frame is not None and not is_user(frame.f_code.co_filename):  # what the user's code called
            frame = frame.f_back
        while frame is not None:
            code = frame.f_code
            if is_user(code.co_filename):
                if code.co_name == "<module>":
                    return None
            elif (package := _third_party(code.co_filename)) is not None:
                return package
            frame = frame.f_back
        return None

    def caller_and_outer_site(self, depth: int = 2) -> tuple[SourceLine | None, SourceLine | None]:
        """The user's line that led to the current call (as `caller_site`) and the user's line
        that called the function running it (where a loop around that function would be)."""
        try:
            frame: FrameType | None = sys._getframe(depth)
        except ValueError:
            return None, None
        is_user = self.is_user
        while frame is not None and not is_user(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None:
            return None, None
        outer = frame.f_back
        while outer is not None and not is_user(outer.f_code.co_filename):
            outer = outer.f_back
        return self.site(frame), self.site(outer)

    def caller_site(self, depth: int = 2) -> SourceLine | None:
        """The user's line that led to the current call (skipping `depth` frames of ours)."""
        try:
            frame: FrameType | None = sys._getframe(depth)
        except ValueError:
            return None
        return self.site(frame)


_CONTAINERS = (dict, tuple, list)
_ARGUMENT_COUNTS: dict[CodeType, int] = {}


def _argument_count(code: CodeType) -> int:
    count = _ARGUMENT_COUNTS.get(code)
    if count is None:
        count = code.co_argcount + code.co_kwonlyargcount
        count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
        _ARGUMENT_COUNTS[code] = count
    return count


# packages that call the user's code as part of running it (traced functions, tree maps, array
# protocols), not a loop of their own around it
_NOT_DRIVERS = frozenset({"jax", "jaxlib", "numpy", "jaxopt_audit"})


def _third_party(filename: str) -> str | None:
    """The installed package a file belongs to unless it is JAX, NumPy or this tool; the
    standard library and the user's files are None."""
    parts = os.path.normpath(filename).split(os.sep)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            package = parts[parts.index(marker) + 1].removesuffix(".py")
            return None if package in _NOT_DRIVERS else package
    return None


def _all_arguments(frame: FrameType, values: list[Any]) -> bool:
    """Whether every value is an argument of the frame's call, or an item of one (by identity)."""
    code = frame.f_code
    count = _argument_count(code)
    if not count:
        return False
    passed = list(map(frame.f_locals.get, code.co_varnames[:count]))
    # the common answer (the data is made in this frame, not passed in) decided in C on the first value
    if not any(map(operator.is_, passed, itertools.repeat(values[0]))) and not any(
            map(isinstance, passed, itertools.repeat(_CONTAINERS))):
        return False
    ids: set[int] = set(map(id, passed))
    for value in passed:
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
        ids.update(map(id, items))
    return all(id(value) in ids for value in values)


def display_path(path: str, cwd: str | None = None) -> str:
    """A path relative to the working directory when it is below it, else absolute."""
    cwd = cwd or os.getcwd()
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute, cwd)
    except ValueError:
        return absolute
    return absolute if relative.startswith(os.pardir) else relative
