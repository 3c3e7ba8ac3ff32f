"""JAX301 host-sync-in-step on shapes seen in real training, evaluation and benchmark code: each
near miss stays quiet and its positive twin is reported."""

from __future__ import annotations

from jaxopt_audit.rules.jax301_host_sync_in_step import HostSyncInStep

from conftest import scan_text


def lines(source: str) -> list[int]:
    return [f.line for f in scan_text(source, [HostSyncInStep])]


TRAIN_STEP = """
import jax
import jax.numpy as jnp
from tqdm import tqdm
from rich.progress import track

@jax.jit
def train_step(w, x):
    loss = jnp.mean((x @ w) ** 2)
    return w - 0.1 * loss * w, loss
"""


def test_periodic_guard_under_a_progress_bar_or_a_zipped_range_is_recognised():
    assert lines(TRAIN_STEP + """
def train(w, x, loader, steps):
    for step in tqdm(range(steps)):
        w, loss = train_step(w, x)
        if step % 100 == 0:
            print(float(loss))
    for step in track(range(steps), description="training"):
        w, loss = train_step(w, x)
        if step % 100 == 0:
            print(loss.item())
    for i, batch in zip(range(steps), loader):
        w, loss = train_step(w, batch)
        if i % 100 == 0:
            print(float(loss))
    for i, batch in tqdm(enumerate(loader)):
        w, loss = train_step(w, batch)
        if i % 100 == 0:
            print(float(loss))
    for step in tqdm(range(steps)):
        w, loss = train_step(w, x)
        print(float(loss))
    return w
""") == [30]


def test_a_range_maker_chosen_between_a_progress_bar_and_range_counts_steps():
    # `range_fn = partial(trange, desc=...)` or `range` by a flag, then
    # `for global_step in range_fn(1, n):` with the logging under `global_step % eval_freq == 0`
    source = TRAIN_STEP + """
from functools import partial
from tqdm import trange

def train(w, x, steps, bar, every):
    if bar:
        range_fn = partial(trange, desc="steps")
    else:
        range_fn = {other}
    for global_step in range_fn(1, steps + 1):
        w, loss = train_step(w, x)
        if global_step % every == 0:
            print(loss.item())
    return w
"""
    assert lines(source.replace("{other}", "range")) == []
    assert lines(source.replace("{other}", "make_schedule")) == [22]  # not known to give indices


def test_a_dataclass_field_does_not_shadow_the_imported_progress_bar():
    assert lines(TRAIN_STEP + """
from dataclasses import dataclass

@dataclass
class Args:
    track: bool = False

def train(w, x, steps):
    for step in track(range(steps)):
        w, loss = train_step(w, x)
        if step % 100 == 0:
            print(float(loss))
    return w
""") == []


def test_messages_of_raise_and_assert_are_formatted_only_on_failure():
    assert lines(TRAIN_STEP + """
def train(w, x, steps):
    for step in range(steps):
        w, loss = train_step(w, x)
        assert w.ndim == 2, f"bad weights {w}"
        if step > steps:
            raise ValueError(f"diverged at {loss}")
        print(f"loss {loss}")
    return w
""") == [17]


def test_benchmark_loops_that_wait_for_a_result_they_throw_away_are_measurements():
    assert lines(TRAIN_STEP + """
def bench(w, x, state, pair):
    train_step(w, x)[0].block_until_ready()
    while state:
        train_step(w, x)[0].block_until_ready()
    while state:
        jax.block_until_ready([train_step(w, x) for _ in range(10)])
    while state:
        c, d = pair(w, x)
        c.block_until_ready()

def train(w, x, steps):
    for step in range(steps):
        w, loss = train_step(w, x)
        w.block_until_ready()
    return w
""") == [24]


def test_all_of_a_device_array_in_a_loop_test_is_a_sync():
    # `all()` iterates the array and converts each element with bool(): a sync every generation
    assert lines(TRAIN_STEP + """
def evolve(w, x, generations):
    for generation in range(generations):
        w, loss = train_step(w, x)
        if not all(jnp.all(jnp.isfinite(w), axis=1)):
            break
        if any(v > 0 for v in jnp.ravel(w)):
            w = -w
    return w
""") == [14, 16]


def test_dict_keys_host_annotated_parameters_and_bool_helpers_are_not_device_values():
    assert lines(TRAIN_STEP + """
def all_arrays(tree) -> bool:
    return jax.tree_util.tree_all(jax.tree.map(lambda t: isinstance(t, jnp.ndarray), tree))

def describe(shape: tuple[int, ...], w):
    if not shape:
        return "scalar"
    return str(shape)

def train(params, x, steps):
    for step in range(steps):
        params, loss = train_step(params, x)
        if all_arrays(params):
            describe(params.shape, params)
        for name, value in {"loss": loss}.items():
            print(f"{name}")
    return params
""") == []


