"""training_loop: a published case study's MLP regression training loop, from the original to a scanned epoch.

Stage by stage as the case study: jit, device-resident data with JAX preprocessing, optax, and one
`lax.scan` per epoch; the original's constant-key augmentation noise is fixed in a stage of its own.
"""

from __future__ import annotations

from jaxopt_audit.runtime.bench.pipeline import Pipeline, Stage

from .validation import LOSS_CURVE_TOLERANCE, MIN_LOSS_DROP, SAME_MATH_TOLERANCE, validate
from .workload import make_workload, prefix, work_units

PIPELINE = Pipeline(
    name="training_loop",
    title="MLP training loop: 15,630 SGD steps from op-by-op Python to one scan per epoch",
    description=(
        "After a published case study: a 64-1024-1024-1 tanh MLP (dict params) regresses synthetic targets from "
        "50,000 samples, batch 32, 10 epochs (15,630 steps incl. each epoch's partial last batch), "
        "plain SGD at lr 0.01, per-batch normalisation and Gaussian augmentation noise (scale 0.01). "
        "Every stage sees the same shuffled batches. Stages 0-2 keep the original's bug: the noise is "
        "drawn from jax.random.PRNGKey(0) inside the per-batch preprocessing, so it is the same for every "
        "batch; stage 3 fixes it alone. Optax uses sgd at the same rate, so it keeps the math. "
        f"Validation: same-math stages match stage 0's per-step losses and final weights within "
        f"{SAME_MATH_TOLERANCE:g} max relative error; after the noise fix, every epoch's mean loss is "
        f"within {LOSS_CURVE_TOLERANCE:.0%} of stage 0's and the loss must fall to at most "
        f"{MIN_LOSS_DROP:g}x its starting level. Stages 0-4 at full size are measured on the first "
        "epoch and extrapolated (the last stage runs all 10 epochs). The hidden width (1024) makes a "
        "batch-32 step ~210 MFLOP of matmuls, so "
        "the last stage can be compared with the machine's FLOP floor "
        "(benchmarks/training_loop_flop_floor.py)."
    ),
    stages=(
        Stage("stage0_original", full_size_prefix=0.1),
        Stage("stage1_jit", addresses=("JAX101",), full_size_prefix=0.1),
        Stage("stage2_device_data", addresses=("JAX302", "JAX301"), full_size_prefix=0.1),
        Stage("stage3_fresh_noise", addresses=("JAX502", "JAX602"), changes_math=True, full_size_prefix=0.1,
              math_note=("fresh noise per batch from a split key instead of PRNGKey(0) on every batch; "
                         "validated on per-epoch mean loss within "
                         f"{LOSS_CURVE_TOLERANCE:.0%} of stage 0's plus a required loss drop")),
        Stage("stage4_optax", addresses=("JAX702",), changes_math=True, full_size_prefix=0.1,
              math_note="optax.sgd at the same rate: stage 3's math (carries stage 3's noise fix)"),
        Stage("stage5_scan", addresses=("JAX201",), changes_math=True,
              math_note="one lax.scan per epoch: stage 3's math (carries stage 3's noise fix)"),
    ),
    throughput_unit="samples/s",
    make_workload=make_workload,
    work_units=work_units,
    validate=validate,
    prefix=prefix,
)
