"""jit_basics: a 'JAX basics' post's first microbenchmarks (selu, a matmul, boolean masks) as a rewrite chain.

Every stage runs all three microbenchmarks on each input matrix, in their before or after form, so
the harness measures the cumulative effect; `microbench.py` times each one alone, and shows the
async-dispatch timing pitfall, which no stage can show (stages never read the clock).
"""

from __future__ import annotations

from jaxopt_audit.runtime.bench.pipeline import Pipeline, Stage

from .validation import TOLERANCE, validate
from .workload import make_workload, work_units

PIPELINE = Pipeline(
    name="jit_basics",
    title="JAX basics: eager vs jit selu, a matmul kept on device, boolean masks as jnp.where",
    description=(
        "A 'JAX basics' post's microbenchmarks on device-resident float32 matrices (3000x3000 at full size, four "
        "of them): per matrix, selu, the Gram matrix jnp.dot(x, x.T) and the sum of the negative "
        "entries. Stage 0 is eager, copies each Gram matrix to the host with np.array and sums "
        "x[x < 0]; the rewrites jit selu and the matmul, replace the boolean mask (which jit cannot "
        "trace) with jnp.where, keep results on the device, and vmap the loop over matrices. The "
        "math never changes: every output matches stage 0 within "
        f"{TOLERANCE:g} max relative error. The stages' times add the three microbenchmarks, so the "
        "matmul dominates on CPU; `python -m jaxopt_audit.reference_pipelines.jit_basics.microbench` "
        "times each microbenchmark alone, before and after, and the async-dispatch pitfall: the time "
        "a timer reports when it stops as the call returns (dispatch only) vs after "
        "block_until_ready (the real cost)."
    ),
    stages=(
        Stage("stage0_original"),
        Stage("stage1_jit", addresses=("JAX101",)),
        Stage("stage2_where"),  # x[x < 0] cannot be jitted; no rule reports a two-op helper
        Stage("stage3_on_device", addresses=("JAX301",)),
        Stage("stage4_vmap", addresses=("JAX202",)),
    ),
    throughput_unit="matrices/s",
    make_workload=make_workload,
    work_units=work_units,
    validate=validate,
)