def test_few_literal_iterations_are_reported_discarded_fetches_and_process_ids_are_not():
    assert lines(TRAIN_STEP + """
def demo(w, x, state, variants):
    for i in range(3):  # three calls, three reads: a small cost, but what the code does
        w, loss = train_step(w, x)
        print(f"after {i + 1} calls: {loss}")
    for a in [w, 2 * w]:
        for b in [w, 2 * w]:
            print(jnp.max(jnp.abs(a - b)))
    while state:
        jax.device_get(train_step(w, x))  # the benchmark measures the fetch itself
    return w

def train(w, x, steps):
    for step in range(steps):
        w, loss = train_step(w, x)
        if jax.host_id() == 0:
            print(f"host {jax.host_id()}")
        print(float(loss))
    return w
""") == [14, 27]


def test_a_test_on_an_attribute_or_method_of_an_array_holder_is_not_a_sync():
    # `layer.is_stateful()` is a Python fact about an object that holds arrays; the tested
    # `jnp.any(...)` is what waits for the device. A loop over layers is structure, not steps.
    assert lines(TRAIN_STEP + """
def train(w, batches, layer):
    for batch in batches:
        w, loss = train_step(w, batch)
        if layer.is_stateful() and layer.primitive.multiple_results:
            w = w * 2
        if jnp.any(loss > 5.0):
            w = w / 2
    return w

def forward(layers, x, key):
    keys = jax.random.split(key, len(layers))
    for layer, k in zip(layers, keys):
        x = layer(x, k)
        if jnp.any(x > 5.0):
            x = x / 2
    return x
""") == [16]


def test_a_read_per_iteration_of_a_compiled_multi_step_program_is_amortised():
    # each iteration runs a jitted rollout of 128 unrolled steps: one log read per rollout is fine
    assert lines(TRAIN_STEP + """
@jax.jit
def rollout(w, x):
    for _ in range(128):
        w, loss = train_step(w, x)
    return w, loss

def train(w, x, iterations):
    for it in range(iterations):
        w, loss = rollout(w, x)
        print("loss", loss.item())
    return w
""") == []


def test_the_index_of_enumerate_and_python_columns_of_zip_are_not_arrays():
    # saving one file per vmapped seed: `i` counts, the f-string holds only Python values
    assert lines(TRAIN_STEP + """
def save_all(w, x, names):
    keys = jnp.stack([x, x])
    for i, key in enumerate(keys):
        w, loss = train_step(w, x)
        open(f"run_{i}.bin", "wb")
    for name, row in zip(names, keys):
        w, loss = train_step(w, x)
        open(f"run_{name}.bin", "wb")
    for i, row in enumerate(keys):
        w, loss = train_step(w, row)
        print(f"{row}")
""") == [21]


def test_a_loop_paced_by_a_person_or_a_viewer_is_not_a_hot_loop():
    # an interactive game waits for input(); a viewer renders and sleeps: a read per turn is free
    assert lines(TRAIN_STEP + """
def play(w, x, env):
    done = False
    while not done:
        action = int(input("move? "))
        w, loss = train_step(w, x * action)
        print(f"loss {loss}")
        done = bool(loss < 0.1)

def watch(w, x, env):
    for t in range(1000):
        w, loss = train_step(w, x)
        env.render()
        print(float(loss))

def train(w, x):
    for t in range(1000):
        w, loss = train_step(w, x)
        print(float(loss))
""") == [28]


def test_a_read_the_host_needs_or_a_display_function_makes_is_not_reported():
    # a host environment steps on the actions; a render helper formats values for a person
    assert lines(TRAIN_STEP + """
def render_state(w):
    return f"weights {w}"

def rollout(w, x, env, policy):
    for t in range(1000):
        w, loss = train_step(w, x)
        actions = jax.device_get(policy(w))
        x = env.step(actions)
        render_state(w)

def train(w, x):
    for t in range(1000):
        w, loss = train_step(w, x)
        history = jax.device_get(loss)
""") == [24]


