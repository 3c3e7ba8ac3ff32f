"""The instruments `jaxopt-audit run` switches on around a user's program.

What is recorded, and how (all in-process, all undone by `Instrument.uninstall`). Every
wrapper and patch calls the real JAX or NumPy function with the arguments it was given and
returns its result untouched; what a wrapper records lives outside the attributes JAX copies
from a function onto its transformation's wrapper (tests/test_run_transparency.py checks that
programs compute the same bytes with and without `run`).

- Every function the program jits: `jax.jit` and `jax.pmap` are replaced for the run by a
  factory that returns
  a thin `RecordingJit` around the real jitted function (attributes such as `.lower`, `.trace`,
  `.eval_shape` are forwarded). A call made under a trace (inside another jit, `vmap`, `grad`)
  goes straight through; a top-level call is counted and timed, and its host leaves (NumPy
  arrays, NumPy and Python scalars in non-static arguments: each one is copied to the device)
  are counted (the NumPy arrays' shapes and dtypes too, for `copy_saving`). Wrappers of the
  same Python function share one `FunctionRecord`, and the line
  that created each wrapper is counted, so a `jax.jit` evaluated in a loop shows up. Libraries
  that call `jax.jit` themselves are seen the same way (flax's `nnx.jit` wraps the user's
  function; equinox's `filter_jit` jits its own wrapper named after it: the record points at
  the user's function, or at the user's line that applied the library's jit). A `shard_map`
  under `jit` is the jitted function. A `block_until_ready` a library makes inside its own
  wrapper (equinox waits on every call) is listed with the library's name, not as the user's sync.
- Compilations: `jax.monitoring` duration events (trace, lowering to MLIR, XLA compile), from
  the one listener `bench`'s monitors use (`monitors.COMPILE_LISTENERS`), are
  attributed to the top-level jitted call running in the same thread; one XLA compile is one
  new executable (a `.lower()` done earlier leaves only the compile to the call). Events
  outside any jitted call belong to eager (op-by-op) work and explicit `.lower()`.
- Why it recompiled: `jax_explain_cache_misses` is switched on and JAX's explanations are taken
  from its logger (and not printed), parsed by `run.cachemiss`.
- Execution time, measured on a sample of the top-level calls (the first `TIME_FIRST` of each
  function, then every `TIME_EVERY`-th, at most one per `TIME_GAP_S`): the outputs of the call
  before are waited for, then the call is made and its own outputs waited for, in the calling
  thread, so the sample is the call's time from dispatch to results with nothing else queued.
  A function's device time is the sum of its samples plus its other calls at the samples'
  median (the report says how many were timed); a call that compiled is not a sample. On the
  same schedule (the gap aside), where the call was made and its arguments abstractly
  (`arguments.call_sample`), with which leaves changed from one such call to the next: the
  loop body `loop_saving` scans or vmaps after the run.
- Where the program's thread spent the wall time (`TimeSplit`): compiling (the events above
  reported in that thread, an event nested in another counted once: `_compile_span`), in the
  device's hands (inside top-level jitted calls, their compilation excluded, and blocked in a
  host read or a sync: `HostReads.waited_in_this_thread`), and the rest, the program's own
  Python (eager op dispatch included), all measured on one clock. Other threads (host
  callbacks, data loaders) work while that thread runs on: their compilations are a note.
- Eager (op-by-op) work: `EvalTrace.process_primitive` (every primitive JAX executes outside a
  compiled function) is wrapped: each op is counted for every user function on the stack (one
  `EagerRecord` per function; a new frame object is a new call), its time and the eager
  compilations inside it are added to the innermost user function's record, and its NumPy
  inputs are counted as host-to-device copies at the user's line. At a call's first op its
  arguments are recorded abstractly (`arguments.signature_of`: the first calls, then a sample),
  so that the function can be jitted on them after the run (`jit_saving`).
- Device-to-host reads and syncs: through `runtime.host_reads` (the hooks `bench`'s transfer
  monitor uses too) on the host entry points of `jax.Array` (`float`, `int`, `bool`,
  `.item()`, `.tolist()`, `str`/`repr`/`format`, `__array__`, `._value`, `block_until_ready`),
  `numpy.asarray`/`array`/`asanyarray` (the CPU buffer-protocol path) and `jax.device_get` /
  `jax.block_until_ready`; each read is attributed to the user's line that asked
  for it and, when the array came out of a recorded jitted call, to that function (of outputs
  with many leaves, the first and last 8 are tracked: where losses and metrics sit). An array is
  counted once however often it is read (the host copy is cached on accelerators).
- Host-to-device copies outside jitted calls: `jax.device_put`, `jnp.asarray`, `jnp.array` of
  host data, attributed to the user's line.
- Host callbacks (`callbacks`): the callable given to `jax.debug.callback`, `jax.pure_callback`
  or `io_callback` from the user's code is timed on every run, by the line registering it; the
  reads and eager ops it makes are its own cost, not the program's reads or eager work.
- Eager ops issued inside a call into a JAX library other than JAX itself (optax's
  `optimiser.update`) are counted per user line too (`EagerRecord.line_library_ops`): such a
  line in a loop is a call to move into the jitted step.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import linecache
import logging
import os
import statistics
import sys
import threading
import time
import types
import weakref
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core as jax_core
from jax._src import source_info_util
from jax._src.array import ArrayImpl  # the class, not type(jnp.zeros(())): an op at import compiles
from jax._src.numpy import array_methods as _array_methods

from ..host_reads import HOST_READS, patch_attribute
from ..monitors import COMPILE_LISTENERS, CompileEvent, ReadOnce
from .arguments import (
    NOT_FUNCTIONS,
    ArgumentSample,
    CallSample,
    call_sample,
    note_arguments,
    same_value,
    worth_recording,
)
from .cachemiss import HEADER, NEW_FUNCTION_ARGUMENT, STATIC, CacheMiss, parse_cache_miss
from .callbacks import Callbacks
from .copy_saving import CopySpec
from .sites import SourceLine, UserFiles
from .transforms import Transforms

CACHE_MISS_LOGGER = "jax._src.interpreters.partial_eval"
# JAX raises these loggers' "PERSISTENT COMPILATION CACHE MISS" lines to WARNING when explaining
_QUIETED_LOGGERS = ("jax._src.compiler", "jax._src.compilation_cache")
_PRODUCERS_LIMIT = 16384
_PRODUCER_ENDS = 8  # output leaves tracked for read attribution: this many at each end
TIME_FIRST = 3  # calls of each function always timed (so short runs have samples)
TIME_EVERY = 16  # afterwards, one call in TIME_EVERY ...
TIME_GAP_S = 0.02  # ... and at most one timed call per TIME_GAP_S: each one costs the overlap
_CLOCKS_KEPT = 4096  # occurrences of a transfer whose step is kept (enough for the median gap)
_COMPILE_SPANS_KEPT = 4096  # per thread: an event containing more earlier ones than this is not seen
MAX_RECOMPILES_KEPT = 200  # causes kept per function (all compilations are counted)
STACKED_MIN = 32  # outputs of one jitted function stacked at once that count as a loop's results
_HOST_SCALARS = (int, float, bool, complex)
# not eager ops: host-copy entry points (hooked as such), and functions that take no arrays
_EAGER_SKIP = frozenset({"asarray", "array", "from_dlpack", "frombuffer", "fromfile", "fromfunction",
                         "fromiter", "fromstring", "load", "dtype", "iinfo", "finfo", "promote_types",
                         "result_type", "can_cast", "issubdtype", "isdtype", "ndim", "shape", "size",
                         "PRNGKey", "key", "key_data", "wrap_key_data", "key_impl"})

_NOT_GIVEN = object()  # `jax.jit(...)` called without the function: a decorator factory
_DEVICE_ONLY = frozenset({ArrayImpl})
_DEVICE_OR_NUMPY = frozenset({ArrayImpl, np.ndarray})


def _resolve_is_top_level() -> Callable[[], bool] | None:
    """True outside every trace (jit, vmap, grad): a call that really runs. JAX-version tolerant."""
    context = getattr(jax_core, "trace_ctx", None)
    if context is not None and hasattr(context, "is_top_level"):
        return context.is_top_level
    eval_trace = getattr(jax_core, "eval_trace", None)
    if context is not None and eval_trace is not None:
        return lambda: context.trace is eval_trace
    return None


_is_top_level: Callable[[], bool] = _resolve_is_top_level() or (lambda: True)


@dataclass
class Recompile:
    """One compilation of a function after its first, and why JAX says it happened."""

    reason: str
    arguments: tuple[str, ...]
    kinds: tuple[str, ...]
    site: SourceLine | None  # the call that missed the cache


@dataclass
class FunctionRecord:
    """Everything measured about one jitted Python function (all its jit wrappers)."""

    name: str  # qualified name
    path: str
    line: int
    jax_name: str  # what JAX calls it in events and explanations (`__name__`)
    positional_names: tuple[str, ...] = ()
    calls: int = 0
    traced_uses: int = 0  # calls made under another transformation (inlined, not run)
    compiles: int = 0
    compile_s: float = 0.0
    first_compile_s: float = 0.0  # of the call that compiled it first (the rest: recompilations)
    call_s: float = 0.0  # time inside top-level calls that did not compile
    exec_samples: list[float] = field(default_factory=list)  # synchronised calls: dispatch to results
    h2d_transfers: int = 0  # host leaves copied to the device as arguments
    host_array_args: int = 0  # of which NumPy arrays
    d2h_transfers: int = 0  # reads of this function's outputs on the host
    jit_sites: Counter[SourceLine] = field(default_factory=Counter)  # where wrappers were created
    recompiles: list[Recompile] = field(default_factory=list)  # the first MAX_RECOMPILES_KEPT
    # at the latest compilation: the static arguments that are functions, by name, as (code, id):
    # the same code in a new object at the next one is a new function passed each call
    static_functions: dict[str, tuple[Any, int]] = field(default_factory=dict)
    # on the timed (sampled) top-level calls: where they were made, and how many took an output of
    # a jitted call as an argument (a state carried from step to step: a loop to scan, else to vmap)
    sampled_sites: Counter[SourceLine] = field(default_factory=Counter)
    # ... with the line that called the function making the call (a loop around that function)
    sampled_outer_sites: Counter[tuple[SourceLine, SourceLine]] = field(default_factory=Counter)
    sampled_carried: int = 0
    # the latest timed call's arguments, abstractly (`arguments.call_sample`), which of their
    # leaves changed from one timed call to the next, and the real jitted function called: what
    # `loop_saving` scans or vmaps after the run (None: the calls' structure changed)
    loop_sample: CallSample | None = None
    loop_varying: list[bool] | None = None
    loop_callable: Any = field(default=None, repr=False)
    loop_previous: list[Any] | None = field(default=None, repr=False)  # the leaves compared with
    loop_mixed: bool = False  # timed calls of different argument structures
    # its outputs collected in a list and stacked by one eager op after the loop (`jnp.stack`
    # over thousands of them compiles an op with that many operands): a scanned or vmapped loop
    # returns them stacked, so this time is part of what scanning or vmapping it saves
    stacked_s: float = 0.0  # those ops' time, their compilation included
    stacked_outputs: int = 0  # the most outputs stacked at once

    @property
    def wrappers_created(self) -> int:
        return sum(self.jit_sites.values())

    @property
    def carries_state(self) -> bool:
        """Most timed calls took an output of a jitted call: a state carried from call to call
        (a loop to scan), else independent calls (a loop to vmap)."""
        return self.sampled_carried * 2 >= sum(self.sampled_sites.values())

    @property
    def exec_measured(self) -> int:
        """How many calls were timed."""
        return len(self.exec_samples)

    @property
    def exec_estimate_s(self) -> float:
        """Device time of all calls: the timed calls, plus the others at the timed calls' median."""
        samples = self.exec_samples
        if not samples:
            return 0.0
        others = max(0, self.calls - len(samples))
        return sum(samples) + others * statistics.median(samples)


