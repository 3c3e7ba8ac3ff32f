"""Each finding's impact: the runs the file shows (literal and configured trip counts, nested
loops, the loops around callers), the level they rank at, the evidence in words, and the
`--min-impact` filter and impact-first order of the full output."""
import json
import textwrap

from jaxopt_audit.static.pipeline.engine import scan_paths
from jaxopt_audit.static.pipeline.registry import load_rules

from conftest import run_cli, scan_text

RULES = load_rules()


def impacts(source: str, code: str) -> list:
    return [f.impact for f in scan_text(source, RULES) if f.code == code]


def one(source: str, code: str):
    found = impacts(source, code)
    assert len(found) == 1, found
    return found[0]


SYNC = """\
import jax
import jax.numpy as jnp

step = jax.jit(lambda w: w * 0.9)

def train(w):
    for i in range({count}):
        w = step(w)
        print(float(w.sum()))
    return w
"""


def test_a_literal_trip_count_sets_runs_and_level():
    assert one(SYNC.format(count="5000"), "JAX301")[:2] == ("high", 5000)
    assert one(SYNC.format(count="200"), "JAX301")[:2] == ("medium", 200)
    low = one(SYNC.format(count="30"), "JAX301")
    assert low.level == "low" and low.runs == 30
    assert low.why == "runs 30 times: once per iteration of the 30-iteration loop at line 7"


def test_a_loop_the_file_does_not_count_is_unknown():
    impact = one(SYNC.format(count="n").replace("def train(w):", "def train(w, n):"), "JAX301")
    assert impact.level == "unknown" and impact.runs is None
    assert "the file does not say how many" in impact.why


def test_nested_loops_multiply():
    source = """\
    import jax

    step = jax.jit(lambda w, b: w - b)

    def train(w, batches):
        for epoch in range(10):
            for b in range(200):
                w = step(w, b)
                print(float(w.sum()))
        return w
    """
    impact = one(source, "JAX301")
    assert impact[:2] == ("high", 2000)
    assert "the 200-iteration loop at line 7; inside the 10-iteration loop at line 6" in impact.why


def test_configured_counts():
    argparse_default = """\
    import argparse
    import jax

    step = jax.jit(lambda w: w * 0.9)
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-steps", type=int, default=3000)
    args = parser.parse_args()

    def train(w):
        for i in range(args.num_steps):
            w = step(w)
            print(float(w.sum()))
        return w
    """
    impact = one(argparse_default, "JAX301")
    assert impact[:2] == ("high", 3000) and "`num_steps` as the file configures it" in impact.why
    field = argparse_default.replace('parser = argparse.ArgumentParser()\n    parser.add_argument("--num-steps", '
                                     'type=int, default=3000)\n    args = parser.parse_args()',
                                     "class Config:\n        num_steps: int = 80\n    args = Config()")
    assert one(field, "JAX301")[:2] == ("medium", 80)
    parameter = SYNC.format(count="steps").replace("def train(w):", "def train(w, steps=int(1e4)):")
    impact = one(parameter, "JAX301")
    assert impact[:2] == ("high", 10000) and "the default of parameter `steps`" in impact.why


def test_two_different_settings_leave_the_count_unknown():
    source = """\
    import jax

    step = jax.jit(lambda w: w * 0.9)
    small = dict(steps=10)
    large = dict(steps=10000)

    def train(w, cfg):
        for i in range(cfg.steps):
            w = step(w)
            print(float(w.sum()))
        return w
    """
    assert one(source, "JAX301")[:2] == ("unknown", None)


def test_a_function_runs_as_often_as_the_loop_that_calls_it():
    source = """\
    import jax.numpy as jnp

    def update(w, g):
        return w - 0.1 * g * jnp.sign(w) + jnp.tanh(g)

    def train(w, g):
        for i in range(2000):
            w = update(w, g)
        return w
    """
    impact = one(source, "JAX101")
    assert impact[:2] == ("high", 2000)
    assert impact.why.startswith("runs 2,000 times: once per iteration of the 2,000-iteration loop at line 7, "
                                 "through the call to `update`")
    assert "eager array operations in its body per call" in impact.why


def test_a_read_under_a_condition_runs_at_most_that_often_and_ranks_lower():
    source = """\
    import jax

    step = jax.jit(lambda w: w * 0.9)

    def train(w, threshold):
        for i in range(5000):
            w = step(w)
            if threshold > 0:
                print(float(w.sum()))
        return w
    """
    found = impacts(source, "JAX301")
    if found:  # the rule may judge a condition on a host value as selecting iterations
        assert found[0].level == "medium" and "at most 5,000" in found[0].why


def test_api_and_correctness_findings_rank_by_kind_not_count():
    removed = one("import jax\n\ntree = jax.tree_map(abs, [1])\n", "JAX601")
    assert removed.level == "medium" and removed.runs is None
    tracing = one("""\
    import jax

    @jax.jit
    def positives(x):
        return x[x > 0]
    """, "JAX401")
    assert tracing.level == "medium" and "correctness" in tracing.why


