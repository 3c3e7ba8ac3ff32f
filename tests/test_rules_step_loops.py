"""JAX101/JAX201/JAX202 on the shapes of real code: a loop is a step loop dispatched from Python
only when the model can show it, and a function whose job is host work is not a jit candidate.
Each near miss below is written after a false positive seen in public JAX code; each has a
positive twin so the rule is not simply off."""

from __future__ import annotations

import libcst as cst

from jaxopt_audit.static import SemanticModel, describe

from conftest import scan_text


def found(source, rules, code):
    return sorted(f.line for f in scan_text(source, rules) if f.code == code)


def test_a_plotting_helper_called_per_step_is_host_work(all_rules):
    source = """
        import jax
        import jax.numpy as jnp
        import matplotlib.pyplot as plt
        import numpy as np

        def draw(ax, traj):
            dx = traj[1:] - traj[:-1]
            ax.quiver(traj[:-1, 0], traj[:-1, 1], dx[:, 0], dx[:, 1])

        def label(tree, i):
            return f"value {tree[i] * 2.0:.2f} visits {tree[i] + 1}"

        def summary(x):
            m = jnp.mean(x, axis=0)
            return np.asarray(m / jnp.max(jnp.abs(x)))

        def smooth(x):
            y = jnp.convolve(x, jnp.ones(5) / 5.0)
            return jnp.tanh(y - jnp.mean(y))

        fig, ax = plt.subplots()
        history = []
        traj = jnp.zeros((100, 2))
        for step in range(500):
            traj = traj + 0.1
            traj = smooth(traj)
            print(label(traj, step))
            history.append(summary(traj))
            if step % 100 == 0:
                draw(ax, traj)
    """
    # `smooth` is device work called every step: the twin that must still be reported
    assert found(source, all_rules, "JAX101") == [17]


def test_loops_over_structure_and_settings_are_not_step_loops(all_rules):
    source = """
        import jax.numpy as jnp

        def normalize(i, n):
            j = jnp.asarray(i)
            return jnp.where(j < 0, j + n, j) * 1

        def gather(x, idx):
            out = []
            for axis, i in zip(range(x.ndim), x.shape):
                out.append(normalize(i, axis))
            for k, v in {"a": 1, "b": 2}.items():
                out.append(normalize(v, k))
            return out

        def sweep(x):
            out = []
            for width in [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]:
                out.append(normalize(x[:width], width))
            return out

        class Evaluator:
            def __init__(self, shots):
                self.shots = shots

            def run(self, x):
                return [normalize(x[:shots], shots) for shots in self.shots]

            def run_loop(self, x):
                results = {}
                for shots in self.shots:
                    results[shots] = normalize(x[:shots], shots)
                return results

        x = jnp.ones(10)
        for step in range(1000):
            x = normalize(x, 3)
    """
    assert found(source, all_rules, "JAX101") == [3]


def test_a_library_helper_loop_with_no_sign_of_steps_is_silent(all_rules):
    """`for k in range(n)` in a library function that users jit: the file cannot show that it
    runs eagerly, nor that `n` counts steps rather than dimensions or agents."""
    source = """
        import jax.numpy as jnp

        def rotate(a, b, c, s):
            return c * a - s * b, c * b + s * a

        def cholesky_update(r, z, n):
            for k in range(n):
                row, z = rotate(r[k], z, 0.5, 0.5)
                r = r.at[k].set(row)
            return r

        def run_agents(actions, n_agents):
            final = jnp.zeros_like(actions)
            for agent in range(n_agents):
                final = final.at[agent].set(jnp.maximum(actions[agent], 0.0) * 2.0)
            return final
    """
    assert found(source, all_rules, "JAX101") == []
    assert found(source, all_rules, "JAX201") == []


def test_a_library_loop_called_from_module_level_runs_eagerly(all_rules):
    source = """
        import jax.numpy as jnp

        def relax(u, f):
            return 0.25 * (jnp.roll(u, 1) + jnp.roll(u, -1)) + f

        def solve(u, f, n):
            for k in range(n):
                u = relax(u, f)
            return u

        u = solve(jnp.zeros(64), jnp.ones(64), 5000)
    """
    assert found(source, all_rules, "JAX101") == [3]
    assert found(source, all_rules, "JAX201") == [7]


def test_a_check_that_branches_on_device_values_is_host_work(all_rules):
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def generation(state, key):
            return state + jax.random.normal(key, state.shape), jnp.sum(state)

        def check_finite(population, fitness):
            values = (population, fitness)
            if not all(jnp.all(jnp.isfinite(v)) for v in values):
                raise FloatingPointError("non-finite values")

        def run(state, key, n):
            for _ in range(n):
                key, sub = jax.random.split(key)
                state, fitness = generation(state, sub)
                check_finite(state, fitness)
            return state
    """
    assert found(source, all_rules, "JAX101") == []


def test_error_messages_do_not_make_a_library_function_eager(all_rules):
    source = """
        import jax.numpy as jnp

        def fix(i, n):
            j = jnp.asarray(i)
            return jnp.where(j < 0, j + n, j) + 0

        def index_all(idx, n):
            out = []
            for pos, i in enumerate(idx):
                if pos > 100:
                    raise IndexError(f"too many indices: {pos}")
                out.append(fix(i, n))
            return out
    """
    assert found(source, all_rules, "JAX101") == []


def test_iterating_tree_leaves_is_not_a_vmap_candidate(all_rules):
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def infer(x):
            return jnp.tanh(x) * 2.0

        def all_leaves(tree):
            leaves = jax.tree.leaves(tree)
            out = []
            for leaf in leaves:
                out.append(infer(leaf))
            return out

        def seeds(n):
            out = []
            for seed in range(n):
                out.append(infer(jax.random.normal(jax.random.key(seed), (3,))))
            return out
    """
    assert found(source, all_rules, "JAX202") == [17]


