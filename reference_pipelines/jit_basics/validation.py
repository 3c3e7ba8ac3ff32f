"""Validation of a jit_basics stage against stage 0: every output agrees to float32 rounding."""

from __future__ import annotations

import numpy as np

from jaxopt_audit.runtime.bench.pipeline import Stage, Validation

from .workload import Workload

# Same math in float32; fused/vectorised kernels and jnp.where's masked sum reorder the arithmetic.
TOLERANCE = 1e-4  # max relative error, per output, scaled by the output's largest magnitude
OUTPUTS = ("selu", "gram", "negative_sum")


def relative_error(reference: np.ndarray, value: np.ndarray) -> float:
    scale = max(float(np.max(np.abs(reference))), np.finfo(np.float32).tiny)
    return float(np.max(np.abs(value - reference)) / scale)


def validate(reference: dict, outputs: dict, workload: Workload, stage: Stage) -> Validation:
    errors = {}
    for name in OUTPUTS:
        # Looping stages return one array per matrix, the vectorised stage one stacked array.
        ref, out = np.asarray(np.stack(reference[name])), np.asarray(np.stack(outputs[name]))
        if ref.shape != out.shape:
            return Validation(False, "max_rel_err", float("inf"), TOLERANCE,
                              f"{name}: shape {out.shape}, stage 0 gave {ref.shape}")
        errors[name] = relative_error(ref.astype(np.float64), out.astype(np.float64))
    worst = max(errors, key=errors.get)
    detail = ", ".join(f"{name} {err:.1e}" for name, err in errors.items())
    ok = bool(np.isfinite(errors[worst]) and errors[worst] <= TOLERANCE)
    return Validation(ok, "max_rel_err", errors[worst], TOLERANCE, detail)
