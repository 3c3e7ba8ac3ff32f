"""my_pipeline: a user's own staged pipeline (a least-squares fit by gradient descent), run with
`jaxopt-audit bench tests/user_pipeline/my_pipeline`."""

from typing import NamedTuple

import numpy as np

from jaxopt_audit.runtime.bench.pipeline import Pipeline, Stage, Validation

STEPS = {"small": 20, "full": 200}


class Workload(NamedTuple):
    x: np.ndarray  # (64, 4) inputs
    y: np.ndarray  # (64,) targets
    steps: int


def make_workload(size: str) -> Workload:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    return Workload(x, x @ np.arange(1, 5, dtype=np.float32), STEPS[size])


def work_units(workload: Workload) -> float:
    return float(workload.steps)


def validate(reference, outputs, workload, stage) -> Validation:
    error = float(np.max(np.abs(np.asarray(reference) - np.asarray(outputs))))
    return Validation(error <= 1e-4, "max_abs_err", error, 1e-4)


PIPELINE = Pipeline(
    name="my_pipeline", title="Least squares by gradient descent",
    description="A user's pipeline: the same fit op by op, then as one compiled loop.",
    stages=(Stage("stage0_loop"), Stage("stage1_scan", addresses=("JAX101", "JAX201"))),
    throughput_unit="steps/s", make_workload=make_workload, work_units=work_units, validate=validate)
