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
    rename_deprecated,
    rename_keyword,
    timeit_block_until_ready,
)
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
)
from .model.enclosing import (
    condition_around,
    enclosing_statements,
)
from .model.host_loops import (
    Statements,
    ends_episode,
    exits_on_device,
    fed_back,
    is_wait,
    over_structure,
    runs_compiled_loops,
)
from .model.host_reads import (
    StepReads,
    checks_every_result,
    first_waits,
    whole_history_read,
)
from .model.host_values import (
    from_data_set,
    is_host_data,
    is_literal,
    is_numpy_metadata,
    is_prefetch,
    loop_runs_steps,
    numpy_origin,
    only_measured,
    runs_a_step,
)
from .model.keys import (
    INIT_METHODS,
    KeyAnalysis,
    Reuse,
)
from .model.loops import (
    carried_names,
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
    step_state,
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
    "apis",
    "ArrayEvidence",
    "Assignment",
    "block_until_ready",
    "callee_name",
    "callers_of",
    "calls_in_order",
    "canonical",
    "carried_key",
    "carried_names",
    "changing_shape",
    "checks_every_result",
    "child_fields",
    "children",
    "CompiledStep",
    "condition_around",
    "container_annotation",
    "counted_steps",
    "Deprecation",
    "DEPRECATIONS",
    "describe",
    "differentiates",
    "dispatch_loop",
    "dotted",
    "drives_steps",
    "eager_ops",
    "eager_tree_updates",
    "enclosing_statements",
    "ends_episode",
    "exits_early",
    "exits_on_device",
    "fed_back",
    "filled_buffers",
    "Finding",
    "first_waits",
    "Fix",
    "from_data_set",
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
    "INIT_METHODS",
    "int_value",
    "Invalid",
    "is_float64_numpy",
    "is_host_data",
    "is_literal",
    "is_numpy_metadata",
    "is_numpy_value",
    "is_prefetch",
    "is_traced_value",
    "is_wait",
    "iterates_rows",
    "iterates_structure",
    "jit_decorator",
    "KeyAnalysis",
    "Keyword",
    "KEYWORDS_BY_FUNCTION",
    "literal_texts",
    "literal_trip_count",
    "lookup",
    "Loop",
    "loop_runs_steps",
    "marked_wrong",
    "mutated_params",
    "names_in",
    "numpy_origin",
    "older_spelling",
    "only_measured",
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
    "Report",
    "Reuse",
    "Rule",
    "runs_a_step",
    "runs_compiled_loops",
    "SemanticModel",
    "SHORT_LOOP",
    "shows_async_dispatch",
    "shows_same_draw",
    "shows_tracing_error",
    "SINGLE_PASS",
    "Site",
    "small_compiled_steps",
    "Statements",
    "step_state",
    "StepContext",
    "StepReads",
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
    "unsynchronized_work",
    "Valid",
    "walk",
    "where",
    "whole_history_read",
    "why_every_step",
    "work_results",
    "WORTH_JIT",
    "wraps_compiled_scan",
]
