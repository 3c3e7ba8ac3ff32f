"""What the project pass (static/pipeline/project.py) tells one file's model about the functions it
imports from other scanned modules."""

from __future__ import annotations

from typing import NamedTuple


class FunctionSummary(NamedTuple):
    """One top-level function or class method (`Cls.method`) of a scanned module, as its own
    file's semantic model sees it."""

    name: str
    params: tuple[str, ...]
    jitted: bool  # its own name calls compiled code: decorated, or `name = jax.jit(f)` at module level
    static_params: frozenset[str]
    eager_ops: int  # array operations one eager call dispatches (eager.eager_ops)
    host_work: bool  # its job is host work (eager.host_side): converts, prints, formats, syncs
    has_loop: bool
    # a small compiled step (step_size.small_step_ops): its array operations; None when it is not one
    small_step_ops: int | None = None


class ImportedView(NamedTuple):
    """What one file's model knows of the functions it imports from the scanned project."""

    functions: dict[str, FunctionSummary]
    # this module's own functions (qualified names) that another scanned module traces
    traced: frozenset[str] = frozenset()

    def get(self, spelling: str | None) -> FunctionSummary | None:
        return self.functions.get(spelling) if spelling is not None else None

    def digest(self) -> bytes:
        """The cache's dependency input: changes when an imported summary, or who traces this
        module's functions, changes."""
        return repr((sorted(self.functions.items()), sorted(self.traced))).encode()