class LineWork(NamedTuple):
    """The eager work some of a function's own lines issued: ops, their time, their compilation."""

    ops: int
    op_s: float
    compile_s: float


@dataclass
class EagerRecord:
    """Op-by-op work issued from one user function (not jitted): ops counted inclusively."""

    name: str
    path: str
    line: int
    code: Any  # the function's code object
    calls: int = 0  # calls seen doing eager work
    ops: int = 0  # primitives executed eagerly inside it (its callees included)
    own_ops: int = 0  # of which issued directly by its own lines
    # ... by line: ops, their time and their compilation (where a loop's body does its own work)
    line_ops: Counter[int] = field(default_factory=Counter)
    line_op_s: dict[int, float] = field(default_factory=dict)
    line_compile_s: dict[int, float] = field(default_factory=dict)
    # ... of which issued inside a call into a JAX library other than JAX itself (`optimiser.update`
    # of optax, a flax `apply`): a line whose ops are such a call's is a call to move into a jit
    line_library_ops: Counter[int] = field(default_factory=Counter)
    line_library: dict[int, str] = field(default_factory=dict)  # the library's top-level package
    # of its own ops, the control-flow ones (`CONTROL_FLOW_OPS`: `lax.fori_loop` run eagerly),
    # each traces its Python body and dispatches a loop: one is worth a jit on its own
    control_flow_ops: int = 0
    op_s: float = 0.0  # time inside its eager ops (callees' included), compilation excluded
    compiles: int = 0  # eager compilations inside them
    compile_s: float = 0.0
    first_call_compile_s: float = 0.0  # of which during its first call (the rest: compiled again)
    # its own lines' eager compilations by line, and the ops that compiled there: an op compiled on
    # every call (a `lax.scan` given a new closure each time) shows up as one line compiling per call
    line_compiles: Counter[int] = field(default_factory=Counter)
    line_compiled_ops: dict[int, Counter[str]] = field(default_factory=dict)
    # at its first call: the parameters bound to functions and to Python ints (what a jit of it
    # would take as static arguments: a function to trace, a length)
    function_parameters: tuple[str, ...] = ()
    int_parameters: tuple[str, ...] = ()
    h2d_transfers: int = 0  # NumPy inputs of its eager ops (each one copied to the device)
    h2d_sites: Counter[SourceLine] = field(default_factory=Counter)  # ... by the line of the op
    callers: Counter[SourceLine] = field(default_factory=Counter)  # where its calls came from
    caller_codes: set[Any] = field(default_factory=set)
    # its calls' arguments by signature (`arguments.signature_of`), the first MAX_SIGNATURES kinds
    argument_samples: dict[Any, ArgumentSample] = field(default_factory=dict)
    last_frame: Any = field(default=None, repr=False)  # the frame of its current call

    def work_of(self, lines: Iterable[int]) -> LineWork:
        """The eager work of these lines of its own (`line_ops`, `line_op_s`, `line_compile_s`)."""
        lines = list(lines)
        return LineWork(sum(self.line_ops[line] for line in lines),
                        sum(self.line_op_s.get(line, 0.0) for line in lines),
                        sum(self.line_compile_s.get(line, 0.0) for line in lines))


# primitives whose eager run traces the Python function given and runs a loop or a branch
CONTROL_FLOW_OPS = frozenset({"scan", "while", "cond"})

