"""ppo_cartpole: PPO on CartPole-v1, from a host NumPy environment to PureJaxRL and data parallelism."""

from __future__ import annotations

from jaxopt_audit.runtime.bench.pipeline import Pipeline, Stage

from .workload import make_workload, prefix, validate, work_units

_SAME_AS_STAGE_2 = ("same math and keys as stage 2 (equal outputs, tested); differs from stage 0 by "
                    "stage 2's many environments: validated by learning")

PIPELINE = Pipeline(
    name="ppo_cartpole",
    title="PPO on CartPole: host environment -> JAX env + scan -> vmap -> one jitted update -> sharded",
    description=(
        "PPO (PureJaxRL's CartPole-v1 recipe: actor-critic MLPs 64-64, GAE, clipped loss, 4 epochs "
        "x 4 minibatches per update) trained for a fixed budget of environment steps (small: 2^13, "
        "full: 2^24). Stage 0 is how such code often starts (the 'traditional approach' of RL write-ups): "
        "gym-like NumPy environments on the host, the policy on the device, a transfer each way "
        "every step. The stages move the environment into JAX with the rollout as a scan, vmap it "
        "over thousands of environments, jit the whole update and then shard the environments "
        "across devices. Throughput is environment steps per second; validation is equal "
        "rollouts from equal keys where the math is unchanged, and learning (mean return of the "
        "last tenth of training >= 475 at full size) where it changes."),
    stages=(
        Stage("stage0_original", full_size_prefix=1 / 512),
        Stage("stage1_jax_env_scan", addresses=("JAX301", "JAX302"), full_size_prefix=1 / 256),
        Stage("stage2_vmap_envs", addresses=("JAX202",), changes_math=True,
              math_note=("4 environments x 128 steps per update -> workload.vectorized (4096 x 16 at "
                         "full size, learning rate 2.5e-4 -> 1e-3): same env-step budget, fewer and "
                         "larger updates; validated by learning")),
        Stage("stage3_jit_update", addresses=("JAX201",), changes_math=True,
              math_note=_SAME_AS_STAGE_2),
        Stage("stage4_data_parallel", changes_math=True, math_note=_SAME_AS_STAGE_2),
    ),
    throughput_unit="env steps/s",
    make_workload=make_workload,
    work_units=work_units,
    validate=validate,
    prefix=prefix,
)
