"""The batched_learner pipeline at small size: every stage agrees with the eager loop, and the
properties that make that agreement meaningful hold (seeds and conditions really differ, the
bulk-drawn stream is the per-step stream, the fused stage keeps the caller's condition order)."""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxopt_audit.reference_pipelines.batched_learner.workload import EARLY_STEPS
from jaxopt_audit.runtime.bench.pipeline import Pipeline

from conftest import backend_compiles

pytestmark = pytest.mark.slow

PIPELINE = "batched_learner"  # conftest's `pipeline` and `workload` fixtures load it


@pytest.fixture(scope="module")
def outputs(pipeline: Pipeline, workload) -> dict[str, dict[str, np.ndarray]]:
    results = {}
    for stage in pipeline.stages:
        out = jax.block_until_ready(pipeline.stage_module(stage).run(workload))
        results[stage.module] = {name: np.asarray(value) for name, value in out.items()}
    return results


def test_every_stage_validates_against_stage0(pipeline, workload, outputs):
    reference = outputs["stage0_original"]
    for stage in pipeline.stages:
        validation = pipeline.validate(reference, outputs[stage.module], workload, stage)
        assert validation.ok, (stage.module, validation)
        assert validation.metric == "max_rel_err"


def test_outputs_have_the_documented_shapes_and_are_finite(workload, outputs):
    n_conditions, n_seeds = len(workload.conditions), workload.n_seeds
    expected = {"weights": (n_conditions, n_seeds, workload.n_features + 1),
                "step_sizes": (n_conditions, n_seeds, workload.n_features + 1),
                "window_mse": (n_conditions, n_seeds, workload.n_obs // workload.window),
                "early_sq_error": (n_conditions, n_seeds, min(EARLY_STEPS, workload.n_obs))}
    for stage, out in outputs.items():
        assert {name: value.shape for name, value in out.items()} == expected, stage
        assert all(np.all(np.isfinite(value)) for value in out.values()), stage


def test_seeds_and_conditions_really_differ(outputs):
    weights = outputs["stage0_original"]["weights"]
    # Each seed has its own stream: no two seeds of a condition end with the same weights.
    for condition_weights in weights:
        assert not np.allclose(condition_weights[0], condition_weights[1], rtol=1e-3, atol=1e-3)
    # Normalisation and the optimiser change the outcome: the four conditions all differ.
    for i in range(len(weights)):
        for j in range(i + 1, len(weights)):
            assert not np.allclose(weights[i], weights[j], rtol=1e-3, atol=1e-3), (i, j)


def test_validation_rejects_wrong_results(pipeline, workload, outputs):
    reference = outputs["stage0_original"]
    stage = pipeline.stages[-1]
    wrong = dict(outputs[stage.module], weights=outputs[stage.module]["weights"] * 1.01)
    assert not pipeline.validate(reference, wrong, workload, stage).ok
    # Swapping two seeds is the classic batching bug (wrong in_axes): it must not validate.
    swapped = dict(outputs[stage.module], window_mse=outputs[stage.module]["window_mse"][:, ::-1])
    assert not pipeline.validate(reference, swapped, workload, stage).ok
    broken = dict(outputs[stage.module], window_mse=np.full_like(reference["window_mse"], np.nan))
    assert not pipeline.validate(reference, broken, workload, stage).ok


def test_full_size_runs_validate_against_stage0_on_a_prefix(pipeline, workload, outputs):
    # What bench does at full size: stage 0 runs on a prefix, the later stage on everything.
    stage0 = pipeline.stages[0]
    prefix_workload = pipeline.prefix(workload, 0.75)
    assert prefix_workload.n_obs >= EARLY_STEPS
    reference = jax.block_until_ready(pipeline.stage_module(stage0).run(prefix_workload))
    stage = pipeline.stages[-1]
    validation = pipeline.validate(reference, outputs[stage.module], workload, stage)
    assert validation.ok and "prefix" in validation.detail, validation
    late = dict(outputs[stage.module])
    late["early_sq_error"] = late["early_sq_error"] * 1.01
    assert not pipeline.validate(reference, late, workload, stage).ok


def test_bulk_stream_draws_equal_the_per_step_draws(workload):
    from jaxopt_audit.reference_pipelines.batched_learner.stream import step_draws

    key, steps = workload.seed_keys[0], jnp.arange(50)
    bulk = jax.jit(jax.vmap(step_draws, in_axes=(None, 0, None)))(key, steps, workload.stream)
    for t in (0, 7, 49):
        one = step_draws(key, t, workload.stream)
        for name in one._fields:
            assert np.array_equal(np.asarray(getattr(bulk, name))[t], np.asarray(getattr(one, name)))


def test_fused_stage_keeps_the_callers_condition_order(pipeline, workload, outputs):
    fused = pipeline.stage_module(pipeline.stages[-1])
    reversed_workload = replace(workload, conditions=workload.conditions[::-1])
    out = jax.block_until_ready(fused.run(reversed_workload))
    for name, value in outputs[pipeline.stages[-1].module].items():
        np.testing.assert_array_equal(np.asarray(out[name]), value[::-1])


def test_compiled_stages_do_not_recompile_in_steady_state(pipeline, workload, outputs):
    with backend_compiles() as compiles:
        for stage in pipeline.stages[1:]:
            compiles.clear()
            jax.block_until_ready(pipeline.stage_module(stage).run(workload))
            assert compiles == [], stage.module


def test_prefix_runs_a_fraction_of_the_work(pipeline):
    from jaxopt_audit.reference_pipelines.batched_learner.workload import SIZES

    full = SIZES["full"]
    fraction = pipeline.stages[0].full_size_prefix
    assert fraction is not None
    small = pipeline.make_workload("small")
    half = pipeline.prefix(small, 0.5)
    assert half.n_obs == small.n_obs // 2 and half.n_obs % half.window == 0
    assert pipeline.work_units(half) == pipeline.work_units(small) / 2
    # At full size, stage 0 on its prefix still covers at least one whole window of steps.
    assert int(round(full.n_obs * fraction)) >= 50
