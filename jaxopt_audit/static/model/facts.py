"""Facts derived from a file's whole model: computed once, on first ask, and kept on the model.

The model's build (core.py) answers what one walk and a few fixpoints can: bindings, jit and
traced marks, arrays, step loops. The fact modules beside it answer the questions that need those
answers first (which functions certainly run on tracers, which run every step and why, which wait
for the device). Each such question is one function decorated with `@fact`: its answer lives in
the model's `facts` table under that function, so every rule that asks gets the same answer, and
the model's own attributes never change once it is built. FACTS lists them all (docs/design.md).

A question asked of one node or function at a time (a call's callee, an expression's kind, a
function's eager op count) keeps its answers in the same table, as a dict under the function that
answers it (`answers`). So one table holds everything derived from the file, and releasing the
model drops it all.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from .index import ModelIndex

T = TypeVar("T")
Model = TypeVar("Model", bound=ModelIndex)  # the model a fact takes: core.SemanticModel

FACTS: list[Callable[[Any], object]] = []


def fact(compute: Callable[[Model], T]) -> Callable[[Model], T]:
    """Make `compute(model)` a named fact of the model: computed once per model, then shared."""
    if not compute.__doc__:
        raise TypeError(f"fact {compute.__qualname__} needs a docstring: it is the fact's definition")

    @functools.wraps(compute)
    def ask(model: Model) -> T:
        table = model.facts
        if compute in table:
            return table[compute]
        value = table[compute] = compute(model)
        return value

    FACTS.append(ask)
    return ask


def answers(model: ModelIndex, question: Callable[..., object]) -> dict:
    """The model's answers to `question`, one per node or function it was asked about (filled by
    the question itself, on first ask)."""
    table = model.facts.get(question)
    if table is None:
        table = model.facts[question] = {}
    return table


def forget(model: ModelIndex, question: Callable[..., object]) -> dict:
    """Drop the answers to `question` (the dataflow they read has grown) and return the new,
    empty table."""
    table = model.facts[question] = {}
    return table