# JAX's own packages: an op issued through them (`jnp.dot`) is the user line's own op
_JAX_PACKAGES = frozenset({"jax", "jaxlib"})


class TransferKey(NamedTuple):
    """A kind of transfer at a user line: direction is h2d, d2h or sync (block_until_ready).

    A NamedTuple, not a dataclass: it is hashed and compared on every counted read, in C."""

    direction: str
    path: str
    line: int
    via: str  # the API that moved the data: "float()", "np.asarray", "jit argument", ...


class TransferLine:
    """What the run saw at one transfer key, on one object: counting a transfer is a few
    attribute updates on the object its call site found once (the line recurs every step).

    An int or float attribute's `+=` runs no Python code between its load and its store, so
    under CPython's GIL another thread cannot interleave with it: the counting takes no lock."""

    __slots__ = ("key", "count", "occurrences", "clocks", "functions", "seconds", "rereads")

    def __init__(self, key: TransferKey) -> None:
        self.key = key
        self.count = 0
        # separate occurrences: a run of events at one line with nothing else in between (a
        # comprehension converting a dict of arrays) is one; a line hit once per step is many
        self.occurrences = 0
        self.clocks: list[int] = []  # the run's clock at each occurrence, the first _CLOCKS_KEPT
        self.functions: Counter[str] | None = None  # whose outputs (reads of jitted functions' outputs)
        self.seconds: float | None = None  # inside the reads, syncs and explicit copies (None: not timed)
        # reads of arrays already read once (timed in `seconds` too): no wait for the device, but
        # host work, growing with a list of device arrays converted whole every step
        self.rereads = 0


class _CallFrame:
    """Compilation work seen during one top-level jitted call."""

    __slots__ = ("record", "compile_s", "compiles", "misses")

    def __init__(self, record: FunctionRecord) -> None:
        self.record = record
        self.compile_s = 0.0
        self.compiles = 0
        self.misses: list[CacheMiss] = []


class _CacheMissFilter(logging.Filter):
    """Takes JAX's cache-miss explanations off its logger and hands them to the instrument."""

    def __init__(self, instrument: Instrument, keep_printing: bool) -> None:
        super().__init__()
        self._instrument = instrument
        self._keep_printing = keep_printing

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith(HEADER):
            self._instrument._on_cache_miss(message)
        return self._keep_printing


