"""Facts derived from a file's whole model: computed once, on first ask, and kept on the model.

The model's build (core.py) answers what one walk and a few fixpoints can: bindings, jit and
traced marks, arrays, step loops. The fact modules beside it answer the questions that need those
answers first (which functions certainly run on tracers, which run every step and why, which wait
for the device). Each such question is one function decorated with `@fact`: its answer lives in
the model's `facts` table under that function, so every rule that asks gets the same answer, and
the model's own attributes never change once it is built. FACTS lists them all (docs/design.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from .core import SemanticModel

T = TypeVar("T")

FACTS: list[Callable[[SemanticModel], object]] = []


def fact(compute: Callable[[SemanticModel], T]) -> Callable[[SemanticModel], T]:
    """Make `compute(model)` a named fact of the model: computed once per model, then shared."""
    if not compute.__doc__:
        raise TypeError(f"fact {compute.__qualname__} needs a docstring: it is the fact's definition")

    @functools.wraps(compute)
    def ask(model: SemanticModel) -> T:
        table = model.facts
        if compute in table:
            return table[compute]
        value = table[compute] = compute(model)
        return value

    FACTS.append(ask)
    return ask