def test_a_string_method_reads_a_dict_key_not_a_device_value():
    # iterating a dict of metrics gives its keys; `key.startswith(...)` is Python on a string
    assert lines("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(x):
            return x * 0.5, {"loss_main": jnp.sum(x), "grad_norm": jnp.linalg.norm(x)}

        def train(x, n, totals):
            for _ in range(n):
                x, info = step(x)
                for key in info:
                    if key.startswith("loss_"):
                        totals[key] = totals.get(key, 0.0) + info[key]
                if jnp.any(jnp.isnan(x)):  # <- JAX301
                    break
            return x
    """) == [14]


def test_a_value_the_if_above_already_read_is_reported_once():
    # the test waits for `n_bad` (reported); printing it in the branch adds no second stall
    assert lines("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(x):
            return x * 0.5, jnp.sum(jnp.isnan(x))

        def train(x, n):
            for _ in range(n):
                x, n_bad = step(x)
                if n_bad > 0:  # <- JAX301
                    print(f"{n_bad} bad values")
                print(f"norm {jnp.linalg.norm(x)}")  # <- JAX301: a read of its own
            return x
    """) == [11, 13]


def test_a_step_counted_through_a_named_range_makes_its_guard_periodic():
    # `steps = range(n)`, wrapped in a progress bar only when asked, then `for step in steps:`
    source = """
        import jax
        import jax.numpy as jnp
        import tqdm

        @jax.jit
        def update(w, x):
            return w - 0.1 * x, jnp.mean(x)

        def train(w, xs, n, log_every, verbose):
            steps = {steps}
            if verbose:
                steps = tqdm.tqdm(steps)
            for step in steps:
                w, loss = update(w, xs)
                if (log_every > 0) and (step % log_every == 0):
                    print(float(loss))
            return w
    """
    assert lines(source.replace("{steps}", "range(n)")) == []
    # the same guard on a loop over data: `step` is a batch, so the test is not by iteration count
    assert lines(source.replace("{steps}", "iter(xs)")) == [16]


def test_a_while_loop_that_leaves_on_a_device_value_waits_by_design():
    # `while not done:` of an evaluation episode, `while llast > lmin:` and
    # `while abs(old_e - e) > tol:` of iterative solvers. The loop must learn the value every
    # iteration to know whether to go on; the fix is `lax.while_loop`, not fewer reads.
    source = TRAIN_STEP + """
def solve(w, x, tol):
    gap = jnp.inf
    while {test}:
        w, gap = train_step(w, x)
        print(f"gap {gap}")
    return w
"""
    assert lines(source.replace("{test}", "gap > tol")) == []
    assert lines(source.replace("{test}", "not bool(jnp.isnan(gap))")) == [13, 15]  # a divergence guard


def test_a_python_int_unpacked_from_a_helpers_tuple_is_not_a_device_value():
    # `state, step = restore(state)` where the helper returns (arrays, the checkpoint's int step):
    # `while step < n` compares Python ints, while the state is a device value
    source = """
        import pickle
        import jax
        import jax.numpy as jnp

        @jax.jit
        def update(state, x):
            return state - 0.1 * x

        def restore(state):
            saved = pickle.load(open("ckpt.pkl", "rb"))
            return jnp.asarray(saved.params) + state, {second}

        def train(state, xs, n):
            state, step = restore(state)
            while step < n:
                state = update(state, xs)
                step += 1
            return state
    """
    assert lines(source.replace("{second}", "saved.step")) == []
    # the helper hands back a device value in that place: the loop test waits for the device
    assert lines(source.replace("{second}", "jnp.asarray(saved.step)")) == [15]


def test_an_array_already_brought_to_the_host_in_the_iteration_is_reported_once():
    # `float(loss)` copies `loss` and the array keeps the host copy: the f-string reads that.
    # `float(acc)`, another output of the same compiled step, is ready by then (a transfer, no
    # second stall); `float(evaluate(w))` waits for another call
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(w, x):
            return w - 0.1 * x, jnp.mean(x), jnp.max(x)

        @jax.jit
        def evaluate(w):
            return jnp.sum(w)

        def train(w, xs):
            for x in xs:
                w, loss, acc = step(w, x)
                {first}
                history = [float(acc)]
                print(f"loss {loss:.3f}")
                score = float(evaluate(w))
            return w
    """
    assert lines(source.replace("{first}", "value = float(loss)")) == [15, 18]
    # the first copy made only on some iterations: `float(acc)` is then the first unconditional
    # wait for the step, and the f-string of `loss` after it finds the step done
    assert lines(source.replace("{first}", "if x.ndim:\n                    value = float(loss)")) \
        == [16, 17, 19]


def test_a_loop_that_leaves_on_a_device_value_waits_every_step_by_design():
    """A decode loop stops at the end-of-sequence token, a batched sampler when every row is
    done, a solver when it has converged: each iteration must learn a device value to know
    whether to go on, so its reads (the test itself, printing the token) add no stall; the fix
    would be `lax.while_loop` around the whole loop. A training loop that only logs its loss
    every step is still reported."""
    source = """