def test_a_parameter_dict_updated_in_place_is_carried_state(all_rules):
    source = """
        import jax
        import jax.numpy as jnp

        def loss(params, x, y):
            return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)

        def adam_step(params, m, v, x, y, lr=1e-3):
            grads = jax.grad(loss)(params, x, y)
            for k in params:
                m[k] = 0.9 * m[k] + 0.1 * grads[k]
                v[k] = 0.999 * v[k] + 0.001 * grads[k] ** 2
                params[k] -= lr * m[k] / (jnp.sqrt(v[k]) + 1e-8)
            return params, m, v

        def train(params, x, y):
            m = {k: jnp.zeros_like(p) for k, p in params.items()}
            v = {k: jnp.zeros_like(p) for k, p in params.items()}
            for step in range(1000):
                params, m, v = adam_step(params, m, v, x, y)
            return params

        def train_inline(params, x, y, lr=1e-3):
            m = {k: jnp.zeros_like(p) for k, p in params.items()}
            for step in range(1000):
                grads = jax.grad(loss)(params, x, y)
                for k in params:
                    m[k] = 0.9 * m[k] + 0.1 * grads[k]
                    params[k] -= lr * m[k]
            return params
    """
    # the step function at its def; the gradient written in `train_inline`'s loop at that call
    assert found(source, all_rules, "JAX101") == [7, 25]
    assert found(source, all_rules, "JAX201") == [18, 24]


def test_state_carried_through_a_method_of_an_annotated_learner(all_rules):
    source = """
        import jax
        import jax.numpy as jnp
        from typing import NamedTuple

        class Result(NamedTuple):
            state: jax.Array
            loss: jax.Array

        class Learner:
            def __init__(self, lr):
                self.lr = lr

            def update(self, state, x, y):
                err = jnp.dot(state, x) - y
                return Result(state - self.lr * err * x, err ** 2)

        def run(learner: Learner, state, xs, ys, num_steps):
            losses = []
            for t in range(num_steps):
                result = learner.update(state, xs[t], ys[t])
                state = result.state
                losses.append(result.loss)
            return state, losses
    """
    assert found(source, all_rules, "JAX101") == [13]
    assert found(source, all_rules, "JAX201") == [19]


def test_jit_in_a_loop_under_a_module_level_flag(all_rules):
    source = """
        import jax
        import jax.numpy as jnp

        USE_FAST = False

        def f(x):
            return jnp.sin(x) * 2.0

        x = jnp.ones(3)
        if not USE_FAST:
            for i in range(100):
                y = jax.jit(f)(x)
    """
    assert found(source, all_rules, "JAX102") == [12]


def test_seeds_run_in_a_list_comprehension(all_rules):
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def run(key):
            return jnp.mean(jax.random.normal(key, (100,)))

        def all_seeds(n):
            return [run(jax.random.key(s)) for s in range(n)]

        def all_layers(layers, x):
            return [run(layer) for layer in layers]
    """
    assert found(source, all_rules, "JAX202") == [9]


def test_key_only_carries_and_row_fills_are_not_scan_candidates(all_rules):
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def estimate(key, x):
            return jnp.mean(jax.random.normal(key, x.shape) * x)

        def average(x, key, n):
            total = []
            for i in range(n):
                key, sub = jax.random.split(key)
                total.append(estimate(sub, x))
            return total

        def stack_rows(rows, n):
            out = jnp.zeros((n, 3))
            for i in range(n):
                out = out.at[i].set(estimate(jax.random.key(i), rows[i]))
            return out

        def train(w, xs, n):
            for i in range(n):
                w = w - 0.1 * estimate(jax.random.key(i), xs[i]) * w
            return w
    """
    assert found(source, all_rules, "JAX201") == [22]


def test_host_drawn_data_drawing_helpers_and_layer_loops_are_not_scan_candidates(all_rules):
    source = """
        import jax
        import jax.numpy as jnp
        import numpy as np

        @jax.jit
        def update(state, batch):
            return state - 0.1 * jnp.mean(batch) * state

        def epochs(state, data, n):
            for _ in range(n):
                perm = np.random.permutation(len(data))
                state = update(state, data[perm])
            return state

        def render(state, ax, rows):
            image = jnp.ones((rows, rows))
            for i in range(rows):
                image = paint(state, ax=ax, i=i, image=image)
            return image

        def paint(state, ax, i, image):
            ax.text(i, i, "x")
            return image * state[i] + jnp.sin(image)

        def forward(params, x):
            for w, b in params:
                x = layer(w, b, x)
            return x

        def layer(w, b, x):
            return jnp.tanh(x @ w + b) * 1.0

        def train(state, data, n):
            for i in range(n):
                state = update(state, data[i])
            return state
    """
    assert found(source, all_rules, "JAX201") == [34]
    assert found(source, all_rules, "JAX101") == []


def test_iterating_a_record_field_is_not_a_step_loop(all_rules):
    source = """
        import jax.numpy as jnp

        def apply_eqn(eqn, env):
            return jnp.asarray(env[eqn]) * 2.0 + jnp.ones(())

        def evaluate(program: jnp.ndarray, env):
            out = []
            for eqn in program.eqns:
                out.append(apply_eqn(eqn, env))
            return out
    """
    assert found(source, all_rules, "JAX101") == []


def test_a_loop_printing_a_device_value_every_step_is_not_a_scan_candidate(all_rules):
    # (an eager update: a loop around a jitted one is the idiomatic driver, quiet either way)
    source = """
        import jax
        import jax.numpy as jnp

        def update(w):
            return w - 0.1 * jnp.sin(w)

        def noisy(w, n):
            for i in range(n):
                w = update(w)
                print(jnp.mean(w))
            return w

        def quiet(w, n):
            for i in range(n):
                w = update(w)
                if i % 100 == 0:
                    print(jnp.mean(w))
            return w
    """
    assert found(source, all_rules, "JAX201") == [14]


def test_state_fed_back_over_a_record_handed_in_is_a_step_loop(all_rules):
    """`for batch in workload.batches` in a function the harness calls: the record is data handed
    in, and the step takes the state and each batch back in, so the loop runs steps (JAX101).
    The same shape over the object's own `self.blocks` walks its structure and stays silent."""
    handed_in = """
        import jax.numpy as jnp

        def step(w, batch):
            return w * 0.9 + jnp.tanh(batch) * 0.1 + jnp.mean(batch)

        def run(workload):
            w = jnp.asarray(workload.w0)
            for batch in workload.batches:
                w = step(w, jnp.asarray(batch))
            return w
    """
    own_structure = """
        import jax.numpy as jnp

        def apply_block(block, x):
            return jnp.tanh(x @ block)

        class Net:
            def __init__(self, blocks):
                self.blocks = blocks

            def forward(self, x):
                for block in self.blocks:
                    x = apply_block(block, x)
                return x
    """
    assert found(handed_in, all_rules, "JAX101") == [3]
    assert found(own_structure, all_rules, "JAX101") == []


