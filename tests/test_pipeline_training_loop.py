"""The training_loop pipeline at small size: every stage validates, and the validation means something."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxopt_audit.runtime.bench.pipeline import Pipeline, Stage

from conftest import backend_compiles

pytestmark = pytest.mark.slow

PIPELINE = "training_loop"  # conftest's `pipeline`, `workload` and `outputs` fixtures load it


def stage_named(pipeline: Pipeline, module: str) -> Stage:
    return next(stage for stage in pipeline.stages if stage.module == module)


def max_rel_err(a: dict, b: dict) -> float:
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y))) / np.max(np.abs(np.asarray(y))))
               for x, y in zip(leaves_a, leaves_b, strict=True))


def test_every_stage_validates_against_stage0(pipeline, workload, outputs):
    reference = outputs["stage0_original"]
    for stage in pipeline.stages:
        result = pipeline.validate(reference, outputs[stage.module], workload, stage)
        assert result.ok, (stage.module, result)
        assert outputs[stage.module]["losses"].shape == (workload.n_epochs * workload.steps_per_epoch,)


def test_same_math_stages_match_stage0_tightly(pipeline, outputs):
    for stage in pipeline.stages:
        if not stage.changes_math:
            assert max_rel_err(outputs[stage.module], outputs["stage0_original"]) < 1e-4, stage.module


def test_stages_after_the_noise_fix_share_its_math(outputs):
    # optax.sgd at the same rate and the scanned epoch are exactly stage 3's computation.
    for module in ("stage4_optax", "stage5_scan"):
        assert max_rel_err(outputs[module], outputs["stage3_fresh_noise"]) < 1e-5, module


def test_the_noise_fix_changes_the_training_but_not_its_outcome(pipeline, workload, outputs):
    fixed, buggy = outputs["stage3_fresh_noise"], outputs["stage2_device_data"]
    assert max_rel_err(fixed["params"], buggy["params"]) > 1e-3  # really a different computation
    result = pipeline.validate(outputs["stage0_original"], fixed, workload,
                               stage_named(pipeline, "stage3_fresh_noise"))
    assert result.ok and result.value > 0


def _noise(preprocessed_x: np.ndarray, raw_x: np.ndarray) -> np.ndarray:
    return np.asarray(preprocessed_x) - (raw_x - raw_x.mean()) / raw_x.std()


def test_constant_key_gives_every_batch_the_same_noise_until_stage3(pipeline, workload):
    batches = [{"x": workload.x[i * 32:(i + 1) * 32], "y": workload.y[i * 32:(i + 1) * 32]} for i in (0, 1)]
    for module in ("stage0_original", "stage2_device_data"):
        preprocess = pipeline.stage_module(stage_named(pipeline, module)).preprocess_batch
        first, second = (_noise(preprocess(b)["x"], b["x"]) for b in batches)
        np.testing.assert_allclose(first, second, atol=1e-5, err_msg=module)
    preprocess = pipeline.stage_module(stage_named(pipeline, "stage3_fresh_noise")).preprocess_batch
    key = jax.random.key(workload.noise_seed)
    noises = []
    for batch in batches:
        key, noise_key = jax.random.split(key)
        noises.append(_noise(preprocess(batch, noise_key)["x"], batch["x"]))
    assert np.abs(noises[0] - noises[1]).max() > 1e-2
    assert 0.005 < noises[0].std() < 0.02  # still the augmentation noise, scale 0.01


def test_validation_fails_on_wrong_results(pipeline, workload, outputs):
    reference = outputs["stage0_original"]
    jit_stage, scan_stage = stage_named(pipeline, "stage1_jit"), stage_named(pipeline, "stage5_scan")
    drifted = jax.tree.map(lambda a: np.asarray(a) * 1.01, outputs["stage1_jit"])
    assert not pipeline.validate(reference, drifted, workload, jit_stage).ok
    worse = {**outputs["stage5_scan"], "losses": np.asarray(outputs["stage5_scan"]["losses"]) * 1.2}
    assert not pipeline.validate(reference, worse, workload, scan_stage).ok
    untrained = {**outputs["stage5_scan"],
                 "losses": np.full_like(np.asarray(reference["losses"]), float(reference["losses"][0]))}
    assert not pipeline.validate(untrained, untrained, workload, scan_stage).ok
    nan = {**outputs["stage5_scan"], "losses": np.full_like(np.asarray(reference["losses"]), np.nan)}
    assert not pipeline.validate(reference, nan, workload, scan_stage).ok


def test_prefix_is_whole_epochs_and_validates_against_a_prefix_reference(pipeline, workload, outputs):
    one_epoch = pipeline.prefix(workload, 1 / workload.n_epochs)
    assert one_epoch.n_epochs == 1
    assert pipeline.work_units(one_epoch) * workload.n_epochs == pipeline.work_units(workload)
    # The harness may validate a full run against a stage 0 that ran only the prefix.
    steps = one_epoch.steps_per_epoch
    reference = {**outputs["stage0_original"], "losses": outputs["stage0_original"]["losses"][:steps]}
    for module in ("stage1_jit", "stage5_scan"):
        result = pipeline.validate(reference, outputs[module], workload, stage_named(pipeline, module))
        assert result.ok, (module, result)


def test_steady_state_calls_do_not_compile(pipeline, workload, outputs):
    with backend_compiles() as compiles:
        for module in ("stage1_jit", "stage5_scan"):
            compiles.clear()
            jax.block_until_ready(pipeline.stage_module(stage_named(pipeline, module)).run(workload))
            assert compiles == [], module
