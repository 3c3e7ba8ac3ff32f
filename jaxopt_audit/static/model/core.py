"""The semantic model of one file, built once and shared by every rule.

`SemanticModel` stacks one concern per layer, each in its own module and each asking only the
layers below it: the index of the file (`index.py`), name resolution (`resolution.py`), value
kinds (`value_kinds.py`), jit marks (`jit_marks.py`), JAX work and arrays (`jax_work.py`) and
step loops (`step_loops.py`). Building it walks the file once, then runs the fixpoints in the
order their answers feed each other (docs/design.md). Whatever is derived later is a `@fact`
(facts.py), kept in the model's one table of answers.
"""


from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import libcst as cst

from ..syntax.names import ImportTable, conventional_names
from ..syntax.positions import Positions

if TYPE_CHECKING:
    from .summaries import ImportedView
from .builder import Builder
from .facts import answers
from .index import ClassInfo, Function, TraceRoot
from .resolution import NameResolution
from .step_loops import StepLoops
from .value_kinds import ValueKinds


class SemanticModel(StepLoops):
    """Everything the rules need to know about one file."""

    def __init__(self, module: cst.Module, path: str = "<string>", package: str = "",
                 source: str | None = None, project: ImportedView | None = None, analyse: bool = True,
                 cells: list[int] | None = None,
                 rescan: Callable[[str, Iterable[str]], int | None] | None = None) -> None:
        """`analyse=False` builds the index (functions, calls, bindings, imports) without the
        fixpoints (jit and traced marks, arrays, step loops): enough for rules that only resolve
        names (Rule.ANALYSIS). `cells`: for a notebook, the cell of each program line. `rescan`:
        the number of findings the rules with the given codes report on a text at this path
        (None when it cannot be scanned), from the scan pipeline (trace_check.py asks it)."""
        self.module = module
        self.rescan = rescan
        self.cells = cells
        self.project = project  # the functions it imports from other scanned modules
        self.source = source  # the decoded text, when the caller has it (cheap text prefilters)
        self.path = path
        self.package = package
        self.imports = ImportTable()
        self.functions: list[Function] = []
        self.classes: dict[str, ClassInfo] = {}
        self.class_of_body: dict[int, ClassInfo] = {}
        self.function_of_def: dict[cst.FunctionDef, Function] = {}
        self.lambdas: dict[cst.Lambda, Function] = {}
        self._positions: Positions | None = None
        self._module_values_static = False
        self.name_seq: dict[int, int] = {}
        self.host_callback_functions: set[int] = set()  # ids; filled by _propagate_traced
        self.facts: dict[Callable[..., Any], Any] = {}  # everything derived from the file (facts.py)
        self._kind_cache = answers(self, ValueKinds.value_kind)
        self._callee_cache = answers(self, NameResolution.callee)
        self.trace_roots: list[TraceRoot] = []  # filled when the model is analysed
        builder = Builder(self)
        self.module_function = builder.function(module, "<module>", None, None)
        builder.walk_body(self.module_function, module, None, False)
        self.imports.unbound = conventional_names() - self._bound_names()
        self.analysed = analyse
        if analyse:
            self._analyse()

    def _bound_names(self) -> set[str]:
        """Every name the file binds in any scope: imports, assignments, defs, parameters."""
        bound = set(self.imports.bound) | self.imports.defined | self.imports.ambiguous
        for fn in self.functions:
            bound.update(fn.params)
            for a in fn.assignments:
                bound.update(a.targets)
        return bound

    def _analyse(self) -> None:
        self._mark_jit_and_transforms()
        self._propagate_traced()
        # array values and JAX work feed each other (`x.sum()` is work once x is an array)
        self._compute_jax_work()
        self._propagate_arrays()
        self._compute_jax_work()
        self._propagate_arrays()
        self._mark_step_loops()

