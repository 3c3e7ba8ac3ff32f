"""Host callbacks in the user's JAX code (`jax.debug.callback`, `jax.pure_callback`,
`jax.experimental.io_callback`): the callable each one registers is wrapped so that its runs
are counted and timed, by the user's line that registered it.

A callback inside a jitted step stops the compiled program on every call while Python runs it
(its arguments copied to the host first): time that moving it out of the step, or running it
every k steps, gives back. The time inside the callable is measured; the copies and the stall
around it are not, and are said to be left out.

The wrapper calls the callable with the arguments it is given and returns what it returns. It is
made once per callable and line (kept by identity), so a callback passed again is the same
object to JAX's caches as it would be without the instrument."""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .sites import SourceLine, UserFiles

_WRAPPERS_LIMIT = 10_000  # callables kept alive for reuse: new ones per call (a partial) are not reused


@dataclass
class CallbackRecord:
    """The runs of the callables one user line registered with one callback API."""

    api: str  # "jax.debug.callback", "jax.pure_callback", "io_callback"
    name: str  # the (first) callable's name
    path: str
    line: int
    calls: int = 0
    seconds: float = 0.0  # inside the callable


class Callbacks:
    """The callback APIs patched to time the callables they are given (`install`)."""

    def __init__(self, user_files: UserFiles) -> None:
        self.user_files = user_files
        self.records: dict[tuple[SourceLine, str], CallbackRecord] = {}
        self._wrappers: dict[tuple[int, SourceLine], tuple[Any, Callable[..., Any]]] = {}
        # compiled programs keep the wrappers after the program ends: runs then (the savings'
        # measurements calling the jitted functions again) are not the program's
        self.counting = True
        self._local = threading.local()  # .depth: runs of a wrapped callable under way in this thread

    def inside(self) -> bool:
        """Whether this thread is running a callback: its reads and ops are the callback's cost."""
        return bool(getattr(self._local, "depth", 0))

    def install(self, patch: Callable[[Any, str, Any], None]) -> None:
        """Patch each API with `patch(owner, name, replacement)` (which restores it on uninstall)."""
        import jax
        import jax.experimental

        for owner, name, api in ((jax.debug, "callback", "jax.debug.callback"),
                                 (jax, "pure_callback", "jax.pure_callback"),
                                 (jax.experimental, "io_callback", "io_callback")):
            original = getattr(owner, name, None)
            if original is not None:
                patch(owner, name, self._registering(original, api))

    def _registering(self, original: Callable[..., Any], api: str) -> Callable[..., Any]:
        callbacks = self

        @functools.wraps(original)
        def register(*args: Any, **kwargs: Any) -> Any:
            if args:
                args = (callbacks._timed(args[0], api), *args[1:])
            elif "callback" in kwargs:
                kwargs = {**kwargs, "callback": callbacks._timed(kwargs["callback"], api)}
            return original(*args, **kwargs)

        return register

    def _timed(self, callback: Any, api: str) -> Any:
        if not callable(callback):
            return callback  # the API's own error, unchanged
        caller = sys._getframe(2)  # what called the API
        if not self.user_files.is_user(caller.f_code.co_filename):
            return callback  # registered by a library: not the user's to move
        site = SourceLine(caller.f_code.co_filename, caller.f_lineno)
        kept = self._wrappers.get((id(callback), site))
        if kept is not None and kept[0] is callback:
            return kept[1]
        record = self.records.get((site, api))
        if record is None:
            name = getattr(callback, "__name__", None) or type(callback).__name__
            record = self.records[site, api] = CallbackRecord(api, name, site.path, site.line)
        wrapper = _timing(callback, record, self)
        if len(self._wrappers) >= _WRAPPERS_LIMIT:
            self._wrappers.clear()
        self._wrappers[id(callback), site] = (callback, wrapper)
        return wrapper


def _timing(callback: Callable[..., Any], record: CallbackRecord, callbacks: Callbacks) -> Callable[..., Any]:
    @functools.wraps(callback)
    def timed(*args: Any, **kwargs: Any) -> Any:
        if not callbacks.counting:
            return callback(*args, **kwargs)
        local = callbacks._local
        local.depth = getattr(local, "depth", 0) + 1
        start = time.perf_counter()
        try:
            return callback(*args, **kwargs)
        finally:
            record.calls += 1
            record.seconds += time.perf_counter() - start
            local.depth -= 1

    return timed
