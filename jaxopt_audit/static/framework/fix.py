"""What a rule's fix is and how a rule builds one: the `Fix` it returns from its `fix` hook, the
two applicabilities, and the small codemod helpers a fix is made of. Applying fixes to files is
`static/autofix/` (it re-scans the fixed text); this module knows nothing of files or scans.

Applicability: "safe" fixes cannot change what the program computes; "unsafe" ones may (they
need `--unsafe-fixes`).
"""

from __future__ import annotations

import libcst as cst

from .rule import Fix, Rule

SAFE, UNSAFE = "safe", "unsafe"


def applicability(rule, model, report) -> str | None:
    """The applicability of the rule's fix for this report, None when it has none."""
    fix = offered_fix(rule, model, report)
    return fix.applicability if fix is not None else None


def offered_fix(rule, model, report) -> Fix | None:
    if type(rule).fix is Rule.fix:
        return None
    try:
        return rule.fix(model, report)
    except Exception:  # noqa: BLE001 - a fix hook's bug costs its fix, never the scan
        return None


def allowed(applicability_: str | None, unsafe: bool) -> bool:
    return applicability_ == SAFE or (unsafe and applicability_ == UNSAFE)


def expression(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


def dotted_expression(prefix: cst.BaseExpression, rest: str) -> cst.BaseExpression:
    """`prefix.a.b` for rest "a.b", keeping `prefix`'s own nodes (and so its text)."""
    out = prefix
    for part in rest.split("."):
        out = cst.Attribute(value=out, attr=cst.Name(part))
    return out


def module_alias(model, qualified: str) -> str | None:
    """A name bound in the module to exactly the module `qualified` (`jax`), if any."""
    for name, target in model.imports.bound.items():
        if target == qualified and "." not in name:
            return name
    return None


def wrap_call(model, func_qualified: str, node: cst.BaseExpression) -> cst.BaseExpression | None:
    """`jax.block_until_ready(node)` spelled with the module's own alias of its package (None
    when the package is not imported as a module)."""
    package, _, attr = func_qualified.rpartition(".")
    alias = module_alias(model, package)
    if alias is None:
        return None
    func = dotted_expression(cst.Name(alias), attr)
    return cst.Call(func=func, args=[cst.Arg(value=node)])
