"""`jaxopt-audit run`: small scripts with known behaviour, checked by the report's exact counts.

Most scripts run in this process through the CLI entry point (as `jaxopt-audit run` does, one
JAX import for all of them); some run as a subprocess: to check what only a real process shows
(exit status, stdout left to the program, the report on stderr), and for the reference
pipeline, whose modules other tests in this process may have imported (and jitted) already. The cache-miss parser is
tested on JAX's own messages, without JAX.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jaxopt_audit.runtime.run.cachemiss import parse_cache_miss
from jaxopt_audit.units import seconds

SCRIPTS = Path(__file__).parent / "run_scripts"
SCHEMA = json.loads((Path(__file__).parent / "schemas" / "run.schema.json").read_text())


def audit(tmp_path: Path, *argv: str, scan: bool = False) -> tuple[int, dict[str, Any]]:
    """Run `jaxopt-audit run --json ... argv` in-process; (exit status, validated JSON report)."""
    import jsonschema

    from jaxopt_audit.cli import main

    out = tmp_path / "report.json"
    options = ["--json", str(out)] + ([] if scan else ["--no-scan"])
    status = main(["run", *options, *argv])
    report = json.loads(out.read_text())
    jsonschema.validate(report, SCHEMA)
    return status, report


def audit_in_subprocess(tmp_path: Path, *argv: str,
                        env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run `jaxopt-audit run --json ... argv` in a fresh interpreter: for programs that import
    modules this test process may already have imported (their jits would predate the run)."""
    import jsonschema

    out = tmp_path / f"report-{len(list(tmp_path.glob('report-*.json')))}.json"
    proc = subprocess.run([sys.executable, "-m", "jaxopt_audit.cli", "run", "--json", str(out), *argv],
                          capture_output=True, text=True, timeout=600, env=os.environ | (env or {}))
    report = json.loads(out.read_text())
    jsonschema.validate(report, SCHEMA)
    return proc, report


def function(report: dict[str, Any], name: str) -> dict[str, Any]:
    matches = [f for f in report["functions"] if f["name"] == name]
    assert len(matches) == 1, [f["name"] for f in report["functions"]]
    return matches[0]


def transfers(report: dict[str, Any], direction: str) -> list[tuple[str, int, int, str]]:
    return sorted((os.path.basename(t["path"]), t["line"], t["count"], t["via"])
                  for t in report["transfers"] if t["direction"] == direction)