def test_scan_is_not_offered_for_a_cache_filled_on_the_first_step_or_a_problem_sampled_on_the_host():
    from jaxopt_audit.rules.jax201_loop_to_scan import LoopToScan
    found = [f.line for f in scan_text("""
import jax
import jax.numpy as jnp
import numpy as np

@jax.jit
def next_token(params, tokens):
    return jnp.argmax(tokens[:, -1:] @ params, axis=-1)

@jax.jit
def update(params, problem):
    return params - 0.1 * jnp.mean(problem) * params

def sample_problem(rng, n):
    return np.random.normal(size=(n, 4)) + rng

def decode(params, tokens, steps):
    cache = None
    for _ in range(steps):
        cache = next_token(params, tokens) if cache is None else cache + next_token(params, tokens)
        tokens = next_token(params, tokens) + cache
    return tokens

def train(params, rng, steps):
    for _ in range(steps):
        problem = sample_problem(rng, 16)
        params = update(params, problem)
    return params

def fit(params, problems, steps):
    for i in range(steps):
        params = update(params, problems[i])
    return params
""", [LoopToScan])]
    assert found == [30]


def test_a_decode_loop_growing_its_tokens_is_told_to_preallocate():
    from jaxopt_audit.rules.jax201_loop_to_scan import LoopToScan
    found = scan_text("""
import jax
import jax.numpy as jnp

@jax.jit
def next_token(params, tokens):
    return jnp.argmax(tokens[:, -1:] @ params, axis=-1)

def decode(params, tokens, steps):
    for _ in range(steps):
        tokens = jnp.concatenate([tokens, next_token(params, tokens)[:, None]], axis=1)
    return tokens
""", [LoopToScan])
    assert [f.line for f in found] == [9]
    assert "preallocate" in found[0].message and "re-traces" in found[0].message


def test_a_helper_feeding_a_device_value_to_python_control_flow_is_not_told_to_jit():
    # the pad size is computed with jnp and then looped on in Python: it needs concrete values
    from jaxopt_audit.rules.jax101_missing_jit import MissingJit
    found = [f.line for f in scan_text("""
import jax
import jax.numpy as jnp

def next_power_of_two(x):
    y = 2
    while y < x:
        y *= 2
    return y

def pad(batch):
    size = next_power_of_two(jnp.sum(batch > 0))
    return jnp.pad(batch, (0, size - batch.shape[0]))

def scale(batch):
    return jnp.tanh(batch) * 2.0 + jnp.mean(batch) * jnp.std(batch)

@jax.jit
def step(w, batch):
    return w - 0.1 * jnp.mean(batch) * w

def train(w, batches):
    for batch in batches:
        w = step(w, pad(batch))
        w = scale(step(w, batch))
    return w
""", [MissingJit])]
    assert found == [14]


def test_a_name_rebound_to_its_jitted_gradient_is_jitted(all_rules):
    # a notebook defines the loss, then rebinds the name to `jit(value_and_grad(loss))` before
    # the training loop: the loop calls the wrapper, not the def
    source = """
        import jax
        import jax.numpy as jnp

        def loss_fn(w, x):
            return jnp.mean((x @ w) ** 2)

        loss_fn = jax.jit(jax.value_and_grad(loss_fn))

        def predict(w, x):
            return jnp.tanh(x @ w) * jnp.std(x) + jnp.mean(x)

        def train(w, batches):
            for x in batches:
                loss, g = loss_fn(w, x)
                w = w - 0.1 * g * predict(w, x).mean()
            return w
    """
    assert found(source, all_rules, "JAX101") == [9]  # the un-jitted helper only


def test_a_parameter_named_like_a_module_function_shadows_it(all_rules):
    # the sampler loop calls whatever step it is given (callers pass the jitted one); the
    # module's un-jitted `sample_step` of the same name is not what runs there
    source = """
        import jax
        import jax.numpy as jnp

        def sample_step(params, x, t):
            v = jnp.tanh(x @ params) * jnp.std(x)
            return x - t * v, v

        jit_sample_step = jax.jit(sample_step)

        def sample_loop(params, x, steps, sample_step):
            for t in steps:
                x, _ = sample_step(params, x, t)
            return x

        def run(params, x):
            return sample_loop(params, x, jnp.linspace(1.0, 0.0, 50), jit_sample_step)
    """
    assert found(source, all_rules, "JAX101") == []
    # without the parameter, the module's function is what the loop calls
    eager = source.replace("steps, sample_step):", "steps):").replace("50), jit_sample_step)", "50))")
    assert found(eager, all_rules, "JAX101") == [4]


def test_missing_jit_wants_enough_eager_work_to_be_worth_compiling(all_rules):
    """jit pays by replacing dispatches with one call: a helper of three eager ops saves about
    15 us a call (benchmarks/eager_dispatch.py), so JAX101 stays quiet on it. Operators on the
    results of jnp calls count as ops, and an eager `grad(loss)(p)` runs the loss and its
    derivative op by op, so a one-line update around it is worth jitting."""
    source = """
        import jax
        import jax.numpy as jnp

        def to_rgb(x):
            return jnp.clip(x[..., :3], 0.0, 1.0)

        def normalise(x):
            return (jnp.tanh(x) - jnp.mean(x)) / (jnp.std(x) + 1e-6)

        def loss(w, x):
            return jnp.mean((x @ w) ** 2)

        def update(w, x):
            return w - 0.1 * jax.grad(loss)(w, x)

        def train(w, batches):
            for step in range(1000):
                x = normalise(batches[step])
                w = update(w, x)
                image = to_rgb(x)
            return w, image
    """
    assert found(source, all_rules, "JAX101") == [7, 13]