import jax
import jax.numpy as jnp

@jax.jit
def next_logits(params, tokens):
    return tokens[:, -1:] @ params

@jax.jit
def advance(state):
    return state * 0.5, state < 0.1

def decode(params, tokens, eos, max_len):
    for i in range(max_len):
        token = jnp.argmax(next_logits(params, tokens)[:, -1], axis=-1)
        print(token)
        if token[0] == eos:
            break
        tokens = jnp.concatenate([tokens, token[:, None]], axis=1)
    return tokens

def sample(state, steps):
    for i in range(steps):
        state, done = advance(state)
        if jnp.all(done):
            break
    return state

def solve(state, tol, steps):
    for i in range(steps):
        state, done = advance(state)
        if float(jnp.max(state)) < tol:
            break
    return state

def train(state, steps):
    for i in range(steps):
        state, done = advance(state)
        print(float(state.sum()))
    return state
"""
    assert lines(source) == [38]


def test_reads_after_a_deliberate_wait_in_the_iteration_add_no_stall():
    """The loop times each step, so it waits for the step's loss every iteration on purpose;
    printing that step's outputs afterwards stalls for nothing more. Without the timed wait the
    print is the loop's stall and is reported."""
    source = TRAIN_STEP + """
import time

def train(w, x, steps):
    for step in range(steps):
        start = time.perf_counter()
        w, loss = train_step(w, x)
        out = {"loss": loss, "w": w}
        out["loss"].block_until_ready()
        elapsed = time.perf_counter() - start
        print(f"{step}: loss {out['loss']:.3f} norm {jnp.linalg.norm(w):.3f} in {elapsed:.2f}s")
    return w
"""
    assert lines(source) == []
    assert lines(source.replace('        out["loss"].block_until_ready()\n', "")) == [19]


def test_with_debug_nans_on_every_jitted_call_already_waits():
    """`jax_debug_nans` makes each jitted call check its outputs, so it returns only once they
    are computed: a read of the loss afterwards stalls for nothing."""
    source = TRAIN_STEP + """
from jax.config import config
config.update("jax_debug_nans", True)

def train(w, x, steps):
    for step in range(steps):
        w, loss = train_step(w, x)
        print(float(loss))
    return w
"""
    assert lines(source) == []
    assert lines(source.replace('config.update("jax_debug_nans", True)', "")) == [17]


def test_what_a_host_environment_returns_is_a_host_value():
    """`obs, reward, done, info = env.step(np.array(action))`: a method of another library's
    object given a value pulled to the host returns host values, so uses of `done` look at the
    binding that reaches them (a rollout's `if not done[i]` after the env step)."""
    import libcst as cst

    from jaxopt_audit.static.model import SemanticModel
    source = TRAIN_STEP + """
import numpy as np

def rollout(w, env, obs):
    for step in range(1000):
        done = jnp.zeros(3) > 1
        w, action = train_step(w, obs)
        obs, reward, done, info = env.step(np.array(action))
        flags = train_step(w, np.array(action))
    return done, flags
"""
    model = SemanticModel(cst.parse_module(source), "x.py", "")
    rollout = next(f for f in model.functions if f.name == "rollout")
    assert {"obs", "reward", "done", "info"} <= rollout.host_names
    assert "flags" not in rollout.host_names  # a function of this module: it may return arrays


def test_one_string_written_over_several_lines_is_one_finding():
    # A progress line built from three implicitly concatenated f-strings, each with an
    # array, read the device once and was reported three times.
    assert lines(TRAIN_STEP + """
def train(w, x, steps):
    for step in range(steps):
        w, loss = train_step(w, x)
        norm = jnp.linalg.norm(w)
        tqdm.write(
            f"step {step:4d} | "
            f"loss {loss:8.4f} | "
            f"norm {norm:8.4f}"
        )
    return w
""") == [17]



def test_a_token_handed_on_under_another_name_is_still_the_next_input():
    # Speculative decoding reads a drafted token (`t4 = int(jnp.argmax(...))`) and
    # hands it on (`draft = t4`), and the next iteration builds its input from `draft`. That
    # read is needed and waits for the step, so the loss read after it adds no stall (see
    # test_a_read_the_loop_needs_is_a_wait_and_later_reads_add_no_stall); the read before it
    # is the stall.
    assert lines(TRAIN_STEP + """
def decode(w, draft, steps):
    ids = []
    for _ in range(steps):
        w, loss = train_step(w, jnp.array([[draft]]))
        ids.append(float(jnp.sum(w)))
        nxt = int(jnp.argmax(w))
        ids.append(nxt)
        draft = nxt
        ids.append(float(loss))
    return ids
""") == [15]


