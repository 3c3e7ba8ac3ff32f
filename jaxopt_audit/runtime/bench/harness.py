"""`jaxopt-audit bench`: measure a reference pipeline stage by stage and write the results JSON.

For each selected stage: make the workload once, call the stage's `run(workload)` through the
measurement core (first call, warm-up with transfer counting, synchronised steady state),
validate its outputs against stage 0's on the same workload, record the static findings on the
stage's file, and optionally capture an XProf trace of two steady-state calls. A stage with
`full_size_prefix` at size "full" runs on `pipeline.prefix(workload, fraction)` and its times
are scaled by the ratio of work units (`extrapolated: true`).

PIPELINE is one of the names in `PIPELINE_NAMES`, `all`, the path of a folder that follows the
reference pipeline protocol (`./my_pipeline`: an `__init__.py` defining `PIPELINE`, one module per
stage; see `pipeline.py` and the README), or the dotted name of any importable module that
defines `PIPELINE` (a team's own pipeline, or a test's).
"""

from __future__ import annotations

import datetime as dt
import importlib
import importlib.util
import os
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...exit_codes import UsageError
from ...modules import NotImportable, import_file
from ...results import (
    BenchResult,
    BreakEven,
    Check,
    CompileTimes,
    Scan,
    StageFinding,
    StageResult,
    Throughput,
    Times,
)
from .pipeline import PIPELINE_NAMES, Pipeline, Stage, load_pipeline

DEFAULT_BUDGET_S = {"small": 0.5, "full": 5.0}
TRACE_STEPS = 2


# ---------------------------------------------------------------- loading

def resolve_pipeline(name: str) -> Pipeline:
    """A built-in pipeline by name, a pipeline folder by path, or `package.module` defining PIPELINE."""
    if os.sep in name or "/" in name or os.path.isdir(name):
        return load_pipeline_folder(name)
    if name in PIPELINE_NAMES:
        try:
            return load_pipeline(name)
        except (ImportError, AttributeError) as exc:
            raise UsageError(f"pipeline {name!r} cannot be loaded ({type(exc).__name__}: {exc}); "
                             f"check that reference_pipelines/{name}/__init__.py defines PIPELINE") from exc
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise UsageError(f"unknown pipeline {name!r}: not a built-in ({', '.join(PIPELINE_NAMES)}) "
                         f"and not an importable module ({exc}); see `jaxopt-audit bench --list`") from exc
    pipeline = getattr(module, "PIPELINE", None)
    if not isinstance(pipeline, Pipeline):
        raise UsageError(f"module {name!r} has no PIPELINE of type jaxopt_audit.runtime.bench.pipeline.Pipeline; "
                         "define one at module level")
    if not pipeline.package:
        object.__setattr__(pipeline, "package", module.__name__)
    return pipeline


def load_pipeline_folder(folder: str) -> Pipeline:
    """Import a user's pipeline folder as a package (its stages import as its submodules)."""
    path = Path(folder).resolve()
    init = path / "__init__.py"
    if not path.is_dir():
        raise UsageError(f"{folder}: no such pipeline folder; give a folder with an __init__.py defining "
                         "PIPELINE (see the README, 'Your own pipeline')")
    if not init.is_file():
        raise UsageError(f"{folder}: no __init__.py; a pipeline folder defines PIPELINE in its __init__.py")
    # a name of its own, so the folder cannot shadow (or be shadowed by) an installed package
    package = "jaxopt_audit_user_" + re.sub(r"\W", "_", path.name)
    if package not in sys.modules:
        try:
            import_file(package, init, package_dir=path)
        except NotImportable:
            raise UsageError(f"{folder}: cannot be imported as a package") from None
        except Exception as exc:
            raise UsageError(f"{init}: importing it failed ({type(exc).__name__}: {exc}); fix the pipeline "
                             "module") from exc
    pipeline = getattr(sys.modules[package], "PIPELINE", None)
    if not isinstance(pipeline, Pipeline):
        raise UsageError(f"{init} defines no PIPELINE of type jaxopt_audit.runtime.bench.pipeline.Pipeline; "
                         "define one at module level")
    object.__setattr__(pipeline, "package", package)
    object.__setattr__(pipeline, "source", folder)
    return pipeline


def select_stages(pipeline: Pipeline, spec: str | None) -> list[tuple[int, Stage]]:
    """`--stages 0,2` or `--stages stage0_original,stage2_vmap` (module names or indices)."""
    indexed = list(enumerate(pipeline.stages))
    if not spec:
        return indexed
    chosen: list[tuple[int, Stage]] = []
    for token in (t.strip() for t in spec.split(",") if t.strip()):
        if token.isdigit() and int(token) < len(indexed):
            pick = indexed[int(token)]
        else:
            matches = [(i, s) for i, s in indexed if s.module == token]
            if not matches:
                names = ", ".join(f"{i}:{s.module}" for i, s in indexed)
                raise UsageError(f"--stages: no stage {token!r} in {pipeline.name}; choose from {names}")
            pick = matches[0]
        if pick not in chosen:
            chosen.append(pick)
    return sorted(chosen, key=lambda pair: pair[0])


