"""The variable names an expression reads: `jax.random.key(seed)` reads `jax` and `seed`, not the
attribute names `random` and `key` (which `walk.names_in` also yields)."""

from __future__ import annotations

import libcst as cst

from .walk import children


def read_names(node: cst.CSTNode) -> set[str]:
    """Bare names read anywhere inside `node`; attribute names and keyword names are not reads."""
    out: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name:
            out.add(current.value)
            continue
        if type(current) is cst.Attribute:
            stack.append(current.value)
            continue
        if type(current) is cst.Arg:
            stack.append(current.value)
            continue
        stack.extend(children(current))
    return out
