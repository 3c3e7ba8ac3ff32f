"""The static analyzer. This package's top level is the one surface a rule imports, bundled or a
team's own in `--rules-dir` (docs/team_rules.md): the rule framework, the semantic model's types
and facts, the syntax helpers, the API and deprecation tables, and the codemod helpers a fix is
built from. Its parts, each importing only the ones listed before it:

- `syntax/`: names, tree walks and positions: no JAX knowledge;
- `knowledge/`: the JAX API name lists and the deprecation table;
- `model/`: the semantic model of one file and the facts derived from it;
- `framework/`: what a rule, a finding and a fix are;
- `pipeline/`: discovery, configuration, the registry, the engine, the project pass, the cache;
- `autofix/`: applying fixes to files, in rounds, re-scanning through the engine's callable.
"""

from .autofix.codemods import (
    block_until_ready,
    rename_deprecated,
    rename_keyword,
    timeit_block_until_ready,
)
from .framework.fix import UNSAFE, dotted_expression, module_alias
from .framework.rule import Finding, Fix, Invalid, Report, Rule, Valid
from .knowledge import apis
from .knowledge.deprecations import (
    DEPRECATIONS,
    KEYWORDS_BY_FUNCTION,
    TREE_MODULE_SINCE,
    Deprecation,
    Keyword,
    lookup,
    older_spelling,
)
from .model import Assignment, Function, Loop, SemanticModel, Site
from .model.demonstrations import (
    marked_wrong,
    shows_async_dispatch,
    shows_same_draw,
    shows_tracing_error,
    teaches_pitfall,
)
from .model.eager import (
    WORTH_JIT,
    differentiates,
    dispatch_loop,
    drives_steps,
    eager_ops,
    eager_tree_updates,
    host_fed,
    host_side,
    iterates_structure,
    prepares_compiled_input,
    rebound_globals,
    walks_device_rows,
)
from .model.enclosing import (
    condition_around,
    enclosing_statements,
    site_of,
)
from .model.host_loops import (
    Statements,
    accepts_or_rejects,
    ends_episode,
    exits_on_device,
    fed_back,
    is_wait,
    measured_call,
    over_structure,
    runs_compiled_loops,
)
from .model.key_pairs import (
    apart_at_top_level,
    example_inputs_for_init,
    exclusive_cases,
    flax_inits,
    input_for_init,
    measurement_inputs,
    named_stand_in,
    one_splits_first,
    result_unread,
)
from .model.keys import (
    Reuse,
    key_reuses,
)
from .model.loops import (
    batch_getter,
    carried_names,
    device_history,
    exits_early,
    filled_buffers,
    grown_names,
    grows_carry,
    has_compiled_alternative,
    has_fixed_trip_count,
    host_bound_call,
    is_float64_numpy,
    is_numpy_value,
    iterates_rows,
    literal_trip_count,
    mutated_params,
    records_for_rendering,
    renders_each_iteration,
    step_state,
    whole_list_read,
    wraps_compiled_scan,
)
from .model.per_step import (
    SHORT_LOOP,
    SINGLE_PASS,
    StepContext,
    where,
    why_every_step,
)
from .model.runs import (
    callers_of,
)
from .model.shapes import (
    changing_shape,
)
from .model.step_size import (
    CompiledStep,
    small_compiled_steps,
)
from .model.timing import (
    TimedRegion,
    calls_in_order,
    reads_timer,
    syncing_functions,
    timed_regions,
    unsynchronized_work,
    work_results,
)
from .model.trace_check import (
    array_only_parameters,
    no_new_trace_findings,
    traces_as_written,
)
from .model.traced import (
    ArrayEvidence,
    is_traced_value,
    really_traced,
    traced_functions,
)
from .model.tracers import (
    container_annotation,
    tracers,
)
from .pipeline.project import (
    FunctionSummary,
    counted_steps,
    imported_candidate,
)
from .syntax.names import canonical, dotted
from .syntax.walk import (
    callee_name,
    child_fields,
    children,
    describe,
    int_value,
    literal_texts,
    names_in,
    own_nodes,
    read_names,
    string_value,
    target_names,
    walk,
)

__all__ = [
    "accepts_or_rejects",
    "apart_at_top_level",
    "apis",
    "array_only_parameters",
    "ArrayEvidence",
    "Assignment",
    "batch_getter",
    "block_until_ready",
    "callee_name",
    "callers_of",
    "calls_in_order",
    "canonical",
    "carried_names",
    "changing_shape",
    "child_fields",
    "children",
    "CompiledStep",
    "condition_around",
    "container_annotation",
    "counted_steps",
    "Deprecation",
    "DEPRECATIONS",
    "describe",
    "device_history",
    "differentiates",
    "dispatch_loop",
    "dotted",
    "dotted_expression",
    "drives_steps",
    "eager_ops",
    "eager_tree_updates",
    "enclosing_statements",
    "ends_episode",
    "example_inputs_for_init",
    "exclusive_cases",
    "exits_early",
    "exits_on_device",
    "fed_back",
    "filled_buffers",
    "Finding",
    "Fix",
    "flax_inits",
    "Function",
    "FunctionSummary",
    "grown_names",
    "grows_carry",
    "has_compiled_alternative",
    "has_fixed_trip_count",
    "host_bound_call",
    "host_fed",
    "host_side",
    "imported_candidate",
    "input_for_init",
    "int_value",
    "Invalid",
    "is_float64_numpy",
    "is_numpy_value",
    "is_traced_value",
    "is_wait",
    "iterates_rows",
    "iterates_structure",
    "key_reuses",
    "Keyword",
    "KEYWORDS_BY_FUNCTION",
    "literal_texts",
    "literal_trip_count",
    "lookup",
    "Loop",
    "marked_wrong",
    "measured_call",
    "measurement_inputs",
    "module_alias",
    "mutated_params",
    "named_stand_in",
    "names_in",
    "no_new_trace_findings",
    "older_spelling",
    "one_splits_first",
    "over_structure",
    "own_nodes",
    "prepares_compiled_input",
    "read_names",
    "reads_timer",
    "really_traced",
    "rebound_globals",
    "records_for_rendering",
    "rename_deprecated",
    "rename_keyword",
    "renders_each_iteration",
    "Report",
    "result_unread",
    "Reuse",
    "Rule",
    "runs_compiled_loops",
    "SemanticModel",
    "SHORT_LOOP",
    "shows_async_dispatch",
    "shows_same_draw",
    "shows_tracing_error",
    "SINGLE_PASS",
    "Site",
    "site_of",
    "small_compiled_steps",
    "Statements",
    "step_state",
    "StepContext",
    "string_value",
    "syncing_functions",
    "target_names",
    "teaches_pitfall",
    "timed_regions",
    "TimedRegion",
    "timeit_block_until_ready",
    "traced_functions",
    "tracers",
    "traces_as_written",
    "TREE_MODULE_SINCE",
    "UNSAFE",
    "unsynchronized_work",
    "Valid",
    "walk",
    "walks_device_rows",
    "where",
    "whole_list_read",
    "why_every_step",
    "work_results",
    "WORTH_JIT",
    "wraps_compiled_scan",
]
