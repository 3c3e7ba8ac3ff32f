"""Is a loaded JSON object a bench result the case study can render? One line saying what is
missing, instead of a KeyError deep in the renderer (or a report written outside reports/ for a
pipeline named `../../..`)."""

from __future__ import annotations

import re
from typing import Any

# Pipeline names become file names (reports/<pipeline>.md): a plain name, no path.
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

_NUMBER = (int, float)
# key -> type for every variant, and for a variant that was measured (has no "error")
_VARIANT = {"name": str, "stage": int, "addresses": list}
_MEASURED = {"compile_s": _NUMBER, "steady_s": dict, "throughput": dict, "validation": dict,
             "compiles_per_call": _NUMBER + (type(None),),
             "host_transfers_per_call": _NUMBER + (type(None),)}
_NESTED: dict[str, dict[str, Any]] = {"steady_s": {"median": _NUMBER}, "throughput": {"value": _NUMBER},
           "validation": {"ok": bool, "metric": str, "value": _NUMBER + (type(None),),
                          "tolerance": _NUMBER + (type(None),)}}


def _type_names(kind: Any) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join("null" if k is type(None) else k.__name__ for k in kinds)


def _check_fields(obj: dict[str, Any], spec: dict[str, Any], where: str) -> str | None:
    for key, kind in spec.items():
        if key not in obj:
            return f"{where} has no {key!r}"
        value = obj[key]
        if isinstance(value, bool) and kind in (int, _NUMBER):  # True is not a stage number
            return f"{where} {key!r} is a boolean, not {_type_names(kind)}"
        if not isinstance(value, kind):
            return f"{where} {key!r} is {type(value).__name__}, not {_type_names(kind)}"
    return None


def results_problem(data: dict[str, Any]) -> str | None:
    """None when `data` (which has the top-level keys) can be rendered; else what is wrong."""
    for key in ("pipeline", "size", "platform", "device"):
        if not isinstance(data[key], str) or not data[key]:
            return f"{key!r} is not a non-empty string"
    if not PLAIN_NAME.fullmatch(data["pipeline"]) or data["pipeline"] in (".", ".."):
        return f"pipeline name {data['pipeline']!r} is not a plain name (letters, digits, _ . -)"
    variants = data["variants"]
    if not isinstance(variants, list) or not variants:
        return "'variants' is not a non-empty list"
    for number, variant in enumerate(variants, 1):
        if not isinstance(variant, dict):
            return f"variant {number} is not an object"
        where = f"variant {number}"
        problem = _check_fields(variant, _VARIANT, where)
        if problem is None and "error" not in variant:
            where = f"variant {number} ({variant['name']})"
            problem = _check_fields(variant, _MEASURED, where)
            for key, spec in _NESTED.items():
                problem = problem or _check_fields(variant[key], spec, f"{where} {key}")
        findings = variant.get("findings")
        if problem is None and findings is not None:
            if not isinstance(findings, list) or not all(isinstance(f, dict) for f in findings):
                problem = f"{where} 'findings' is not a list of objects"
            for f in findings if problem is None else ():
                problem = problem or _check_fields(f, {"code": str, "line": int}, f"a finding of {where}")
        if problem is not None:
            return problem
    return None
