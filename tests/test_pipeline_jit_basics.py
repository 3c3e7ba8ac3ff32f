"""The jit_basics pipeline at small size: every stage validates, and each rewrite does what it claims."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxopt_audit.runtime.bench.pipeline import Pipeline, Stage

from conftest import backend_compiles

pytestmark = pytest.mark.slow

PIPELINE = "jit_basics"  # conftest's `pipeline`, `workload` and `outputs` fixtures load it


def module_of(pipeline: Pipeline, name: str):
    return pipeline.stage_module(next(stage for stage in pipeline.stages if stage.module == name))


def test_every_stage_validates_against_stage0(pipeline, workload, outputs):
    reference = outputs["stage0_original"]
    for stage in pipeline.stages:
        result = pipeline.validate(reference, outputs[stage.module], workload, stage)
        assert result.ok, (stage.module, result)
        assert not stage.changes_math


def test_outputs_are_the_seed_computations(workload, outputs):
    x = np.asarray(workload.inputs, np.float64)
    out = outputs["stage4_vmap"]
    np.testing.assert_allclose(out["gram"], x @ np.swapaxes(x, 1, 2), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(out["negative_sum"], np.where(x < 0, x, 0).sum(axis=(1, 2)), rtol=1e-5)
    selu = 1.05 * np.where(x > 0, x, 1.67 * np.exp(x) - 1.67)
    np.testing.assert_allclose(out["selu"], selu, rtol=1e-5, atol=1e-6)


def test_boolean_mask_cannot_be_jitted_but_its_where_rewrite_can(pipeline, workload):
    x = workload.inputs[0]
    with pytest.raises(jax.errors.NonConcreteBooleanIndexError):
        jax.jit(module_of(pipeline, "stage0_original").get_negatives)(x)
    rewritten = module_of(pipeline, "stage2_where").negative_sum
    np.testing.assert_allclose(rewritten(x), jnp.sum(x[x < 0]), rtol=1e-6)


def test_gram_comes_back_to_the_host_until_stage3(outputs):
    assert all(isinstance(g, np.ndarray) for g in outputs["stage0_original"]["gram"])
    assert all(isinstance(g, np.ndarray) for g in outputs["stage2_where"]["gram"])
    assert all(isinstance(g, jax.Array) for g in outputs["stage3_on_device"]["gram"])
    assert isinstance(outputs["stage4_vmap"]["gram"], jax.Array)


def test_steady_state_calls_do_not_compile_and_vmap_is_one_program(pipeline, workload, outputs):
    with backend_compiles() as compiles:
        for stage in pipeline.stages[1:]:
            compiles.clear()
            jax.block_until_ready(pipeline.stage_module(stage).run(workload))
            assert compiles == [], stage.module
        bigger = workload._replace(inputs=jnp.concatenate([workload.inputs, workload.inputs]))
        compiles.clear()
        jax.block_until_ready(module_of(pipeline, "stage4_vmap").run(bigger))
        assert len(compiles) == 1  # a new batch size: one new program, not one per matrix


def test_validation_fails_on_wrong_results(pipeline, workload, outputs):
    reference = outputs["stage0_original"]
    stage = Stage("stage4_vmap")
    good = outputs["stage4_vmap"]
    wrong_sum = {**good, "negative_sum": np.asarray(good["negative_sum"]) * 1.001}
    assert not pipeline.validate(reference, wrong_sum, workload, stage).ok
    relu_not_selu = {**good, "selu": jnp.maximum(np.asarray(good["selu"]), 0.0)}
    assert not pipeline.validate(reference, relu_not_selu, workload, stage).ok
    one_missing = {**good, "gram": np.asarray(good["gram"])[:-1]}
    assert not pipeline.validate(reference, one_missing, workload, stage).ok


def test_microbench_reports_every_rewrite_and_both_timings():
    from jaxopt_audit.reference_pipelines.jit_basics import microbench

    pairs, dispatches = microbench.measure("small", repeats=1)
    assert [p.rule for p in pairs] == ["JAX101", "JAX401", "JAX301"]
    assert all(p.before_s > 0 and p.after_s > 0 for p in pairs)
    assert all(d.synchronized_s >= d.returned_s > 0 for d in dispatches)
    report = microbench.format_report("small", pairs, dispatches)
    assert "JAX401" in report and "block_until_ready" in report