def test_min_impact_filters_and_full_output_leads_with_the_highest(tmp_path, capsys):
    source = textwrap.dedent(SYNC.format(count="5000")) + textwrap.dedent("""\

        def short(w):
            for i in range(30):
                w = step(w)
                print(float(w.sum()))
            return w
        """)
    (tmp_path / "train.py").write_text(source)
    code, out, _ = run_cli(["scan", str(tmp_path), "--no-cache", "--format", "json", "--min-impact", "high",
                              "--select", "JAX301"], capsys)
    data = json.loads(out)
    assert code == 1 and {(f["code"], f["impact"]["level"]) for f in data["findings"]} == {("JAX301", "high")}
    code, out, _ = run_cli(["scan", str(tmp_path), "--no-cache", "--select", "JAX301"], capsys)
    headers = [line for line in out.splitlines() if "JAX301 host-sync-in-step" in line]
    assert [h.split(":")[1] for h in headers] == ["9", "15"]  # file order and impact order agree here
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import jax

        step = jax.jit(lambda w: w * 0.9)

        def short(w):
            for i in range(30):
                w = step(w)
                print(float(w.sum()))
            return w
        """) + "\n" + textwrap.dedent(SYNC.format(count="5000")).split("\n", 4)[4])
    code, out, _ = run_cli(["scan", str(tmp_path), "--no-cache", "--select", "JAX301"], capsys)
    headers = [line for line in out.splitlines() if "JAX301 host-sync-in-step" in line]
    assert [h.split(":")[1] for h in headers] == ["15", "8"]  # the 5,000-run read first
    assert "1 of high impact" in out.splitlines()[-1]
    code, out, _ = run_cli(["scan", str(tmp_path), "--no-cache", "--select", "JAX301", "--format", "concise"],
                           capsys)
    assert [line.split(":")[1] for line in out.splitlines() if "JAX301" in line] == ["8", "15"]


def test_impact_survives_the_cache(tmp_path):
    (tmp_path / "a.py").write_text(textwrap.dedent(SYNC.format(count="5000")))
    cache_dir = str(tmp_path / "cache")
    cold = scan_paths([str(tmp_path / "a.py")], config=None, cache_dir=cache_dir)
    warm = scan_paths([str(tmp_path / "a.py")], config=None, cache_dir=cache_dir)
    assert [f.impact for f in warm.findings] == [f.impact for f in cold.findings]
    assert all(f.impact is not None for f in warm.findings)


def test_a_call_in_a_comprehension_multiplies_the_runs():
    source = """\
    import jax
    import jax.numpy as jnp

    def run(key):
        w = jnp.zeros(3)
        for i in range(250):
            w = w + jax.random.normal(jax.random.fold_in(key, i), (3,))
        return w

    results = [run(jax.random.key(s)) for s in range(30)]
    """
    loop = one(source, "JAX201")
    assert loop[:2] == ("high", 7500)
    assert "the 30-iteration comprehension at line 10, through the call to `run`" in loop.why
    sweep = one(source, "JAX202")
    assert sweep.runs == 30 and "the 30-iteration comprehension at line 10" in sweep.why


def test_a_function_called_from_several_places_is_not_said_to_run_once():
    source = """\
    import jax.numpy as jnp

    def update(w, g):
        return w - 0.1 * g * jnp.sign(w) + jnp.tanh(g)

    def warm(w, g):
        return update(w, g)

    def train(w, g):
        for i in range(300):
            w = update(w, g)
        return w

    def finish(w, g):
        return update(w, g)
    """
    impact = one(source, "JAX101")
    assert impact.runs == 300  # the call in the loop is the one that repeats it


def test_a_helper_called_from_several_places_runs_once_per_call():
    source = """\
    import jax

    def init(key):
        w = jax.random.normal(key, (3,))
        b = jax.random.normal(key, (3,))
        return w, b

    first = init(jax.random.key(0))
    second = init(jax.random.key(1))
    """
    impact = one(source, "JAX501")
    assert impact.runs == 2
    assert "once per call of `init`, which this file calls from 2 places (the first at line 8)" in impact.why


def test_a_module_constant_behind_a_progress_bar_gives_the_count():
    source = """\
    import jax
    from tqdm import tqdm

    TOTAL_STEPS = 4 * 500
    step = jax.jit(lambda w: w * 0.9)

    def train(w):
        for i in tqdm(range(TOTAL_STEPS)):
            w = step(w)
            print(float(w.sum()))
        return w
    """
    impact = one(source, "JAX301")
    assert impact[:2] == ("high", 2000)
    assert "the 2,000-iteration loop at line 8 (`TOTAL_STEPS` is 2,000 at line 4)" in impact.why
    rebound = source.replace("def train(w):", "def shorten():\n        global TOTAL_STEPS\n        TOTAL_STEPS = 7\n\n"
                                              "    def train(w):")
    assert one(rebound, "JAX301")[:2] == ("unknown", None)


def test_a_range_from_a_moving_start_counts_the_span_a_main_block_sets():
    source = """\
    import jax

    step = jax.jit(lambda w: w * 0.9)

    if __name__ == "__main__":
        epochs = 75
        offset = 0
        history = []
        w = 1.0
        if history:
            offset = history[-1]
        for i in range(offset, offset + epochs):
            w = step(w)
            print(float(w))
    """
    impact = one(source, "JAX301")
    assert impact == ("medium", 75, "runs 75 times: once per iteration of the 75-iteration loop at line 12")


LOOP_IN_FIT = """\
import jax