def test_a_driver_called_per_epoch_does_not_lend_its_loop_work_to_the_caller(all_rules):
    """`validate` runs its own loop over the splits: calling it once per epoch from `epoch_end`
    does not make `epoch_end` a body of fusable work (its ops run per split, around a jitted
    step)."""
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def eval_step(w, x):
            return jnp.mean((x @ w) ** 2)

        def validate(w, splits):
            total = 0.0
            for name, x in splits.items():
                total = total + eval_step(w, x) * jnp.std(x) + jnp.mean(x) - jnp.min(x)
            return total

        def epoch_end(w, splits):
            return validate(w, splits)

        w, splits = jnp.ones(3), {"val": jnp.ones(3)}
        for epoch in range(100):
            metrics = epoch_end(w, splits)
    """
    assert found(source, all_rules, "JAX101") == []


def test_an_objax_jit_rebinding_is_jitted(all_rules):
    source = """
        import objax
        import jax.numpy as jn

        def train_op(x, y):
            return jn.mean((jn.tanh(x) - y) ** 2) + jn.std(x) * jn.max(y)

        train_op = objax.Jit(train_op)

        for step in range(1000):
            loss = train_op(jn.ones(3), jn.zeros(3))
    """
    assert found(source, all_rules, "JAX101") == []


def test_a_loop_driving_a_jitted_step_over_batches_is_not_a_scan_candidate(all_rules):
    """The idiomatic training loop (a jitted step per batch from a stream) saves only a dispatch
    per step when scanned; the same jitted update per row of the data is a per-element
    recurrence whose steps are tiny, and a counted loop of a step of five operations on fixed
    data is dispatch-bound: both stay scan candidates."""
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def train_step(w, x):
            return w - 0.01 * jnp.mean(x @ w) * w

        def train(w, batches, steps):
            for step in range(steps):
                w = train_step(w, next(batches))
            return w

        def train_fixed(w, x, steps):
            for step in range(steps):
                w = train_step(w, x)
            return w

        def online(w, xs, steps):
            for t in range(steps):
                w = train_step(w, xs[t])
            return w
    """
    assert found(source, all_rules, "JAX201") == [14, 19]


def test_batch_preparation_around_a_compiled_step_and_a_decode_loop_with_a_stop_test(all_rules):
    """Slicing the next batch out of the data and converting it (eager helpers) around a jitted
    step is still one training step per batch. An environment rollout splitting its key eagerly
    around a jitted step every iteration is a scan candidate."""
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def train_step(w, x):
            return w - 0.01 * jnp.mean(x @ w) * w

        @jax.jit
        def env_step(key, state):
            return state * 0.9 + jax.random.normal(key, state.shape)

        def train(w, data, batch_size, steps):
            for j in range(steps):
                batch = jnp.asarray(data[j * batch_size:(j + 1) * batch_size]) / 255.0
                w = train_step(w, batch)
            return w

        def decode(w, tokens, eos, max_len):
            for i in range(max_len):
                token = jnp.argmax(tokens[:, -1:] @ w, axis=-1)
                if token[0] == eos:
                    break
                tokens = jnp.concatenate([tokens, token[:, None]], axis=1)
            return tokens

        def rollout(key, state, steps):
            for t in range(steps):
                key, sub = jax.random.split(key)
                state = env_step(sub, state)
            return state
    """
    assert found(source, all_rules, "JAX201") == [27]


def test_an_eager_gradient_through_a_model_object_is_a_whole_step_of_work(all_rules):
    """The loss only calls a model object (nothing the file counts as ops), but differentiating
    it eagerly runs the model's forward and backward passes op by op every step."""
    source = """
        import jax
        import optax

        def train_step(params, opt_state, model, optimizer, batch):
            def loss_fn(p):
                return model.apply(p, batch)
            loss, grads = jax.value_and_grad(loss_fn)(params)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss

        def train(params, opt_state, model, optimizer, batches):
            for step in range(10_000):
                params, opt_state, loss = train_step(params, opt_state, model, optimizer, batches[step])
            return params
    """
    assert found(source, all_rules, "JAX101") == [4]


def test_a_function_of_the_step_count_alone_is_scalar_math(all_rules):
    """A learning-rate schedule called each step with the step count computes on scalars: its
    eager ops cost microseconds, next to the jitted step. The same work on the step's data is
    reported."""
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def train_step(w, x, lr):
            return w - lr * jnp.mean(x @ w) * w

        def schedule(step, warmup=100, total=10_000):
            warm = jnp.minimum(1.0, step / warmup)
            decay = 0.5 * (1 + jnp.cos(jnp.pi * step / total))
            return 1e-3 * jnp.where(step < warmup, warm, decay)

        def normalise(x, step):
            return (x - jnp.mean(x)) / (jnp.std(x) + 1e-6) * jnp.minimum(1.0, step / 100)

        def train(w, data, steps):
            step = 0
            while step < steps:
                lr = schedule(step + 1)
                w = normalise(train_step(w, data[step], lr), step)
                step += 1
            return w
    """
    assert found(source, all_rules, "JAX101") == [13]


def test_an_evaluation_loop_that_only_sums_its_losses_carries_no_state(all_rules):
    """`total_loss += loss` over the batches of a jitted loss is a reduction of the
    steps' outputs, read after the loop; no step depends on it, so there is nothing to scan. A
    loop whose steps read what the last one left (`w`) is still reported."""
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def loss_fn(w, x):
            return jnp.mean((x @ w) ** 2)

        @jax.jit
        def update(w, x):
            return w - 0.1 * jax.grad(loss_fn)(w, x)

        def evaluate(w, xs, num_batches):
            total_loss = 0.0
            for i in range(num_batches):
                total_loss += loss_fn(w, xs[i])
            return total_loss / num_batches

        def train(w, xs, num_batches):
            total_loss = 0.0
            for i in range(num_batches):
                w = update(w, xs[i])
                total_loss += loss_fn(w, xs[i])
            return w, total_loss
    """
    assert found(source, all_rules, "JAX201") == [20]


