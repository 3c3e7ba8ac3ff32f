"""The contract between a reference pipeline and the harness that measures it.

A pipeline lives in `reference_pipelines/<name>/` and exposes, in its `__init__.py`, one
module-level `PIPELINE: Pipeline`. Each stage is a module of that folder
(`stage0_original.py`, `stage1_jit.py`, ...) whose docstring's first line says what the stage
changes and why, and which defines a plain function

    def run(workload) -> pytree of arrays

that does the whole job for the given workload and returns its outputs. Stages never time
themselves, print, or read the clock: the harness calls `run` (first call = compile + run,
then repeats), synchronises with `jax.block_until_ready` and times it.

This module imports nothing heavy: the static half and `bench --list` read it without JAX.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, NamedTuple


class Validation(NamedTuple):
    """How a stage's outputs compare with the reference (stage 0 on the same workload)."""

    ok: bool
    metric: str  # e.g. "max_abs_err", "max_rel_err", "final_loss_rel_diff", "mean_return"
    value: float
    tolerance: float
    detail: str = ""


@dataclass(frozen=True)
class Stage:
    """One rewrite step. `module` is the stage's module name inside the pipeline package."""

    module: str
    addresses: tuple[str, ...] = ()  # rule codes whose findings this rewrite removes
    changes_math: bool = False  # a different optimizer, a fixed bug: validation is looser
    math_note: str = ""  # when changes_math: what changes and how validation accounts for it
    # Stages too slow to run at full size are measured on a prefix of the work and
    # extrapolated linearly (docs/design.md); None means always run the whole workload.
    full_size_prefix: float | None = None


@dataclass(frozen=True)
class Pipeline:
    name: str  # folder name, e.g. "batched_learner"
    title: str  # one line for reports
    description: str  # a paragraph: the workload, where it comes from (which seed)
    stages: tuple[Stage, ...]
    throughput_unit: str  # e.g. "obs*seed/s", "samples/s", "env steps/s"
    # make_workload(size) -> workload; sizes include "small" (every stage in seconds) and "full"
    make_workload: Callable[[str], Any]
    # work_units(workload) -> float: how many throughput units the whole run performs
    work_units: Callable[[Any], float]
    # validate(reference_outputs, outputs, workload, stage) -> Validation
    validate: Callable[[Any, Any, Any, Stage], Validation]
    # prefix(workload, fraction) -> a smaller workload doing `fraction` of the work, for
    # stages with full_size_prefix; None when no stage needs it.
    prefix: Callable[[Any, float], Any] | None = None
    sizes: tuple[str, ...] = ("small", "full")
    package: str = field(default="", compare=False)  # filled by load_pipeline
    source: str = field(default="", compare=False)  # the folder path `bench` was given, for a user's pipeline

    def stage_module(self, stage: Stage) -> ModuleType:
        return importlib.import_module(f"{self.package}.{stage.module}")


PIPELINES_PACKAGE = "jaxopt_audit.reference_pipelines"
PIPELINE_NAMES = ("batched_learner", "training_loop", "ppo_cartpole", "jit_basics")


def load_pipeline(name: str) -> Pipeline:
    """Import `reference_pipelines/<name>` and return its PIPELINE (imports JAX)."""
    if name not in PIPELINE_NAMES:
        raise KeyError(f"unknown pipeline {name!r}; choose from {', '.join(PIPELINE_NAMES)}")
    package = f"{PIPELINES_PACKAGE}.{name}"
    pipeline: Pipeline = importlib.import_module(package).PIPELINE
    object.__setattr__(pipeline, "package", package)
    return pipeline