def test_a_guard_on_a_step_number_computed_from_the_counter_is_periodic():
    # `step = update + 1`, then `if step % log_every == 0:` around the float() reads;
    # the guard selects iterations like `update % k` would. A read outside it is reported.
    assert lines(TRAIN_STEP + """
def train(w, x, n_updates, log_every):
    for update in range(n_updates):
        w, loss = train_step(w, x)
        step = update + 1
        if step % log_every == 0:
            print(f"update {step} | loss {float(loss):.4f}")
        global_step = update * 4 + 2
        if global_step % 100 == 0:
            print(float(jnp.mean(w)))
        scale = float(loss)
    return w
""") == [20]


def test_an_accept_or_reject_step_needs_its_answer_every_step():
    # A step is proposed, kept only if the loss went down, and the learning rate grows
    # or shrinks accordingly: the `if` decides the next iteration's state. A NaN guard is not
    # such a decision and is still reported.
    assert lines(TRAIN_STEP + """
def fit(w, x, steps, lr):
    for epoch in range(steps):
        w_new, loss = train_step(w, x)
        if jnp.mean((x @ w_new) ** 2) < loss:
            w = w_new
            lr = lr * 1.1
        else:
            lr = lr * 0.5
        if jnp.isnan(loss):
            w = w_new * 0.0
    return w
""") == [19]


def test_a_second_output_of_the_same_compiled_call_is_ready_once_one_is_read():
    # `float(loss)` waits for the step; `peak.item()` from the same jitted call then
    # finds its value ready. Outputs of two different calls are two waits, and so is a new
    # computation on an output (`w.sum()`).
    assert lines(TRAIN_STEP + """
@jax.jit
def evaluate(w, x):
    return jnp.mean(x @ w), jnp.max(x @ w)

def train(w, x, steps, history):
    for step in range(steps):
        w, loss = train_step(w, x)
        history.append(float(loss))
        history.append(w.sum().item())
        mean, peak = evaluate(w, x)
        history.append(float(mean))
        history.append(peak.item())
    return w
""") == [18, 19, 21]


def test_a_flag_the_loop_computes_from_its_counter_is_a_periodic_guard():
    # `show = epoch % print_every == 0 or epoch == last`, then `if show:` around the
    # prints of the epoch's metrics. A flag bound to anything else (a device comparison) is not
    # a selection of iterations, nor is one computed from the data the counter picks: the test,
    # the reads under them are reported.
    assert lines(TRAIN_STEP + """
def train(w, x, epochs, print_every):
    for epoch in range(epochs):
        show = epoch % print_every == 0 or epoch == epochs - 1
        w, loss = train_step(w, x)
        if show:
            print(f"epoch {epoch} loss {float(loss)}")
        worse = loss > 1.0
        if worse:
            print(float(loss))
        short = x[epoch].shape[0] < 8
        if short:
            print(float(jnp.sum(w)))
    return w
""") == [18, 19, 22]


def test_reads_with_no_new_device_work_between_them_are_one_stall_reported_once():
    # An un-jitted PPO minibatch step reads its loss and four aux outputs with five
    # `np.array(...)` in a row. The first waits for the queued step; the rest wait for no new
    # work. One finding, at the first read, naming the others. A call that puts new work on the
    # device between two reads (`jnp.mean(w)`, a compiled step) makes the second a stall again.
    source = """
import jax
import jax.numpy as jnp
import numpy as np

def loss_fn(w, x):
    err = (x @ w) ** 2
    return jnp.mean(err), (jnp.max(err), jnp.min(err))

@jax.jit
def update(w, g):
    return w - 0.1 * g

def train(w, x, steps, log):
    for step in range(steps):
        (loss, (worst, best)), g = jax.value_and_grad(loss_fn, has_aux=True)(w, x)
        w = update(w, g)
        log.append(np.array(loss))
        log.append(np.array(worst))
        log.append(np.array(best))
    return w

def train_and_measure(w, x, steps, log):
    for step in range(steps):
        (loss, (worst, best)), g = jax.value_and_grad(loss_fn, has_aux=True)(w, x)
        w = update(w, g)
        log.append(np.array(loss))
        spread = jnp.std(w)
        log.append(np.array(worst))
        log.append(np.array(spread))
    return w
"""
    found = scan_text(source, [HostSyncInStep])
    assert [f.line for f in found] == [17, 26, 28]
    assert "the 2 reads right after it" in found[0].message
    assert "right after it" not in found[1].message