def test_a_decode_loop_whose_host_picks_the_next_token_is_not_a_scan(all_rules):
    """Greedy decoding reads each token to the host (`int(jnp.argmax(...))`) and builds
    the next step's input from it: the host drives every step by design, so neither the read
    (JAX301) nor the loop (JAX201) is the finding. A loop reading a loss it never hands back
    still gets JAX301."""
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def forward(params, tokens, cache):
            logits = jnp.tanh(tokens[..., None] * params)
            return logits, cache + 1

        def generate(params, prompt, cache, max_new_tokens):
            next_token = int(prompt[-1])
            ids = [next_token]
            for _ in range(max_new_tokens):
                tokens = jnp.array([[next_token]])
                logits, cache = forward(params, tokens, cache)
                next_token = int(jnp.argmax(logits[0, -1, :]))
                ids.append(next_token)
            return ids

        def train(params, batches, cache, steps):
            losses = []
            for step in range(steps):
                logits, cache = forward(params, batches[step], cache)
                losses.append(float(jnp.mean(logits)))
            return losses
    """
    assert found(source, all_rules, "JAX301") == [23]
    assert found(source, all_rules, "JAX201") == [21]


def test_a_demonstration_of_twenty_steps_is_a_step_loop_and_eight_are_written_out(all_rules):
    """Tutorials run 10 or 20 steps of plain gradient descent to show autodiff working, with
    the loss read each step; the step count is a literal, often through a name bound once
    (`num_steps = 20`). The findings are facts of the code (their impact is low); a loop of 8
    or fewer literal steps is better written out than scanned."""
    source = """
        import jax
        import jax.numpy as jnp

        def loss_fn(w, x):
            return jnp.mean((jnp.tanh(x @ w) - 1.0) ** 2) + 0.01 * jnp.sum(w ** 2)

        @jax.jit
        def update(w, x):
            loss, g = jax.value_and_grad(loss_fn)(w, x)
            return w - 0.1 * g, loss

        def demo(w, x, history):
            num_steps = 20
            for step in range(num_steps):
                w, loss = update(w, x)
                w = jnp.clip(w, -1.0, 1.0)
                history.append(float(loss))
            return w

        def train(w, x, history):
            num_steps = 2000
            for step in range(num_steps):
                w, loss = update(w, x)
                w = jnp.clip(w, -1.0, 1.0)
                history.append(float(loss))
            return w

        def short(w, x):
            for step in range(8):
                w, loss = update(w, x)
                w = jnp.clip(w, -1.0, 1.0)
            return w
    """
    assert found(source, all_rules, "JAX201") == [14, 22]
    assert found(source, all_rules, "JAX301") == [17, 25]


def test_a_batch_sampler_feeding_the_jitted_step_is_its_input_not_a_jit_candidate(all_rules):
    """A sampler of about six eager ops (`randint`, two gathers) makes each step's batch
    for a jitted training step; its dispatches overlap with the step already queued. The same
    helper applied to the carried weights runs on the step's critical path and is reported."""
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def train_step(w, xb, yb):
            return w - 0.1 * jax.grad(lambda v: jnp.mean((xb @ v - yb) ** 2))(w)

        def sample_batch(key, xs, ys, batch_size):
            idx = jax.random.randint(key, (batch_size,), 0, xs.shape[0])
            xb = jnp.take(xs, idx, axis=0) * 1.0 + 0.0
            yb = jnp.take(ys, idx, axis=0) * 1.0 - 0.0
            return xb, yb

        def renormalise(w):
            return (w - jnp.mean(w)) / (jnp.std(w) + 1e-6) * jnp.sqrt(jnp.sum(w ** 2))

        def train(w, xs, ys, key, steps):
            for step in range(steps):
                key, sub = jax.random.split(key)
                xb, yb = sample_batch(sub, xs, ys, 64)
                w = train_step(w, xb, yb)
            return w

        def train_renormalised(w, xs, ys, steps):
            for step in range(steps):
                w = renormalise(train_step(w, xs[step], ys[step]))
            return w
    """
    assert found(source, all_rules, "JAX101") == [14]


def test_a_model_called_on_a_sequence_that_grows_each_step_is_not_told_to_jit(all_rules):
    """A tutorial samples by concatenating each new token to `tokens` and calling the
    un-jitted `forward` on the growing context; jit would compile `forward` again for every
    length. JAX201 reports the growing loop (with the fixed-buffer fix); JAX101 stays quiet. A
    fixed-shape call of the same function in a step loop is reported."""
    source = """
        import jax
        import jax.numpy as jnp

        def forward(params, tokens):
            h = jnp.tanh(params["embed"][tokens])
            h = h @ params["w1"] + jnp.mean(h, axis=-1, keepdims=True)
            return jnp.einsum("bsd,vd->bsv", jax.nn.gelu(h), params["embed"])

        def sample(params, tokens, key, n_new):
            for _ in range(n_new):
                ctx = tokens[:, -128:]
                logits = forward(params, ctx)
                key, sub = jax.random.split(key)
                nxt = jax.random.categorical(sub, logits[:, -1, :])
                tokens = jnp.concatenate([tokens, nxt[:, None]], axis=1)
            return tokens

        def main(params, prompt, key):
            print(sample(params, prompt, key, 200))

        def train(params, batches, steps):
            for step in range(steps):
                logits = forward(params, batches[step])
                params = jax.tree.map(lambda p: p - 1e-3 * jnp.mean(logits), params)
            return params
    """
    assert found(source, all_rules, "JAX101") == [4]
    assert found(source, all_rules, "JAX201") == [10, 22]
    grown = source[:source.index("        def train(")] + "        main({}, None, None)\n"
    assert found(grown, all_rules, "JAX101") == []


def test_a_training_loop_sampling_its_batch_beside_a_jitted_step_is_not_a_scan_candidate(all_rules):
    """`key, sub = split(key)`, `xb, yb = sample_batch(sub, data)` (a few eager ops),
    then the jitted step, with the loss printed every 100 steps: the idiomatic training loop.
    Still reported: a shock drawn in the loop itself beside a tiny jitted step (a batch-1
    simulation), and a bare key split around a jitted rollout step."""
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def train_step(w, xb, yb):
            return w - 0.1 * jax.grad(lambda v: jnp.mean((xb @ v - yb) ** 2))(w)

        @jax.jit
        def sim_step(state, shock):
            return 0.9 * state + shock

        def sample_batch(key, xs, ys):
            idx = jax.random.randint(key, (64,), 0, xs.shape[0])
            return xs[idx], ys[idx]

        def train(w, xs, ys, key, steps):
            for step in range(steps):
                key, sub = jax.random.split(key)
                xb, yb = sample_batch(sub, xs, ys)
                w = train_step(w, xb, yb)
                if step % 100 == 0:
                    print(jnp.mean(w))
            return w

        def simulate(state, key, steps):
            for t in range(steps):
                key, sub = jax.random.split(key)
                shock = jax.random.normal(sub, state.shape)
                state = sim_step(state, shock)
            return state
    """
    assert found(source, all_rules, "JAX201") == [26]