step = jax.jit(lambda w: w * 0.9)

def fit(w, rounds):
    for i in range(rounds):
        w = step(w)
        print(float(w))
    return w
"""


def test_a_literal_argument_passed_down_through_calls_gives_the_count():
    source = LOOP_IN_FIT + """\

def experiment(w, budget):
    return fit(w, budget)

result = experiment(1.0, 1500)
"""
    impact = one(source, "JAX301")
    assert impact[:2] == ("high", 1500)
    assert "`rounds` from the call at line 12; `budget` is 1,500 in the call at line 14" in impact.why


def test_calls_passing_different_counts_bound_it_by_the_largest():
    source = LOOP_IN_FIT + """\

small = fit(1.0, 20)
large = fit(2.0, rounds=3000)
"""
    impact = one(source, "JAX301")
    assert impact[:2] == ("high", 6000)  # the largest count, in each of the two calls: a bound
    assert impact.why.startswith("runs at most 6,000 times: once per iteration of the loop of up to 3,000 "
                                 "iterations at line 6 (`rounds` is up to 3,000 in the 2 calls at lines 11, 12)")
    agreeing = one(LOOP_IN_FIT + "\na = fit(1.0, 60)\nb = fit(2.0, 60)\n", "JAX301")
    assert agreeing[:2] == ("medium", 120) and "`rounds` is 60 in the 2 calls at lines 11, 12" in agreeing.why
    assert not agreeing.why.startswith("runs at most")


def test_an_unknown_count_names_what_it_depends_on_without_saying_the_file_is_silent():
    attribute = """\
    import jax

    step = jax.jit(lambda w: w * 0.9)

    class Trainer:
        def __init__(self, n_steps):
            self.n_steps = n_steps

        def run(self, w):
            for i in range(self.n_steps):
                w = step(w)
                print(float(w))
            return w
    """
    impact = one(attribute, "JAX301")
    assert impact.level == "unknown" and impact.runs is None
    assert impact.why.endswith("how many times depends on `self.n_steps`")
    passed_from_a_loader = LOOP_IN_FIT + "\ndef main(loader):\n    return fit(1.0, len(loader))\n"
    impact = one(passed_from_a_loader, "JAX301")
    assert impact.level == "unknown" and "does not say" not in impact.why
    assert "depends on the argument `rounds` of `fit` (the length of `loader` at a call)" in impact.why
    unpassed = one(LOOP_IN_FIT, "JAX301")
    assert unpassed.why.endswith("the file does not say how many times: that depends on the argument `rounds` "
                                 "of `fit`, which no call in this file passes")
    passed_on = one(LOOP_IN_FIT + "\ndef main(w, budget):\n    return fit(w, budget)\n", "JAX301")
    assert passed_on.why.endswith("the file does not say how many times: that depends on the argument `budget` "
                                  "of `main`, which no call in this file passes")


def test_a_named_iterable_is_followed_to_what_it_holds():
    source = """\
    import jax
    import numpy as np
    from tqdm import tqdm

    step = jax.jit(lambda w, s: w * s)
    SCALES = np.linspace(0.5, 2.0, 64)

    def sweep(w, batches):
        for s in SCALES:
            w = step(w, s)
            print(float(w.sum()))
        bar = tqdm(batches)
        for b in bar:
            w = step(w, b)
            print(float(w.sum()))
        return w
    """
    first, second = impacts(source, "JAX301")
    assert first[:2] == ("medium", 64)
    assert second.runs is None and second.why.endswith("how many times depends on the length of `batches`")


def test_a_default_no_call_overrides_is_said_to_be_the_default():
    source = LOOP_IN_FIT.replace("def fit(w, rounds):", "def fit(w, rounds=400):") + "\nresult = fit(1.0)\n"
    impact = one(source, "JAX301")
    assert impact[:2] == ("medium", 400)
    assert "(the default of parameter `rounds`)" in impact.why and "from the call" not in impact.why
    unpacked = one(LOOP_IN_FIT + "\nsettings = dict(rounds=9)\nresult = fit(1.0, **settings)\n", "JAX301")
    assert unpacked.runs is None and "unpacked into the call at line 12" in unpacked.why