def findings(report: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(code, file, line) of each finding, in place order (the report orders them by measured time)."""
    return sorted((f["code"], os.path.basename(f["path"]), f["line"]) for f in report["findings"])


# ---------------------------------------------------------------- scripts with known behaviour

@pytest.mark.slow
def test_recompiling_on_varying_shapes_names_the_argument(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(SCRIPTS / "recompile_shapes.py"))
    assert status == 0
    total = function(report, "total")
    assert (total["calls"], total["compiles"]) == (5, 5)
    assert [r["arguments"] for r in total["recompiles"]] == [["batch"]] * 4
    assert {kind for r in total["recompiles"] for kind in r["kinds"]} == {"shape"}
    assert all(r["line"] == 14 for r in total["recompiles"])  # the call in the comprehension
    assert findings(report) == [("JAX103", "recompile_shapes.py", 14)]
    assert "batch changed (shape)" in report["findings"][0]["message"]
    assert report["compile_s"] >= total["compile_s"] > 0
    # what the fix saves: the four recompilations' compile time, the first compilation stays
    finding = report["findings"][0]
    assert finding["cost_s"] == pytest.approx(total["compile_s"], abs=1e-6)
    assert 0 < finding["saving_s"] < finding["cost_s"] and finding["saving_method"].startswith("measured")


@pytest.mark.slow
def test_jit_rebuilt_in_a_loop(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(SCRIPTS / "jit_in_loop.py"))
    assert status == 0
    rebuilt = function(report, "main.<locals>.<lambda>")
    assert (rebuilt["calls"], rebuilt["compiles"], rebuilt["jit_wrappers"]) == (4, 4, 4)
    assert all(r["kinds"] == ["redefined"] for r in rebuilt["recompiles"])
    assert len(rebuilt["recompiles"]) == 3
    assert findings(report) == [("JAX102", "jit_in_loop.py", 10)]  # the jax.jit line
    assert report["findings"][0]["count"] == 4


@pytest.mark.slow
def test_k_syncs_per_step_and_exit_status_passed_through(tmp_path: Path) -> None:
    script = SCRIPTS / "syncs_per_step.py"
    proc, report = audit_in_subprocess(tmp_path, str(script), "3")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "final 0.0177\n"  # the program's stdout is only the program's
    assert "jaxopt-audit run" in proc.stderr and "JAX301" in proc.stderr
    assert report["exit_status"] == 3 and report["argv"] == [str(script), "3"]
    step = function(report, "step")
    assert (step["calls"], step["compiles"], step["d2h_transfers"], step["h2d_transfers"]) == (30, 1, 60, 0)
    assert step["d2h_per_call"] == 2
    assert transfers(report, "d2h") == [("syncs_per_step.py", 22, 30, "float()"),
                                        ("syncs_per_step.py", 23, 30, ".item()")]
    assert findings(report) == [("JAX301", "syncs_per_step.py", 22), ("JAX301", "syncs_per_step.py", 23)]
    # the static scan reports the first read as the stall; `peak` comes from the same compiled
    # call, ready by then, so its read is a transfer the runtime sees but no second stall
    assert [f["confirmed_by_scan"] for f in sorted(report["findings"], key=lambda f: f["line"])] == [True, False]
    for finding in report["findings"]:  # the time waited in the reads, less the device work waited for
        assert finding["cost_s"] > 0 and 0 <= finding["saving_s"] <= finding["cost_s"]
        assert finding["saving_method"].startswith("measured: the time waited in these reads less the device work")
    assert report["scan"] == "ok"


@pytest.mark.slow
def test_host_array_fed_every_step(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(SCRIPTS / "host_array_per_step.py"))
    assert status == 0
    update = function(report, "update")
    assert (update["calls"], update["h2d_transfers"], update["host_array_args"]) == (7, 7, 7)
    assert transfers(report, "h2d") == [("host_array_per_step.py", 20, 7, "jit argument")]
    # jaxlib's own count only with JAXOPT_AUDIT_H2D_TOTAL=1 (it redirects stderr for the run)
    assert (report["h2d_total"] is None) == (os.environ.get("JAXOPT_AUDIT_H2D_TOTAL") != "1")
    assert findings(report) == [("JAX302", "host_array_per_step.py", 20)]


def test_a_copy_points_at_the_statement_that_makes_or_passes_the_host_data(tmp_path: Path) -> None:
    script = SCRIPTS / "host_data_through_helpers.py"
    status, report = audit(tmp_path, str(script))
    assert status == 0
    lines = script.read_text().splitlines()

    def line_of(text: str, after: str = "") -> int:
        return 1 + lines.index(text, lines.index(after) if after else 0)

    name = script.name
    # a helper that forwards the loop's batch (whole, in a tuple, to eager ops, to jnp.asarray) is
    # not where it is made or passed in; one that makes its own batch is
    assert transfers(report, "h2d") == [
        (name, line_of("    return update(w, x)", after="def forward_a_batch_made_here(w, rng):"), 6, "jit argument"),
        (name, line_of("        w = forward_to_jit(w, (data[step], None))"), 6, "jit argument"),
        (name, line_of("        w = w - 0.1 * eager_loss(w, data[step])"), 6, "eager op"),
        (name, line_of("        w = w + to_device(data[step])"), 6, "jnp.asarray"),
    ]


@pytest.mark.slow
def test_reads_every_k_steps_are_reported_with_their_period_or_not_at_all(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(SCRIPTS / "periodic_reads.py"))
    assert status == 0
    assert findings(report) == [("JAX301", "periodic_reads.py", 15), ("JAX301", "periodic_reads.py", 17)]
    by_line = {f["line"]: f["message"] for f in report["findings"]}
    assert "(float()), per step:" in by_line[15] and "(.item()), every ~4 steps:" in by_line[17]
    # every 50 steps is amortised: in the traffic table, not a finding
    assert ("periodic_reads.py", 19, 4, "float()") in transfers(report, "d2h")


@pytest.mark.slow
def test_a_jitted_transformation_has_its_own_record(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(SCRIPTS / "transformed_jits.py"))
    assert status == 0
    for name in ("loss", "grad(loss)", "value_and_grad(loss)"):
        record = function(report, name)
        assert (record["calls"], record["compiles"], record["line"]) == (3, 1, 7)


@pytest.mark.slow
def test_the_h2d_total_switch_counts_jaxlibs_transfers(tmp_path: Path) -> None:
    # jaxlib's log level left at its default, where the transfer guard's lines are written
    switch = {"JAXOPT_AUDIT_H2D_TOTAL": "1", "TF_CPP_MIN_LOG_LEVEL": "0"}
    proc, report = audit_in_subprocess(tmp_path, str(SCRIPTS / "host_array_per_step.py"), env=switch)
    assert proc.returncode == 0, proc.stderr
    # the 7 NumPy batches at least (jaxlib also counts the constants it copies), none lost
    assert report["h2d_total"] is not None and report["h2d_total"] >= 7
    assert "] host-to-device transfer" not in proc.stderr  # jaxlib's guard lines are counted, not forwarded


@pytest.mark.slow
def test_script_that_raises_half_way_is_still_reported(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    status, report = audit(tmp_path, str(SCRIPTS / "raises_half_way.py"))
    assert status == 1
    assert report["exit_status"] == 1
    assert report["error"] == "RuntimeError: data loader broke at step 3"
    assert function(report, "step")["calls"] == 3
    err = capfd.readouterr().err
    # Python's traceback first (without runpy or this tool's frames), then the report
    assert err.index("Traceback (most recent call last)") < err.index("jaxopt-audit run")
    assert 'raises_half_way.py", line 16, in main' in err
    assert "runpy" not in err and "program.py" not in err


@pytest.mark.slow
def test_jit_api_keeps_working_and_traced_uses_are_not_calls(tmp_path: Path,
                                                            capfd: pytest.CaptureFixture[str]) -> None:
    status, report = audit(tmp_path, str(SCRIPTS / "jit_api.py"))
    assert status == 0
    assert capfd.readouterr().out == "outer inner\n"
    counts = {f["name"]: (f["calls"], f["compiles"], f["h2d_transfers"]) for f in report["functions"]}
    # inner only runs traced (inside outer, vmap) and outer also under grad: not counted as calls
    assert counts == {"outer": (2, 1, 0), "raise_to": (3, 2, 0), "Model.apply": (2, 1, 0)}
    recompile = function(report, "raise_to")["recompiles"]
    assert [(r["kinds"], r["arguments"], r["reason"]) for r in recompile] == \
        [(["static"], ["power"], "power: static value 2 -> 3")]
    assert report["findings"] == []


@pytest.mark.slow
def test_module_mode_runs_as_main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SCRIPTS)
    status, report = audit(tmp_path, "-m", "syncs_per_step")
    assert status == 0
    assert report["argv"] == ["-m syncs_per_step"]
    assert function(report, "step")["d2h_transfers"] == 60
    assert {t["path"] for t in report["transfers"]} == {"syncs_per_step.py"}


# ---------------------------------------------------------------- the newcomer's script

NEWCOMER = SCRIPTS / "newcomer.py"


def _line_of(text: str) -> int:
    return 1 + NEWCOMER.read_text().splitlines().index(text)


@pytest.mark.slow
def test_newcomer_script_shows_the_unjitted_step_its_copies_and_its_syncs(tmp_path: Path) -> None:
    steps, seeds = 10, 2
    status, report = audit(tmp_path, str(NEWCOMER), str(steps), str(seeds))
    assert status == 0
    calls = steps * seeds
    step_def = _line_of("def train_step(params, x, y):")
    call_line = _line_of("            params, loss = step(params, x, y)")
    item_line = _line_of("            last = loss.item()")
    found = {(f["code"], f["line"]): f for f in report["findings"]}
    assert set(found) == {("JAX101", step_def), ("JAX302", call_line), ("JAX301", item_line)}
    # the un-jitted step: its eager ops per call and its share of the wall time
    eager = next(e for e in report["eager_functions"] if e["name"] == "train_step")
    assert eager["calls"] == calls and eager["ops_per_call"] >= 2 and 0 < eager["wall_share"] <= 1
    assert f"over {calls} calls" in found[("JAX101", step_def)]["message"]
    assert found[("JAX101", step_def)]["count"] == calls
    # loss_fn runs only inside train_step: reported through its caller, not on its own
    assert next(e for e in report["eager_functions"] if e["name"] == "loss_fn")["nested_in_eager"]
    # two NumPy arrays (x, y) per call at least, copied by the step's eager ops
    assert found[("JAX302", call_line)]["count"] >= 2 * calls
    assert found[("JAX301", item_line)]["count"] == calls
    assert ("newcomer.py", item_line, calls, ".item()") in transfers(report, "d2h")
    assert report["transfers"][0]["path"] == os.path.relpath(NEWCOMER)  # relative to the working directory


@pytest.mark.slow
def test_jitted_newcomer_time_split_adds_up(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(NEWCOMER), "10", "2", "jit")
    assert status == 0
    split = report["time_split"]
    assert split["compile_s"] + split["device_s"] + split["host_s"] == pytest.approx(report["wall_s"], abs=1e-5)
    assert split["host_s"] > 0 and split["device_s"] > 0 and set(split["methods"]) >= {"compile", "device", "host"}
    step = function(report, "train_step")
    assert step["calls"] == 20 and 0 < step["exec_measured"] < step["calls"]
    assert {f["code"] for f in report["findings"]} == {"JAX301", "JAX302"}  # JAX101 gone: the step is jitted
    assert report["eager_functions"] == [] or all(e["calls"] < 3 for e in report["eager_functions"])


@pytest.mark.slow
def test_report_on_two_runs_writes_the_study_of_the_rewrite(tmp_path: Path) -> None:
    from jaxopt_audit.cli import main

    before, after = tmp_path / "before.json", tmp_path / "after.json"
    assert main(["run", "--no-scan", "--json", str(before), str(NEWCOMER), "6", "1"]) == 0
    assert main(["run", "--no-scan", "--json", str(after), str(NEWCOMER), "6", "1", "jit"]) == 0
    out = tmp_path / "study" / "rewrite.md"
    assert main(["report", str(before), str(after), "-o", str(out)]) == 0
    text = out.read_text()
    assert "`before.json`, `after.json`" in text and "### before → after" in text
    # the un-jitted step's problem is gone, with its cost before and the jitted step's cost after
    cost = next(f["cost_s"] for f in json.loads(before.read_text())["findings"] if f["code"] == "JAX101")
    removed = [line for line in text.splitlines() if line.startswith("- **Removed:**")]
    assert len(removed) == 1 and removed[0].startswith(
        f"- **Removed:** JAX101 missing-jit `train_step` at `newcomer.py:16`: cost {seconds(cost)} in before; "
        "in after: `train_step` jitted: 6 calls, compile ")
    assert ", device " in removed[0]
    assert "speedup vs before" in text and (out.parent / "rewrite-time.png").is_file()
    assert f"jaxopt-audit run --json before.json {NEWCOMER} 6 1" in text
    assert "jaxopt-audit report before.json after.json -o rewrite.md" in text


# ---------------------------------------------------------------- every jit: pmap, shard_map, libraries

@pytest.mark.slow
def test_pmap_and_jitted_shard_map_are_recorded(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(SCRIPTS / "pmap_and_shard_map.py"))
    assert status == 0
    assert function(report, "<lambda>")["calls"] == 4 and function(report, "<lambda>")["compiles"] == 1
    total = function(report, "total")
    assert (total["calls"], total["compiles"], total["line"]) == (4, 4, 13)  # the user's function, under shard_map
    assert findings(report) == [("JAX103", "pmap_and_shard_map.py", 21)]  # a new length every step


def _needs(module: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (the test extra does not bring it)")


@pytest.mark.slow
def test_equinox_filter_jit_is_the_users_function(tmp_path: Path) -> None:
    _needs("equinox")
    status, report = audit(tmp_path, str(SCRIPTS / "eqx_filter_jit.py"))
    assert status == 0
    loss = function(report, "loss")
    # equinox jits a wrapper of its own: reported at the user's decorator, not inside equinox
    assert (os.path.basename(loss["path"]), loss["line"], loss["calls"], loss["compiles"]) == \
        ("eqx_filter_jit.py", 8, 5, 1)
    # equinox's own sync of every call is listed, but is not the user's JAX301: the float() is
    assert ("eqx_filter_jit.py", 17, 5, "block_until_ready in equinox") in transfers(report, "sync")
    assert findings(report) == [("JAX301", "eqx_filter_jit.py", 18)]


@pytest.mark.slow
def test_flax_nnx_jit_is_recorded(tmp_path: Path) -> None:
    _needs("flax")
    status, report = audit(tmp_path, str(SCRIPTS / "nnx_jit.py"))
    assert status == 0
    apply = function(report, "apply")
    assert (os.path.basename(apply["path"]), apply["line"], apply["calls"], apply["compiles"]) == \
        ("nnx_jit.py", 7, 5, 1)
    assert findings(report) == [("JAX301", "nnx_jit.py", 15)]


# ---------------------------------------------------------------- reference pipeline, small size

@pytest.mark.slow
def test_first_and_last_stage_of_a_pipeline_show_the_rewrite(tmp_path: Path) -> None:
    pytest.importorskip("optax")
    driver = str(SCRIPTS / "drive_stage.py")
    count_all = {"JAXOPT_AUDIT_H2D_TOTAL": "1"}  # jaxlib's own count as well: eager-op scalars too
    run_before, before = audit_in_subprocess(tmp_path, driver, "training_loop", "stage0_original", "1", env=count_all)
    run_after, after = audit_in_subprocess(tmp_path, driver, "training_loop", "stage5_scan", "1", env=count_all)
    assert run_before.returncode == run_after.returncode == 0, run_before.stderr + run_after.stderr
    from jaxopt_audit.reference_pipelines.training_loop import stage0_original
    from jaxopt_audit.reference_pipelines.training_loop.workload import make_workload

    small = make_workload("small")
    steps = small.n_epochs * small.steps_per_epoch
    source = Path(stage0_original.__file__).read_text().splitlines()
    convert_line = 1 + next(i for i, text in enumerate(source) if "batch_jax = {k: jnp.array(v)" in text)
    noise_line = 1 + next(i for i, text in enumerate(source) if "noise = np.asarray(" in text)
    # stage 0: op by op (nothing jitted), a NumPy batch copied in (x and y) and noise read back per step
    assert before["functions"] == []
    assert ("stage0_original.py", convert_line, 2 * steps, "jnp.array") in transfers(before, "h2d")
    assert ("stage0_original.py", noise_line, steps, "np.asarray") in transfers(before, "d2h")
    # op by op: the un-jitted step (JAX101) besides the per-step copies and reads
    assert sorted({code for code, _, _ in findings(before)}) == ["JAX101", "JAX301", "JAX302"]
    # stage 5: one compiled scan per epoch, data moved once, nothing per step
    epoch = function(after, "train_epoch")
    assert (epoch["calls"], epoch["compiles"], epoch["h2d_transfers"], epoch["d2h_transfers"]) == \
        (small.n_epochs, 1, 0, 0)
    assert after["findings"] == []
    moved_before = sum(t["count"] for t in before["transfers"] if t["direction"] != "sync")
    moved_after = sum(t["count"] for t in after["transfers"] if t["direction"] != "sync")
    assert moved_after < steps < moved_before
    if before["h2d_total"] is not None:  # None only where jaxlib's log is silenced (TF_CPP_MIN_LOG_LEVEL)
        assert after["h2d_total"] < steps < before["h2d_total"]
    assert after["device_s"] > 0 and before["functions"] == []  # no jitted call in stage 0 to time
    assert before["eager_ops"] > steps and after["eager_ops"] < before["eager_ops"]


# ---------------------------------------------------------------- trace and usage errors

@pytest.mark.slow
def test_trace_steps_captures_a_trace(tmp_path: Path) -> None:
    trace_dir = tmp_path / "trace"
    status, report = audit(tmp_path, "--trace", str(trace_dir), "--trace-steps", "2:3",
                           str(SCRIPTS / "syncs_per_step.py"))
    assert status == 0
    assert report["trace"]["steps"] == "2:3" and report["trace"]["followed"] == "step"
    assert Path(report["trace"]["path"]).is_file() and report["trace"]["path"].endswith(".xplane.pb")
    assert "steps (step at syncs_per_step.py:11): 2: " in report["trace"]["summary"]
    assert ", 3: " in report["trace"]["summary"]
    assert ", 4: " not in report["trace"]["summary"]  # calls 2 and 3 are marked as steps, no more
    # the trace's own reads are not the program's: still 60 reads of step's outputs
    assert function(report, "step")["d2h_transfers"] == 60
    assert function(report, "step")["trace_xla_s"] > 0  # its XLA ops, from the trace's modules


@pytest.mark.slow
def test_instruments_are_removed_after_the_run(tmp_path: Path) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    array_type: Any = type(jnp.zeros(()))  # ArrayImpl: its private hooks are what `run` patches
    config: Any = jax.config
    before = (jax.jit, jax.device_put, jax.device_get, jax.block_until_ready, jnp.asarray, np.asarray,
              array_type.__float__, array_type.block_until_ready, array_type._value,
              config.jax_explain_cache_misses, sys.getswitchinterval())
    status, _ = audit(tmp_path, str(SCRIPTS / "jit_in_loop.py"))
    assert status == 0
    after = (jax.jit, jax.device_put, jax.device_get, jax.block_until_ready, jnp.asarray, np.asarray,
             array_type.__float__, array_type.block_until_ready, array_type._value,
             config.jax_explain_cache_misses, sys.getswitchinterval())
    assert after == before


@pytest.mark.parametrize("argv, message", [
    (["run", "no_such_script.py"], "no_such_script.py: no such file"),
    (["run", "-m", "no_such_module_xyz.sub"], "-m no_such_module_xyz.sub: no module named 'no_such_module_xyz'"),
    (["run"], "nothing to run"),
    (["run", "--trace-steps", "3:2", "--trace", "t", str(SCRIPTS / "jit_in_loop.py")], "need 1 <= N <= M"),
    (["run", "--trace-steps", "2:3", str(SCRIPTS / "jit_in_loop.py")], "--trace-steps needs --trace DIR"),
])
def test_usage_errors_are_one_line_and_exit_2(argv: list[str], message: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from jaxopt_audit.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


# ---------------------------------------------------------------- JAX's cache-miss explanations

SHAPE_MISS = """TRACING CACHE MISS at /src/train.py:18:19 (<module>):
  for f defined at /src/train.py:14
  all previously seen cache keys differ. For the closest previous key:
  different input types:
  * at x, now f32[4] and before f32[3]"""

WEAK_MISS = """TRACING CACHE MISS at /src/train.py:20:18 (<module>):
  for f defined at /src/train.py:14
  all previously seen cache keys differ. For the closest previous key:
  different input types:
  * at y, now f32[]{weak_type=False} and before f32[]{weak_type=True}https://docs.jax.dev/en/latest/type_promotion.html#weak-types"""

STATIC_MISS = """TRACING CACHE MISS at /src/train.py:24:41 (<module>):
  for g defined at /src/train.py:21
  all previously seen cache keys differ. For the closest previous key:
  different input pytree:
  * at input path [0][1], now <class 'jax._src.tree_util.Static'> with pytree metadata Static(val=3) and before <class 'jax._src.tree_util.Static'> with pytree metadata Static(val=2), so the pytree node metadata does not match"""  # noqa: E501 - JAX's log, verbatim

REDEFINED_MISS = """TRACING CACHE MISS at /src/train.py:11:12 (main):
  never seen function:
    <lambda> id=140001 defined at /src/train.py:10
  but seen another function defined on the same line; maybe the function is
  being re-defined repeatedly, preventing caching?"""


def test_cache_miss_explanations_are_parsed() -> None:
    shape = parse_cache_miss(SHAPE_MISS)
    assert shape is not None
    assert (shape.function, shape.defined_line, shape.call_path, shape.call_line) == ("f", 14, "/src/train.py", 18)
    assert (shape.kinds, shape.arguments, shape.reason) == (("shape",), ("x",), "x: shape f32[3] -> f32[4]")
    dtype = parse_cache_miss(SHAPE_MISS.replace("now f32[4]", "now i32[3]"))
    assert dtype is not None and dtype.kinds == ("dtype",)
    weak = parse_cache_miss(WEAK_MISS)
    assert weak is not None and (weak.kinds, weak.arguments) == (("weak-type",), ("y",))
    static = parse_cache_miss(STATIC_MISS, positional_names=("x", "n"))
    assert static is not None
    assert (static.kinds, static.arguments, static.reason) == (("static",), ("n",), "n: static value 2 -> 3")
    redefined = parse_cache_miss(REDEFINED_MISS)
    assert redefined is not None and redefined.kinds == ("redefined",) and not redefined.is_first_trace
    first = parse_cache_miss(REDEFINED_MISS.split("\n  but")[0])
    assert first is not None and first.is_first_trace and first.function == "<lambda>"
    assert parse_cache_miss("PERSISTENT COMPILATION CACHE MISS for 'jit_f'") is None


# ---------------------------------------------------------------- the overhead benchmark runs

@pytest.mark.slow
def test_overhead_benchmark_measures_every_configuration() -> None:
    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    try:
        import run_overhead
    finally:
        sys.path.pop(0)
    results = run_overhead.measure(steps=20, repeats=1, workloads=["tiny_call", "read_per_step"])
    assert [r.workload for r in results] == ["tiny_call", "read_per_step"]
    assert all(min(r.plain_us_per_step, r.run_us_per_step, r.run_h2d_total_us_per_step) > 0 for r in results)
    # one repeat: its pair's overhead is the overhead, three times over
    assert all(r.paired == pytest.approx((r.relative,) * 3) for r in results)
