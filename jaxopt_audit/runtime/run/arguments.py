"""The arguments an un-jitted function was called with, kept abstractly.

For each call of a user function that runs JAX ops eagerly, `run` keeps what a `jax.jit` of
that function would be specialised on: the pytree structure of its arguments, the shape and
dtype of each array leaf (whether it is a NumPy or a device array), and the other leaves
(Python scalars, strings, objects) themselves. Calls with the same key share one
`ArgumentSample`; the number of distinct keys is the number of compilations a jitted version
would need with the Python numbers static, and the number of keys left distinct once their
numbers are ignored (`traced_numbers_key`) the number with them traced.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import jax
import numpy as np

# code objects that are no function a user could jit: the script's top and comprehensions
NOT_FUNCTIONS = frozenset({"<module>", "<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})
MAX_LEAVES = 4096  # arguments with more leaves (a growing list of floats) are not kept
RECORDED_FIRST = 8  # calls whose arguments are always recorded ...
RECORDED_EVERY = 64  # ... then one call in this many: flattening a large pytree costs time

_VARARGS = inspect.CO_VARARGS
_VARKEYWORDS = inspect.CO_VARKEYWORDS


@dataclass(frozen=True)
class ArraySpec:
    """An array leaf as a jitted function sees it."""

    shape: tuple[int, ...]
    dtype: Any
    host: bool  # a NumPy array (copied to the device on every jitted call)


@dataclass
class ArgumentSample:
    """One calling convention of a function: positional values and keywords as one pytree."""

    treedef: Any  # of ((positional..., *varargs), {keyword-only..., **kwargs})
    leaves: list[Any]  # ArraySpec for arrays, the object itself otherwise
    calls: int = 0


@dataclass(frozen=True)
class CallSample:
    """The arguments of one call of a jitted function: (args, kwargs) as one pytree."""

    treedef: Any
    leaves: list[Any]  # ArraySpec for arrays, the object itself otherwise
    static: list[bool]  # leaves of static arguments: passed as they are, never traced or batched


def call_sample(args: tuple, kwargs: dict, static_positions: frozenset[int],
                static_names: frozenset[str]) -> tuple[list[Any], CallSample | None]:
    """(the leaves of (args, kwargs), their abstract sample; None past `MAX_LEAVES` leaves)."""
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
    if len(leaves) > MAX_LEAVES:
        return leaves, None
    static: list[bool] = []
    if static_positions or static_names:
        flatten = jax.tree_util.tree_leaves
        for i, arg in enumerate(args):
            static.extend([i in static_positions] * len(flatten(arg)))
        for name in sorted(kwargs):  # a dict flattens in key order
            static.extend([name in static_names] * len(flatten(kwargs[name])))
    else:
        static = [False] * len(leaves)
    specs = [ArraySpec(tuple(leaf.shape), leaf.dtype, isinstance(leaf, (np.ndarray, np.generic)))
             if isinstance(leaf, (jax.Array, np.ndarray, np.generic)) else leaf for leaf in leaves]
    return leaves, CallSample(treedef, specs, static)


def with_leaves(function: Callable[..., Any], treedef: Any, leaves: list[Any],
                positions: list[int]) -> Callable[..., Any]:
    """`function` as a function of the leaves at `positions` of its flattened arguments, the
    other leaves as given: what a measurement jits, vmaps or calls on its own inputs."""
    fixed = list(leaves)

    def call(*values: Any) -> Any:
        full = list(fixed)
        for i, value in zip(positions, values, strict=True):
            full[i] = value
        args, kwargs = jax.tree_util.tree_unflatten(treedef, full)
        return function(*args, **kwargs)

    return call


def same_value(leaf: Any, other: Any) -> bool:
    """The same array object, or an equal Python or NumPy scalar (a loop's value that did not change)."""
    if leaf is other:
        return True
    if isinstance(leaf, (jax.Array, np.ndarray)) or type(leaf) is not type(other):
        return False
    try:
        return bool(leaf == other)
    except Exception:  # an object whose equality is not a truth value
        return False


MAX_SIGNATURES = 64  # argument signatures kept per un-jitted function


def note_arguments(samples: dict[Any, ArgumentSample], frame: FrameType) -> None:
    """Count the call's argument signature in `samples` (what a jit of the function would
    compile for), the first `MAX_SIGNATURES` kinds."""
    found = signature_of(frame)
    if found is None:
        return
    key, sample = found
    kept = samples.get(key)
    if kept is None:
        if len(samples) >= MAX_SIGNATURES:
            return
        kept = samples[key] = sample
    kept.calls += 1


def worth_recording(calls: int) -> bool:
    """Whether the `calls`-th call's arguments are recorded (the first few, then a sample)."""
    return calls <= RECORDED_FIRST or calls % RECORDED_EVERY == 0


def signature_of(frame: FrameType) -> tuple[Any, ArgumentSample] | None:
    """(hashable key, sample) of the arguments bound in `frame` at its first eager op; None when
    they cannot be read as a pytree."""
    code = frame.f_code
    local = frame.f_locals
    count = code.co_argcount
    names = code.co_varnames
    try:
        positional = [local[name] for name in names[:count]]
        keywords = {name: local[name] for name in names[count:count + code.co_kwonlyargcount]}
        index = count + code.co_kwonlyargcount
        if code.co_flags & _VARARGS:
            positional.extend(local[names[index]])
            index += 1
        if code.co_flags & _VARKEYWORDS:
            keywords.update(local[names[index]])
        leaves, treedef = jax.tree_util.tree_flatten((tuple(positional), keywords))
    except Exception:  # a rebound or deleted parameter, an object jax cannot flatten
        return None
    if len(leaves) > MAX_LEAVES:
        return None
    specs: list[Any] = []
    key: list[Any] = [treedef]
    for leaf in leaves:
        # a tracer (the function called under `jax.grad` or `vmap`) stands for an array of its
        # shape and dtype, as it would to a jitted version; kept as itself it would leak
        # a NumPy scalar (an element of a NumPy series) too: jit traces it as a 0-d array, so its
        # value, new every call, is not a new compilation
        if isinstance(leaf, (jax.Array, np.ndarray, np.generic, jax.core.Tracer)):
            spec = ArraySpec(tuple(leaf.shape), leaf.dtype, isinstance(leaf, (np.ndarray, np.generic)))
            specs.append(spec)
            key.append(spec)
        else:
            specs.append(leaf)
            key.append(_hashable(leaf))
    return tuple(key), ArgumentSample(treedef, specs)


def is_number(leaf: Any) -> bool:
    """A Python number: traced (weakly typed) by a jitted function unless marked static."""
    return type(leaf) in (int, float, complex, bool)


def traced_numbers_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """`key` as a jit that traces Python numbers sees it: their values do not matter."""
    return tuple((part[0], "number") if isinstance(part, tuple) and len(part) == 2 and part[0] in _NUMBERS
                 else part for part in key)


_NUMBERS = ("int", "float", "complex", "bool")


def _hashable(leaf: Any) -> Any:
    """The leaf where it can be a static argument's value, else its type (one key per type)."""
    try:
        hash(leaf)
    except Exception:
        return ("unhashable", type(leaf).__qualname__)
    return (type(leaf).__qualname__, leaf)