def test_a_step_made_by_a_factory_that_returns_a_jitted_function_is_compiled():
    # `train_step = make_train_step(optimizer)`, where the factory ends in
    # `return jax.jit(_train_step)` (or returns a nested `@jax.jit` function), and the metrics
    # read with `float(metrics[k])` in a walk over a dict of totals after every step. The walk
    # runs every step: its reads are per-step reads.
    found = lines("""
import jax
import jax.numpy as jnp

def make_train_step(lr):
    def _step(w, x):
        loss = jnp.mean((x @ w) ** 2)
        return w - lr * loss * w, {"loss": loss, "norm": jnp.sum(w)}
    return jax.jit(_step)

def make_eval_step():
    @jax.jit
    def evaluate(w, x):
        return jnp.mean(x @ w)
    return evaluate

def train(w, batches, epochs):
    train_step = make_train_step(0.1)
    evaluate = make_eval_step()
    for epoch in range(epochs):
        totals = {"loss": 0.0, "norm": 0.0}
        for x in batches:
            w, metrics = train_step(w, x)
            for k in totals:
                totals[k] += float(metrics[k])
            w = w * evaluate(w, x)
            print(evaluate(w, x))
    return w
""")
    assert found == [24, 26]


def test_a_library_scan_handed_a_step_function_makes_each_iteration_a_whole_epoch():
    # An epoch function, jitted, hands its step to `loader.scan_epoch(state, carry,
    # step)`: each outer iteration runs a compiled epoch, and one read per epoch is amortised.
    # Without the scan (the step called once per iteration) the read is per step.
    assert lines("""
import jax
import jax.numpy as jnp

def update_step(carry, batch):
    w = carry - 0.1 * jnp.mean(batch) * carry
    return w, jnp.sum(w)

def make_epoch_fn(loader):
    @jax.jit
    def epoch_fn(w, state):
        state, w, losses = loader.scan_epoch(state, w, update_step)
        return w, state, losses
    return epoch_fn

def make_one_step():
    @jax.jit
    def one_step(w, batch):
        return update_step(w, batch)
    return one_step

def train(w, loader, state, batch, epochs):
    epoch_fn = make_epoch_fn(loader)
    one_step = make_one_step()
    for epoch in range(epochs):
        w, state, losses = epoch_fn(w, state)
        print(float(jnp.mean(losses)))
    for step in range(epochs):
        w, loss = one_step(w, batch)
        print(float(loss))
    return w
""") == [29]


def test_state_kept_in_an_attribute_and_fed_back_makes_a_step_loop():
    # A trainer keeps its parameters in a handler object,
    # `handler.params, (outs, mets) = train(handler.params, batch)`, and reads the metrics
    # back every step. An attribute read by a compiled call and rebound from its result is
    # carried state as a name is. An attribute only read (configuration) is not.
    assert lines(TRAIN_STEP + """
class Trainer:
    def __init__(self, w, lr):
        self.w = w
        self.lr = lr

    def fit(self, batches):
        for x in batches:
            self.w, loss = train_step(self.w, x)
            print(float(loss))

def run(handler, batches):
    for x in batches:
        handler.w, loss = train_step(handler.w, x)
        print(float(loss))

def score(handler, batches):
    for x in batches:
        w, loss = train_step(handler.w, x)
        print(float(loss))
""") == [19, 24]


def test_a_read_the_loop_needs_is_a_wait_and_later_reads_add_no_stall():
    # A decode loop reads the next token with `int(jnp.argmax(...))` (the host picks
    # the next input, so that read is needed and unreported), then reads the same step's other
    # output. The needed read already waited for the step: the later read adds no stall. Without
    # the needed read, the later read is the stall and is reported.
    source = TRAIN_STEP + """
def generate(w, steps, log):
    tok = 0
    for _ in range(steps):
        w, loss = train_step(w, jnp.array([[tok]]))
        tok = int(jnp.argmax(w))
        log.append(float(loss))
    return tok
"""
    assert lines(source) == []
    assert lines(source.replace("        tok = int(jnp.argmax(w))\n", "")) == [15]


