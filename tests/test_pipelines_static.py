"""The static analyzer on the reference pipelines' stage files: each rewrite removes findings of
the codes it declares, and the last stage of every pipeline is clean (docs/design.md, issue 4)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from jaxopt_audit.static.pipeline.engine import scan_file
from jaxopt_audit.static.pipeline.registry import load_rules

pytest.importorskip("jax")
from jaxopt_audit.runtime.bench.pipeline import PIPELINE_NAMES, load_pipeline  # noqa: E402

RULES = [r() for r in load_rules()]


def stage_findings(pipeline, stage):
    path = Path(pipeline.stage_module(stage).__file__)
    result = scan_file(str(path), RULES)
    assert result.error is None, result.error
    return result.findings


@pytest.mark.parametrize("name", PIPELINE_NAMES)
def test_each_rewrite_removes_what_it_declares(name):
    pipeline = load_pipeline(name)
    stages = pipeline.stages
    counts = [Counter(f.code for f in stage_findings(pipeline, s)) for s in stages]
    for previous, current, stage in zip(counts, counts[1:], stages[1:], strict=False):
        for code in stage.addresses:
            assert previous[code] > 0, (
                f"{name}/{stage.module} addresses {code}, but the stage before has no {code} finding")
            assert current[code] < previous[code], (
                f"{name}/{stage.module} addresses {code}, but its findings of {code} did not go down "
                f"({previous[code]} -> {current[code]})")


@pytest.mark.parametrize("name", PIPELINE_NAMES)
def test_last_stage_is_clean(name):
    pipeline = load_pipeline(name)
    findings = stage_findings(pipeline, pipeline.stages[-1])
    assert findings == [], "\n".join(f"{f.path}:{f.line} {f.code} {f.message}" for f in findings)


@pytest.mark.parametrize("name", PIPELINE_NAMES)
def test_first_stage_has_the_mistakes_the_pipeline_fixes(name):
    pipeline = load_pipeline(name)
    first = Counter(f.code for f in stage_findings(pipeline, pipeline.stages[0]))
    declared = {code for stage in pipeline.stages for code in stage.addresses}
    assert declared, f"{name} declares no rule codes"
    # exact both ways: stage 0 shows only mistakes some stage declares it fixes, and at least one
    # (a declared code absent here appears in a later stage first, checked stage by stage above)
    assert set(first), f"{name}: stage 0 has no findings"
    assert set(first) <= declared, f"{name}: stage 0 shows {sorted(set(first) - declared)}, which no stage addresses"
