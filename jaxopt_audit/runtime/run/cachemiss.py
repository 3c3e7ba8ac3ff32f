"""Turn JAX's tracing cache-miss explanations into structured recompilation causes.

With `jax_explain_cache_misses` on, JAX logs one message per tracing cache miss through the
`jax._src.interpreters.partial_eval` logger, e.g.

    TRACING CACHE MISS at /src/train.py:41:8 (main):
      for train_step defined at /src/train.py:12
      all previously seen cache keys differ. For the closest previous key:
      different input types:
      * at batch, now f32[33,10] and before f32[32,10]

This module parses that text (and the other shapes of it: a never-seen function, a function
re-defined on the same line, a changed static argument or pytree, a changed tracing context)
into a `CacheMiss`: which function, called from where, what kind of change, and which of the
function's arguments changed. Pure text processing, no JAX import, so it is unit-testable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

HEADER = "TRACING CACHE MISS"

# kinds, from the most to the least specific; a miss may have several (shape and dtype)
NEW_FUNCTION = "new-function"  # first trace of this function object
REDEFINED = "redefined"  # a new function object defined at the same line: jit/lambda rebuilt
SHAPE, DTYPE, WEAK_TYPE, SHARDING = "shape", "dtype", "weak-type", "sharding"
STATIC = "static"  # a static argument's value changed
PYTREE = "pytree"  # the structure of an argument changed (keys, list length, None vs array)
# a static argument that is a function: the same code in a new object (a closure made per call);
# JAX logs no explanation for it, the instrument tells it from the arguments
NEW_FUNCTION_ARGUMENT = "new-function-argument"
CONTEXT = "context"  # config or a context manager changed (e.g. jax.default_matmul_precision)
UNKNOWN = "unknown"

_CALLSITE = re.compile(r"TRACING CACHE MISS at (?P<path>.+?):(?P<line>\d+)(?::\d+)? \((?P<func>[^)]*)\):")
_NEVER_SEEN = re.compile(r"^\s*(?P<name>\S.*?) id=\d+(?: defined at (?P<path>.+?):(?P<line>\d+))?\s*$")
_FOR = re.compile(r"^\s*for (?P<name>\S.*?)(?: defined at (?P<path>.+?):(?P<line>\d+))?\s*$")
_TYPE_DIFF = re.compile(r"^\s*\* at (?P<arg>.+?), now (?P<new>\S+) and before (?P<old>\S+?)(?:https?://\S*)?$")
_TREE_DIFF = re.compile(r"^\s*\* at input path (?P<path>\S*), now (?P<new>.+?) "
                        r"and before (?P<old>.+?), so (?P<why>.+)$")
_CTX_DIFF = re.compile(r"^\s*\* (?P<name>\S+) differs: now (?P<new>.+) and before (?P<old>.+)$")
_STATIC_VAL = re.compile(r"Static\(val=(?P<val>.*)\)")
_AVAL = re.compile(r"^(?P<dtype>[a-z]+\d*)\[(?P<shape>[^\]]*)\](?P<rest>.*)$")
_KEY_TOKEN = re.compile(r"\[(?:(?P<index>\d+)|'(?P<key>[^']*)'|\"(?P<dkey>[^\"]*)\")\]|\.(?P<attr>\w+)")


@dataclass(frozen=True)
class CacheMiss:
    """One explained tracing cache miss."""

    function: str  # JAX's name for the function: `__name__`, e.g. "train_step" or "<lambda>"
    defined_path: str | None
    defined_line: int | None
    call_path: str | None  # where the call that missed the cache was made
    call_line: int | None
    kinds: tuple[str, ...]  # e.g. ("shape",), ("static",), ("redefined",)
    arguments: tuple[str, ...]  # top-level argument names that changed, in order
    reason: str  # one readable line: "batch: shape f32[32,10] -> f32[33,10]"

    @property
    def is_first_trace(self) -> bool:
        """A never-seen function that is not a re-definition: the expected first compilation."""
        return self.kinds == (NEW_FUNCTION,)


def parse_cache_miss(text: str, positional_names: Sequence[str] = ()) -> CacheMiss | None:
    """Parse one explanation; None when `text` is not a tracing cache-miss message.

    positional_names: the function's positional parameter names, used to name the argument
    when JAX reports a pytree path such as `[0][1]` instead of an argument name.
    """
    lines = text.splitlines()
    if not lines or not lines[0].startswith(HEADER):
        return None
    call_path = call_line = None
    if match := _CALLSITE.match(lines[0]):
        call_path, call_line = match["path"], int(match["line"])
    body = lines[1:]
    if any(line.strip() == "never seen function:" for line in body):
        return _parse_never_seen(body, call_path, call_line)

    name, def_path, def_line = "?", None, None
    for line in body:
        if match := _FOR.match(line):
            name, def_path = match["name"], match["path"]
            def_line = int(match["line"]) if match["line"] else None
            break
    kinds: list[str] = []
    arguments: list[str] = []
    parts: list[str] = []
    for line in body:
        if match := _TYPE_DIFF.match(line):
            arg = _top_level_name(match["arg"], positional_names)
            change = _type_change(match["old"], match["new"])
            _add(kinds, change.kind)
            _add(arguments, arg)
            parts.append(f"{match['arg']}: {change.text}")
        elif match := _TREE_DIFF.match(line):
            arg = _argument_from_path(match["path"], positional_names)
            new_static, old_static = _STATIC_VAL.search(match["new"]), _STATIC_VAL.search(match["old"])
            if new_static and old_static:
                _add(kinds, STATIC)
                parts.append(f"{arg}: static value {old_static['val']} -> {new_static['val']}")
            else:
                _add(kinds, PYTREE)
                parts.append(f"{arg}: pytree structure changed ({match['why'].strip()})")
            _add(arguments, arg)
        elif match := _CTX_DIFF.match(line):
            _add(kinds, CONTEXT)
            parts.append(f"{match['name']}: {match['old'].strip()} -> {match['new'].strip()}")
    if not kinds:
        if any("Tracing context doesn't match" in line for line in body):
            kinds.append(CONTEXT)
            parts.append("tracing context (config or a context manager) changed")
        else:
            kinds.append(UNKNOWN)
            parts.append(_last_explanation(body))
    return CacheMiss(name, def_path, def_line, call_path, call_line, tuple(kinds), tuple(arguments),
                     "; ".join(parts))


def _parse_never_seen(body: list[str], call_path: str | None, call_line: int | None) -> CacheMiss:
    name, def_path, def_line = "?", None, None
    for line in body:
        if match := _NEVER_SEEN.match(line):
            name, def_path = match["name"], match["path"]
            def_line = int(match["line"]) if match["line"] else None
            break
    if any("seen another function defined on the same line" in line for line in body):
        reason = (f"{name} is a new function object defined at the same line as one traced before: "
                  "the function (or its jit wrapper) is re-created on every call")
        return CacheMiss(name, def_path, def_line, call_path, call_line, (REDEFINED,), (), reason)
    return CacheMiss(name, def_path, def_line, call_path, call_line, (NEW_FUNCTION,), (),
                     f"first trace of {name}")


@dataclass(frozen=True)
class _Change:
    kind: str
    text: str


def _type_change(old: str, new: str) -> _Change:
    """Classify `f32[32,10]` -> `f32[33,10]` (shape), `f32` -> `i32` (dtype), weak_type flips."""
    if "weak_type" in old or "weak_type" in new:
        return _Change(WEAK_TYPE, f"weak type changed {old} -> {new} (a Python scalar vs a typed array)")
    old_m, new_m = _AVAL.match(old), _AVAL.match(new)
    if not (old_m and new_m):
        return _Change(UNKNOWN, f"type {old} -> {new}")
    if old_m["dtype"] != new_m["dtype"]:
        return _Change(DTYPE, f"dtype {old} -> {new}")
    if old_m["shape"] != new_m["shape"]:
        return _Change(SHAPE, f"shape {old} -> {new}")
    return _Change(SHARDING, f"sharding or layout {old} -> {new}")


def _top_level_name(name: str, positional_names: Sequence[str]) -> str:
    """`params['w']` -> `params`; `args[2]` -> the third positional parameter when known."""
    head = re.split(r"[\[.]", name, maxsplit=1)[0] or name
    if head == "args" and (match := re.match(r"args\[(\d+)\]", name)):
        index = int(match.group(1))
        if index < len(positional_names):
            return positional_names[index]
    return head


def _argument_from_path(path: str, positional_names: Sequence[str]) -> str:
    """`[0][1]...` (args, position 1) or `[1]['n']` (kwargs, name n) -> an argument name."""
    tokens = [m.group("index") or m.group("key") or m.group("dkey") or m.group("attr")
              for m in _KEY_TOKEN.finditer(path)]
    if len(tokens) >= 2 and tokens[0] == "0" and tokens[1] is not None and tokens[1].isdigit():
        index = int(tokens[1])
        return positional_names[index] if index < len(positional_names) else f"argument {index}"
    if len(tokens) >= 2 and tokens[0] == "1" and tokens[1]:
        return tokens[1]
    if tokens == ["0"]:
        return "positional arguments"
    if tokens == ["1"]:
        return "keyword arguments"
    return path or "arguments"


def _last_explanation(body: list[str]) -> str:
    for line in reversed(body):
        text = line.strip()
        if text and not text.startswith(("for ", "all previously seen")):
            return text
    return "cache miss explanation unavailable"


def _add(items: list[str], item: str) -> None:
    if item not in items:
        items.append(item)
