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


from .framework.fix import (
    SAFE,
    UNSAFE,
    dotted_expression,
    module_alias,
    wrap_call,
)
from .framework.rule import (
    Finding,
    Fix,
    Invalid,
    Report,
    Rule,
    Valid,
)
from .knowledge import apis
from .knowledge.deprecations import (
    DEPRECATIONS,
    Deprecation,
    Keyword,
    deprecation_fix,
    deprecation_message,
    lookup,
)
from .model.configurations import (
    called_per_iteration,
    closes_over_configuration,
    factory_of_varying_values,
    returned_per_configuration,
    sweeps_written_out,
)
from .model.core import (
    SemanticModel,
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
    dispatch_loop,
    eager_ops,
    eager_tree_updates,
    host_fed,
    host_side,
    iterates_structure,
    prepares_compiled_input,
    rebound_globals,
    runs_eagerly,
)
from .model.eager_steps import (
    EagerGradient,
    eager_gradients,
)
from .model.enclosing import (
    condition_around,
    enclosing_statements,
    site_of,
)
from .model.gradients import (
    computes_gradients,
    descent_step,
    gradient_names,
)
from .model.host_loops import (
    Statements,
    ends_episode,
    exits_on_device,
    fed_back,
    is_wait,
    over_structure,
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
from .model.independence import (
    collects_results,
    independent_items,
    is_grid,
    is_key_batch,
    item_names,
    mentions,
    updates_shared_object,
)
from .model.index import (
    Assignment,
    Function,
    Loop,
    Site,
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
    carried_names,
    concatenated,
    exits_early,
    filled_buffers,
    grown_names,
    grows_carry,
    has_compiled_alternative,
    has_fixed_trip_count,
    host_bound_call,
    is_float64_numpy,
    is_numpy_value,
    literal_trip_count,
    records_for_rendering,
    runs_at_most_once,
    step_state,
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
    where,
    why_every_step,
)
from .model.runs import (
    callers_of,
)
from .model.shapes import (
    GrowingList,
    changing_shape,
    growing_list,
    grown_by_callee,
)
from .model.side_effects import (
    catches_type_error,
    outer_container,
    outer_iterator,
    printed_tracer,
    same_trace,
    top_level_call,
)
from .model.step_size import (
    CompiledStep,
    compiled_training_loop,
    small_compiled_steps,
)
from .model.summaries import (
    FunctionSummary,
)
from .model.timed_work import (
    fed_by_host_stream,
    first_jitted_call,
    measurement_labels,
    one_off_first_run,
    timed_lambda_work,
    timed_text_work,
    timeit_statement,
    times_whole_run,
    timing_magic,
    waited_next_iteration,
)
from .model.timing import (
    TimedRegion,
    calls_in_order,
    eager_baseline,
    eager_baseline_loop,
    reads_timer,
    timed_regions,
    unsynchronized_work,
    work_results,
)
from .model.trace_check import (
    array_only_parameters,
    no_new_trace_findings,
)
from .model.traced import (
    ArrayEvidence,
    is_traced_value,
    traced_functions,
)
from .model.tracers import (
    container_annotation,
    really_traced,
    tracers,
)
from .model.unrolled import (
    UnrolledLoop,
    unrolled_loop,
)
from .pipeline.project import (
    counted_steps,
    imported_candidate,
)
from .syntax.names import (
    canonical,
    dotted,
)
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
    "ahead_of_time",
    "apart_at_top_level",
    "apis",
    "array_only_parameters",
    "ArrayEvidence",
    "Assignment",
    "bound_with_the_item",
    "builds_a_called_partial",
    "builds_functions",
    "called_per_iteration",
    "callee_name",
    "callers_of",
    "calls_in_order",
    "canonical",
    "carried_names",
    "catches_type_error",
    "changing_shape",
    "checks_every_result",
    "child_fields",
    "children",
    "closes_over_configuration",
    "collects_results",
    "compiled_training_loop",
    "CompiledStep",
    "computes_gradients",
    "concatenated",
    "condition_around",
    "container_annotation",
    "counted_steps",
    "deprecated_keyword_uses",
    "deprecated_uses",
    "Deprecation",
    "deprecation_fix",
    "deprecation_message",
    "DEPRECATIONS",
    "descent_step",
    "describe",
    "dispatch_loop",
    "dotted",
    "dotted_expression",
    "eager_baseline",
    "eager_baseline_loop",
    "eager_gradients",
    "eager_ops",
    "eager_tree_updates",
    "EagerGradient",
    "enclosing_statements",
    "ends_episode",
    "example_inputs_for_init",
    "exclusive_cases",
    "exits_early",
    "exits_on_device",
    "factory_of_varying_values",
    "fed_back",
    "fed_by_host_stream",
    "filled_buffers",
    "Finding",
    "first_jitted_call",
    "first_waits",
    "Fix",
    "flax_inits",
    "fresh_function",
    "from_data_set",
    "Function",
    "FunctionSummary",
    "gradient_names",
    "growing_list",
    "GrowingList",
    "grown_by_callee",
    "grown_names",
    "grows_carry",
    "has_compiled_alternative",
    "has_fixed_trip_count",
    "host_bound_call",
    "host_fed",
    "host_side",
    "imported_candidate",
    "independent_items",
    "input_for_init",
    "int_value",
    "Invalid",
    "is_float64_numpy",
    "is_grid",
    "is_host_data",
    "is_jit_decorator",
    "is_key_batch",
    "is_literal",
    "is_numpy_metadata",
    "is_numpy_value",
    "is_prefetch",
    "is_traced_value",
    "is_wait",
    "item_names",
    "iterates_structure",
    "jit_target",
    "jit_wrapper",
    "key_reuses",
    "Keyword",
    "literal_texts",
    "literal_trip_count",
    "lookup",
    "Loop",
    "loop_runs_steps",
    "marked_wrong",
    "measurement_inputs",
    "measurement_labels",
    "mentions",
    "module_alias",
    "named_stand_in",
    "names_in",
    "no_new_trace_findings",
    "numpy_origin",
    "one_off_first_run",
    "one_splits_first",
    "only_measured",
    "outer_container",
    "outer_iterator",
    "over_structure",
    "own_nodes",
    "per_outer_pass",
    "prepares_compiled_input",
    "printed_tracer",
    "read_names",
    "reads_timer",
    "really_traced",
    "rebound_globals",
    "rebuilt_alike",
    "records_for_rendering",
    "Report",
    "result_unread",
    "returned_per_configuration",
    "Reuse",
    "Rule",
    "runs_a_step",
    "runs_at_most_once",
    "runs_eagerly",
    "runs_once",
    "SAFE",
    "same_trace",
    "SemanticModel",
    "SHORT_LOOP",
    "shows_async_dispatch",
    "shows_same_draw",
    "shows_tracing_error",
    "Site",
    "site_of",
    "small_compiled_steps",
    "stable_function",
    "Statements",
    "step_state",
    "StepReads",
    "string_value",
    "structural_use",
    "sweeps_written_out",
    "target_names",
    "teaches_pitfall",
    "timed_lambda_work",
    "timed_regions",
    "timed_text_work",
    "TimedRegion",
    "timeit_statement",
    "times_whole_run",
    "timing_magic",
    "top_level_call",
    "traced_functions",
    "tracers",
    "under_memo_guard",
    "unevaluated_nodes",
    "unrolled_loop",
    "UnrolledLoop",
    "UNSAFE",
    "unsynchronized_work",
    "updates_shared_object",
    "Valid",
    "vmappable",
    "vmappable_as_written",
    "waited_next_iteration",
    "walk",
    "where",
    "whole_history_read",
    "why_every_step",
    "work_results",
    "WORTH_JIT",
    "wrap_call",
    "wrapper_reuse",
    "wraps_compiled_scan",
]
