"""ppo_cartpole pipeline at small size: every stage validates, equal keys give equal rollouts where
the math is unchanged, the NumPy and JAX CartPoles agree step for step, the data-parallel stage
matches the single-device one on two (simulated) devices, and training makes progress."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from jaxopt_audit.runtime.bench.pipeline import Pipeline

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from jaxopt_audit.reference_pipelines.ppo_cartpole import cartpole  # noqa: E402
from jaxopt_audit.reference_pipelines.ppo_cartpole.workload import (  # noqa: E402
    EQUAL_ROLLOUT_TOLERANCE,
    EQUAL_ROLLOUT_UPDATES,
    Outputs,
    env_steps,
    final_mean_return,
    make_workload,
    prefix,
    rollout_max_abs_err,
    work_units,
)

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
PIPELINE = "ppo_cartpole"  # conftest's `pipeline` fixture loads it


DATA_PARALLEL_SCRIPT = textwrap.dedent("""
    import json, sys
    import jax, numpy as np
    from jaxopt_audit.reference_pipelines.ppo_cartpole import stage4_data_parallel as stage
    from jaxopt_audit.reference_pipelines.ppo_cartpole.workload import make_workload
    workload = make_workload("small")
    out = jax.block_until_ready(stage.run(workload))
    np.savez(sys.argv[1], *[np.asarray(x) for x in jax.tree.leaves(out)])
    print(json.dumps({"devices": jax.device_count(),
                      "mesh": stage.data_mesh(workload.vectorized).size,
                      "params_on": len(out.params["actor_0"]["w"].sharding.device_set)}))