class _QuietPersistentMisses(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.WARNING or "CACHE MISS" not in record.getMessage()


class RecordingJit:
    """What `jax.jit(f)` returns during a run: the real jitted function plus bookkeeping.

    The bookkeeping lives in slots, never in the instance `__dict__`: JAX's transformations
    (`grad`, `vmap`, `value_and_grad`, ...) copy the `__dict__` of the function they wrap onto
    their own wrapper, and a later `jax.jit` of that wrapper copies it again onto its wrapper, so
    state kept there would travel up and make an outer wrapper call an inner jitted function.
    The `__dict__` holds only what the real jitted function's holds (its name, docstring,
    `__wrapped__`, the user's function attributes), so what travels up is what travels up
    without the run.
    """

    __slots__ = ("_jitted", "_record", "_instrument", "_static_positions", "_static_names",
                 "__dict__", "__weakref__")

    def __init__(self, jitted: Any, record: FunctionRecord, instrument: Instrument,
                 static_positions: frozenset[int], static_names: frozenset[str]) -> None:
        functools.update_wrapper(self, jitted)
        # update_wrapper points `__wrapped__` at the jitted function; jax's points at the user's
        wrapped = getattr(jitted, "__wrapped__", _NOT_GIVEN)
        if wrapped is _NOT_GIVEN:
            del self.__dict__["__wrapped__"]
        else:
            self.__wrapped__ = wrapped
        self._jitted = jitted
        self._record = record
        self._instrument = instrument
        self._static_positions = static_positions
        self._static_names = static_names

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        instrument = self._instrument
        if not instrument.active or not _is_top_level():
            if instrument.active:
                self._record.traced_uses += 1
            return self._jitted(*args, **kwargs)
        return instrument._recorded_call(self, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name in RecordingJit.__slots__:  # not yet set (copying, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self._jitted, name)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # a jitted function stored on a class is a method, as with jax's own wrapper
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return repr(self._jitted)  # a program may print its jitted function


class Instrument:
    """Installs the instruments, collects the records, and removes them again."""

    def __init__(self, user_files: UserFiles, *, on_call: Callable[[FunctionRecord, Any], None] | None = None) -> None:
        self.user_files = user_files
        self.active = False
        self.functions: dict[tuple[str, int, str], FunctionRecord] = {}
        self.transfer_lines: dict[TransferKey, TransferLine] = {}
        self._last_transfer: TransferLine | None = None
        # lines run by a third-party library calling the user's code (an optimizer evaluating the
        # objective): the package's name. Its loop, not the program's step, decides how often
        self.transfer_drivers: dict[TransferKey, str] = {}
        # calls of the user's JAX work so far (top-level jitted calls, calls of functions running ops
        # eagerly), and its value at each occurrence of a transfer: how many steps lie between them
        self.clock = 0
        # NumPy arrays passed to jitted calls at a line, by (shape, dtype): what their copies cost is
        # measured after the run (`copy_saving`)
        self.argument_copies: dict[TransferKey, Counter[CopySpec]] = {}
        self._read_lines: dict[tuple[str, SourceLine, str], TransferLine] = {}
        self._read_instructions: dict[tuple[Any, int, str], TransferLine] = {}  # (code, instruction, via)
        self._passing_sites: dict[tuple[Any, int], SourceLine | None] = {}  # (code, instruction) of the call
        # a passing line -> its transfer line and copy counts (made once: the line recurs every step)
        self._argument_sites: dict[SourceLine, tuple[TransferLine, Counter[CopySpec]]] = {}
        self.eager_compiles = 0
        self.eager_compile_s = 0.0  # the program's thread compiling outside jitted calls
        self.compile_s_by_kind: dict[str, float] = defaultdict(float)  # as reported: nested events overlap
        self.program_compile_s = 0.0  # the program's thread compiling (nested events counted once)
        self.other_threads_compile_s = 0.0  # other threads compiling, while the program's thread ran on
        self.eager: dict[Any, EagerRecord] = {}  # code object -> record
        self.eager_ops = 0
        self.eager_op_s = 0.0  # the program's thread inside eager ops, their compilation excluded
        self.in_calls_s = 0.0  # the program's thread inside top-level jitted calls, compilation excluded
        self._waited_at_install = 0.0
        self.waited_s = 0.0  # the program's thread blocked in host reads and syncs
        self._program_thread = threading.get_ident()
        self.on_call = on_call  # e.g. the trace's step counter
        # wraps each top-level call (record, call number) -> context manager: trace step markers
        self.annotate: Callable[[FunctionRecord, int], Any] | None = None
        self._local = threading.local()
        self._producers: dict[int, tuple[weakref.ref, FunctionRecord]] = {}
        self._read_arrays = ReadOnce()
        self._lock = threading.Lock()
        self._restore: list[Callable[[], None]] = []
        self._previous_leaves: list[Any] = []  # outputs of the latest top-level call
        self._next_timed = 0.0  # perf_counter time before which no sampled call is timed
        self._original_block = ArrayImpl.block_until_ready
        self.callbacks = Callbacks(user_files)  # host callbacks' runs, timed
        self.transforms = Transforms(user_files)  # functions made by jax.grad, vmap, ...: where, and their eager calls

    # the transfer lines' counts by key, for the report
    @property
    def transfers(self) -> Counter[TransferKey]:
        return Counter({key: line.count for key, line in self.transfer_lines.items()})

    @property
    def transfer_occurrences(self) -> Counter[TransferKey]:
        return Counter({key: line.occurrences for key, line in self.transfer_lines.items()})

    @property
    def occurrence_clocks(self) -> dict[TransferKey, list[int]]:
        return {key: line.clocks for key, line in self.transfer_lines.items()}

    @property
    def transfer_functions(self) -> dict[TransferKey, Counter[str]]:
        return {key: line.functions for key, line in self.transfer_lines.items() if line.functions}

    @property
    def transfer_s(self) -> dict[TransferKey, float]:
        """Seconds inside the reads, syncs and explicit copies of each key timed (jit arguments
        are copied inside the call, not timed apart)."""
        return {key: line.seconds for key, line in self.transfer_lines.items() if line.seconds is not None}

    # ------------------------------------------------------------ install / uninstall

    def install(self) -> None:
        """Switch every instrument on (call once, before the program runs)."""
        if _resolve_is_top_level() is None:
            raise RuntimeError(f"jaxopt-audit run cannot tell traced from real calls in jax {jax.__version__} "
                               "(no jax._src.core.trace_ctx); use jax 0.4.36 or newer")
        # JAX's filtered tracebacks and cache-miss call sites then skip this tool's frames
        register = getattr(source_info_util, "register_exclusion", None)
        if register is not None:
            register(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # all of runtime/
        self._patch(jax, "jit", self._make_jit_factory(jax.jit))
        self._patch(jax, "pmap", self._make_jit_factory(jax.pmap, "static_broadcasted_argnums"))
        self._install_compile_listener()
        self._install_cache_miss_capture()
        self._install_host_reads()
        self._install_host_writes()
        self._install_eager_ops()
        self.callbacks.install(self._patch)
        self.transforms.install(self._patch)
        self.callbacks.counting = True
        self._program_thread = threading.get_ident()
        self._waited_at_install = HOST_READS.waited_in_this_thread()
        self.active = True

    def uninstall(self) -> None:
        """Restore everything."""
        if self.active:
            self.waited_s = HOST_READS.waited_in_this_thread() - self._waited_at_install
        self.active = False
        self.callbacks.counting = False
        for record in self.eager.values():
            record.last_frame = None  # frames hold the program's locals
        for function in self.functions.values():
            function.loop_previous = None  # the program's arrays
        self.transforms.forget_frames()
        while self._restore:
            self._restore.pop()()

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        patch_attribute(owner, name, replacement, self._restore)

    # ------------------------------------------------------------ jit

    def _make_jit_factory(self, real_jit: Callable[..., Any],
                          static_option: str = "static_argnums") -> Callable[..., Any]:
        instrument = self

        @functools.wraps(real_jit)
        def jit(fun: Any = _NOT_GIVEN, /, *args: Any, **options: Any) -> Any:
            if fun is _NOT_GIVEN:
                if static_option != "static_argnums":  # pmap has no decorator factory: its own error
                    return real_jit(*args, **options)
                return lambda f: jit(f, *args, **options)  # @jax.jit(static_argnames=...)
            jitted = real_jit(fun, *args, **options)
            if not instrument.active:
                return jitted
            statics = dict(options)
            if static_option != "static_argnums":  # pmap: static_broadcasted_argnums
                statics["static_argnums"] = statics.pop(static_option, None)
            return instrument._wrap(fun, jitted, statics)

        return jit

    def _wrap(self, fun: Any, jitted: Any, options: dict[str, Any]) -> Any:
        try:
            target = inspect.unwrap(fun.func if isinstance(fun, functools.partial) else fun)
        except ValueError:  # a cycle of __wrapped__: the object itself
            target = fun
        code = getattr(target, "__code__", None)
        name = getattr(target, "__qualname__", None) or getattr(fun, "__name__", repr(fun))
        path: str = code.co_filename if code else "<unknown>"
        line: int = code.co_firstlineno if code else 0
        site = self.user_files.caller_site(3)
        if code is not None and not self.user_files.is_user(code.co_filename):
            # jit applied by a library (equinox's filter_jit jits its own wrapper, named after the
            # user's function): the user's function when their code names it, else the user's
            # line that applied the library's jit (a decorator line)
            found = self._user_code_named(getattr(fun, "__name__", None))
            if found is not None:
                path, line = found.co_filename, found.co_firstlineno
            elif site is not None and not _is_import(site):
                path, line = site
            # else jitted as the user's import ran the library's module: the library's own function
        name = str(name)
        transformation = _transformation(fun)
        if transformation is not None:  # jit(grad(f)) is another program than jit(f)
            name = f"{transformation}({name})"
        key = (path, line, name)
        record = self.functions.get(key)
        positions, names, positional = _static_arguments(fun, options)
        if record is None:
            jax_name = str(getattr(fun, "__name__", None) or getattr(target, "__name__", name))
            record = self.functions[key] = FunctionRecord(name, path, line, jax_name, positional)
        if site is not None:
            record.jit_sites[site] += 1
        return RecordingJit(jitted, record, self, positions, names)

    def _user_code_named(self, name: str | None) -> Any:
        """The code of the user's function `name`, looked up in the globals of the user's frames."""
        if not name:
            return None
        frame: FrameType | None = sys._getframe(2)
        while frame is not None:
            if self.user_files.is_user(frame.f_code.co_filename):
                found = frame.f_globals.get(name)
                if found is not None:
                    try:
                        found = inspect.unwrap(found)
                    except ValueError:
                        return None
                    code = getattr(found, "__code__", None)
                    if code is not None and self.user_files.is_user(code.co_filename):
                        return code
            frame = frame.f_back
        return None

    def _recorded_call(self, wrapper: RecordingJit, args: tuple, kwargs: dict) -> Any:
        record = wrapper._record
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        nested = bool(stack)
        sampled = not stack and (record.calls < TIME_FIRST or record.calls % TIME_EVERY == 0)
        host_leaves, host_arrays, host_specs, host_values = self._count_host_leaves(wrapper, args, kwargs, sampled)
        if sampled:
            self._note_loop_sample(wrapper, record, args, kwargs)
        frame = _CallFrame(record)
        self._last_transfer = None  # a jitted call separates occurrences of transfers
        begin = time.perf_counter()
        timed = not nested and (record.calls < TIME_FIRST or
                                (record.calls % TIME_EVERY == 0 and begin >= self._next_timed))
        if timed:
            self.wait(self._previous_leaves)  # nothing queued before the timed call
        stack.append(frame)
        start = time.perf_counter()
        try:
            if self.annotate is None:
                out = wrapper._jitted(*args, **kwargs)
            else:
                with self.annotate(record, record.calls + 1):
                    out = wrapper._jitted(*args, **kwargs)
            if timed:
                self.wait(out)
        finally:
            end = time.perf_counter()
            stack.pop()
            if frame.compiles or frame.compile_s:
                self._account_compilation(frame, nested, wrapper, args, kwargs)
        record.calls += 1
        if not nested:
            self.clock += 1
        inside = max(0.0, end - start - frame.compile_s)
        compiled = bool(frame.compiles or frame.compile_s)
        if not compiled:
            record.call_s += inside
        if not nested and threading.get_ident() == self._program_thread:
            # a call that compiled also ran: only its compile events are compile time
            self.in_calls_s += max(0.0, end - begin - frame.compile_s)
        if timed:
            self._next_timed = end + TIME_GAP_S
            if not compiled:  # a compiling call says nothing of steady state
                record.exec_samples.append(inside)
        if host_leaves:
            record.h2d_transfers += host_leaves
            if host_arrays:
                record.host_array_args += host_arrays
                caller = sys._getframe(2)
                where = (caller.f_code, caller.f_lasti)
                # the passing line is looked for on sampled calls (a stack walk and the caller's
                # arguments); the calls between from the same call instruction pass the same way
                site = None if sampled else self._passing_sites.get(where)
                if site is None:
                    site = self._passing_sites[where] = self.user_files.passing_site(caller, host_values)
                if site is not None:
                    copies = self._argument_sites.get(site)
                    if copies is None:
                        key = TransferKey("h2d", site[0], site[1], "jit argument")
                        copies = self._argument_sites[site] = (self._transfer_line(key),
                                                               self.argument_copies.setdefault(key, Counter()))
                    self._count_transfer(copies[0], record.name, host_arrays)
                    specs = copies[1]
                    for spec in host_specs:
                        specs[spec] += 1
        leaves = jax.tree_util.tree_leaves(out)
        if not set(map(type, leaves)) <= _DEVICE_ONLY:
            leaves = [leaf for leaf in leaves if type(leaf) is ArrayImpl]
        if leaves:
            self._remember_producer(leaves, record)
            self._previous_leaves = leaves
        if self.on_call is not None:
            self.on_call(record, out)
        return out

    def _note_loop_sample(self, wrapper: RecordingJit, record: FunctionRecord, args: tuple, kwargs: dict) -> None:
        site, outer = self.user_files.caller_and_outer_site(4)
        if site is not None:
            record.sampled_sites[site] += 1
            if outer is not None:
                record.sampled_outer_sites[site, outer] += 1
        producers = self._producers
        leaves, sample = call_sample(args, kwargs, wrapper._static_positions, wrapper._static_names)
        for leaf in leaves:
            producer = producers.get(id(leaf))
            if producer is not None and producer[0]() is leaf:
                record.sampled_carried += 1
                break
        if record.loop_mixed:
            return
        previous, kept = record.loop_previous, record.loop_sample
        if sample is None or (previous is not None and (kept is None or sample.treedef != kept.treedef)):
            # arguments of different structures (or none jax can flatten): no one loop body to scan or vmap
            record.loop_mixed = True
            record.loop_sample = record.loop_varying = record.loop_previous = None
            return
        if previous is None or record.loop_varying is None:  # the first timed call
            record.loop_varying = [False] * len(leaves)
        else:
            varying = record.loop_varying
            for i, (leaf, before) in enumerate(zip(leaves, previous, strict=True)):
                if not varying[i] and not same_value(leaf, before):
                    varying[i] = True
        record.loop_sample = sample
        record.loop_previous = leaves
        record.loop_callable = wrapper._jitted

    def _count_host_leaves(self, wrapper: RecordingJit, args: tuple, kwargs: dict,
                           sampled: bool) -> tuple[int, int, list[CopySpec], list[Any]]:
        """(host leaves, NumPy arrays among them, their (shape, dtype, 64-byte aligned) on sampled
        calls (else none), the arrays).

        The specs are what `copy_saving` times after the run, in the proportions the sampled
        calls show, scaled to every copy counted: building them (and reading an array's address,
        for which NumPy builds `__array_interface__`) on every call would cost the step more."""
        positions, names = wrapper._static_positions, wrapper._static_names
        if positions:
            args = tuple(a for i, a in enumerate(args) if i not in positions)
        if names:
            kwargs = {k: v for k, v in kwargs.items() if k not in names}
        all_leaves = jax.tree_util.tree_leaves((args, kwargs))
        kinds = set(map(type, all_leaves))
        if kinds <= _DEVICE_ONLY:  # the common case, checked in C
            return 0, 0, [], []
        values = [leaf for leaf in all_leaves if type(leaf) is np.ndarray]
        arrays = leaves = len(values)
        if not kinds <= _DEVICE_OR_NUMPY:
            leaves += sum(1 for leaf in all_leaves if isinstance(leaf, np.generic) or type(leaf) in _HOST_SCALARS)
        # 64-byte aligned buffers reach XLA on CPU without a copy: the copy's cost depends on it
        specs = [(leaf.shape, leaf.dtype, leaf.__array_interface__["data"][0] % 64 == 0)
                 for leaf in values] if sampled else []
        return leaves, arrays, specs, values

    def _stack(self) -> list[_CallFrame]:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    # ------------------------------------------------------------ compilation

    def _install_compile_listener(self) -> None:
        listener = self._on_compile_event
        COMPILE_LISTENERS.subscribe(listener)  # the one listener `bench`'s monitors use too
        self._restore.append(lambda: COMPILE_LISTENERS.unsubscribe(listener))

    def _on_compile_event(self, event: CompileEvent) -> None:
        if not self.active:
            return
        self.compile_s_by_kind[event.kind] += event.seconds
        duration = self._compile_span(event.seconds)  # the part not already inside an earlier event
        in_program_thread = threading.get_ident() == self._program_thread
        if in_program_thread:
            self.program_compile_s += duration
        else:
            self.other_threads_compile_s += duration
        stack = getattr(self._local, "stack", None)
        if stack:
            frame = stack[0]  # the outermost top-level call in this thread owns the work
            frame.compile_s += duration
            if event.kind == "compile":
                frame.compiles += 1
        else:
            if in_program_thread:  # as the split: other threads' compilations are a note
                self.eager_compile_s += duration
                self.eager_compiles += event.kind == "compile"
            owners = getattr(self._local, "eager_owner", None)
            if owners is not None:  # compiling an eager op the user's functions issued
                for owner in owners:
                    owner.compile_s += duration
                    owner.compiles += event.kind == "compile"
                    if owner.calls == 1:
                        owner.first_call_compile_s += duration
                line, innermost = self._local.eager_line, owners[0]
                times = innermost.line_compile_s
                times[line] = times.get(line, 0.0) + duration
                if event.kind == "compile":
                    innermost.line_compiles[line] += 1
                    ops = innermost.line_compiled_ops.get(line)
                    if ops is None:
                        ops = innermost.line_compiled_ops[line] = Counter()
                    ops[getattr(self._local, "eager_op_name", "?")] += 1
                self._local.eager_compile_s += duration

    def _compile_span(self, seconds: float) -> float:
        """Seconds of this thread's compile time that a just-ended event of `seconds` adds.

        JAX reports each event as it ends, in the thread that did the work, and a trace of an
        outer function contains the traces of the jitted functions it calls: so an event either
        contains earlier ones (they lie at the end of the thread's list) or follows them. The
        thread keeps its events' union as disjoint spans, the latest last.
        """
        local = self._local
        spans = getattr(local, "compile_spans", None)
        if spans is None:
            spans = local.compile_spans = []
        end = time.perf_counter()
        begin = end - seconds
        added = seconds
        while spans and spans[-1][1] > begin:
            earlier_begin, earlier_end = spans.pop()
            added -= min(earlier_end, end) - max(earlier_begin, begin)  # the overlap, counted already
            begin, end = min(begin, earlier_begin), max(end, earlier_end)
        spans.append((begin, end))
        if len(spans) > _COMPILE_SPANS_KEPT:
            del spans[: len(spans) - _COMPILE_SPANS_KEPT]
        return max(0.0, added)

    def _account_compilation(self, frame: _CallFrame, nested: bool, wrapper: RecordingJit,
                             args: tuple, kwargs: dict) -> None:
        record = frame.record
        if nested:  # a top-level call inside another (a host callback): the outer frame has it
            return
        if record.compiles == 0 and frame.compiles:
            record.first_compile_s = frame.compile_s
        record.compile_s += frame.compile_s
        functions = _static_functions(wrapper, args, kwargs) if frame.compiles else {}
        for _ in range(frame.compiles):
            record.compiles += 1
            if record.compiles == 1 or len(record.recompiles) >= MAX_RECOMPILES_KEPT:
                continue
            miss = _own_miss(frame.misses, record)
            if miss is None:
                record.recompiles.append(self._unexplained_recompile(record, functions))
            else:
                site = SourceLine(miss.call_path, miss.call_line) if miss.call_path and miss.call_line else None
                record.recompiles.append(Recompile(miss.reason, miss.arguments, miss.kinds, site))
        if functions:
            record.static_functions = functions

    def _unexplained_recompile(self, record: FunctionRecord, functions: dict[str, tuple[Any, int]]) -> Recompile:
        """A compilation JAX did not explain: a static argument that is a new function object
        with the code of the one before (a closure or lambda made anew for each call: JAX keys
        its cache on the object), else unknown; at the user's line that made the call."""
        site = self.user_files.caller_site(3)
        renewed = [name for name, (code, ident) in functions.items()
                   if name in record.static_functions and record.static_functions[name][0] is code
                   and record.static_functions[name][1] != ident]
        if not renewed:
            return Recompile("recompiled without a tracing cache miss (new device, sharding or jit options)",
                             (), ("unknown",), site)
        made = self._closure_at(site)
        user_code = any(self.user_files.is_user(functions[name][0].co_filename) for name in renewed)
        if made is None and not user_code:
            # a library's wrapper of the function passed (odeint's closure_convert): without a closure
            # made at the calling line, it is another function, not the same one made again
            return Recompile(f"{', '.join(renewed)}: another function than at the previous compilation",
                             tuple(renewed), (STATIC,), site)
        passed = f" ({made})" if made else ""
        return Recompile(
            f"{', '.join(renewed)}: a new function object on every call{passed}; JAX keys its cache on the "
            "function object, so it traces and compiles again", tuple(renewed), (NEW_FUNCTION_ARGUMENT,), site)

    def _closure_at(self, site: SourceLine | None) -> str | None:
        """The function the user's frame at `site` defines anew on each call and passes on:
        'ode_func, defined at prog.py:111 inside predict'; None when there is none."""
        if site is None:
            return None
        frame: FrameType | None = sys._getframe(2)
        while frame is not None and not (frame.f_code.co_filename == site.path and frame.f_lineno == site.line):
            frame = frame.f_back
        if frame is None:
            return None
        nested = {c for c in frame.f_code.co_consts if isinstance(c, types.CodeType)}
        # a local bound to a function defined in this frame (`def f` or `f = lambda`), else a lambda
        # written on the calling line itself
        found = [(name, value.__code__) for name, value in frame.f_locals.items()
                 if isinstance(value, types.FunctionType) and value.__code__ in nested]
        if not found:
            found = [(c.co_name, c) for c in nested if c.co_name == "<lambda>" and c.co_firstlineno == site.line]
        if len(found) != 1:
            return None
        name, code = found[0]
        where = frame.f_code.co_qualname if frame.f_code.co_name != "<module>" else "the module"
        return f"{name}, defined at {os.path.basename(code.co_filename)}:{code.co_firstlineno} inside {where}"

    def _install_cache_miss_capture(self) -> None:
        already = bool(jax.config.jax_explain_cache_misses)  # type: ignore[attr-defined]
        jax.config.update("jax_explain_cache_misses", True)
        self._restore.append(lambda: jax.config.update("jax_explain_cache_misses", already))
        miss_logger = logging.getLogger(CACHE_MISS_LOGGER)
        capture = _CacheMissFilter(self, keep_printing=already)
        miss_logger.addFilter(capture)
        self._restore.append(lambda: miss_logger.removeFilter(capture))
        if not already:
            quiet = _QuietPersistentMisses()
            for name in _QUIETED_LOGGERS:
                other = logging.getLogger(name)
                other.addFilter(quiet)
                self._restore.append(functools.partial(other.removeFilter, quiet))

    def _on_cache_miss(self, message: str) -> None:
        stack = getattr(self._local, "stack", None)
        if not stack:
            return
        frame = stack[0]
        miss = parse_cache_miss(message, frame.record.positional_names)
        if miss is not None:
            # JAX's own call site can be a library frame; the report wants the user's line
            site = self.user_files.caller_site(1)
            if site is not None:
                miss = dataclasses.replace(miss, call_path=site.path, call_line=site.line)
            frame.misses.append(miss)

    # ------------------------------------------------------------ execution time

    def wait(self, outputs: Any) -> None:
        """Block until `outputs` are computed, without counting it as the program's sync."""
        for leaf in jax.tree_util.tree_leaves(outputs):
            if type(leaf) is ArrayImpl and not leaf.is_deleted():
                self._original_block(leaf)

    # ------------------------------------------------------------ host reads and syncs

    def _remember_producer(self, leaves: list[Any], record: FunctionRecord) -> None:
        producers = self._producers
        if len(leaves) > 2 * _PRODUCER_ENDS:
            # a weakref costs ~2 us per leaf (made and cleared): a params tree would dominate the
            # step, while the values read per step (loss, metrics) sit at either end of the outputs
            leaves = leaves[:_PRODUCER_ENDS] + leaves[-_PRODUCER_ENDS:]
        producers.update(zip(map(id, leaves), zip(map(weakref.ref, leaves), itertools.repeat(record), strict=False),
                             strict=True))
        if len(producers) > _PRODUCERS_LIMIT:
            # drop the oldest half: reads of very old outputs lose their attribution, nothing else
            for key in list(producers)[: _PRODUCERS_LIMIT // 2]:
                del producers[key]

    def _install_host_reads(self) -> None:
        # the hooks `bench`'s TransferMonitor uses too
        HOST_READS.subscribe(self._on_host_read, self._on_read_finished)
        self._restore.append(lambda: HOST_READS.unsubscribe(self._on_host_read, self._on_read_finished))

    def _on_host_read(self, array: Any, via: str, direction: str) -> None:
        if not self.active or self.callbacks.inside():  # a callback's reads are its own cost
            return
        if direction == "sync":
            caller = sys._getframe(3)  # what called the hooked block_until_ready
            if not self.user_files.is_user(caller.f_code.co_filename):
                via = f"{via} in {_package_of(caller.f_code.co_filename)}"  # a library's own sync
            self._note_sync(via)
            return
        # a read (one per step in many loops): counted here, not in a further call.
        # ReadOnce takes no lock: two threads reading one array at once count it twice at worst
        if not self._read_arrays.first(array):
            # already on the host: not counted as a read, but its conversion is timed where the
            # line has read arrays before (`np.mean(losses)` over a list that grows every step)
            reader = sys._getframe(2)
            known = self._read_instructions.get((reader.f_code, reader.f_lasti, via))
            if known is None:  # read through a library's frame (NumPy's mean): the user's line above it
                site = self.user_files.site(reader)
                known = self._read_lines.get((direction, site, via)) if site is not None else None
            if known is not None:
                known.rereads += 1
                self._local.pending_read = known
            return
        producer = self._producers.get(id(array))
        record = producer[1] if producer is not None and producer[0]() is array else None
        if record is not None:
            record.d2h_transfers += 1
        # the hook's caller: the user's line for a read written there (`loss.item()`), whose
        # instruction then names the line without a walk up the stack on the next step
        caller = sys._getframe(2)
        instruction = (caller.f_code, caller.f_lasti, via)
        line = self._read_instructions.get(instruction)
        if line is None:
            site = self.user_files.site(caller)
            if site is None:
                return
            line = self._read_lines.get((direction, site, via))
            if line is None:
                line = self._read_lines[direction, site, via] = self._transfer_line(
                    TransferKey(direction, site[0], site[1], via))
            if self.user_files.is_user(caller.f_code.co_filename):
                self._read_instructions[instruction] = line
        self._count_transfer(line, record.name if record else None)
        self._local.pending_read = line

    def _on_read_finished(self, seconds: float) -> None:
        """The seconds the read or sync just counted took, charged to its line."""
        line = getattr(self._local, "pending_read", None)
        if line is not None:
            self._local.pending_read = None
            line.seconds = (line.seconds or 0.0) + seconds

    def _note_sync(self, via: str) -> None:
        site = self.user_files.caller_site(3)
        if site is not None:
            line = self._transfer_line(TransferKey("sync", site.path, site.line, via))
            self._count_transfer(line, None)
            self._local.pending_read = line

    def _transfer_line(self, key: TransferKey) -> TransferLine:
        line = self.transfer_lines.get(key)
        if line is None:
            with self._lock:
                line = self.transfer_lines.get(key)
                if line is None:
                    # once per line: does a library's loop (SciPy's optimizer) run it?
                    driver = self.user_files.third_party_caller(sys._getframe(1))
                    if driver is not None:
                        self.transfer_drivers[key] = driver
                    line = self.transfer_lines[key] = TransferLine(key)
        return line

    def _count_transfer(self, line: TransferLine, function: str | None, count: int = 1) -> None:
        line.count += count
        if line is not self._last_transfer:
            line.occurrences += 1
            self._last_transfer = line
            if len(line.clocks) < _CLOCKS_KEPT:
                line.clocks.append(self.clock)
        if function is not None:
            functions = line.functions
            if functions is None:
                functions = line.functions = Counter()
            functions[function] += count

    # ------------------------------------------------------------ eager (op-by-op) work

    def _install_eager_ops(self) -> None:
        # primitives executed one by one (lax, grad's primal ops) ...
        self._patch(jax_core.EvalTrace, "process_primitive",
                    self._eager_entry(jax_core.EvalTrace.process_primitive, primitive=True))
        # ... and the library functions that are themselves jitted (most of jax.numpy, jax.nn,
        # jax.random): their cached calls run in C++ and never reach process_primitive
        for module in (jnp, jax.nn, jax.random):
            for name, value in list(vars(module).items()):
                if name.startswith("_") or name in _EAGER_SKIP or not callable(value) or isinstance(value, type):
                    continue
                kind = type(value).__name__
                if kind == "function":
                    self._patch(module, name, functools.wraps(value)(self._eager_entry(value)))
                elif kind == "PjitFunction":  # keeps `.lower`, `.trace`, ... as the jitted function has them
                    self._patch(module, name, _ForwardingEntry(value, self._eager_entry(value)))
        ufunc = getattr(jnp, "ufunc", None)
        if isinstance(ufunc, type) and "__call__" in vars(ufunc):
            self._patch(ufunc, "__call__", self._eager_entry(vars(ufunc)["__call__"]))
        array_operators = getattr(_array_methods, "_array_operators", {})
        for name in array_operators:
            original = ArrayImpl.__dict__.get(name)
            if original is not None and callable(original):
                self._patch(ArrayImpl, name, self._eager_entry(original))

    def _eager_entry(self, original: Callable[..., Any], primitive: bool = False) -> Callable[..., Any]:
        """`original` counted as one eager op when it runs outside every trace and jitted call."""
        instrument = self
        local = self._local
        name = getattr(original, "__name__", "?")

        def eager(*args: Any, **kwargs: Any) -> Any:
            if (not instrument.active or getattr(local, "eager_owner", None) is not None
                    or getattr(local, "stack", None) or HOST_READS.inside() or instrument.callbacks.inside()
                    or (not primitive and not _is_top_level())):
                return original(*args, **kwargs)
            owners = instrument._note_eager_op(args[2] if primitive else args)
            if not owners:
                return original(*args, **kwargs)
            stacked = None if primitive else instrument._stacked_outputs_of(args)
            local.eager_owner, local.eager_compile_s = owners, 0.0
            local.eager_op_name = op_name = getattr(args[1], "name", "?") if primitive else name
            if op_name in CONTROL_FLOW_OPS:
                owners[0].control_flow_ops += 1
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent = max(0.0, time.perf_counter() - start - local.eager_compile_s)
                if threading.get_ident() == instrument._program_thread:  # part of the split's host time
                    instrument.eager_op_s += spent
                line = local.eager_line
                if stacked is None:
                    for owner in owners:
                        owner.op_s += spent
                    times = owners[0].line_op_s
                    times[line] = times.get(line, 0.0) + spent
                else:  # the loop's cost, not its caller's: a scanned or vmapped loop removes it
                    compiled = local.eager_compile_s
                    stacked.stacked_s += spent + compiled
                    stacked.stacked_outputs = max(stacked.stacked_outputs, len(args[0]))
                    for owner in owners:
                        owner.compile_s -= compiled
                    times = owners[0].line_compile_s
                    times[line] = times.get(line, 0.0) - compiled
                local.eager_owner = None

        return eager

    def _stacked_outputs_of(self, args: tuple) -> FunctionRecord | None:
        """The jitted function whose outputs, many of them, an eager op is given as one list
        (`jnp.stack(outputs)` after a loop): the first and last both its outputs."""
        items = args[0] if args else None
        if not isinstance(items, (list, tuple)) or len(items) < STACKED_MIN:
            return None
        first, last = self._producers.get(id(items[0])), self._producers.get(id(items[-1]))
        if first is None or last is None or first[1] is not last[1]:
            return None
        return first[1] if first[0]() is items[0] and last[0]() is items[-1] else None

    def _note_eager_op(self, args: Any) -> list[EagerRecord]:
        """Count one eager op for the user functions on the stack (innermost first)."""
        self.eager_ops += 1
        self._last_transfer = None  # an op between two reads: separate occurrences
        frame: FrameType | None = sys._getframe(2)
        is_user = self.user_files.is_user
        chain: list[EagerRecord] = []
        site: SourceLine | None = None
        called: FrameType | None = None  # the library frame the innermost user line called
        while frame is not None:
            code = frame.f_code
            if is_user(code.co_filename):
                if site is None:
                    site = SourceLine(code.co_filename, frame.f_lineno)
                record = self.eager.get(code)
                if record is None:
                    record = self.eager[code] = EagerRecord(code.co_qualname, code.co_filename,
                                                            code.co_firstlineno, code)
                record.ops += 1
                if record.last_frame is not frame:
                    record.last_frame = frame
                    record.calls += 1
                    self.clock += 1
                    caller = frame.f_back
                    while caller is not None and not is_user(caller.f_code.co_filename):
                        caller = caller.f_back
                    if caller is not None:
                        record.callers[SourceLine(caller.f_code.co_filename, caller.f_lineno)] += 1
                        record.caller_codes.add(caller.f_code)
                    if code.co_name not in NOT_FUNCTIONS and worth_recording(record.calls):
                        note_arguments(record.argument_samples, frame)
                        if record.calls == 1:
                            _note_static_parameters(record, frame)
                if not chain:
                    record.own_ops += 1
                    record.line_ops[site.line] += 1
                    self._local.eager_line = site.line
                    package = _package_of(called.f_code.co_filename) if called is not None else "jax"
                    if package not in _JAX_PACKAGES:
                        record.line_library_ops[site.line] += 1
                        record.line_library[site.line] = package
                    if called is not None and called.f_code in self.transforms.codes:
                        self.transforms.note_op(frame, called, site)
                chain.append(record)
                if code.co_name == "<module>":  # the script's top: nothing above is the user's
                    break
            elif site is None:
                called = frame
            frame = frame.f_back
        if chain and site is not None:
            # NumPy arrays (JAX wraps them as ndarray subclasses); 0-d ones are Python scalars' literals
            host = [arg for arg in args if isinstance(arg, np.ndarray) and arg.ndim]
            arrays = len(host)
            if arrays:
                site = self.user_files.passing_site(sys._getframe(2), host) or site
                for record in chain:
                    record.h2d_transfers += arrays
                    record.h2d_sites[site] += arrays
                self._count_transfer(self._transfer_line(TransferKey("h2d", site.path, site.line, "eager op")), None,
                                     arrays)
        return chain

    # ------------------------------------------------------------ host writes outside jit

    def _install_host_writes(self) -> None:
        self._patch(jax, "device_put", self._writing_function(jax.device_put, "jax.device_put"))
        for name in ("asarray", "array"):
            self._patch(jnp, name, self._writing_function(getattr(jnp, name), f"jnp.{name}"))

    def _writing_function(self, original: Callable[..., Any], via: str) -> Callable[..., Any]:
        instrument = self
        python_lists = via != "jax.device_put"  # jnp.array / jnp.asarray make one array of a list

        @functools.wraps(original)
        def put(*args: Any, **kwargs: Any) -> Any:
            # the value passed by keyword (`jnp.asarray(a=x)`) is not the common case: uncounted
            if not instrument.active or not args or HOST_READS.inside() or not _is_top_level():
                return original(*args, **kwargs)
            count = _host_array_count(args[0])
            what = via
            if (not count and python_lists and _python_values(args[0])
                    and instrument.user_files.is_user(sys._getframe(1).f_code.co_filename)):
                # nested Python lists of numbers written in the user's code (a library's own small
                # constants are its business): built element by element on the host, then copied
                count, what = 1, f"{via} of Python lists"
            line = None
            if count:
                site = instrument.user_files.passing_site(sys._getframe(1), _host_arrays(args[0]))
                if site is not None:
                    line = instrument._transfer_line(TransferKey("h2d", site.path, site.line, what))
                    instrument._count_transfer(line, None, count)
            HOST_READS.enter()  # what the copy does inside is not the user's doing
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                if line is not None:
                    line.seconds = (line.seconds or 0.0) + time.perf_counter() - start
                HOST_READS.exit()

        return put


class _ForwardingEntry:
    """A counted eager entry standing in for a library's jitted function (`jnp.exp`).

    Calls go through `counted`; every attribute the jitted function has (`.lower`, `.trace`,
    `.eval_shape`, its name and `__wrapped__`) reads as the jitted function's own. State is in
    slots, for the reason `RecordingJit` gives.
    """

    __slots__ = ("_original", "_counted", "__dict__", "__weakref__")

    def __init__(self, original: Any, counted: Callable[..., Any]) -> None:
        functools.update_wrapper(self, original)
        self._original = original
        self._counted = counted

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._counted(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name in _ForwardingEntry.__slots__:
            raise AttributeError(name)
        return getattr(self._original, name)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return repr(self._original)


_JAX_DIR = os.path.dirname(os.path.abspath(jax.__file__))
# the inner functions of JAX's transformations (`jax.grad(f)` returns a wrapper of `grad_f`)
_TRANSFORMATIONS = {"grad_f": "grad", "value_and_grad_f": "value_and_grad", "vmap_f": "vmap",
                    "jacfun": "jacobian", "fun_remat": "checkpoint"}


def _transformation(fun: Any) -> str | None:
    """'grad' when `fun` is `jax.grad(f)` (also value_and_grad, vmap, jacfwd/jacrev/hessian,
    checkpoint), else None: the name the record of `jax.jit(fun)` takes, `grad(f)`."""
    code = getattr(fun, "__code__", None)
    if code is None or not os.path.abspath(code.co_filename).startswith(_JAX_DIR):
        return None
    names = [code.co_name]
    for cell in getattr(fun, "__closure__", None) or ():
        try:
            inner = getattr(cell.cell_contents, "__code__", None)
        except ValueError:  # an empty cell
            continue
        if inner is not None:
            names.append(inner.co_name)
    return next((_TRANSFORMATIONS[n] for n in names if n in _TRANSFORMATIONS), None)


@functools.cache  # asked per eager op, of a few hundred files
def _package_of(filename: str) -> str:
    """`.../site-packages/equinox/_jit.py` -> 'equinox'."""
    parts = os.path.normpath(filename).split(os.sep)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].removesuffix(".py")
    return os.path.basename(os.path.dirname(filename)) or "a library"


def _host_arrays(obj: Any) -> list[Any]:
    """The NumPy arrays in a value given to a copy (the value itself, or its leaves)."""
    if type(obj) is np.ndarray:
        return [obj]
    try:
        return [leaf for leaf in jax.tree_util.tree_leaves(obj) if type(leaf) is np.ndarray]
    except Exception:  # not a pytree jax accepts: the real call will say so
        return []


def _python_values(obj: Any) -> bool:
    """A non-empty (nested) list or tuple whose first element, followed down, is a Python or
    NumPy number: host values to be made into one array, not a list of device arrays to stack."""
    while isinstance(obj, (list, tuple)) and obj:
        obj = obj[0]
    return isinstance(obj, (*_HOST_SCALARS, np.generic)) and not isinstance(obj, (list, tuple))


def _host_array_count(obj: Any) -> int:
    if type(obj) is np.ndarray:
        return 1
    if type(obj) is ArrayImpl or isinstance(obj, _HOST_SCALARS):
        return 0
    try:
        return sum(1 for leaf in jax.tree_util.tree_leaves(obj) if type(leaf) is np.ndarray)
    except Exception:  # not a pytree jax accepts: the real call will say so
        return 0


def _note_static_parameters(record: EagerRecord, frame: FrameType) -> None:
    code = frame.f_code
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    local = frame.f_locals
    record.function_parameters = tuple(n for n in names if isinstance(local.get(n), types.FunctionType))
    record.int_parameters = tuple(n for n in names if type(local.get(n)) is int)


def _own_miss(misses: list[CacheMiss], record: FunctionRecord) -> CacheMiss | None:
    """The explanation about this function (nested jitted functions explain their own traces)."""
    for miss in misses:
        if miss.function == record.jax_name and not miss.is_first_trace:
            return miss
    for miss in misses:
        if miss.function == record.jax_name:
            return miss
    return None


def _is_import(site: SourceLine) -> bool:
    return linecache.getline(site.path, site.line).lstrip().startswith(("import ", "from "))


def _static_functions(wrapper: RecordingJit, args: tuple, kwargs: dict) -> dict[str, tuple[Any, int]]:
    """The static arguments that are functions (or partials of one): name -> (code, object id)."""
    found: dict[str, tuple[Any, int]] = {}
    names = wrapper._record.positional_names
    given = [(names[i] if i < len(names) else f"argument {i}", args[i])
             for i in sorted(wrapper._static_positions) if i < len(args)]
    given += [(name, value) for name, value in kwargs.items() if name in wrapper._static_names]
    for name, value in given:
        target = value.func if isinstance(value, functools.partial) else value
        code = getattr(target, "__code__", None)
        if isinstance(code, types.CodeType):
            found[name] = (code, id(value))
    return found


def _static_arguments(fun: Any, options: dict[str, Any]) -> tuple[frozenset[int], frozenset[str], tuple[str, ...]]:
    """Static positions and names as jax infers them (each from the other via the signature)."""
    nums = options.get("static_argnums")
    names = options.get("static_argnames")
    positions = {nums} if isinstance(nums, int) else set(nums or ())
    keywords = {names} if isinstance(names, str) else set(names or ())
    positional: tuple[str, ...] = ()
    try:
        parameters = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return frozenset(positions), frozenset(keywords), positional
    positional = tuple(p.name for p in parameters
                       if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    count = len(positional)
    positions = {p + count if p < 0 else p for p in positions}
    for index, pname in enumerate(positional):
        if pname in keywords:
            positions.add(index)
        if index in positions:
            keywords.add(pname)
    return frozenset(positions), frozenset(keywords), positional


__all__ = ["EagerRecord", "Instrument", "FunctionRecord", "Recompile", "RecordingJit", "TransferKey"]
