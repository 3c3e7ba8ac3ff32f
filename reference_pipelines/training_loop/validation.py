"""Validation of a training_loop stage against stage 0: tight for the same math, loss curves otherwise."""

from __future__ import annotations

import numpy as np

from jaxopt_audit.runtime.bench.pipeline import Stage, Validation

from .workload import Workload

# Same math, float32: jit fusion and XLA's reductions reorder sums, and 15,630 SGD steps carry the
# rounding along; measured drift stays far below this (see tests/test_pipeline_training_loop.py).
SAME_MATH_TOLERANCE = 1e-3  # max relative error over every weight and every step's loss
# Changed math (fresh instead of constant augmentation noise): per-epoch mean training loss.
LOSS_CURVE_TOLERANCE = 0.05  # max relative difference of any epoch's mean loss
MIN_LOSS_DROP = 0.5  # and the loss at the end must be at most half the loss at the start
INITIAL_STEPS = 10


def relative_error(reference: np.ndarray, value: np.ndarray) -> float:
    """max |value - reference| / max |reference| (one number per array, scale-free)."""
    scale = max(float(np.max(np.abs(reference))), np.finfo(np.float32).tiny)
    return float(np.max(np.abs(value - reference)) / scale)


def epoch_means(losses: np.ndarray, steps_per_epoch: int) -> np.ndarray:
    n_epochs = len(losses) // steps_per_epoch
    return losses[:n_epochs * steps_per_epoch].reshape(n_epochs, steps_per_epoch).mean(axis=1)


def validate(reference: dict, outputs: dict, workload: Workload, stage: Stage) -> Validation:
    ref_losses = np.asarray(reference["losses"], np.float64)
    losses = np.asarray(outputs["losses"], np.float64)
    # A stage measured on a prefix runs fewer epochs: compare the steps both runs made.
    n_steps = min(len(ref_losses), len(losses))
    same_length = len(ref_losses) == len(losses)
    if not np.all(np.isfinite(losses)):
        return Validation(False, "finite_losses", float("nan"), 0.0, "the loss became NaN or infinite")
    if not stage.changes_math:
        errors = [relative_error(ref_losses[:n_steps], losses[:n_steps])]
        if same_length:  # the weights are only comparable after the same number of steps
            errors += [relative_error(np.asarray(reference["params"][k]), np.asarray(outputs["params"][k]))
                       for k in reference["params"]]
        value = max(errors)
        detail = (f"losses of {n_steps} steps" + (" and final weights" if same_length else
                  " (reference ran a prefix: weights not compared)"))
        return Validation(value <= SAME_MATH_TOLERANCE, "max_rel_err", value, SAME_MATH_TOLERANCE, detail)
    steps_per_epoch = workload.steps_per_epoch
    ref_curve = epoch_means(ref_losses[:n_steps], steps_per_epoch)
    curve = epoch_means(losses[:n_steps], steps_per_epoch)
    value = float(np.max(np.abs(curve - ref_curve) / ref_curve))
    # Start: the first steps' losses, before SGD moved much; end: the last tenth of an epoch.
    initial = float(np.mean(losses[:INITIAL_STEPS]))
    final = float(np.mean(losses[n_steps - max(1, steps_per_epoch // 10):n_steps]))
    dropped = final <= MIN_LOSS_DROP * initial
    detail = (f"{len(curve)} epoch mean losses vs stage 0 (last {curve[-1]:.4f} vs {ref_curve[-1]:.4f}); "
              f"loss fell from {initial:.4f} to {final:.4f}"
              + ("" if dropped else f", not below {MIN_LOSS_DROP:g}x the initial loss: training is broken"))
    return Validation(bool(value <= LOSS_CURVE_TOLERANCE and dropped), "epoch_loss_max_rel_diff", value,
                      LOSS_CURVE_TOLERANCE, detail)
