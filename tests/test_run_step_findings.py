"""Which per-step findings `run` makes: JAX101's step, its measured saving, setup apart, the
benchmark's waits left alone, and the labelled program suite's major mistakes on top.

The saving is measured by jitting the function after the program has finished; these tests
check what it is made of and when it is withheld, never how large it is.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from test_run import SCRIPTS, audit

SWEEP = SCRIPTS / "eager_sweep.py"
PROGRAMS = Path(__file__).parent / "programs"


def _line_of(path: Path, text: str) -> int:
    return 1 + path.read_text().splitlines().index(text)


def _jax101(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["function"]: f for f in report["findings"] if f["code"] == "JAX101"}


def _loops(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The loop findings, scan or vmap."""
    return [f for f in report["findings"] if f["code"] in ("JAX201", "JAX202")]


@pytest.mark.slow
def test_the_step_is_named_its_saving_measured_and_setup_kept_apart(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    status, report = audit(tmp_path, str(SWEEP))
    assert status == 0
    found = _jax101(report)
    # train_step is the step (train calls it in a loop, loss runs inside it); init_params runs once
    assert set(found) == {"train_step", "host_metric", "chatty_norm"}
    step = found["train_step"]
    assert step["line"] == _line_of(SWEEP, "def train_step(params, x, y, lr):")
    assert step["count"] == 60
    assert step["saving_method"].startswith("measured: the function jitted on the recorded argument shapes, 60 calls x")
    # lr is a Python float that changes per sweep: traced, so one compilation serves all three
    assert "one compilation" in step["saving_method"]
    assert step["saving_s"] >= 0
    roles = {e["name"]: e["role"] for e in report["eager_functions"]}
    assert roles == {"train": "driver", "train_step": "step", "loss": "helper", "host_metric": "step",
                     "chatty_norm": "step", "init_params": "setup"}
    assert any(n.startswith("not per step: init_params (") and "ran once" in n for n in report["notes"])
    # what cannot be jitted as written says why, with no saving
    assert found["host_metric"]["saving_s"] is None
    assert "fails on the recorded arguments (ConcretizationTypeError" in found["host_metric"]["saving_method"]
    assert found["chatty_norm"]["saving_s"] is None
    assert "print" in found["chatty_norm"]["saving_method"]
    # the measurement's own calls print nothing: the program's 60 lines only
    assert capfd.readouterr().out.count("norm computed") == 60
    # findings come by measured saving, else by cost: the order the report documents, whatever
    # the timings of this run (a loaded machine can put a step's saving under another's cost)
    ranks = [f["saving_s"] if f["saving_s"] is not None else (f["cost_s"] or 0.0) for f in report["findings"]]
    assert ranks == sorted(ranks, reverse=True)


@pytest.mark.slow
def test_trace_leaves_the_saving_unmeasured(tmp_path: Path) -> None:
    status, report = audit(tmp_path, "--trace", str(tmp_path / "trace"), str(SWEEP))
    assert status == 0
    step = _jax101(report)["train_step"]
    assert step["saving_s"] is None and "--trace" in step["saving_method"]


def _major(folder: Path) -> dict[str, Any]:
    manifest = tomllib.loads((folder / "manifest.toml").read_text())
    return next(m for m in manifest["mistake"] if m.get("major"))


@pytest.mark.slow
@pytest.mark.parametrize(("program", "measured"), [("01_mlp_value_and_grad", True), ("09_growing_batch_shapes", True),
                                                   ("11_heat_diffusion", True), ("04_learning_rate_sweep", True),
                                                   ("03_cartpole_rollout", True)])
def test_the_top_finding_is_the_labelled_major_mistake(tmp_path: Path, program: str, measured: bool) -> None:
    folder = PROGRAMS / program
    major = _major(folder)
    status, report = audit(tmp_path, str(folder / "slow.py"))
    assert status == 0
    top = report["findings"][0]
    # a loop's finding points at the call in its body, the label at the `for` line above it
    assert top["code"] == major["code"] and 0 <= top["line"] - major["line"] <= 2, report["findings"]
    assert top["saving_method"].startswith("measured:" if measured else "no estimate:")
    assert (top["saving_s"] is not None) == measured


@pytest.mark.slow
@pytest.mark.parametrize("program", ["13_clean_minibatch_training", "14_clean_scan_rollout", "15_clean_benchmark"])
def test_a_clean_program_has_no_per_step_finding(tmp_path: Path, program: str) -> None:
    status, report = audit(tmp_path, str(PROGRAMS / program / "clean.py"))
    assert status == 0
    assert report["findings"] == []


def test_a_wait_before_reading_a_timer_is_a_measurement_not_a_stall(tmp_path: Path) -> None:
    script = SCRIPTS / "timed_syncs.py"
    status, report = audit(tmp_path, str(script))
    assert status == 0
    syncs = [f for f in report["findings"] if f["code"] == "JAX301"]
    assert [f["line"] for f in syncs] == [_line_of(script, "    y.block_until_ready()")]


@pytest.mark.slow
def test_a_tree_map_lambda_charges_its_ops_to_the_update_that_maps_it(tmp_path: Path) -> None:
    script = SCRIPTS / "tree_map_update.py"
    status, report = audit(tmp_path, str(script))
    assert status == 0
    roles = {e["name"]: e["role"] for e in report["eager_functions"] if e["name"].startswith("momentum_update")}
    # each lambda runs once per leaf (8 per call): mapped over the tree, not looped over steps
    assert roles == {"momentum_update": "step", "momentum_update.<locals>.<lambda>": "helper"}
    found = _jax101(report)
    assert set(found) == {"momentum_update"}
    assert found["momentum_update"]["line"] == _line_of(script, "def momentum_update(params, velocity, grads):")


DRIVER_LOOP = SCRIPTS / "driver_loop.py"


@pytest.mark.slow
def test_eager_work_in_the_loop_of_a_function_run_once_is_the_loop_s_finding(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(DRIVER_LOOP))
    assert status == 0
    call = _line_of(DRIVER_LOOP, "        x, occ = em_step(x, occ, jax.random.normal(sub, (512,)))")
    loops = [f for f in report["findings"] if f["code"] == "JAX201"]
    # one finding for the loop: the eager ops around the step and the step's calls together
    assert [(f["line"], f["function"], f["count"]) for f in loops] == [(call, "em_step", 5000)]
    loop = loops[0]
    first = _line_of(DRIVER_LOOP, "    for t in range(STEPS):")
    # the split, its unpacking and the noise per iteration; the read every 500 steps left out
    assert loop["message"].startswith(f"main's loop (lines {first}-{first + 4}) calls em_step 5000 times and "
                                      "issues 15000 eager ops around it (3 per iteration")
    assert "lax.scan or lax.fori_loop" in loop["fix"] and "whole loop body" in loop["fix"]
    method = loop["saving_method"]
    assert method.startswith("measured: the loop's 15000 eager ops took ")
    assert "from scanning em_step's calls" in method and "not subtracted" in method
    assert loop["saving_s"] is not None and loop["saving_s"] >= 0
    roles = {e["name"]: e["role"] for e in report["eager_functions"]}
    assert roles == {"main": "driver", "init_params": "setup"}
    # the loop's work is not also called setup; the initialisation still is
    mains = [n for n in report["notes"] if n.startswith("not per step: main (")]
    assert all("outside its loop's finding" in n for n in mains)
    assert any(n.startswith("not per step: init_params (") and "ran once" in n for n in report["notes"])


@pytest.mark.slow
def test_a_function_run_once_with_no_eager_work_in_its_loop_stays_setup(tmp_path: Path) -> None:
    script = SCRIPTS / "setup_then_loop.py"
    status, report = audit(tmp_path, str(script))
    assert status == 0
    assert not any(f["function"] in ("main", "init_params") or "eager ops around it" in f["message"]
                   for f in report["findings"])
    roles = {e["name"]: e["role"] for e in report["eager_functions"]}
    assert roles == {"main": "setup", "init_params": "setup"}
    # main's note covers init_params's ops: the outermost setup function is the one named
    assert any(n.startswith("not per step: main (") and "ran once" in n for n in report["notes"])


PER_EXAMPLE = SCRIPTS / "per_example_loop.py"


@pytest.mark.slow
def test_a_loop_over_examples_inside_the_step_is_one_finding_with_its_helper(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(PER_EXAMPLE))
    assert status == 0
    call = _line_of(PER_EXAMPLE, "        g = per_example_grad(w, xs[i], ys[i])")
    first = _line_of(PER_EXAMPLE, "    for i in range(BATCH):")
    # the per-example gradient takes no jitted output: the examples are mapped, not scanned
    assert [(f["code"], f["line"], f["count"]) for f in report["findings"]] == [("JAX202", call, 60 * 32)]
    loop = report["findings"][0]
    assert loop["message"].startswith(f"private_step's loop (lines {first}-{first + 2}) calls grad(loss) 1920 times")
    assert "(with clip)" in loop["message"]
    assert "jax.vmap the whole loop body" in loop["fix"]
    assert "from vmapping grad(loss)'s calls" in loop["saving_method"]
    # the clip is the loop body's work, not a JAX101 of its own
    assert _jax101(report) == {}


PER_ITEM = SCRIPTS / "per_item_solver.py"


@pytest.mark.slow
def test_short_solver_loops_per_item_point_at_the_loop_over_items(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(PER_ITEM))
    assert status == 0
    loops = _loops(report)
    outer = _line_of(PER_ITEM, "        roots.append(square_root(targets[i]))")
    assert [(f["code"], f["line"], f["function"]) for f in loops] == [("JAX202", outer, "newton")]
    assert "in square_root (lines" in loops[0]["message"] and "short chains" in loops[0]["message"]
    assert loops[0]["fix"].startswith("jax.vmap square_root over the items of this loop")
    assert "lax.while_loop" in loops[0]["fix"]
    # the host test stays where it is read
    reads = [f["line"] for f in report["findings"] if f["code"] == "JAX301"]
    assert reads == [_line_of(PER_ITEM, "        if abs(float(step)) < 1e-4:")]


CELL_LOOP = SCRIPTS / "cell_loop.py"


@pytest.mark.slow
def test_outputs_stacked_after_a_driven_loop_are_part_of_its_saving(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(CELL_LOOP))
    assert status == 0
    call = _line_of(CELL_LOOP, "            cells.append(rule(padded[i:i + 3, j:j + 3]))")
    loops = _loops(report)
    assert [(f["code"], f["line"], f["count"]) for f in loops] == [("JAX202", call, 16 * 16 * 30)]
    assert "stacking up to 256 of rule's outputs in one eager op after the loop" in loops[0]["saving_method"]


LIST_BATCHES = SCRIPTS / "list_batches.py"


@pytest.mark.slow
def test_batches_made_from_python_lists_each_step_are_host_copies(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(LIST_BATCHES))
    assert status == 0
    line = _line_of(LIST_BATCHES, "    w = step(w, jnp.array([r[:2] + [1.0] for r in rows]), "
                                  "jnp.array([r[2] for r in rows]))")
    copies = [f for f in report["findings"] if f["code"] == "JAX302"]
    # two lists per step, 32 steps; the constant list converted once before the loop is no finding
    assert [(f["line"], f["count"]) for f in copies] == [(line, 64)]
    assert "Python lists of numbers were made into device arrays here (jnp.array of Python lists)" in \
        copies[0]["message"]
    assert copies[0]["saving_s"] == copies[0]["cost_s"] and copies[0]["saving_s"] > 0
    assert copies[0]["saving_method"].startswith("measured: the time of the conversion calls at this line")


EPOCH_READS = SCRIPTS / "epoch_reads.py"


@pytest.mark.slow
def test_a_read_once_per_long_jitted_call_is_not_a_per_step_stall(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(EPOCH_READS))
    assert status == 0
    line = _line_of(EPOCH_READS, "    history.append(jax.device_get(state))")
    assert (report["functions"][0]["name"], report["functions"][0]["calls"]) == ("epoch", 6)
    assert not [f for f in report["findings"] if f["code"] == "JAX301"]
    # counted in the traffic table all the same
    reads = [(t["line"], t["count"]) for t in report["transfers"] if t["direction"] == "d2h"]
    assert (line, 6) in reads


INLINE = SCRIPTS / "inline_eager_loop.py"


@pytest.mark.slow
def test_a_loop_of_eager_ops_at_the_top_level_is_a_loop_finding_not_setup(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(INLINE))
    assert status == 0
    first = _line_of(INLINE, "for step in range(400):")
    loops = _loops(report)
    # w and b are read before the body assigns them: a carried state, so a scan
    assert [(f["code"], f["line"], f["count"], f["function"]) for f in loops] == [("JAX201", first, 4000, None)]
    assert loops[0]["message"].startswith(f"the script's loop (lines {first}-{first + 3}) calls no jitted function")
    assert loops[0]["saving_s"] == loops[0]["cost_s"]
    assert "not subtracted: the compiled loop's own time" in loops[0]["saving_method"]
    # what ran outside the loop is a summary line, named as the top level
    assert not any("<module>" in note for note in report["notes"])


LIBRARY_UPDATE = SCRIPTS / "library_update_loop.py"


@pytest.mark.slow
def test_a_library_update_run_eagerly_beside_a_jitted_gradient_is_the_call_to_jit(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(LIBRARY_UPDATE))
    assert status == 0
    update = _line_of(LIBRARY_UPDATE, "        updates, state = optimiser.update(grads, state, params)")
    top = report["findings"][0]
    assert (top["code"], top["line"], top["function"]) == ("JAX101", update, "train")
    assert top["message"].startswith(f"the calls (lines {update}, {update + 1}) into optax in train's loop")
    assert "into the jitted value_and_grad(loss)" in top["fix"]
    assert top["saving_s"] is not None and 0 < top["saving_s"] <= top["cost_s"]
    # the loop around it carries params through the update: a scan if anything, never a vmap
    assert not any(f["code"] == "JAX202" for f in report["findings"])


EAGER_FORI = SCRIPTS / "eager_fori_loop.py"


@pytest.mark.slow
def test_a_function_whose_one_op_is_a_lax_loop_run_eagerly_is_worth_a_jit(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(EAGER_FORI))
    assert status == 0
    found = _jax101(report)
    assert set(found) == {"integrate"}
    assert found["integrate"]["line"] == _line_of(EAGER_FORI, "def integrate(angle, speed):")
    assert found["integrate"]["count"] == 1000
    assert "lax loops or branches run outside jit" in found["integrate"]["message"]
    assert found["integrate"]["saving_method"].startswith("measured: the function jitted on the recorded")


TRANSFORMED = SCRIPTS / "transformed_calls.py"


@pytest.mark.slow
def test_a_gradient_called_without_jit_is_reported_where_it_is_made(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(TRANSFORMED))
    assert status == 0
    made_once = _line_of(TRANSFORMED, "value_and_gradient = jax.value_and_grad(loss)")
    made_per_iteration = _line_of(TRANSFORMED, "    v = v - 0.1 * jax.grad(loss)(v)")
    jax101 = [f for f in report["findings"] if f["code"] == "JAX101"]
    # the objective converts to floats (it cannot be jitted) and loss runs inside the gradients:
    # neither is the function to jit
    assert sorted((f["line"], f["count"]) for f in jax101) == [(made_once, 150), (made_per_iteration, 150)]
    once = next(f for f in jax101 if f["line"] == made_once)
    assert once["message"].startswith("jax.value_and_grad(loss), made here, is called without jit 150 times")
    assert once["fix"].startswith("jax.jit(jax.value_and_grad(loss)) here, once")
    inline = next(f for f in jax101 if f["line"] == made_per_iteration)
    assert inline["message"].startswith("jax.grad(loss), made here 150 times, is called without jit 150 times")
    for finding in jax101:
        assert finding["saving_method"].startswith("measured: the function jitted on the recorded argument shapes")


LIST_MEAN = SCRIPTS / "list_mean_per_step.py"


@pytest.mark.slow
def test_a_list_of_device_scalars_converted_whole_every_step_is_timed_with_its_rereads(tmp_path: Path) -> None:
    status, report = audit(tmp_path, str(LIST_MEAN))
    assert status == 0
    line = _line_of(LIST_MEAN, "    running.append(np.mean(losses))")
    [read] = [f for f in report["findings"] if f["code"] == "JAX301" and f["line"] == line]
    # 400 first reads; then the k-th step converts k - 1 elements again: 399 * 400 / 2
    assert read["count"] == 400
    assert f"converted again {399 * 400 // 2} times after their first read" in read["message"]
    assert read["saving_s"] is not None and read["saving_s"] > 0
    assert "running sum" in read["fix"]
