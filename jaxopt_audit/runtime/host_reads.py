"""The process's one set of host-read hooks, shared by `bench`'s TransferMonitor and `run`.

A `jax.Array` reaches the host through a handful of Python entry points: its conversions
(`float`, `int`, `bool`, `.item()`, `.tolist()`, `str`/`repr`/`format`, `__array__`,
`.tobytes()`, the `_value` property they use), `numpy.asarray`/`array`/`asanyarray` looked up
through the `numpy` module (on CPU the buffer protocol path), `jax.device_get`; and it is waited
for with `block_until_ready` (`jax.Array.block_until_ready`, `jax.block_until_ready`). The hooks
are installed while at least one subscriber is registered and removed with the last one.

A subscriber is called before the read happens, in the reading thread, with the array (None
for a sync of a whole tree), what the user called (`"float()"`, `"np.asarray"`, ...) and the
direction (`"d2h"` or `"sync"`). One user call is one notification: reads made inside another
hooked call (`float()` reading `_value`) are not reported again. `waited_s` sums the time spent
inside the outermost hooked calls: the host waiting for the device (and copying the value).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

Subscriber = Callable[[Any, str, str], None]  # (array or None, via, direction)

_METHODS = {
    "__float__": "float()", "__int__": "int()", "__bool__": "bool()", "__index__": "index",
    "__complex__": "complex()", "item": ".item()", "tolist": ".tolist()", "__str__": "str()/print",
    "__repr__": "repr()", "__format__": "f-string/format", "__array__": "np.asarray",
    "tobytes": ".tobytes()",
}


def array_type() -> type:
    from jax._src.array import ArrayImpl  # JAX's private module: looked up only when hooking

    return ArrayImpl


def patch_attribute(owner: Any, name: str, replacement: Any, restore: list[Callable[[], None]]) -> None:
    """Set `owner.name = replacement` and append to `restore` the call that puts back exactly what
    was there (the owner's own attribute, or none: an inherited one is then visible again)."""
    had = name in vars(owner)
    original = vars(owner).get(name)
    setattr(owner, name, replacement)

    def undo() -> None:
        if had:
            setattr(owner, name, original)
        else:
            delattr(owner, name)
    restore.append(undo)


class HostReads:
    """Refcounted hooks: `subscribe` installs them on first use, `unsubscribe` removes them."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._subscribers: tuple[Subscriber, ...] = ()
        self._finished: tuple[Callable[[float], None], ...] = ()  # told each read's seconds, after it
        self._restore: list[Callable[[], None]] = []
        self._local = threading.local()
        self.original_block: Callable[[Any], Any] | None = None
        self.waited_s = 0.0  # inside outermost hooked calls, all threads, since the first install

    # -- subscribers

    def subscribe(self, subscriber: Subscriber, finished: Callable[[float], None] | None = None) -> None:
        """Call `subscriber` before each read or sync and `finished` (if given) with its seconds
        after it, in the reading thread, until `unsubscribe`."""
        with self._lock:
            if not self._subscribers:
                self._install()
            self._subscribers = (*self._subscribers, subscriber)
            if finished is not None:
                self._finished = (*self._finished, finished)

    def unsubscribe(self, subscriber: Subscriber, finished: Callable[[float], None] | None = None) -> None:
        with self._lock:
            if finished is not None:
                self._finished = tuple(f for f in self._finished if f != finished)
            if subscriber not in self._subscribers:
                return
            self._subscribers = tuple(s for s in self._subscribers if s != subscriber)
            if not self._subscribers:
                while self._restore:
                    self._restore.pop()()

    def inside(self) -> bool:
        """True while a hooked call runs in this thread (its inner work is not the user's)."""
        return getattr(self._local, "depth", 0) > 0

    def enter(self) -> None:
        self._local.depth = getattr(self._local, "depth", 0) + 1

    def exit(self) -> None:
        self._local.depth -= 1

    def _timed(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            self._waited(time.perf_counter() - start)

    def _waited(self, seconds: float) -> None:
        self.waited_s += seconds
        self._local.waited_s = getattr(self._local, "waited_s", 0.0) + seconds
        for finished in self._finished:
            finished(seconds)

    def waited_in_this_thread(self) -> float:
        """`waited_s`, of the calling thread only (a program's thread and its data loaders apart)."""
        return float(getattr(self._local, "waited_s", 0.0))

    def _notify(self, array: Any, via: str, direction: str) -> None:
        for subscriber in self._subscribers:
            subscriber(array, via, direction)

    # -- hooks

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        patch_attribute(owner, name, replacement, self._restore)

    def _install(self) -> None:
        impl = array_type()
        for name, via in _METHODS.items():
            original = impl.__dict__.get(name)
            if original is not None:
                self._patch(impl, name, self._reading(original, via))
        value = impl.__dict__.get("_value")
        if isinstance(value, property) and value.fget is not None:
            self._patch(impl, "_value", property(self._reading(value.fget, "host read")))
        self.original_block = impl.__dict__["block_until_ready"]
        self._patch(impl, "block_until_ready", self._syncing(self.original_block))
        for name in ("asarray", "array", "asanyarray"):
            self._patch(np, name, self._converting(getattr(np, name), f"np.{name}", impl))
        self._patch(jax, "device_get", self._on_tree(jax.device_get, "jax.device_get", "d2h", impl))
        self._patch(jax, "block_until_ready", self._on_tree(jax.block_until_ready, "block_until_ready", "sync", impl))

    def _reading(self, original: Callable[..., Any], via: str) -> Callable[..., Any]:
        hooks = self

        def read(array: Any, *args: Any, **kwargs: Any) -> Any:
            # inside/enter/_notify/_timed/exit inlined: this runs on every `.item()` of a step
            local = hooks._local
            if getattr(local, "depth", 0):
                return original(array, *args, **kwargs)
            local.depth = 1
            try:
                for subscriber in hooks._subscribers:
                    subscriber(array, via, "d2h")
                start = time.perf_counter()
                try:
                    return original(array, *args, **kwargs)
                finally:
                    hooks._waited(time.perf_counter() - start)
            finally:
                local.depth = 0

        functools.update_wrapper(read, original)
        return read

    def _syncing(self, original: Callable[..., Any]) -> Callable[..., Any]:
        hooks = self

        def block_until_ready(array: Any, *args: Any, **kwargs: Any) -> Any:
            if hooks.inside():
                return original(array, *args, **kwargs)
            hooks.enter()
            try:
                hooks._notify(array, "block_until_ready", "sync")
                return hooks._timed(original, array, *args, **kwargs)
            finally:
                hooks.exit()

        return block_until_ready

    def _converting(self, original: Callable[..., Any], via: str, impl: type) -> Callable[..., Any]:
        hooks = self

        @functools.wraps(original)
        def convert(*args: Any, **kwargs: Any) -> Any:
            local = hooks._local  # inlined as in `read`: NumPy conversions are hot too
            # the value passed by keyword (`np.asarray(a=x)`) is not the user's common case: uncounted
            if not args or type(args[0]) is not impl or getattr(local, "depth", False):
                return original(*args, **kwargs)
            local.depth = 1
            try:
                for subscriber in hooks._subscribers:
                    subscriber(args[0], via, "d2h")
                start = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    hooks._waited(time.perf_counter() - start)
            finally:
                local.depth = 0

        return convert

    def _on_tree(self, original: Callable[..., Any], via: str, direction: str, impl: type) -> Callable[..., Any]:
        hooks = self

        @functools.wraps(original)
        def on_tree(*args: Any, **kwargs: Any) -> Any:
            if hooks.inside() or not args:  # the tree passed by keyword: uncounted
                return original(*args, **kwargs)
            hooks.enter()
            try:
                arrays = [leaf for leaf in jax.tree_util.tree_leaves(args[0]) if type(leaf) is impl]
                if direction == "sync":
                    if arrays:
                        hooks._notify(None, via, "sync")
                else:
                    for array in arrays:
                        hooks._notify(array, via, direction)
                if not arrays:
                    return original(*args, **kwargs)
                return hooks._timed(original, *args, **kwargs)
            finally:
                hooks.exit()

        return on_tree


HOST_READS = HostReads()
