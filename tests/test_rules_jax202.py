"""JAX202 loop-to-vmap: a learner's loop over seeds and the other kinds of independent items, and
the "Quiet on" clauses: carried state (JAX201's loops), static structure, files, uncollected results."""

from __future__ import annotations

from jaxopt_audit.rules.jax201_loop_to_scan import LoopToScan
from jaxopt_audit.rules.jax202_loop_to_vmap import LoopToVmap

from conftest import scan_text

HEADER = """
import jax
import jax.numpy as jnp

@jax.jit
def run_learning_loop(key, observations):
    weights = jax.random.normal(key, (observations.shape[1],))
    return jnp.mean((observations @ weights) ** 2)
"""


def lines(source: str, rules=(LoopToVmap,)) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in scan_text(HEADER + source, list(rules))]


def test_thirty_seeds_run_one_after_the_other():
    found = scan_text(HEADER + """
def run_seeds(observations, num_seeds=30):
    results = []
    for seed in range(num_seeds):
        results.append(run_learning_loop(jax.random.key(seed), observations))
    return jnp.stack(results)
""", [LoopToVmap])
    assert [(f.line, f.code) for f in found] == [(11, "JAX202")]
    assert "run_learning_loop" in found[0].message and "jax.vmap" in found[0].message


def test_keys_from_split_a_computed_grid_and_rows_of_an_array():
    assert lines("""
def sweep(key, observations, lrs):
    by_key, by_lr, by_row = [], {}, []
    for k in jax.random.split(key, 8):
        by_key.append(run_learning_loop(k, observations))
    for lr in lrs:
        by_lr[lr] = run_learning_loop(jax.random.key(0), observations * lr)
    stacked = jnp.stack([observations, observations + 1.0])
    for rows in stacked:
        by_row.append(run_learning_loop(key, rows))
    return by_key, by_lr, by_row
""") == [(11, "JAX202"), (13, "JAX202"), (16, "JAX202")]


def test_a_handful_of_written_out_cases_is_no_vmap_candidate():
    # Validation helpers loop over 3 to 9 hard-coded test hands, and a tutorial over
    # 4 scales of different shapes, and a sweep `for n in (2, 4, 8, 16, 32)`. Batching a
    # handful of cases gains nothing. A grid the file does not spell out is still reported.
    assert lines("""
TEST_CASES = [jnp.ones(3), jnp.zeros(3), jnp.full(3, 2.0)]

def check(key, observations):
    by_lr, by_case = {}, []
    for lr in [1e-3, 1e-2, 1e-1]:
        by_lr[lr] = run_learning_loop(jax.random.key(0), observations * lr)
    for case in TEST_CASES:
        by_case.append(run_learning_loop(key, case))
    return by_lr, by_case

def sweep(key, observations, lrs):
    by_lr = {}
    for lr in lrs:
        by_lr[lr] = run_learning_loop(jax.random.key(0), observations * lr)
    return by_lr
""") == [(21, "JAX202")]


def test_a_whole_run_per_seed_with_its_own_inner_loop_counts():
    assert lines("""
@jax.jit
def step(w, x):
    return w - 0.01 * jnp.dot(w, x) * x

def run_seed(seed, xs):
    w = jax.random.normal(jax.random.key(seed), (xs.shape[1],))
    for x in xs:
        w = step(w, x)
    return w

def run_all(xs, num_seeds):
    finals = []
    for seed in range(num_seeds):
        finals.append(run_seed(seed, xs))
    return finals
""") == [(21, "JAX202")]


def test_carried_state_is_jax201_not_jax202():
    assert lines("""
@jax.jit
def update(w, x):
    return w - 0.01 * jnp.dot(w, x) * x

def train(w, xs, num_steps):
    losses = []
    for step in range(num_steps):
        w = update(w, xs[step])
        losses.append(jnp.sum(w))
    return w, losses
""", rules=(LoopToVmap, LoopToScan)) == [(15, "JAX201")]


def test_quiet_when_items_change_structure():
    assert lines("""
from functools import partial

@partial(jax.jit, static_argnames="width")
def init_model(key, width):
    return jax.random.normal(key, (width, width))

def build(key, observations, runners):
    out = []
    for seed in range(4):
        out.append(init_model(jax.random.key(seed), 2 ** (seed + 4)))
    for seed, runner in enumerate(runners):
        out.append(runner(jax.random.key(seed), observations))
    for lr in [1e-3, 1e-2]:
        out.append(jnp.zeros((int(1 / lr),)) + run_learning_loop(key, observations))
    return out
""") == []


def test_quiet_on_dict_items_files_and_uncollected_results():
    assert lines("""
def evaluate(key, params, paths, observations):
    scores = {}
    for name, value in params.items():
        scores[name] = run_learning_loop(key, value)
    for key_name in params:
        scores[key_name] = run_learning_loop(key, params[key_name])
    for path in paths:
        with open(path) as handle:
            scores[path] = run_learning_loop(key, observations * float(handle.read()))
    for seed in range(10):
        print(seed, run_learning_loop(jax.random.key(seed), observations))
    return scores
""") == []


