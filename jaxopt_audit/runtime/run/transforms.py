"""Functions the user's code makes with a JAX transformation (`jax.grad`, `jax.value_and_grad`,
`jax.vmap`, `jax.jacfwd`, `jax.jacrev`, `jax.hessian`) and then calls without jit.

Such a call traces the function again and runs the gradient or the batched computation op by
op, with the transformation's own Python machinery around every op: the fix is `jax.jit` where
the function is made (`jax.jit(jax.value_and_grad(loss))`), not in the function that calls it,
which often cannot be jitted (a SciPy objective converting to floats). The eager ops of the
backward or batched pass are issued from the line calling the transformed function; the
instrument knows that line's call is one because the frame it called runs the code of a
function a patched transformation returned.

The transformations are patched only to note, for each function they return to the user's
code, the line that made it: the function itself is returned untouched. Functions made at one
line share one `TransformRecord` (a `jax.value_and_grad(loss)(...)` written inside a loop makes
a new one per iteration)."""

from __future__ import annotations

import functools
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from .arguments import ArgumentSample, note_arguments, worth_recording
from .sites import SourceLine, UserFiles

TRANSFORMATIONS = ("grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian")
_CLOSURES_KEPT = 10_000  # closures known by their cells' identities (a new one per loop iteration is possible)


@dataclass(eq=False)
class TransformRecord:
    """The functions one user line made with one transformation, and their eager calls."""

    api: str  # "jax.value_and_grad"
    name: str  # the transformed function's name
    expression: str  # how it was made: "jax.vmap(jax.value_and_grad(loss))"
    path: str
    line: int
    latest: Any = field(default=None, repr=False)  # the last function made: what jit_saving jits after the run
    made: int = 0  # functions made at the line
    calls: int = 0  # calls seen issuing eager ops (their ops are the calling lines': `EagerRecord.line_ops`)
    callers: Counter[SourceLine] = field(default_factory=Counter)
    caller_codes: set[Any] = field(default_factory=set)
    argument_samples: dict[Any, ArgumentSample] = field(default_factory=dict)
    last_frame: Any = field(default=None, repr=False)  # the frame of its current call


class Transforms:
    """The transformations patched to note where the user's code makes functions (`install`)."""

    def __init__(self, user_files: UserFiles) -> None:
        self.user_files = user_files
        self.records: dict[tuple[str, int, str], TransformRecord] = {}
        self.codes: set[Any] = set()  # code objects of the functions the transformations return
        self._by_closure: dict[tuple[Any, tuple[int, ...]], TransformRecord] = {}
        self._by_instruction: dict[tuple[Any, int], TransformRecord | None] = {}
        self._expressions: dict[int, tuple[Any, str]] = {}  # id of a function made -> (it, how it was made)

    def install(self, patch: Callable[[Any, str, Any], None]) -> None:
        import jax

        for name in TRANSFORMATIONS:
            original = getattr(jax, name, None)
            if original is not None:
                patch(jax, name, self._noting(original, f"jax.{name}"))

    def _noting(self, original: Callable[..., Any], api: str) -> Callable[..., Any]:
        transforms = self

        @functools.wraps(original)
        def transformation(*args: Any, **kwargs: Any) -> Any:
            made = original(*args, **kwargs)
            caller = sys._getframe(1)
            if transforms.user_files.is_user(caller.f_code.co_filename):
                transforms._note_made(made, args[0] if args else kwargs.get("fun"), api,
                                      SourceLine(caller.f_code.co_filename, caller.f_lineno))
            return made

        return transformation

    def _note_made(self, made: Any, fun: Any, api: str, site: SourceLine) -> None:
        code, cells = getattr(made, "__code__", None), getattr(made, "__closure__", None)
        if code is None or not cells:
            return
        key = (site.path, site.line, api)
        record = self.records.get(key)
        if record is None:
            name = getattr(fun, "__name__", None) or type(fun).__name__
            inner = self._expressions.get(id(fun))
            expression = f"{api}({inner[1] if inner is not None and inner[0] is fun else name})"
            record = self.records[key] = TransformRecord(api, name, expression, site.path, site.line)
        if len(self._expressions) >= _CLOSURES_KEPT:
            self._expressions.clear()
        self._expressions[id(made)] = (made, record.expression)
        record.latest = made
        record.made += 1
        self.codes.add(code)
        if len(self._by_closure) >= _CLOSURES_KEPT:
            self._by_closure.clear()
        self._by_closure[code, tuple(id(cell.cell_contents) for cell in cells)] = record

    def note_op(self, frame: FrameType, called: FrameType, site: SourceLine) -> None:
        """An eager op the user's `frame` (at `site`) issued through the transformed function
        running in `called`: a new call of it is counted on its record (nothing when the function
        is not one the user's code made)."""
        instruction = (frame.f_code, frame.f_lasti)
        record = self._by_instruction.get(instruction, self)  # self: not yet looked up
        if record is self:
            record = self._by_instruction[instruction] = self._resolve(called)
        if not isinstance(record, TransformRecord) or record.last_frame is called:
            return
        record.last_frame = called
        record.calls += 1
        record.callers[site] += 1
        record.caller_codes.add(frame.f_code)
        if worth_recording(record.calls):
            note_arguments(record.argument_samples, called)

    def _resolve(self, called: FrameType) -> TransformRecord | None:
        code = called.f_code
        local = called.f_locals  # once per calling instruction: it copies the frame's variables
        try:
            ids = tuple(id(local[name]) for name in code.co_freevars)
        except KeyError:
            return None
        return self._by_closure.get((code, ids))

    def forget_frames(self) -> None:
        for record in self.records.values():
            record.last_frame = None  # frames hold the program's locals