def stage_title(pipeline: Pipeline, stage: Stage) -> str:
    """The first line of the stage module's docstring: what it changes and why."""
    doc = (pipeline.stage_module(stage).__doc__ or "").strip()
    return doc.splitlines()[0].strip() if doc else stage.module


def stage_findings(pipeline: Pipeline, stage: Stage, scan: Scan) -> tuple[list[StageFinding] | None, str]:
    """The static scanner's findings on the stage's file, or None and why not."""
    path = getattr(pipeline.stage_module(stage), "__file__", None)
    if not path:
        return None, "the stage module has no source file"
    try:
        result = scan([path])
    except Exception as exc:  # the scanner's own failure must not lose the measurements
        return None, f"scanner failed: {type(exc).__name__}: {exc}"
    return StageFinding.sorted(result.findings), ""


# ---------------------------------------------------------------- running

@dataclass
class BenchOptions:
    size: str = "small"
    repeats: int | None = None
    budget_s: float | None = None
    trace_dir: Path | None = None
    scan: Scan | None = None  # records each stage's findings (commands/bench.py passes the static scan)
    min_repeats: int = 3


@dataclass
class _References:
    """Stage 0's outputs per workload (None: the whole workload; a float: a prefix fraction)."""

    outputs: dict[float | None, Any] = field(default_factory=dict)


def _work_unit_name(throughput_unit: str) -> str:
    return throughput_unit[:-2] if throughput_unit.endswith("/s") else throughput_unit


def run_pipeline(pipeline: Pipeline, stages: list[tuple[int, Stage]], options: BenchOptions,
                 on_event: Callable[[str, dict[str, Any]], None] | None = None,
                 on_result: Callable[[BenchResult], None] | None = None) -> BenchResult:
    """Measure the stages and return their result (jaxopt_audit/results.py; its JSON is docs/design.md's).

    on_result, if given, receives the result of the stages measured so far after each stage, so a
    run stopped by a time limit or a crash keeps what it had finished (`bench --out` writes it).
    """
    # JAX (the runtime extra) and the modules that import it: loaded only to measure
    import jax

    from .machine import machine_info
    from .measure import harness_overhead, measure

    def emit(kind: str, **info: Any) -> None:
        if on_event is not None:
            on_event(kind, info)

    if options.size not in pipeline.sizes:
        raise UsageError(f"--size {options.size!r}: {pipeline.name} has sizes {', '.join(pipeline.sizes)}")
    machine = machine_info()
    budget = options.budget_s if options.budget_s is not None else DEFAULT_BUDGET_S.get(options.size, 1.0)
    workload = pipeline.make_workload(options.size)
    full_units = float(pipeline.work_units(workload))
    prefixes: dict[float, Any] = {}
    references = _References()
    stage0 = pipeline.stages[0]

    def workload_for(stage: Stage) -> tuple[float | None, Any]:
        fraction = stage.full_size_prefix if options.size == "full" else None
        if fraction is None:
            return None, workload
        if pipeline.prefix is None:
            raise UsageError(f"{pipeline.name}: stage {stage.module} asks for a prefix but the pipeline "
                             "defines no prefix(workload, fraction)")
        if fraction not in prefixes:
            prefixes[fraction] = pipeline.prefix(workload, fraction)
        return fraction, prefixes[fraction]

    def reference_for(key: float | None, stage_workload: Any) -> Any:
        if key in references.outputs:
            return references.outputs[key]
        stage0_key, _ = workload_for(stage0)
        if key is None and stage0_key is not None and stage0_key in references.outputs:
            return references.outputs[stage0_key]  # stage 0 too slow for the full run: its prefix
        run0 = pipeline.stage_module(stage0).run
        if key is None and stage0_key is not None:
            key, stage_workload = stage0_key, workload_for(stage0)[1]
        emit("reference", stage=stage0.module)
        references.outputs[key] = jax.block_until_ready(run0(stage_workload))
        return references.outputs[key]

    overhead: list[float] = []  # measured once, on the first result

    def result(measured: list[StageResult]) -> BenchResult:
        _add_comparisons(measured, _work_unit_name(pipeline.throughput_unit))
        if not overhead:
            overhead.append(harness_overhead())
        return BenchResult(
            pipeline=pipeline.name,
            pipeline_path=pipeline.source or None,
            title=pipeline.title,
            description=pipeline.description,
            size=options.size,
            platform=machine.platform,
            device=machine.device if machine.platform != "cpu" else f"{machine.cpu_model}, {machine.cpu_count} cores",
            jax_version=machine.jax_version,
            machine=machine.to_json(),
            throughput_unit=pipeline.throughput_unit,
            harness_overhead_s=overhead[0],
            created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            variants=list(measured),
        )

    variants: list[StageResult] = []
    for position, (index, stage) in enumerate(stages):
        emit("stage", index=index, module=stage.module, position=position, total=len(stages))
        variant = StageResult(name=stage.module, stage=index, addresses=list(stage.addresses),
                              changes_math=stage.changes_math, math_note=stage.math_note)
        try:
            variant.title = stage_title(pipeline, stage)
            key, stage_workload = workload_for(stage)
            units = float(pipeline.work_units(stage_workload))
            scale = full_units / units if key is not None else 1.0
            m = measure(pipeline.stage_module(stage).run, stage_workload, name=stage.module,
                        repeats=options.repeats, min_repeats=options.min_repeats, budget_s=budget,
                        on_progress=lambda phase, done, total: emit(  # called within measure()
                            "progress", module=stage.module, phase=phase, done=done, total=total))  # noqa: B023
            if index == 0:
                references.outputs.setdefault(key, m.outputs)
            emit("validate", module=stage.module)
            validation = pipeline.validate(reference_for(key, stage_workload), m.outputs,
                                           stage_workload, stage)
            steady = Times(**m.steady.to_json())
            scaled = steady.scaled(scale)
            variant.compile_s = m.compile_s
            variant.first_call_s = m.first_call_s
            variant.startup_s = m.startup_s
            variant.compile = CompileTimes(**m.to_json()["compile"])
            variant.steady_s = scaled
            variant.extrapolated = key is not None
            variant.prefix_fraction = None if key is None else units / full_units
            variant.measured_steady_s = steady if key is not None else None
            variant.throughput = Throughput(full_units / scaled.median if scaled.median > 0 else None,
                                            pipeline.throughput_unit)
            variant.work_units = full_units
            variant.compiles_per_call = m.compiles_per_call
            variant.recompiled = sorted(set(m.recompiled))
            variant.host_transfers_per_call = m.transfers_per_call
            variant.h2d_transfers_per_call = None if m.transfers is None else m.transfers.h2d
            variant.d2h_transfers_per_call = None if m.transfers is None else m.transfers.d2h
            variant.cost = None if m.cost is None else m.cost.to_json()
            variant.cost_note = m.cost_note
            variant.flops_per_s = m.flops_per_s
            variant.bytes_per_s = m.bytes_per_s
            variant.validation = Check(bool(validation.ok), validation.metric, float(validation.value),
                                       float(validation.tolerance), validation.detail)
            if options.trace_dir is not None:
                variant.trace = _trace_stage(pipeline, stage, stage_workload, options.trace_dir)
                emit("trace", module=stage.module, trace=variant.trace)
            del m  # outputs of later stages are not kept; stage 0's live on as the reference
        except UsageError:
            raise
        except Exception as exc:  # one broken stage must not lose the others' measurements
            variant = StageResult(name=variant.name, stage=index, addresses=variant.addresses,
                                  changes_math=variant.changes_math, math_note=variant.math_note,
                                  title=variant.title, error=f"{type(exc).__name__}: {exc}".splitlines()[0],
                                  traceback=traceback.format_exc(limit=8))
        if options.scan is not None:
            findings, why = stage_findings(pipeline, stage, options.scan)
            variant.findings = findings
            variant.findings_note = why
        variants.append(variant)
        emit("done", module=stage.module, variant=variant)
        if on_result is not None and position + 1 < len(stages):
            on_result(result(variants))

    return result(variants)