def test_a_read_between_two_timer_readings_of_one_iteration_is_the_steps_wait():
    # Benchmark scripts time each step (`t0 = time()`, the step, a progress bar's
    # f-string of the losses, `t_total += time() - t0`); the read makes the step time right.
    source = TRAIN_STEP + """
import time

def train(w, x, steps, bar):
    total = 0.0
    for it in range(steps):
        t0 = time.time()
        w, loss = train_step(w, x)
        bar.set_postfix_str(f"loss={loss:.3e}")
        {end}
    return w, total
"""
    assert lines(source.replace("{end}", "total += time.time() - t0")) == []
    assert lines(source.replace("{end}", "total += 1.0")) == [18]


def test_a_read_per_minibatch_inside_a_timed_epoch_is_still_reported():
    # `float(loss)` every minibatch of an epoch timed as a whole: only
    # the last read waits for the measurement; the others stall the loop.
    assert lines(TRAIN_STEP + """
import time

def train(w, batches, epochs):
    for epoch in range(epochs):
        t0 = time.time()
        total = 0.0
        for x in batches:
            w, loss = train_step(w, x)
            total += float(loss)
        print(epoch, total, time.time() - t0)
    return w
""") == [19]


def test_a_step_function_given_the_step_number_reads_under_its_own_periodic_guard():
    # A notebook's `gradient_step(i, state)` prints the loss under `if (i % 10) == 0`,
    # with `i` the caller's loop counter: every tenth call, not every step.
    source = TRAIN_STEP + """
def gradient_step(i, w, x, verbose):
    w, loss = train_step(w, x)
    if {guard}:
        print("iter", i, float(loss))
    return w

w, x = jnp.ones((4, 4)), jnp.ones((8, 4))
for j in range(100):
    w = gradient_step(j, w, x, True)
"""
    assert lines(source.replace("{guard}", "(i % 10) == 0")) == []
    assert lines(source.replace("{guard}", "verbose")) == [14]


def test_code_switched_off_with_if_false_never_runs():
    # A sampler's evaluation print kept under `if False:` (the periodic test commented
    # out above it). The `else:` of `if True:` never runs either; `if 0: ... else:` does.
    assert lines(TRAIN_STEP + """
def train(w, x, steps):
    for step in range(steps):
        w, loss = train_step(w, x)
        if False:
            print(f"step {step}: loss {loss:.3f}")
        if True:
            pass
        else:
            print(float(loss))
    for step in range(steps):
        w, loss = train_step(w, x)
        if 0:
            pass
        else:
            print(float(loss))
    return w
""") == [25]


def test_a_stop_on_a_value_read_to_the_host_needs_the_read_every_step():
    # Adam loops append `float(loss)` to a history and break when the gain between
    # the last two entries falls below a tolerance, or test `lf = float(l)` against one. The
    # loop must learn the value every iteration; only `lax.while_loop` would change that. A
    # stop on the history's length counts steps, and the read it follows is reported.
    assert lines(TRAIN_STEP + """
def fit(w, x, n, tol):
    history = []
    for t in range(n):
        w, loss = train_step(w, x)
        history.append(float(loss))
        if t > 1:
            gain = abs(history[-2] - history[-1])
            if gain < tol:
                break
    for t in range(n):
        w, loss = train_step(w, x)
        lf = float(loss)
        if lf < tol:
            break
    history = []
    for t in range(n):
        w, loss = train_step(w, x)
        history.append(float(loss))
        if len(history) > 100:
            break
    return w
""") == [28]


def test_a_read_in_a_helper_is_reported_at_the_read_and_names_the_loop_that_calls_it():
    found = scan_text(TRAIN_STEP + """
def log_progress(w):
    print("norm", float(jnp.linalg.norm(w)))

def train(w, x, steps):
    for step in range(steps):
        w, loss = train_step(w, x)
        log_progress(w)
    return w
""", [HostSyncInStep])
    assert [f.line for f in found] == [12]
    assert "each time `log_progress` runs, and the loop at line 15 calls it" in found[0].message


def test_a_growing_list_of_device_values_read_whole_every_iteration_is_quadratic_traffic():
    found = scan_text(TRAIN_STEP + """
def train(w, x, steps):
    losses = []
    for step in range(steps):
        w, loss = train_step(w, x)
        losses.append(loss)
        curve = jax.device_get(losses)
        recent = jnp.stack(losses[-10:])
    return w, curve, recent

def quiet(w, x, steps):
    losses = []
    for step in range(steps):
        w, loss = train_step(w, x)
        losses.append(loss)
        batch = []
        batch.append(loss)
        print(len(jax.device_get(batch)))
    return w, jax.device_get(losses)
""", [HostSyncInStep])
    assert [f.line for f in found] == [16]
    assert "all of `losses`" in found[0].message and "square of the iteration count" in found[0].message