def test_a_helper_that_only_uploads_python_lists_is_not_told_to_jit(all_rules):
    """A benchmark's `make_batch` turns Python token lists into arrays (`jnp.array`,
    `jnp.arange(n)`) for each decode step: uploads, nothing for jit to fuse (under jit the lists
    would be static constants). A helper computing on the arrays it makes is reported."""
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def decode(params, tokens, positions, lens):
            return params * tokens + positions + lens

        def make_batch(token_ids, start, seq_len, max_blocks):
            positions = list(range(start, start + len(token_ids)))
            return (jnp.array([token_ids], dtype=jnp.int32), jnp.array([positions], dtype=jnp.int32),
                    jnp.array([seq_len], dtype=jnp.int32), jnp.arange(max_blocks)[None, :],
                    jnp.array([0, len(token_ids)]), jnp.zeros((1, max_blocks)))

        def make_scaled(token_ids, start, seq_len, max_blocks):
            t = jnp.array([token_ids], dtype=jnp.float32)
            return t / jnp.max(t), jnp.cumsum(t) - jnp.mean(t), jnp.tanh(t) * 2.0

        def run(params, prompt, steps, history):
            ids = list(prompt)
            for step in range(steps):
                tokens, positions, lens, blocks, loc, mask = make_batch(ids[-1:], len(ids), len(ids), 8)
                out = decode(params, tokens, positions, lens)
                params = decode(params, out, positions, lens)
                history.append(make_scaled(ids, 0, len(ids), 8))
                ids.append(step)
            return params
    """
    assert found(source, all_rules, "JAX101") == [14]


def test_a_rollout_through_a_gym_style_environment_is_host_bound(all_rules):
    """`next_obs, r, done, info = envs.step(action)` is the Gym API: the environment keeps
    its state inside the object and only the action goes in, so the loop cannot hand that state
    to a scan as written. A functional step that takes and returns the state is still a scan
    candidate."""
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def policy(params, obs, state, key):
            action = jnp.tanh(obs @ params) + jax.random.normal(key, obs.shape[:-1] + params.shape[1:])
            return action, state + 1

        @jax.jit
        def env_step(env_state, action):
            return env_state * 0.9 + action, jnp.sum(action)

        def rollout(params, envs, obs, state, keys, num_steps):
            rewards = []
            for t in range(num_steps):
                action, state = policy(params, obs, state, keys[t])
                obs, r, done, info = envs.step(action)
                rewards.append(r)
            return rewards

        def functional_rollout(params, env_state, obs, state, keys, num_steps):
            for t in range(num_steps):
                action, state = policy(params, obs, state, keys[t])
                env_state, r = env_step(env_state, action)
                obs = jnp.tanh(env_state) * 2.0
            return env_state
    """
    assert found(source, all_rules, "JAX201") == [22]


def test_a_rollout_recorded_for_the_renderer_is_not_a_scan_candidate(all_rules):
    # `rollout.append(state)` every step, then `env.render(rollout)` after the
    # loop: a rollout made to be watched, whose time goes to rendering. The same loop keeping
    # rewards for a plot is a computation and is reported.
    source = """
import jax
import matplotlib.pyplot as plt


def watch(env, policy, rng, episode_length):
    jit_step = jax.jit(env.step)
    jit_act = jax.jit(policy)
    state = jax.jit(env.reset)(rng)
    rollout = [state]
    for i in range(episode_length):
        act_rng, rng = jax.random.split(rng)
        state = jit_step(state, jit_act(state.obs, act_rng))
        rollout.append(state)
    frames = env.render(rollout[::2])
    return frames


def evaluate(env, policy, rng, episode_length):
    jit_step = jax.jit(env.step)
    jit_act = jax.jit(policy)
    state = jax.jit(env.reset)(rng)
    rewards = []
    for i in range(episode_length):
        act_rng, rng = jax.random.split(rng)
        state = jit_step(state, jit_act(state.obs, act_rng))
        rewards.append(state.reward)
    plt.plot(rewards)
    return rewards
"""
    assert found(source, all_rules, "JAX201") == [23]


def test_a_python_loop_kept_as_the_debug_branch_of_a_compiled_loop_is_deliberate(all_rules):
    # `if debug: for i in range(n): ... else: lax.fori_loop(...)`, the eager path kept
    # for stepping through with prints. The same loop with no compiled branch is reported.
    source = """
import jax
import jax.numpy as jnp


def denoise(x, debug=False):
    def body(i, x):
        return x - 0.1 * jnp.tanh(x) * i

    if debug:
        for i in range(1000):
            x = body(i, x)
    else:
        x = jax.lax.fori_loop(0, 1000, body, x)
    return x


def shrink(i, x):
    return x - 0.1 * jnp.tanh(x) * i


def denoise_eager(x):
    for i in range(1000):
        x = shrink(i, x)
    return x
"""
    assert found(source, all_rules, "JAX201") == [22]


def test_a_loop_over_file_paths_is_not_a_step_loop(all_rules):
    # `for fn in files:` computing each structure file's energy error and printing
    # `fn.stem`: the items are paths (only a pathlib.Path has `.stem`), each iteration a file's
    # work, not a step. The same helper called per batch of an array loop is reported.
    source = """
import jax.numpy as jnp
import numpy as np


def file_error(coords, reference):
    d = jnp.linalg.norm(coords[:, None] - coords[None], axis=-1)
    e = jnp.sum(jnp.exp(-d) * jnp.tanh(d + 1.0)) / 2.0
    return jnp.abs(e - reference) * jnp.sqrt(2.0)


def batch_error(coords, reference):
    d = jnp.linalg.norm(coords[:, None] - coords[None], axis=-1)
    e = jnp.sum(jnp.exp(-d) * jnp.tanh(d + 1.0)) / 2.0
    return jnp.abs(e - reference) * jnp.sqrt(2.0)


def compare_files(paths, reference):
    errors = []
    for path in paths:
        err = file_error(jnp.asarray(np.load(path)), reference)
        print(path.stem, err)
        errors.append(err)
    return jnp.mean(jnp.stack(errors)) * 2.0 + jnp.std(jnp.stack(errors))


def compare_batches(batches, reference):
    errors = []
    for coords in batches:
        err = batch_error(coords, reference)
        print(err)
        errors.append(err)
    return jnp.mean(jnp.stack(errors)) * 2.0 + jnp.std(jnp.stack(errors))
"""
    assert found(source, all_rules, "JAX101") == [11]


