"""Drive one reference-pipeline stage like a user's script: `drive_stage.py PIPELINE STAGE [REPEATS]`.

Loads the pipeline, builds its small workload and calls the stage's `run` REPEATS times (default
2: a first, compiling call and a steady one), so `jaxopt-audit run` sees the stage as it runs.
"""

import sys

import jax

from jaxopt_audit.runtime.bench.pipeline import load_pipeline


def main() -> None:
    name, stage_module = sys.argv[1], sys.argv[2]
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    pipeline = load_pipeline(name)
    stage = next(s for s in pipeline.stages if s.module == stage_module)
    workload = pipeline.make_workload("small")
    run = pipeline.stage_module(stage).run
    for _ in range(repeats):
        outputs = run(workload)
    jax.block_until_ready(outputs)


if __name__ == "__main__":
    main()