def test_in_a_helper_a_second_read_of_the_same_parameter_uses_the_host_copy():
    found = scan_text(TRAIN_STEP + """
class Trainer:
    def log(self, step, loss):
        self.history.append(loss.item())
        print(f"step {step}: loss {loss}")

    def fit(self, w, xs):
        for step, x in enumerate(xs):
            w, loss = train_step(w, x)
            self.log(step, loss)
        return w
""", [HostSyncInStep])
    assert [f.line for f in found] == [13]


# Training written without jit: the gradient step and the loss run op by op from Python.
EAGER_TRAINING = """
import jax
import jax.numpy as jnp
EXTRA

def loss_of(params, x):
    return jnp.mean((x @ params["w"] + params["b"]) ** 2)

DECORATOR
def update(params, x):
    grads = jax.grad(loss_of)(params, x)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)

def train(params, batches):
    losses = []
    for x in batches:
        loss = loss_of(params, x)
        print(f"loss {loss}")
        params = update(params, x)
        losses.append(loss)
    return params, losses
"""


def _eager_training(extra: str = "", decorator: str = "") -> str:
    return EAGER_TRAINING.replace("EXTRA", extra).replace("DECORATOR", decorator)


def test_a_read_in_a_loop_that_compiles_nothing_is_left_to_the_missing_jit():
    # the print waits for the last eager op queued before it, not for a compiled step
    assert lines(_eager_training()) == []
    # with the step jitted, the print stalls the loop until the device finishes that step
    assert lines(_eager_training(decorator="@jax.jit")) == [17]
    # a step that calls a method the file cannot see into may run compiled code: still reported
    opaque = _eager_training(extra="from mylib import Trainer\ntrainer = Trainer()").replace(
        "return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)",
        "return trainer.apply_gradients(params, grads)")
    assert lines(opaque) == [18]


# A device test inside a loop over the hits of a query, whose body ends in `return`.
FIRST_HIT = """
import jax.numpy as jnp

from geometry import wrap_angle

class Tracker:
    def passed(self, pos, others):
        dist = jnp.sqrt(jnp.sum((others[:, :2] - pos[:2]) ** 2, axis=-1))
        hits = jnp.where(dist < 3.0)[0]
        if hits.size == 0:
            return False
        for idx in hits:
            heading = wrap_angle(jnp.arctan2(others[idx, 1] - pos[1], others[idx, 0] - pos[0]) - pos[2])
            angle = jnp.rad2deg(heading)
            done = False
            if -90.0 <= angle <= 90.0:
                self.ahead[idx] = 1
            elif self.ahead[idx] and dist[idx] > 1.2:
                self.ahead[idx] = 0
                done = True
            LEAVE
"""


def test_a_read_in_a_loop_whose_body_always_returns_runs_once_per_call():
    assert lines(FIRST_HIT.replace("LEAVE", "return done")) == []
    assert lines(FIRST_HIT.replace("LEAVE", "break")) == []
    # a `continue` can skip the return, and a body that does not end by leaving runs per hit
    skipped = "if idx == 0:\n                continue\n            return done"
    assert lines(FIRST_HIT.replace("LEAVE", skipped)) == [15, 17, 20]
    assert lines(FIRST_HIT.replace("LEAVE", "self.count += 1")) == [15, 17]


# A fit whose every epoch is one jitted gradient step over the whole point set, its loss printed.
WHOLE_SET_EPOCHS = """
import jax
import jax.numpy as jnp

@jax.jit
def step(params, points):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((points @ p["w"] - 1.0) ** 2))(params)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss

@jax.jit
def shrink(params, points):
    return {"w": params["w"] * 0.5}, jnp.sum(params["w"])

def fit(params, points):
    for epoch in range(5000):
        params, loss = CALLED(params, points)
        print("epoch", epoch, "loss", loss)
    return params
"""


def test_a_read_behind_one_large_compiled_step_ranks_medium_whatever_the_count():
    found = [f for f in scan_text(WHOLE_SET_EPOCHS.replace("CALLED", "step"), [HostSyncInStep])]
    assert [f.line for f in found] == [16]
    assert found[0].impact.level == "medium" and found[0].impact.runs == 5000
    assert "not shown to be small" in found[0].impact.why
    # behind a step of a couple of array operations the stall is much of each iteration: high
    small = [f for f in scan_text(WHOLE_SET_EPOCHS.replace("CALLED", "shrink"), [HostSyncInStep])]
    assert [(f.line, f.impact.level) for f in small] == [(16, "high")]