def test_a_loop_that_stops_on_a_value_derived_on_the_device_is_not_scanned_as_written(all_rules):
    # `if jnp.linalg.norm(g) < tol: break` (a solver's convergence), a decode's
    # end token: the host learns a value every step to decide whether to go on, a `while_loop`
    # at best, and JAX301 reports the wait. A done flag the step returns with the state
    # (`state, done = step(state, ...)`, or `state.done`) ends an environment episode, which a
    # scan with a done mask runs whole: still reported (the gymnax fixture too).
    source = """
import jax
import jax.numpy as jnp


def solve(x, tol, update):
    step = jax.jit(update)
    for it in range(1000):
        x = step(x)
        if jnp.linalg.norm(x) < tol:
            break
    return x


def episode(state, policy, env_step, rng):
    step = jax.jit(env_step)
    act = jax.jit(policy)
    for t in range(1000):
        rng, sub = jax.random.split(rng)
        state, done = step(state, act(state, sub))
        if done:
            break
    return state
"""
    assert found(source, all_rules, "JAX201") == [17]


def test_a_step_reaching_a_scan_through_a_vmapped_name_is_a_whole_program(all_rules):
    # A meta-learning loop calls one jitted outer step that reaches, through
    # `batched = jax.vmap(inner)`, an inner `lax.scan` over 100 time steps for every task: each
    # iteration is a whole compiled program, so a scan over the outer loop saves next to nothing
    #. Calling the vmapped name is calling `inner`.
    source = """
import jax
import jax.numpy as jnp


def inner(w, xs):
    def cell(h, x):
        return jnp.tanh(h * w + x), h
    return jax.lax.{inner}


batched = jax.vmap(inner, in_axes=(None, 0))


@jax.jit
def outer_step(w, tasks):
    loss, grad = jax.value_and_grad(lambda v: jnp.mean(batched(v, tasks)[1]))(w)
    return w - 0.1 * grad


def train(w, tasks, key, n_iter=1000):
    for i in range(n_iter):
        key, sub = jax.random.split(key)
        w = outer_step(w, tasks + jax.random.normal(sub, tasks.shape))
    return w
"""
    scanned = "scan(cell, 0.0, xs)"
    assert found(source.replace("{inner}", scanned), all_rules, "JAX201") == []
    # the same step with no compiled loop inside is a small program per iteration: reported
    assert found(source.replace("{inner}", "reduce_precision(xs, 8, 7), xs"), all_rules, "JAX201") == [21]


def test_a_helper_shared_with_a_jax_version_is_host_work_when_given_numpy(all_rules):
    # A course writes gradient descent in NumPy first, then in JAX; both call one
    # `prediction(w, x)` of plain operators, which the jitted JAX update hands tracers. The NumPy
    # loop is not JAX work.
    source = """
import jax
import jax.numpy as jnp
import numpy as np


def prediction(w, x):
    return x * w


def update_np(w, x, y, lr):
    return w + lr * np.mean(x * (y - prediction(w, x)))


@jax.jit
def update_jax(w, x, y, lr):
    grad = jax.grad(lambda v: jnp.mean((y - prediction(v, x)) ** 2))(w)
    return w - lr * grad


def descend(x, y, n_steps=100):
    ws = np.zeros(n_steps)
    for i in range(1, n_steps):
        ws[i] = update_np({w}, x, y, 0.1)
    return ws
"""
    numpy_loop = source.replace("{w}", "ws[i - 1]")
    assert [f.code for f in scan_text(numpy_loop, all_rules) if f.code.startswith(("JAX1", "JAX2", "JAX3"))] == []
    # the model's answer at the call: host work given NumPy, eager array work given a device array
    for given, work in (("ws[i - 1]", None), ("jnp.ones(3)", "array")):
        model = SemanticModel(cst.parse_module(source.replace("{w}", given)))
        fn = next(f for f in model.functions if f.name == "descend")
        call = next(s.node for s in fn.calls if describe(s.node.func) == "update_np")
        assert model.call_work(call, fn) == work


def test_an_eager_baseline_timed_beside_its_jitted_twin_is_no_missing_jit(all_rules):
    # Benchmark scripts time `f` eagerly in one loop and `fast = jit(f)` in the next;
    # the eager loop is the comparison's baseline. Untimed, or with no jitted twin, the eager
    # loop is still reported.
    source = """
        import time
        import jax
        import jax.numpy as jnp

        def boxes(a, b, w):
            d = (a - b) * w
            d = jnp.where(d > 0, d, -d)
            d = jnp.sqrt(d + 1.0) / (jnp.sum(w) + 1.0)
            d = jnp.clip(d, 0.0, 10.0) * 2.0
            d = jnp.concatenate([d, -d], axis=-1)
            return jnp.exp(-d) + jnp.log1p(d)

        def bench(a, b, w):
            fast = jax.jit(boxes)
            start = time.time()
            for _ in range(10000):
                boxes(a, b, w).block_until_ready()
            middle = time.time()
            for _ in range(10000):
                fast(a, b, w).block_until_ready()
            print(middle - start, time.time() - middle)
    """
    assert found(source, all_rules, "JAX101") == []
    untimed = source.replace("time.time()", "0")
    assert found(untimed, all_rules, "JAX101") == [5]
    alone = source.replace("fast = jax.jit(boxes)", "fast = boxes")
    assert found(alone, all_rules, "JAX101") == [5]


def test_a_small_jitted_step_is_a_scan_candidate_but_not_when_fed_minibatches(all_rules):
    """A jitted step of a few operations driven by a counted loop is dispatch-bound; the same step
    fed a slice of a data set each iteration works on a minibatch of a size the file does not
    show, and a history filled row by row needs carried state beside it to be a scan."""
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(w, x):
            return w * 0.9 + jnp.tanh(x)

        def integrate(w, x, n):
            for _ in range(n):
                w = step(w, x)
            return w

        def fit(w, data, n, bs):
            for i in range(n):
                xb = data[i * bs:(i + 1) * bs]
                w = step(w, xb)
            return w

        def table(xs, n):
            out = jnp.zeros((n, 3))
            for i in range(n):
                out = out.at[i].set(jnp.sin(xs[i]))
            return out
    """
    findings = [f for f in scan_text(source, all_rules) if f.code == "JAX201"]
    assert [f.line for f in findings] == [9]
    assert "`step` (3 array operations)" in findings[0].message


def test_a_key_split_around_a_jitted_gradient_step_is_a_training_loop_not_a_scan_candidate(all_rules):
    source = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def train_step(w, x, key):
            idx = jax.random.randint(key, (32,), 0, x.shape[0])
            loss, g = jax.value_and_grad(lambda w: jnp.mean((x[idx] @ w) ** 2))(w)
            return w - 0.1 * g, loss

        @jax.jit
        def env_step(state, key):
            return state * 0.9 + jax.random.normal(key, state.shape)

        def train(w, x, key, steps):
            for _ in range(steps):
                key, sub = jax.random.split(key)
                w, loss = train_step(w, x, sub)
            return w

        def rollout(state, key, steps):
            for _ in range(steps):
                key, sub = jax.random.split(key)
                state = env_step(state, sub)
            return state
    """
    assert found(source, all_rules, "JAX201") == [21]


