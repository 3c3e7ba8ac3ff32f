"""`jaxopt-audit bench` and `report` end to end on a tiny three-stage pipeline written by the test."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
jsonschema = pytest.importorskip("jsonschema")

from jaxopt_audit.cli import main  # noqa: E402
from jaxopt_audit.runtime.bench.pipeline import PIPELINE_NAMES  # noqa: E402

pytestmark = pytest.mark.slow

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "bench.schema.json").read_text())
STEPS = {"small": 12, "full": 24}

PIPELINE_INIT = '''
"""tinypipe: a decaying average of batches, from op-by-op Python to one scan."""
from typing import NamedTuple

import numpy as np

from jaxopt_audit.runtime.bench.pipeline import Pipeline, Stage, Validation

STEPS = {steps}


class Workload(NamedTuple):
    batches: np.ndarray  # (steps, 8) float32, on the host
    w0: np.ndarray


def make_workload(size):
    rng = np.random.default_rng(0)
    return Workload(rng.standard_normal((STEPS[size], 8)).astype(np.float32), np.zeros(8, np.float32))


def work_units(workload):
    return float(workload.batches.shape[0])


def prefix(workload, fraction):
    return workload._replace(batches=workload.batches[: max(1, round(len(workload.batches) * fraction))])


def validate(reference, outputs, workload, stage):
    ref, out = np.asarray(reference["losses"]), np.asarray(outputs["losses"])
    n = min(len(ref), len(out))
    err = float(np.max(np.abs(ref[:n] - out[:n])))
    return Validation(err <= 1e-5, "max_abs_err", err, 1e-5, f"{{n}} losses")


PIPELINE = Pipeline(
    name={name!r}, title="Tiny pipeline: decaying average", description="A test pipeline.",
    stages=(Stage("stage0_original", full_size_prefix=0.5), Stage("stage1_jit", addresses=("JAX101",)),
            Stage("stage2_scan", addresses=("JAX201",)){extra_stage}),
    throughput_unit="steps/s", make_workload=make_workload, work_units=work_units,
    validate=validate, prefix=prefix)
'''

STAGES = {
    "stage0_original.py": '''
        """Original: op by op, the batch copied to the device and the loss read back every step."""
        import jax.numpy as jnp
        import numpy as np


        def step(w, batch):
            return w * 0.9 + batch * 0.1, jnp.mean((w - batch) ** 2)


        def run(workload):
            w = jnp.asarray(workload.w0)
            losses = []
            for batch in workload.batches:
                w, loss = step(w, jnp.asarray(batch))
                losses.append(float(loss))
            return {"w": w, "losses": np.asarray(losses)}
    ''',
    "stage1_jit.py": '''
        """+ jit: the step is compiled once (JAX101)."""
        import jax
        import jax.numpy as jnp
        import numpy as np


        @jax.jit
        def step(w, batch):
            return w * 0.9 + batch * 0.1, jnp.mean((w - batch) ** 2)


        def run(workload):
            w = jnp.asarray(workload.w0)
            losses = []
            for batch in workload.batches:
                w, loss = step(w, jnp.asarray(batch))
                losses.append(float(loss))
            return {"w": w, "losses": np.asarray(losses)}
    ''',
    "stage2_scan.py": '''
        """+ scan: the whole loop is one compiled lax.scan over device-resident batches (JAX201)."""
        import jax
        import jax.numpy as jnp


        @jax.jit
        def train(w, batches):
            def step(w, batch):
                return w * 0.9 + batch * 0.1, jnp.mean((w - batch) ** 2)
            return jax.lax.scan(step, w, batches)


        def run(workload):
            w, losses = train(jnp.asarray(workload.w0), jnp.asarray(workload.batches))
            return {"w": w, "losses": losses}
    ''',
    "stage3_broken.py": '''
        """A stage that crashes: the harness must keep the others' measurements."""


        def run(workload):
            raise RuntimeError("this stage is broken on purpose")
    ''',
}


def _write_pipeline(root: Path, name: str, broken: bool = False) -> str:
    package = root / name
    package.mkdir(parents=True)
    extra = ', Stage("stage3_broken")' if broken else ""
    (package / "__init__.py").write_text(PIPELINE_INIT.format(steps=STEPS, extra_stage=extra, name=name))
    for filename, source in STAGES.items():
        if broken or filename != "stage3_broken.py":
            (package / filename).write_text(textwrap.dedent(source).lstrip())
    return name


@pytest.fixture(scope="module")
def pipelines(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("pipelines")
    _write_pipeline(root, "tinypipe")
    _write_pipeline(root, "tinypipe_broken", broken=True)
    sys.path.insert(0, str(root))
    yield root
    sys.path.remove(str(root))


def _bench(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["bench", *argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture(scope="module")
def small_results(pipelines: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("results") / "tinypipe-small.json"
    assert main(["bench", "tinypipe", "--size", "small", "--repeats", "2", "--format", "json",
                 "--out", str(out)]) == 0
    return out


def test_bench_json_is_valid_per_the_schema(small_results: Path) -> None:
    results = json.loads(small_results.read_text())
    jsonschema.validate(results, SCHEMA)
    assert results["pipeline"] == "tinypipe" and results["size"] == "small"
    assert results["platform"] == jax.default_backend()
    assert [v["name"] for v in results["variants"]] == ["stage0_original", "stage1_jit", "stage2_scan"]


def test_bench_measures_what_each_stage_does(small_results: Path) -> None:
    v0, v1, v2 = json.loads(small_results.read_text())["variants"]
    steps = STEPS["small"]
    assert all(v["validation"]["ok"] for v in (v0, v1, v2))
    assert v0["speedup_vs_stage0"] == pytest.approx(1.0)
    # one float(loss) per step in the loop stages; the scan reads nothing back
    assert v0["d2h_transfers_per_call"] == steps and v1["d2h_transfers_per_call"] == steps
    assert v1["h2d_transfers_per_call"] == steps + 1  # each batch, and w0 once
    assert v2["h2d_transfers_per_call"] == 2 and v2["d2h_transfers_per_call"] == 0
    assert all(v["compiles_per_call"] == 0 for v in (v0, v1, v2))
    assert v1["compile"]["compiles"] == 1  # the jitted step, once
    # the jitted scan, plus what JAX itself compiles around it (a count that moves between versions)
    assert v2["compile"]["compiles"] >= 1 and v2["compile"]["backend_compile_s"] > 0
    assert v2["throughput"]["unit"] == "steps/s"
    assert v2["throughput"]["value"] == pytest.approx(steps / v2["steady_s"]["median"])
    assert v2["break_even"] is None or v2["break_even"]["unit"] == "steps"
    assert not any(v["extrapolated"] for v in (v0, v1, v2))


def test_a_fresh_result_reads_back_typed(small_results: Path) -> None:
    from jaxopt_audit.results import BenchResult

    data = json.loads(small_results.read_text())
    result = BenchResult.from_json(data)
    assert result.to_json() == data and "pipeline_path" not in data  # a bundled pipeline: its name
    assert [v.stage for v in result.measured()] == [0, 1, 2]
    scan = result.stage(2)
    assert scan is not None and (scan.break_even is None or scan.break_even.versus == "stage1_jit")


def test_bench_records_findings_per_stage(small_results: Path) -> None:
    variants = json.loads(small_results.read_text())["variants"]
    for v in variants:
        assert "findings" in v
        if v["findings"] is None:
            assert v["findings_note"]  # says why (scanner unavailable)
    if variants[0]["findings"] is not None:
        assert "JAX101" in {f["code"] for f in variants[0]["findings"]}
        assert "JAX101" not in {f["code"] for f in variants[1]["findings"]}


def test_full_size_extrapolates_prefixed_stages_and_traces(pipelines: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    trace_dir = tmp_path / "traces"
    status, out, err = _bench(capsys, "tinypipe", "--size", "full", "--repeats", "2", "--format", "json",
                              "--stages", "0,stage2_scan", "--trace", str(trace_dir))
    assert status == 0, err
    results = json.loads(out)
    jsonschema.validate(results, SCHEMA)
    v0, v2 = results["variants"]
    assert (v0["stage"], v2["stage"]) == (0, 2)
    assert v0["extrapolated"] and v0["prefix_fraction"] == pytest.approx(0.5)
    assert v0["steady_s"]["median"] == pytest.approx(2 * v0["measured_steady_s"]["median"])
    assert v0["d2h_transfers_per_call"] == STEPS["full"] // 2  # measured on the prefix
    assert not v2["extrapolated"] and v2["validation"]["ok"]
    assert v2["speedup_vs_stage0"] == pytest.approx(v0["steady_s"]["median"] / v2["steady_s"]["median"])
    trace = v2["trace"]
    assert Path(trace["path"]).is_file() and trace["path"].endswith(".xplane.pb")
    assert trace["summary"]["top_ops"], trace["text"]
    assert [s["step"] for s in trace["summary"]["steps"]] == [0, 1]
    assert "--logdir" in err and str(trace_dir) in err


def test_report_has_the_table_and_the_plots(small_results: Path, tmp_path: Path) -> None:
    md_path = tmp_path / "reports" / "tiny.md"
    assert main(["report", str(small_results), "-o", str(md_path)]) == 0
    text = md_path.read_text()
    assert text.startswith("# Tiny pipeline: decaying average")
    assert "| # | stage | rules | time / run |" in text
    assert text.count("| `stage") >= 6  # results table and validation table rows
    for png in ("tiny-time.png", "tiny-throughput.png"):
        assert f"]({png})" in text
        assert (md_path.parent / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "### Stage 2: `stage2_scan`" in text
    assert "## Validation" in text and "## Machines" in text


def test_report_puts_two_runs_side_by_side(small_results: Path, tmp_path: Path) -> None:
    other = json.loads(small_results.read_text())
    other.update(platform="gpu", device="Imaginary GPU 9000")
    for v in other["variants"]:
        v["steady_s"] = {**v["steady_s"], "median": v["steady_s"]["median"] / 10}
    second = tmp_path / "tinypipe-gpu.json"
    second.write_text(json.dumps(other))
    md_path = tmp_path / "both.md"
    assert main(["report", str(small_results), str(second), "-o", str(md_path)]) == 0
    text = md_path.read_text()
    assert "## Side by side" in text
    assert "## Results: GPU: Imaginary GPU 9000" in text
    assert "time: GPU: Imaginary GPU 9000" in text


def test_report_without_findings_says_the_scanner_was_unavailable(small_results: Path, tmp_path: Path) -> None:
    data = json.loads(small_results.read_text())
    for v in data["variants"]:
        v["findings"] = None
        v["findings_note"] = "scanner unavailable (No module named 'jaxopt_audit.static.pipeline.engine')"
    path = tmp_path / "no-findings.json"
    path.write_text(json.dumps(data))
    assert main(["report", str(path), "-o", str(tmp_path / "nf.md")]) == 0
    text = (tmp_path / "nf.md").read_text()
    assert "Static findings unavailable" in text


def test_a_broken_stage_is_reported_and_the_others_measured(pipelines: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _bench(capsys, "tinypipe_broken", "--stages", "0,3", "--repeats", "1", "--format", "json")
    assert status == 1
    results = json.loads(out)
    jsonschema.validate(results, SCHEMA)
    ok, broken = results["variants"]
    assert "error" not in ok and ok["validation"]["ok"]
    assert broken["error"] == "RuntimeError: this stage is broken on purpose"


def test_usage_errors_are_one_line_and_exit_2(pipelines: Path, capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    status, _, err = _bench(capsys, "no_such_pipeline_xyz")
    assert status == 2 and err.count("\n") == 1 and "--list" in err
    status, _, err = _bench(capsys, "tinypipe", "--stages", "stage9_missing")
    assert status == 2 and "stage0_original" in err
    status, _, err = _bench(capsys, "tinypipe", "--size", "huge")
    assert status == 2 and "small, full" in err
    not_results = tmp_path / "x.json"
    not_results.write_text('{"hello": 1}')
    assert main(["report", str(not_results)]) == 2
    assert "not a bench result" in capsys.readouterr().err


def test_bench_list_names_every_pipeline(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _bench(capsys, "--list", "--format", "json")
    assert status == 0
    assert [row["name"] for row in json.loads(out)] == list(PIPELINE_NAMES)


def test_bench_table_output(pipelines: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _bench(capsys, "tinypipe", "--stages", "2", "--repeats", "1")
    assert status == 0
    assert "stage2_scan" in out and "tinypipe (small)" in out


def test_bench_all_writes_one_file_per_pipeline(pipelines: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import importlib

    from jaxopt_audit.commands import bench as command
    from jaxopt_audit.runtime.bench import harness

    for module in (command, harness):  # `all` is read by the command, a name resolved by the harness
        monkeypatch.setattr(module, "PIPELINE_NAMES", ("tinypipe", "tinypipe_broken"))

    def load(name: str):  # what load_pipeline does for a built-in, for the test's packages
        pipeline = importlib.import_module(name).PIPELINE
        object.__setattr__(pipeline, "package", name)
        return pipeline

    monkeypatch.setattr(harness, "load_pipeline", load)
    status, _, err = _bench(capsys, "all", "--repeats", "1", "--out", str(tmp_path))
    assert status == 1, err  # the broken stage fails the run, after everything was measured
    written = sorted(p.name for p in tmp_path.glob("*.json"))
    platform = jax.default_backend()
    assert written == [f"tinypipe-small-{platform}.json", f"tinypipe_broken-small-{platform}.json"]
    broken = json.loads((tmp_path / written[1]).read_text())
    assert [("error" in v) for v in broken["variants"]] == [False, False, False, True]


def test_a_run_cut_short_keeps_the_stages_it_finished(tmp_path: Path) -> None:
    """A bench killed mid-run (a time limit, a crash of the interpreter) leaves a results file with
    the stages it finished, and its log (stderr, not a terminal) names the stage it was in."""
    import os
    import subprocess

    _write_pipeline(tmp_path, "tinypipe_killed", broken=True)
    (tmp_path / "tinypipe_killed" / "stage3_broken.py").write_text(
        "import os\n\n\ndef run(workload):\n    os._exit(3)  # no exception, no cleanup: like `timeout`\n")
    out = tmp_path / "partial.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from jaxopt_audit.cli import main; sys.exit(main())",
         "bench", "tinypipe_killed", "--stages", "0,1,3", "--repeats", "1", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 3, proc.stderr
    results = json.loads(out.read_text())
    jsonschema.validate(results, SCHEMA)
    assert [v["name"] for v in results["variants"]] == ["stage0_original", "stage1_jit"]
    assert all(v["validation"]["ok"] for v in results["variants"])
    assert results["variants"][1]["speedup_vs_stage0"] is not None
    assert "stage1_jit: done in" in proc.stderr
    assert proc.stderr.rstrip().endswith("stage 3/3 stage3_broken: measuring")
