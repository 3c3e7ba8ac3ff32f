"""Count what JAX does behind a call: compilations and host<->device transfers.

Two context managers, usable alone or nested, from `bench` (per measured call) and from `run`
(around a whole user script, with per-function snapshots):

    with CompileMonitor() as compiles, TransferMonitor() as transfers:
        out = jax.block_until_ready(step(params, batch))
    compiles.counts().compiles      # XLA compilations in the window
    transfers.counts().h2d          # host-to-device transfers (None: not observable here)
    transfers.counts().d2h          # device arrays read on the host

Both `counts()` methods can be called at any time inside the window (they return the totals so
far), so a caller can diff two snapshots to attribute counts to one function call.

How compilations are seen: `jax.monitoring` duration events, which JAX records in the thread
that compiles: `/jax/core/compile/jaxpr_trace_duration` (a trace), `.../jaxpr_to_mlir_module_duration`
(a lowering), `.../backend_compile_duration` (an XLA compilation), and
`/jax/compilation_cache/cache_hits` (a persistent-cache hit instead of a compilation). Each event
carries the function's name. Eager (op-by-op) primitives compile too, once per shape.

How host-to-device transfers are seen: JAX's transfer guard set to `log_explicit` for the window
(global config, so every thread), which makes jaxlib write one C++ log line per transfer to the
stderr file descriptor. The monitor points fd 2 at a temporary file, counts the guard lines and
forwards every other byte to the real stderr (at each `counts()`, every `forward_interval`
seconds, and on exit). This counts exactly what jaxlib transfers: NumPy/Python arguments of
jitted calls (one per leaf), `jnp.asarray(np_array)`, `jax.device_put` of host data, and the
Python scalars that eager ops (`x + 1`, `x[0]`) send to the device. Limits: the guard line
carries no Python call site; a thread-local `jax.transfer_guard(...)` context set by the code
under test overrides ours; when jaxlib's logging is silenced (`TF_CPP_MIN_LOG_LEVEL>=2`) a probe
at start-up sees no line and `h2d` is reported as None (unknown), never as 0.

How device-to-host transfers are seen: on CPU, jaxlib's buffers already live in host memory, so
the transfer guard never fires for reads; instead the monitor subscribes to the Python entry
points that read a `jax.Array` on the host (`runtime.host_reads`, the hooks `run` uses too:
`float`, `int`, `bool`, `.item()`, `.tolist()`, `print`/`str`/`format`, `ArrayImpl._value`,
`jax.device_get`, and `numpy.asarray` / `numpy.array` / `numpy.asanyarray` looked up through the
`numpy` module, the CPU buffer-protocol path). A
transfer is one distinct array read in the window (a second read of the same array is free on
GPU, where the host copy is cached). Limits: NumPy functions that convert a `jax.Array` in C
without going through those names (`np.exp(x)`, `memoryview(x)`), names bound before the window
(`from numpy import asarray`), DLPack, and host callbacks inside compiled code
(`jax.debug.print`, `jax.pure_callback`) are not seen.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
import traceback
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import jax
import jax.monitoring
import numpy as np

from .host_reads import HOST_READS

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
Direction = Literal["h2d", "d2h"]
CompileKind = Literal["trace", "lower", "compile"]
_DURATION_KINDS: dict[str, CompileKind] = {TRACE_EVENT: "trace", LOWER_EVENT: "lower", COMPILE_EVENT: "compile"}


class ReadOnce:
    """The arrays already read back to the host: each counts once, and is forgotten when freed
    (a new array that reuses the address counts again). Not locked: two threads reading one array
    at once may both count it, unless the caller holds a lock."""

    _PRUNE_AT = 16384

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref] = {}
        self._prune_at = self._PRUNE_AT

    def first(self, array: Any) -> bool:
        """True the first time `array` is seen."""
        key = id(array)
        known = self._refs.get(key)
        if known is not None and known() is array:
            return False
        try:
            # no death callback (a closure made per read and a Python call per freed array, on
            # every step): a dead entry never matches a new array, and dead ones are dropped in bulk
            self._refs[key] = weakref.ref(array)
        except TypeError:
            return True  # not weak-referenceable: counted every time it is read
        if len(self._refs) > self._prune_at:
            self._refs = {k: ref for k, ref in self._refs.items() if ref() is not None}
            self._prune_at = max(self._PRUNE_AT, 2 * len(self._refs))
        return True


# ---------------------------------------------------------------- compilations

@dataclass(frozen=True)
class CompileEvent:
    """One trace, lowering or XLA compilation JAX reported, with its duration."""

    kind: CompileKind
    function: str  # JAX's fun_name, e.g. "jit(train_step)" or "<lambda>"
    seconds: float


@dataclass(frozen=True)
class CompileCounts:
    """Compilation work done in a window (or between two snapshots)."""

    traces: int = 0
    lowerings: int = 0
    compiles: int = 0  # XLA backend compilations: the expensive part
    cache_hits: int = 0  # persistent compilation cache hits (no backend compile)
    trace_s: float = 0.0
    lower_s: float = 0.0
    compile_s: float = 0.0
    events: tuple[CompileEvent, ...] = ()

    @property
    def total_s(self) -> float:
        """Seconds spent tracing, lowering and compiling."""
        return self.trace_s + self.lower_s + self.compile_s

    def compiled_functions(self) -> list[str]:
        """Names of the functions XLA compiled, in order (repeats mean recompilations)."""
        return [e.function for e in self.events if e.kind == "compile"]

    def __sub__(self, earlier: CompileCounts) -> CompileCounts:
        return CompileCounts(
            traces=self.traces - earlier.traces,
            lowerings=self.lowerings - earlier.lowerings,
            compiles=self.compiles - earlier.compiles,
            cache_hits=self.cache_hits - earlier.cache_hits,
            trace_s=self.trace_s - earlier.trace_s,
            lower_s=self.lower_s - earlier.lower_s,
            compile_s=self.compile_s - earlier.compile_s,
            events=self.events[len(earlier.events):],
        )


class _CompileListeners:
    """Registers JAX's monitoring listeners once and fans events out to the active monitors."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: list[CompileMonitor] = []
        # `run`'s instrument: called in the compiling thread (it attributes by thread-local state)
        self._callbacks: list[Callable[[CompileEvent], None]] = []
        self._registered = False

    def _register(self) -> None:
        if not self._registered:
            # jax.monitoring has no per-listener filter; registering once keeps overhead flat
            jax.monitoring.register_event_duration_secs_listener(self._on_duration)
            jax.monitoring.register_event_listener(self._on_event)
            self._registered = True

    def add(self, monitor: CompileMonitor) -> None:
        with self._lock:
            self._register()
            self._active.append(monitor)

    def remove(self, monitor: CompileMonitor) -> None:
        with self._lock:
            if monitor in self._active:
                self._active.remove(monitor)

    def subscribe(self, callback: Callable[[CompileEvent], None]) -> None:
        """Call `callback` with every trace, lowering and compilation until `unsubscribe`."""
        with self._lock:
            self._register()
            self._callbacks.append(callback)

    def unsubscribe(self, callback: Callable[[CompileEvent], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def _on_duration(self, event: str, duration_secs: float, **kwargs: str | int) -> None:
        kind = _DURATION_KINDS.get(event)
        if kind is None or not (self._active or self._callbacks):
            return
        record = CompileEvent(kind, str(kwargs.get("fun_name", "?")), float(duration_secs))
        for callback in tuple(self._callbacks):
            callback(record)
        with self._lock:
            for monitor in self._active:
                monitor._record(record)

    def _on_event(self, event: str, **kwargs: Any) -> None:
        if event != CACHE_HIT_EVENT or not self._active:
            return
        with self._lock:
            for monitor in self._active:
                monitor._cache_hits += 1


COMPILE_LISTENERS = _CompileListeners()  # the process's one jax.monitoring listener
_COMPILE_LISTENERS = COMPILE_LISTENERS


class CompileMonitor:
    """Counts traces, lowerings and XLA compilations while active (all threads).

    Use as a context manager; `counts()` returns the totals so far. Monitors nest: each one
    sees every event in its own window.
    """

    def __init__(self) -> None:
        self._events: list[CompileEvent] = []
        self._cache_hits = 0
        self._compile_count = 0
        self._lock = threading.Lock()

    def __enter__(self) -> CompileMonitor:
        _COMPILE_LISTENERS.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _COMPILE_LISTENERS.remove(self)

    def _record(self, event: CompileEvent) -> None:
        with self._lock:
            self._events.append(event)
            self._compile_count += event.kind == "compile"

    @property
    def compiles(self) -> int:
        """XLA compilations so far (cheap: for reading between timed calls)."""
        return self._compile_count

    def counts(self) -> CompileCounts:
        with self._lock:
            events = tuple(self._events)
            hits = self._cache_hits

        def total(kind: str) -> tuple[int, float]:
            chosen = [e.seconds for e in events if e.kind == kind]
            return len(chosen), sum(chosen)

        traces, trace_s = total("trace")
        lowerings, lower_s = total("lower")
        compiles, compile_s = total("compile")
        return CompileCounts(traces, lowerings, compiles, hits, trace_s, lower_s, compile_s, events)


# ---------------------------------------------------------------- transfers

@dataclass(frozen=True)
class TransferSite:
    """Where and what: (direction, source location or None, what was moved)."""

    direction: Direction
    path: str | None  # None for host-to-device: jaxlib's log line has no Python call site
    line: int | None
    what: str  # e.g. "ShapedArray(float32[32,10])" or "float32[32,10]"


@dataclass(frozen=True)
class TransferCounts:
    """Transfers in a window (or between two snapshots)."""

    h2d: int | None  # None when jaxlib's transfer log is not observable in this process
    d2h: int
    sites: dict[TransferSite, int] = field(default_factory=dict)

    @property
    def total(self) -> int | None:
        """h2d + d2h, or None when h2d is unknown."""
        return None if self.h2d is None else self.h2d + self.d2h

    def __sub__(self, earlier: TransferCounts) -> TransferCounts:
        sites = Counter(self.sites)
        sites.subtract(earlier.sites)
        h2d = None if self.h2d is None or earlier.h2d is None else self.h2d - earlier.h2d
        return TransferCounts(h2d, self.d2h - earlier.d2h, {k: v for k, v in sites.items() if v > 0})


# absl's prefix, e.g. "W1122 11:10:30.181532    4451 guard_lib.cc:125] ": severity, date, time
_LOG_LINE_START = re.compile(rb"^[IWEF](\d{0,4}|\d{4} [0-9:. ]*(\d+ [^\]]*(\].*)?)?)$")
_GUARD_LINE = re.compile(r"\] (host-to-device|device-to-host) transfer:? ?(.*)$")
_OWN_FILES = (os.path.dirname(os.path.abspath(__file__)),)
_SKIP_FRAME_PARTS = (f"{os.sep}jax{os.sep}", f"{os.sep}jaxlib{os.sep}", f"{os.sep}numpy{os.sep}",
                     f"{os.sep}jax_plugins{os.sep}")


def _call_site() -> tuple[str | None, int | None]:
    """The innermost frame outside JAX, NumPy and this module: where the user asked for data."""
    for frame in reversed(traceback.extract_stack(limit=40)[:-2]):
        filename = frame.filename
        if filename.startswith(_OWN_FILES) or any(p in filename for p in _SKIP_FRAME_PARTS):
            continue
        return filename, frame.lineno
    return None, None


class _StderrLog:
    """fd 2 redirected to a temporary file; guard lines counted, all other bytes forwarded.

    The file is replaced by a fresh one once it has grown past ROTATE_BYTES, so a long `run`
    with millions of transfers does not fill the disk.
    """

    ROTATE_BYTES = 64 << 20

    def __init__(self, on_guard_line: Callable[[str, str], None]) -> None:
        self._on_guard_line = on_guard_line
        self._lock = threading.Lock()
        self._pending = b""
        sys.stderr.flush()
        self._saved_fd = os.dup(2)
        self._path, self._reader = self._redirect()

    @staticmethod
    def _redirect() -> tuple[str, Any]:
        """Point fd 2 at a new temporary file; return its path and a reader for it."""
        fd, path = tempfile.mkstemp(prefix="jaxopt-audit-stderr-", suffix=".log")
        os.dup2(fd, 2)  # atomic: every write from now on lands in the new file
        os.close(fd)
        return path, open(path, "rb")

    def _drain(self, data: bytes) -> None:
        lines = (self._pending + data).split(b"\n")
        self._pending = lines.pop()
        forward: list[bytes] = []
        if self._pending and not _LOG_LINE_START.match(self._pending):
            # not the start of a jaxlib log line (those are written whole): a progress bar's
            # "\r..." or a prompt, forwarded now instead of waiting for a newline
            forward_tail, self._pending = self._pending, b""
        else:
            forward_tail = b""  # possibly half a guard line: wait for the rest
        for raw in lines:
            match = _GUARD_LINE.search(raw.decode("utf-8", "replace"))
            if match:
                self._on_guard_line(match.group(1), match.group(2).strip())
            else:
                forward.append(raw + b"\n")
        forward.append(forward_tail)
        if any(forward):
            os.write(self._saved_fd, b"".join(forward))

    def poll(self) -> None:
        """Read what fd 2 received since the last poll: count guard lines, forward the rest."""
        with self._lock:
            try:
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            self._drain(self._reader.read())
            if self._reader.tell() > self.ROTATE_BYTES:
                old_path, old_reader = self._path, self._reader
                self._path, self._reader = self._redirect()
                self._drain(old_reader.read())  # what was written just before the switch
                old_reader.close()
                os.unlink(old_path)

    def close(self) -> None:
        self.poll()
        with self._lock:
            if self._pending:
                os.write(self._saved_fd, self._pending)
                self._pending = b""
            try:
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(self._saved_fd, 2)
            os.close(self._saved_fd)
            self._reader.close()
            os.unlink(self._path)


class _TransferSink:
    """Process-wide transfer counting shared by all active TransferMonitors (refcounted)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._users = 0
        self._call_sites = 0  # how many active monitors asked for d2h call sites
        self._h2d = 0
        self._d2h = 0
        self._sites: Counter[TransferSite] = Counter()
        self._h2d_observable = False
        self._log: _StderrLog | None = None
        self._read_arrays = ReadOnce()
        self._saved_guard: Any = None
        self._forwarder: threading.Thread | None = None
        self._stop = threading.Event()

    # -- lifecycle

    def acquire(self, call_sites: bool, forward_interval: float | None) -> None:
        with self._lock:
            self._users += 1
            self._call_sites += int(call_sites)
            if self._users > 1:
                return
            self._h2d = self._d2h = 0
            self._sites = Counter()
            self._read_arrays = ReadOnce()
            self._log = _StderrLog(self._on_guard_line)
            self._saved_guard = jax.config.jax_transfer_guard_host_to_device  # type: ignore[attr-defined]
            jax.config.update("jax_transfer_guard_host_to_device", "log_explicit")
            self._h2d_observable = self._probe_h2d_log()
            self._install_d2h_hooks()
            if forward_interval:
                self._stop.clear()
                self._forwarder = threading.Thread(
                    target=self._forward_loop, args=(forward_interval,), daemon=True,
                    name="jaxopt-audit-stderr-forwarder")
                self._forwarder.start()

    def release(self, call_sites: bool) -> None:
        with self._lock:
            self._users -= 1
            self._call_sites -= int(call_sites)
            if self._users > 0:
                return
            if self._forwarder is not None:
                self._stop.set()
                self._forwarder.join()
                self._forwarder = None
            self._remove_d2h_hooks()
            jax.config.update("jax_transfer_guard_host_to_device", self._saved_guard)
            assert self._log is not None
            self._log.close()
            self._log = None
            self._read_arrays = ReadOnce()

    def _forward_loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            log = self._log
            if log is not None:
                log.poll()

    def _probe_h2d_log(self) -> bool:
        """One known transfer: does its guard line reach fd 2? (TF_CPP_MIN_LOG_LEVEL can hide it.)"""
        assert self._log is not None
        jax.block_until_ready(jax.device_put(np.zeros((), np.float32)))
        self._log.poll()
        seen = self._h2d > 0
        self._h2d = 0
        self._sites = Counter()
        return seen

    # -- events

    def _on_guard_line(self, direction: str, what: str) -> None:
        if direction != "host-to-device":
            return  # d2h is counted by the Python hooks on every platform, so one source only
        with self._lock:
            self._h2d += 1
            self._sites[TransferSite("h2d", None, None, what.removeprefix("aval=").split(", dst_")[0])] += 1

    def _on_host_read(self, array: Any) -> None:
        with self._lock:
            if not self._read_arrays.first(array):
                return  # already on the host in this window
            self._d2h += 1
            path, line = _call_site() if self._call_sites else (None, None)
            self._sites[TransferSite("d2h", path, line, f"{array.dtype}{list(array.shape)}")] += 1

    def _on_hook(self, array: Any, via: str, direction: str) -> None:
        if direction == "d2h" and getattr(array, "_npy_value", None) is None:
            self._on_host_read(array)

    def _install_d2h_hooks(self) -> None:
        HOST_READS.subscribe(self._on_hook)  # the hooks `run` uses too

    def _remove_d2h_hooks(self) -> None:
        HOST_READS.unsubscribe(self._on_hook)

    # -- reading

    def snapshot(self) -> TransferCounts:
        log = self._log
        if log is not None:
            log.poll()
        with self._lock:
            h2d = self._h2d if self._h2d_observable else None
            return TransferCounts(h2d, self._d2h, dict(self._sites))


_TRANSFER_SINK = _TransferSink()


class TransferMonitor:
    """Counts host-to-device and device-to-host transfers while active (see module docstring).

    call_sites: record the file and line of each device-to-host read (costs a stack walk each).
    forward_interval: seconds between forwarding captured stderr to the terminal from a
    background thread (None: forward only at `counts()` and on exit, as `bench` does).
    """

    def __init__(self, *, call_sites: bool = False, forward_interval: float | None = None) -> None:
        self._call_sites = call_sites
        self._forward_interval = forward_interval
        self._start: TransferCounts | None = None

    def __enter__(self) -> TransferMonitor:
        _TRANSFER_SINK.acquire(self._call_sites, self._forward_interval)
        self._start = _TRANSFER_SINK.snapshot()
        return self

    def __exit__(self, *exc: object) -> None:
        self._final = self.counts()
        _TRANSFER_SINK.release(self._call_sites)

    def counts(self) -> TransferCounts:
        """Transfers since entering (the final totals once exited)."""
        if self._start is None:
            raise RuntimeError("TransferMonitor.counts() called outside its `with` block; "
                               "enter the monitor first")
        final = getattr(self, "_final", None)
        if final is not None:
            return final
        return _TRANSFER_SINK.snapshot() - self._start


def h2d_observable() -> bool:
    """Whether this process can count host-to-device transfers (opens a short window)."""
    with TransferMonitor() as monitor:
        return monitor.counts().h2d is not None