def _add_comparisons(variants: list[StageResult], unit: str) -> None:
    """speedup vs stage 0 and vs the previous measured stage; break-even in work units."""
    from .measure import break_even_calls, ceil_count  # imports JAX (the runtime extra)

    stage0 = next((v for v in variants if v.measured and v.stage == 0), None)
    previous: StageResult | None = None
    for variant in variants:
        if not variant.measured:
            continue
        median = variant.median_s
        base = stage0.median_s if stage0 else None
        variant.speedup_vs_stage0 = base / median if base and median > 0 else None
        if previous is not None:
            prev_median = previous.median_s
            variant.speedup_vs_previous = prev_median / median if median > 0 else None
            assert variant.startup_s is not None and previous.startup_s is not None and variant.work_units
            # calls of run(workload) to pay back the extra start-up; times work units per call
            calls = break_even_calls(variant.startup_s, median, previous.startup_s, prev_median)
            if calls is not None:
                extra = variant.startup_s - previous.startup_s
                saved_per_unit = (prev_median - median) / variant.work_units
                value = 0 if calls == 0 else ceil_count(extra / saved_per_unit)
                variant.break_even = BreakEven(value=value, unit=unit, calls=calls, versus=previous.name)
        previous = variant


def _trace_stage(pipeline: Pipeline, stage: Stage, stage_workload: Any, trace_dir: Path) -> dict[str, Any]:
    """Capture TRACE_STEPS steady-state calls with step markers; return where and the summary."""
    # JAX (the runtime extra) and the trace capture that imports it: loaded only to trace
    import jax

    from ..trace import TraceCapture, open_command, step_marker

    run = pipeline.stage_module(stage).run
    log_dir = trace_dir / pipeline.name / stage.module
    with TraceCapture(log_dir) as capture:
        for step in range(TRACE_STEPS):
            with step_marker(step, name=stage.module):
                jax.block_until_ready(run(stage_workload))
    summary = capture.summary()
    return {"log_dir": str(log_dir), "path": str(capture.path), "open": open_command(log_dir),
            "summary": summary.to_json(), "text": summary.render()}
