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
    carried_key,
    jit_decorator,
    timeit_block_until_ready,
)
from .framework.fix import SAFE, dotted_expression, module_alias
from .framework.rule import Finding, Fix, Invalid, Report, Rule, Valid
from .knowledge import apis
from .knowledge.deprecations import (
    DEPRECATIONS,
    Deprecation,
    Keyword,
    deprecation_fix,
    deprecation_message,
    lookup,
)
from .model import Assignment, Function, Loop, SemanticModel, Site
from .model.configurations import (
    closes_over_configuration,
    factory_of_varying_values,
    returned_per_configuration,
    sweeps_written_out,
)
from .model.demonstrations import (
    marked_wrong,
    shows_async_dispatch,
    shows_same_draw,
    shows_tracing_error,
    teaches_pitfall,
)
from .model.deprecated_uses import (
    deprecated_keyword_uses,
    deprecated_uses,
    unevaluated_nodes,
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
from .model.independence import (
    collects_results,
    independent_items,
    is_grid,
    is_key_batch,
    item_names,
    mentions,
    updates_shared_object,
)
from .model.jit_construction import (
    ahead_of_time,
    builds_functions,
    fresh_function,
    is_jit_decorator,
    jit_target,
    jit_wrapper,
    per_outer_pass,
    rebuilt_alike,
    stable_function,
    wrapper_reuse,
)
from .model.keys import (
    INIT_METHODS,
    KeyAnalysis,
    Reuse,
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
from .model.mapped_arguments import (
    bound_with_the_item,
    builds_a_called_partial,
    structural_use,
    vmappable,
    vmappable_as_written,
)
from .model.memoisation import (
    runs_once,
    under_memo_guard,
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
    "ahead_of_time",
    "apis",
    "ArrayEvidence",
    "Assignment",
    "batch_getter",
    "block_until_ready",
    "bound_with_the_item",
    "builds_a_called_partial",
    "builds_functions",
    "callee_name",
    "callers_of",
    "calls_in_order",
    "canonical",
    "carried_key",
    "carried_names",
    "changing_shape",
    "child_fields",
    "children",
    "closes_over_configuration",
    "collects_results",
    "CompiledStep",
    "condition_around",
    "container_annotation",
    "counted_steps",
    "deprecated_keyword_uses",
    "deprecated_uses",
    "Deprecation",
    "deprecation_fix",
    "deprecation_message",
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
    "exits_early",
    "exits_on_device",
    "factory_of_varying_values",
    "fed_back",
    "filled_buffers",
    "Finding",
    "Fix",
    "fresh_function",
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
    "independent_items",
    "INIT_METHODS",
    "int_value",
    "Invalid",
    "is_float64_numpy",
    "is_grid",
    "is_jit_decorator",
    "is_key_batch",
    "is_numpy_value",
    "is_traced_value",
    "is_wait",
    "item_names",
    "iterates_rows",
    "iterates_structure",
    "jit_decorator",
    "jit_target",
    "jit_wrapper",
    "KeyAnalysis",
    "Keyword",
    "literal_texts",
    "literal_trip_count",
    "lookup",
    "Loop",
    "marked_wrong",
    "measured_call",
    "mentions",
    "module_alias",
    "mutated_params",
    "names_in",
    "over_structure",
    "own_nodes",
    "per_outer_pass",
    "prepares_compiled_input",
    "read_names",
    "reads_timer",
    "really_traced",
    "rebound_globals",
    "rebuilt_alike",
    "records_for_rendering",
    "renders_each_iteration",
    "Report",
    "returned_per_configuration",
    "Reuse",
    "Rule",
    "runs_compiled_loops",
    "runs_once",
    "SAFE",
    "SemanticModel",
    "SHORT_LOOP",
    "shows_async_dispatch",
    "shows_same_draw",
    "shows_tracing_error",
    "SINGLE_PASS",
    "Site",
    "small_compiled_steps",
    "stable_function",
    "Statements",
    "step_state",
    "StepContext",
    "string_value",
    "structural_use",
    "sweeps_written_out",
    "syncing_functions",
    "target_names",
    "teaches_pitfall",
    "timed_regions",
    "TimedRegion",
    "timeit_block_until_ready",
    "traced_functions",
    "tracers",
    "traces_as_written",
    "under_memo_guard",
    "unevaluated_nodes",
    "unsynchronized_work",
    "updates_shared_object",
    "Valid",
    "vmappable",
    "vmappable_as_written",
    "walk",
    "walks_device_rows",
    "where",
    "whole_list_read",
    "why_every_step",
    "work_results",
    "WORTH_JIT",
    "wrapper_reuse",
    "wraps_compiled_scan",
]
