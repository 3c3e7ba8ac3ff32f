"""The static analyzer. This package's top level is the surface a rule imports, bundled or a
team's own in `--rules-dir` (docs/team_rules.md): the rule framework, the semantic model's
types, the walk helpers and the API name lists. The fact modules (`static/model/`: tracers,
per_step, eager, ...) are the model's internals and may change between versions."""

from . import apis
from .fixes import Fix
from .model import Assignment, Function, Loop, SemanticModel, Site
from .names import canonical, dotted
from .rule import Finding, Invalid, Report, Rule, Valid, describe
from .walk import (
    callee_name,
    child_fields,
    children,
    int_value,
    literal_texts,
    names_in,
    own_nodes,
    read_names,
    string_value,
    target_names,
    walk,
)

__all__ = ["Assignment", "Finding", "Fix", "Function", "Invalid", "Loop", "Report", "Rule", "SemanticModel",
           "Site", "Valid", "apis", "callee_name", "canonical", "child_fields", "children", "describe", "dotted",
           "int_value", "literal_texts", "names_in", "own_nodes", "read_names", "string_value", "target_names",
           "walk"]