""")


@pytest.fixture(scope="module")
def two_device_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[subprocess.Popen, Path]]:
    """Stage 4 on 2 simulated CPU devices, started first so it overlaps the in-process stages."""
    saved = tmp_path_factory.mktemp("ppo_two_devices") / "out.npz"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    process = subprocess.Popen([sys.executable, "-c", DATA_PARALLEL_SCRIPT, str(saved)], env=env,
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    yield process, saved
    if process.poll() is None:
        process.kill()
        process.communicate()


@pytest.fixture(scope="module")
def outputs(pipeline: Pipeline, two_device_run: tuple) -> dict[str, Outputs]:
    workload = pipeline.make_workload("small")
    return {stage.module: jax.device_get(pipeline.stage_module(stage).run(workload))
            for stage in pipeline.stages}


def test_every_stage_validates_against_stage0(pipeline: Pipeline, outputs: dict[str, Outputs]) -> None:
    workload = pipeline.make_workload("small")
    reference = outputs["stage0_original"]
    for stage in pipeline.stages:
        result = pipeline.validate(reference, outputs[stage.module], workload, stage)
        assert result.ok, (stage.module, result)


def test_jax_env_stage_reproduces_the_host_rollouts(outputs: dict[str, Outputs]) -> None:
    host, jax_env = outputs["stage0_original"], outputs["stage1_jax_env_scan"]
    n = EQUAL_ROLLOUT_UPDATES
    # the compared window is not vacuous: episodes finish and actions vary between updates
    assert np.asarray(host.episodes)[:n].min() > 0
    assert len(set(np.asarray(host.actions)[:n].tolist())) > 1
    np.testing.assert_array_equal(np.asarray(host.actions)[:n], np.asarray(jax_env.actions)[:n])
    np.testing.assert_array_equal(np.asarray(host.episodes)[:n], np.asarray(jax_env.episodes)[:n])
    np.testing.assert_array_equal(np.asarray(host.return_sum)[:n], np.asarray(jax_env.return_sum)[:n])


@pytest.mark.parametrize("before, after", [("stage2_vmap_envs", "stage3_jit_update"),
                                           ("stage3_jit_update", "stage4_data_parallel")])
def test_same_math_stages_give_equal_outputs(outputs: dict[str, Outputs], before: str, after: str) -> None:
    err, detail = rollout_max_abs_err(outputs[before], outputs[after])
    assert "final params" in detail
    assert err <= EQUAL_ROLLOUT_TOLERANCE, detail


def test_vmap_stage_changes_the_environment_count_not_the_budget(outputs: dict[str, Outputs]) -> None:
    workload = make_workload("small")
    assert workload.vectorized.num_envs > workload.host.num_envs
    assert env_steps(workload.vectorized) == env_steps(workload.host) == work_units(workload)
    assert len(outputs["stage2_vmap_envs"].return_sum) == workload.vectorized.num_updates
    assert len(outputs["stage1_jax_env_scan"].return_sum) == workload.host.num_updates


def test_final_stage_learns(outputs: dict[str, Outputs]) -> None:
    final = outputs["stage4_data_parallel"]
    first_update = float(final.return_sum[0] / final.episodes[0])
    assert first_update < 30.0  # an untrained policy balances ~20 steps
    assert final_mean_return(final) > 1.5 * first_update


def test_validation_rejects_a_diverged_rollout(pipeline: Pipeline, outputs: dict[str, Outputs]) -> None:
    reference = outputs["stage0_original"]
    diverged = reference._replace(actions=np.asarray(reference.actions) + np.eye(len(reference.actions))[1])
    stage1 = pipeline.stages[1]
    assert not pipeline.validate(reference, diverged, make_workload("small"), stage1).ok


def test_host_and_jax_cartpole_agree_step_for_step() -> None:
    key = jax.random.key(7)
    host = cartpole.HostCartPole()
    host_obs = host.reset(key)
    state, jax_obs = cartpole.env_reset(key)
    np.testing.assert_array_equal(host_obs, np.asarray(jax_obs))
    step = jax.jit(cartpole.env_step)
    # a bang-bang controller keeps the pole up for a while; both must follow the same path
    for t in range(40):
        action = int(host_obs[2] + 0.5 * host_obs[3] > 0)
        host_obs, reward, done, _ = host.step(action)
        result = step(jax.random.key(t), state, jnp.int32(action))
        state = result.state
        np.testing.assert_allclose(host_obs, np.asarray(result.obs), rtol=1e-5, atol=1e-6)
        assert done == bool(result.done) is False
        assert reward == float(result.reward) == 1.0
    assert int(state.time) == 40 and float(state.episode_return) == 40.0


def test_cartpole_terminates_like_gym() -> None:
    key = jax.random.key(0)
    # the pole past 12 degrees ends the episode; the JAX env then resets from the step's key
    tilted = cartpole.EnvState(jnp.array([0.0, 0.0, 0.21, 1.0], jnp.float32), jnp.int32(9),
                               jnp.float32(9.0))
    result = cartpole.env_step(key, tilted, jnp.int32(1))
    assert bool(result.done) and float(result.finished_return) == 10.0
    np.testing.assert_array_equal(np.asarray(result.obs), np.asarray(cartpole.reset_draw(key)))
    assert int(result.state.time) == 0
    # the 500-step limit truncates a balanced pole
    upright = cartpole.EnvState(jnp.zeros(4, jnp.float32), jnp.int32(499), jnp.float32(499.0))
    assert bool(cartpole.env_step(key, upright, jnp.int32(0)).done)
    host = cartpole.HostCartPole()
    host.reset(key)
    host.state[:] = 0.0
    host.time = 499
    assert host.step(0)[2]


def test_prefix_is_the_start_of_the_same_run() -> None:
    full = make_workload("full")
    part = prefix(full, 1 / 256)
    assert part.host.schedule_updates == full.host.schedule_updates
    assert part.host.num_updates * part.host.batch_size == part.vectorized.num_updates * part.vectorized.batch_size
    assert work_units(part) == pytest.approx(work_units(full) / 256)


def test_data_parallel_stage_on_two_devices_matches_single_device(
        outputs: dict[str, Outputs], two_device_run: tuple[subprocess.Popen, Path]) -> None:
    process, saved = two_device_run
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr[-3000:]
    facts = json.loads(stdout.strip().splitlines()[-1])
    assert facts == {"devices": 2, "mesh": 2, "params_on": 2}
    with np.load(saved) as arrays:
        leaves = [arrays[f"arr_{i}"] for i in range(len(arrays.files))]
    single = outputs["stage3_jit_update"]
    two_devices = jax.tree.unflatten(jax.tree.structure(single), leaves)
    err, detail = rollout_max_abs_err(single, two_devices)
    assert err <= EQUAL_ROLLOUT_TOLERANCE, detail