def test_a_matrix_updated_row_by_row_and_read_in_the_loop_is_not_a_history(all_rules):
    """`R = R.at[k].set(...)` where the loop also reads `R` (a factorisation updating in place) is
    not a record of the steps; a history written and never read in the loop is."""
    source = """
        import jax.numpy as jnp

        def rotate(R, z, n):
            for k in range(n):
                row, z = R[k] * 0.5 + z, z * 0.9
                R = R.at[k].set(row)
            return R

        def record(state, n):
            hist = jnp.zeros((n, 3))
            for t in range(n):
                state = jnp.tanh(state)
                hist = hist.at[t].set(state)
            return hist
    """
    assert found(source, all_rules, "JAX201") == [11]


def test_an_eager_gradient_beside_a_small_jitted_update_is_the_steps_own_work(all_rules):
    """`loss_grad_fn(params, x, y)` (a transform bound to a name) or `jax.grad(loss)(p)` in the
    loop is eager work of each step, not the preparation of a batch: the loop is reported as it
    is, not as a loop around a small compiled step."""
    source = """
        import jax
        import jax.numpy as jnp

        def mse(params, x, y):
            return jnp.mean((x @ params - y) ** 2)

        loss_grad_fn = jax.value_and_grad(mse)

        @jax.jit
        def update_params(params, grads):
            return params - 0.1 * grads

        def fit(params, x, y, steps):
            for _ in range(steps):
                loss_val, grads = loss_grad_fn(params, x, y)
                params = update_params(params, grads)
            return params

        def fit_eager_grad(params, x, y, steps):
            for _ in range(steps):
                grads = jax.grad(mse)(params, x, y)
                params = update_params(params, grads)
            return params
    """
    findings = [f for f in scan_text(source, all_rules) if f.code == "JAX201"]
    assert [f.line for f in findings] == [20]
    assert "array operation" not in findings[0].message


def test_a_loop_growing_a_history_names_only_what_grows_and_retraces_only_a_jitted_call(all_rules):
    source = """
import jax
import jax.numpy as jnp

def plant(level, inflow):
    level = jnp.clip(level + inflow - 0.1 * jnp.sqrt(level), 0.0, 2.0)
    return level, 1.0 - level

@jax.jit
def summarise(hist):
    return jnp.mean(hist ** 2)

gains = jnp.array([1.0, 0.1, 0.1])
level = jnp.float32(0.5)
hist = jnp.zeros((2,))
inflow = 0.0
for t in range(100):
    level, err = plant(level, inflow)
    hist = jnp.append(hist, err)
    inflow = jnp.dot(gains, jnp.stack([err, jnp.sum(hist), hist[-1] - hist[-2]]))

def control_scored(level, gains, n):
    hist = jnp.zeros((1,))
    inflow = 0.0
    for t in range(n):
        level, err = plant(level, inflow)
        hist = jnp.concatenate([hist, err[None]])
        inflow = gains[0] * summarise(hist)
    return hist

def control_window(level, gains, n):
    hist = jnp.zeros((1,))
    inflow = 0.0
    for t in range(n):
        level, err = plant(level, inflow)
        hist = jnp.concatenate([hist, err[None]])
        recent = hist[-8:]
        inflow = gains[0] * summarise(recent)
    return hist
"""
    found = [f for f in scan_text(source, all_rules) if f.code == "JAX201"]
    assert [f.line for f in found] == [16, 24, 33]
    assert "grows `hist` by concatenation" in found[0].message
    assert "`inflow`" not in found[0].message and "`level`" not in found[0].message
    assert "re-traces" not in found[0].message and "copies the whole array" in found[0].message
    assert "each call of the jitted `summarise` (given `hist`) re-traces for the new length" in found[1].message
    assert "`summarise` (given `recent`, a slice of `hist`, until the slice reaches its bound)" in found[2].message


MCMC = """
    import jax
    import jax.numpy as jnp
    from tqdm import tqdm, trange

    def density(x):
        return jnp.exp(-0.5 * jnp.sum(x ** 2)) + 0.5 * jnp.exp(-0.5 * jnp.sum((x - 3.0) ** 2))

    @jax.jit
    def mh_step(key, x):
        k_prop, k_acc = jax.random.split(key)
        proposal = x + jax.random.normal(k_prop, x.shape)
        accept = jax.random.uniform(k_acc) < density(proposal) / density(x)
        return jnp.where(accept, proposal, x)

    def sample(key, x, n):
        chain = [x]
        for _ in BARS:
            key, sub = jax.random.split(key)
            x = mh_step(sub, x)
            chain.append(x)
        return jnp.stack(chain)
"""


def test_a_progress_bar_around_the_steps_counts_them_like_the_range_inside(all_rules):
    """`tqdm(range(n))` and `trange(n)` yield the steps `range(n)` yields: the Markov chain driven
    one small jitted step per iteration is the same loop behind a progress bar."""
    for bar in ("range(n)", "tqdm(range(n))", "trange(n)", "tqdm(range(n), desc='sampling')"):
        findings = [f for f in scan_text(MCMC.replace("BARS", bar), all_rules) if f.code == "JAX201"]
        assert [f.line for f in findings] == [17], bar
        assert findings[0].message.startswith(f"this loop over `{bar}` carries `x`"), bar


def test_a_scanned_chain_and_a_progress_bar_over_batches_are_quiet(all_rules):
    fixed = MCMC.replace("""        chain = [x]
        for _ in BARS:
            key, sub = jax.random.split(key)
            x = mh_step(sub, x)
            chain.append(x)
        return jnp.stack(chain)""", """        def one(x, sub):
            x = mh_step(sub, x)
            return x, x
        _, chain = jax.lax.scan(one, x, jax.random.split(key, n))
        return chain""")
    assert "BARS" not in fixed
    assert [f for f in scan_text(fixed, all_rules) if f.code == "JAX201"] == []
    # a progress bar around a loader yields its batches, not counted steps
    loader = MCMC.replace("BARS", "tqdm(batches)").replace("def sample(key, x, n):", "def sample(key, x, batches):")
    assert [f for f in scan_text(loader, all_rules) if f.code == "JAX201"] == []