def test_quiet_when_already_vmapped():
    assert lines("""
@jax.jit
def run_batched(keys, observations):
    return jax.vmap(run_learning_loop, in_axes=(0, None))(keys, observations)

def run_seeds(key, observations):
    return run_batched(jax.random.split(key, 30), observations)
""") == []


def test_a_key_named_key_built_from_the_seed_is_not_carried_state():
    assert lines("""
def run_seeds(observations, num_seeds=30):
    results = []
    for seed in range(num_seeds):
        key = jax.random.key(seed)
        results.append(run_learning_loop(key, observations))
    return results
""") == [(11, "JAX202")]


def test_a_step_updating_its_model_and_optimizer_in_place_carries_state():
    # An NNX tutorial's epoch runs `train_step(model, optimizer, xb, yb)` per row of
    # a permutation; the step calls `optimizer.update(grads)`, so each batch's step starts from
    # the last one's weights. vmap over the batches would change the algorithm.
    source = """
from flax import nnx

@nnx.jit
def train_step(model, optimizer, xb, yb):
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(xb) - yb) ** 2))(model)
    optimizer.update(grads)
    return loss

@jax.jit
def evaluate(params, xb, yb):
    return jnp.mean((xb @ params - yb) ** 2)

def epoch(model, optimizer, params, xs, ys, key):
    perms = jax.random.permutation(key, xs.shape[0]).reshape((-1, 32))
    losses = []
    for perm in perms:
        losses.append(train_step(model, optimizer, xs[perm], ys[perm]))
    scores = []
    for perm in perms:
        scores.append(evaluate(params, xs[perm], ys[perm]))
    return losses, scores
"""
    # the first loop's step updates `optimizer` in place; the second's rows are independent
    assert lines(source) == [(27, "JAX202")]


def test_an_item_passed_as_a_size_keyword_changes_the_shapes():
    # A parity audit runs each sequence length of a literal list through the same
    # case builder (`token_len=length`): every item is a new shape, nothing to stack.
    assert lines("""
def audit(observations, key):
    rows = []
    for length in [1, 8, 63, 64, 65, 128]:
        rows.append(run_learning_loop(key, observations[:, :4]) + make_case(key, token_len=length))
    return rows

@jax.jit
def make_case(key, token_len=8):
    return jnp.sum(jax.random.normal(key, (4,)))
""") == []


def test_quiet_in_a_benchmark_that_times_the_loop_of_calls():
    # A backend benchmark runs its step over prepared inputs, once to warm
    # up and then under a timer; the loop of calls is the workload it measures. The same loop
    # in a function that reads no clock is reported.
    found = lines("""
import time

def benchmark(key, batches):
    outs = []
    for k in jax.random.split(key, 8):
        outs.append(run_learning_loop(k, batches))
    start = time.perf_counter()
    outs = []
    for k in jax.random.split(key, 8):
        outs.append(run_learning_loop(k, batches))
    jax.block_until_ready(outs)
    return time.perf_counter() - start

def evaluate_all(key, batches):
    outs = []
    for k in jax.random.split(key, 8):
        outs.append(run_learning_loop(k, batches))
    return outs
""")
    assert found == [(24, "JAX202")]


def test_vmap_is_suggested_only_for_a_function_that_can_be_vmapped_as_written():
    source = """
        import jax
        import jax.numpy as jnp

        def branchy(key, n):
            x = jax.random.normal(key, (n,))
            if x.sum() > 0:
                return x
            return -x

        def clean(key, n):
            x = jax.random.normal(key, (n,))
            return jnp.where(x.sum() > 0, x, -x)

        def chatty(key, n):
            x = jax.random.normal(key, (n,))
            print(float(x.sum()))
            return x

        def sweep(n_seeds):
            a, b, c = [], [], []
            for seed in range(n_seeds):
                a.append(branchy(jax.random.key(seed), 100))
            for seed in range(n_seeds):
                b.append(clean(jax.random.key(seed), 100))
            for seed in range(n_seeds):
                c.append(chatty(jax.random.key(seed), 100))
            return a, b, c
    """
    assert [f.line for f in scan_text(source, [LoopToVmap])] == [23]


def test_a_sweep_binding_each_setting_with_partial_is_a_vmap_candidate_when_the_setting_is_not_a_shape():
    source = """
        from functools import partial
        import jax
        import jax.numpy as jnp
        import numpy as np

        SCALES = np.linspace(0.1, 2.0, 24)

        def nll(x, y, scale):
            return jnp.mean((y - jnp.exp(-x / scale)) ** 2)

        def padded(x, width):
            return jnp.zeros(width).at[: x.shape[0]].set(x).sum()

        def sweep(x, y, widths):
            scores, sums = [], []
            for scale in SCALES:
                objective = jax.jit(partial(nll, scale=scale))
                scores.append(objective(x, y))
            for width in np.arange(8, 64):
                total = jax.jit(partial(padded, width=width))
                sums.append(total(x))
            return scores, sums
    """
    found = scan_text(source, [LoopToVmap])
    assert [f.line for f in found] == [16]
    assert "`nll` with `scale` from the item" in found[0].message
