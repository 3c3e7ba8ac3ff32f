"""JAX501 prng-key-reuse: the flow analysis along paths and loops, beyond the rule's examples."""

from __future__ import annotations

import pytest

from conftest import rules_with_code, scan_text, scanners

RULE = rules_with_code("JAX501")


_, lines = scanners(RULE)


def messages(source: str) -> list[str]:
    return [f.message for f in scan_text(source, RULE)]


# ---------------------------------------------------------------- a key drawn twice
def test_same_key_twice_old_and_new_style():
    for constructor in ("jax.random.key(42)", "jax.random.PRNGKey(42)"):
        assert lines(f"""
            import jax
            key = {constructor}
            print(jax.random.normal(key))  # Value X
            print(jax.random.normal(key))  # Value X (always the same!)
        """) == [4]


def test_a_split_per_draw_is_quiet():
    assert lines("""
        import jax
        key = jax.random.key(42)
        key, subkey = jax.random.split(key)
        print(jax.random.normal(subkey))
        x_jnp = jax.random.normal(key, (3000, 3000))
    """) == []


# ---------------------------------------------------------------- reported shapes
@pytest.mark.parametrize("body,expected", [
    # split counts as a use
    ("a = random.split(key)\n    b = random.split(key)\n    print(a, b)", [4]),
    # a draw, then splitting the same key
    ("x = random.normal(key)\n    key, sub = random.split(key)", []),  # the split derives new keys
    # an alias is the same key
    ("k = key\n    x = random.normal(k)\n    y = random.uniform(key)", [5]),
    # the same element of a split, twice
    ("keys = random.split(key, 3)\n    x = random.normal(keys[0])\n    y = random.normal(keys[0])", [5]),
    # key= keyword form
    ("x = random.normal(key=key, shape=())\n    y = random.normal(key=key, shape=())", [4]),
    # two draws in one expression
    ("x = random.normal(key) + random.uniform(key)", [3]),
    # used on one path, then again after the branches join
    ("if flag:\n        x = random.normal(key)\n    y = random.uniform(key)", [5]),
    # consumed in try, again in except
    ("try:\n        x = random.normal(key)\n    except ValueError:\n        x = random.uniform(key)", [6]),
])
def test_sequence_reuse(body, expected):
    source = f"from jax import random\ndef f(key, flag):\n    {body}\n    return key\n"
    assert lines(source) == expected


def test_loop_reuse_for_while_and_comprehension():
    found = scan_text("""
        import jax
        def rollout(key, logits, n):
            out = []
            for _ in range(n):
                out.append(jax.random.categorical(key, logits))
            i = 0
            while i < n:
                noise = jax.random.normal(jax.random.split(key)[1], ())
                i += 1
            samples = [jax.random.uniform(key, ()) for _ in range(n)]
            return out, samples
    """, RULE)
    assert [f.line for f in found] == [5, 8, 10]
    assert "every iteration" in found[0].message


def test_passing_a_key_to_a_sampling_function_counts_as_a_use():
    assert lines("""
        import jax

        def noise(k, shape):
            return 0.1 * jax.random.normal(k, shape)

        def perturb(k, x):
            return x + noise(k, x.shape)

        class Augment:
            def flip(self, key, x):
                return jax.numpy.where(jax.random.bernoulli(key), x[::-1], x)

            def __call__(self, key, x):
                x = self.flip(key, x)
                return perturb(key, x)

        def batch_noise(keys, x):
            a = jax.vmap(noise, in_axes=(0, None))(keys, x.shape)
            b = jax.vmap(noise, in_axes=(0, None))(keys, x.shape)
            return a + b
    """) == [15, 19]


def test_key_captured_by_a_scan_or_fori_loop_body():
    found = scan_text("""
        import jax
        from jax import lax

        def diffuse(key, x0, n):
            def body(i, x):
                return x + jax.random.normal(key, x.shape)
            return lax.fori_loop(0, n, body, x0)

        def walk(key, x0, n):
            return lax.scan(lambda x, _: (x + jax.random.uniform(key, x.shape), x), x0, None, length=n)
    """, RULE)
    assert [f.line for f in found] == [6, 10]
    assert "fori_loop" in found[0].message and "lax.scan" in found[1].message


# ---------------------------------------------------------------- quiet on
def test_quiet_on_rebinding_split_elements_and_fold_in():
    assert lines("""
        import jax
        from jax import random

        def init(key, sizes):
            k_w, k_b, k_layers = random.split(key, 3)
            w = random.normal(k_w, (sizes[0], sizes[1]))
            b = random.normal(k_b, (sizes[1],))
            keys = random.split(k_layers, 6)
            layers = [random.normal(keys[i], (3,)) for i in range(4)]
            first, second = random.normal(keys[4]), random.normal(keys[5])
            return w, b, layers, first, second

        def steps(key, n):
            out = []
            for step in range(n):
                key, sub = random.split(key)
                out.append(random.normal(sub, ()))
                out.append(random.normal(random.fold_in(key, step), ()))
            key, loop_key = random.split(key)
            for k in random.split(loop_key, n):
                out.append(random.uniform(k, ()))
            while len(out) < 100:
                key, sub = random.split(key)
                out.append(random.normal(sub, ()))
            return out
    """) == []


def test_quiet_on_exclusive_paths():
    assert lines("""
        from jax import random

        def draw(key, kind):
            if kind == "normal":
                return random.normal(key, ())
            x = random.uniform(key, ()) if kind == "uniform" else random.bernoulli(key)
            return x

        def once(key, xs):
            for x in xs:
                y = random.normal(key, ())
                break
            return y

        def either(key, flag):
            try:
                return random.normal(key, ())
            except ValueError:
                return random.uniform(key, ())
    """) == []


def test_quiet_when_it_cannot_follow_the_key():
    assert lines("""
        import jax

        def init(model, x, state):
            key = jax.random.key(0)
            params = model.init(key, x)  # an unknown object's method: not a known use
            key, dropout_key = jax.random.split(key)
            a = jax.random.normal(state.rng, ())
            b = jax.random.normal(state.rng, ())  # attributes are not tracked
            return params, dropout_key, a, b
    """) == []


def test_quiet_on_fixed_key_under_periodic_guard():
    assert lines("""
        import jax

        def train(key, params, batches, train_step, sample, eval_every=100):
            key, sample_key = jax.random.split(key)
            for step, batch in enumerate(batches):
                key, step_key = jax.random.split(key)
                params = train_step(params, batch, step_key)
                if step % eval_every == 0:
                    images = jax.random.normal(sample_key, (8, 2))  # same samples at every eval
            return params
    """) == []


def test_quiet_on_key_carried_through_scan():
    assert lines("""
        import jax

        def simulate(key, x0, n):
            def step(carry, _):
                key, x = carry
                key, sub = jax.random.split(key)
                x = x + jax.random.normal(sub, x.shape)
                return (key, x), x
            return jax.lax.scan(step, (key, x0), None, length=n)
    """) == []


def test_message_names_both_calls():
    (message,) = messages("""
        import jax
        key = jax.random.key(0)
        a = jax.random.normal(key, (2,))
        b = jax.random.bernoulli(key, 0.5, (2,))
        c = a * b
    """)
    assert "`jax.random.bernoulli(key, 0.5, (2,))`" in message
    assert "`jax.random.normal(key, (2,))`" in message


def test_quiet_on_the_same_key_in_a_timed_benchmark_loop():
    assert lines("""
        import time
        import jax

        def sample(key, shape):
            return jax.random.normal(key, shape)

        def bench(key, shape, repeats=10):
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                sample(key, shape).block_until_ready()
                times.append(time.perf_counter() - start)
            return times
    """) == []


def test_flax_module_init_and_apply_consume_their_keys():
    assert lines("""
        import jax
        import flax.linen as nn

        class MLP(nn.Module):
            @nn.compact
            def __call__(self, x, train: bool = False):
                x = nn.Dense(16)(x)
                return nn.Dropout(0.5, deterministic=not train)(x)

        def setup(x):
            key = jax.random.key(0)
            model = MLP()
            params = model.init(key, x)
            y = model.apply(params, x, train=True, rngs={"dropout": key})
            rng, init_rng = jax.random.split(key)
            params = model.init(init_rng, x)
            rng, dropout_rng = jax.random.split(rng)
            z = model.apply(params, x, train=True, rngs={"dropout": dropout_rng})
            return y, z
    """) == [15]  # flax's init folds module paths into its key: reusing it after init is harmless


def test_quiet_on_determinism_checks_in_one_assertion():
    assert lines("""
        import jax
        import numpy as np

        def test_sampler_is_deterministic():
            key = jax.random.key(0)
            assert (jax.random.normal(key, (3,)) == jax.random.normal(key, (3,))).all()
            np.testing.assert_allclose(jax.random.uniform(key), jax.random.uniform(key))
    """) == [7]  # within each assertion the reuse is the point; across the two it is a reuse


def test_quiet_on_a_network_initialised_twice_to_start_equal():
    # an online and a target network that must start with the same weights
    assert lines("""
        import jax
        import flax.linen as nn

        class Critic(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.Dense(1)(x)

        def make_states(key, obs):
            critic = Critic()
            online = critic.init(key, obs)
            target = critic.init(key, obs)
            return online, target
    """) == []


def test_quiet_on_candidates_compared_on_the_same_key():
    # common random numbers: each setting is trained and evaluated on the same randomness
    assert lines("""
        import jax
        import jax.numpy as jnp

        def train(key, lr):
            w = jax.random.normal(key, (3,))
            return w * lr

        def compare(key, settings):
            slow = train(key, 0.01)
            fast = train(key, 0.1)
            results = []
            for lr in settings:
                results.append(train(key, lr))
            return slow, fast, results
    """) == []


def test_still_reported_same_function_chained_repeated_or_in_a_training_loop():
    assert lines("""
        import jax
        import jax.numpy as jnp

        def dropout(key, x):
            return jnp.where(jax.random.bernoulli(key, 0.9, x.shape), x, 0.0)

        def forward(key, x):
            h = dropout(key, x)
            return dropout(key, h)

        def two_draws(key, x):
            a = dropout(key, x)
            b = dropout(key, x)
            return a + b

        def fit(key, w, batches):
            for x in batches:
                w = w - 0.1 * dropout(key, x) * w
            return w
    """) == [9, 13, 18]


def test_key_captured_by_a_lambda_and_used_again_directly():
    assert lines("""
        import jax

        def sample(shape):
            key = jax.random.key(0)
            noise = lambda s: jax.random.normal(key, s)
            a = noise(shape)
            b = jax.random.uniform(key, shape)
            return a, b

        def fresh(key, shape):
            key, sub = jax.random.split(key)
            noise = lambda s: jax.random.normal(sub, s)
            a = noise(shape)
            b = jax.random.uniform(key, shape)
            return a, b
    """) == [7]


def test_candidates_compared_on_one_key_with_other_draws_in_between():
    # the same training function on the same key for each setting, evaluation keys split in between
    assert lines("""
        import jax

        def train(key, setting):
            return jax.random.normal(key, (3,)) * setting

        def study(key):
            first = train(key, 0.1)
            eval_keys = jax.random.split(key, 8)
            second = train(key, 0.2)
            return first, second, eval_keys
    """) == [8]


def test_a_draw_thrown_away_is_not_a_use():
    assert lines("""
        import jax

        def f(key):
            x = jax.random.uniform(key, (3,))
            jax.random.split(key, 3)
            return x
    """) == []


def test_quiet_on_a_benchmark_repeating_a_jitted_draw_and_on_paired_choices():
    assert lines("""
        import jax

        sample = jax.jit(lambda key, n: jax.random.normal(key, (n,)))

        def bench(key, state):
            sample(key, 1000).block_until_ready()
            while state:
                sample(key, 1000)
            sample(key, 1000).block_until_ready()

        def batch(key, xs, ys, n):
            x = jax.random.choice(key, xs, (n,), replace=False)
            y = jax.random.choice(key, ys, (n,), replace=False)
            return x, y
    """) == []


def test_still_reported_draws_that_differ_in_more_than_the_array():
    assert lines("""
        import jax

        def batch(key, xs, n):
            x = jax.random.choice(key, xs, (n,))
            y = jax.random.choice(key, xs, (2 * n,))
            used = jax.random.normal(key, (n,))
            kept = jax.random.normal(key, (2 * n,))
            return x, y, used, kept
    """) == [5, 7]


def test_a_sampler_that_splits_first_shares_no_bits_with_another_sampler():
    """randint (and choice without `p`, permutation) draw from `split(key)`, not from `key`:
    after `uniform(key)` they share no bits with it, and no correlation is measured. The
    same sampler twice and choice with `p` (which draws `uniform(key)` itself) are still
    reported; the closing `split` derives new keys (see the draw-then-split case above)."""
    assert lines("""
        import jax

        def problem(key, n, p):
            coords = jax.random.uniform(key, (n, 2))
            demands = jax.random.randint(key, (n,), 1, 10)
            width = jax.random.randint(key, (), 4, 9)
            order = jax.random.permutation(key, n)
            weighted = jax.random.choice(key, n, (n,), p=p)
            noise = jax.random.uniform(key, (n,))
            key, sub = jax.random.split(key)
            return coords, demands, width, order, weighted, noise, key, sub
    """) == [6, 9]


def test_a_notebook_global_key_reused_for_unrelated_demonstrations_is_not_reported():
    # top level: two demo arrays never used together; a third pair is multiplied together
    source = """
import jax
import jax.numpy as jnp

key = jax.random.PRNGKey(0)
x = jax.random.normal(key, (10,))
print(jnp.sum(x))

y = jax.random.uniform(key, (3, 3))
print(y.T)

w = jax.random.normal(key, (10, 10))
out = w @ x
"""
    from jaxopt_audit.rules.jax501_prng_key_reuse import PrngKeyReuse
    assert [f.line for f in scan_text(source, [PrngKeyReuse])] == [11]


def test_example_inputs_drawn_for_init_may_share_a_key():
    # `nodes = normal(key, shape)` and `edges = normal(key, shape)` only give `init` shapes to
    # trace with; the same draws used as data are correlated inputs and still reported
    source = """
        import jax
        import flax.linen as nn

        def create(key, model: nn.Module, nodes_shape, edges_shape, data):
            nodes = jax.random.normal(key, nodes_shape)
            edges = jax.random.normal(key, edges_shape)
            params = model.init(key, nodes=nodes, edges=edges)
            return {use}
    """
    assert lines(source.replace("{use}", "params")) == []
    assert lines(source.replace("{use}", "params, model.apply(params, nodes=nodes, edges=edges)")) == [6]


def test_flax_init_folds_paths_into_its_key_and_example_inputs_feed_init():
    """An actor and a critic initialised from one key get independent parameters in flax (each
    submodule's path is folded into the key), and a draw made as init's example input never
    meets the parameters. Two draws from the key around them still meet each other."""
    source = """
        import jax
        import flax.linen as nn

        def build(actor, critic, obs_shape):
            key = jax.random.key(0)
            obs = jax.random.normal(key, obs_shape)
            actor_params = actor.init(key, obs)
            critic_params = critic.init(key, obs, obs[..., :2])
            return actor_params, critic_params, actor.apply(actor_params, obs)
    """
    assert lines(source) == []
    extra = "            obs = obs + jax.random.uniform(key, obs_shape)\n"
    noisy = source.replace("            return actor_params,", extra + "            return actor_params,")
    assert lines(noisy) == [9]


def test_a_key_advanced_by_splitting_after_each_draw_is_not_reused():
    """A generation loop draws with `key` and then advances it (`key = split(key)[0]` at the top
    of the next iteration, or `key, sub = split(key)` after the draw): the split derives new
    keys. A loop that splits the same, never rebound key every iteration is still reported."""
    assert lines("""
        import jax

        def generate(key, logits, n):
            out = []
            for _ in range(n):
                key = jax.random.split(key)[0]
                out.append(jax.random.categorical(key, logits))
            return out

        def reset(key, n):
            x = jax.random.uniform(key, (n,))
            key, sub = jax.random.split(key)
            return x, key, sub

        def stuck(key, logits, n):
            out = []
            for _ in range(n):
                sub = jax.random.split(key)[1]
                out.append(jax.random.categorical(sub, logits))
            return out
    """) == [18]


def test_a_key_split_afresh_each_iteration_is_not_reused_across_iterations():
    # `epoch_key, batch_key = split(epoch_key)` at the top of each iteration, then the
    # same sampler twice on `batch_key` (for x and for y: the same indices on purpose). Both
    # uses are in one iteration: not "every iteration draws the same numbers". The same two
    # draws with a key bound outside the loop are still a loop reuse.
    assert messages("""
        import jax

        def sample(key, data, n):
            return data[jax.random.choice(key, data.shape[0], (n,))]

        def train(key, xs, ys, steps, step_fn, params):
            for _ in range(steps):
                key, batch_key = jax.random.split(key)
                xb = sample(batch_key, xs, 32)
                yb = sample(batch_key, ys, 32)
                params = step_fn(params, xb, yb)
            return params
    """) == []
    found = messages("""
        import jax

        def train(key, xs, steps, step_fn, params):
            for _ in range(steps):
                noise = jax.random.normal(key, xs.shape)
                params = step_fn(params, xs + noise)
            return params
    """)
    assert len(found) == 1 and "every iteration" in found[0]


def test_taking_another_key_of_one_split_each_iteration_is_not_reuse():
    # `layer_key = keys[1] if i == 0 else split(keys[1], n)[i]` builds one layer per
    # iteration from a different element of the same split. Taking a fixed element every
    # iteration is still reported.
    assert lines("""
        import jax

        def init(key, n):
            keys = jax.random.split(key, 4)
            layers = []
            for i in range(n):
                layer_key = jax.random.split(keys[1], n)[i]
                layers.append(jax.random.normal(layer_key, (3,)))
            return layers

        def init_same(key, n):
            keys = jax.random.split(key, 4)
            layers = []
            for i in range(n):
                layer_key = jax.random.split(keys[1], n)[0]
                layers.append(jax.random.normal(layer_key, (3,)))
            return layers
    """) == [15]


def test_a_key_the_inner_loop_re_splits_is_fresh_for_the_next_episode():
    # Episodes of a rollout, each resetting from `split(rng, n)` while the step loop
    # re-splits `rng` every step. A `for` loop runs at least once, so the next episode's split
    # sees a fresh `rng`. The inner split right after the reset split is a real overlap
    # (`split(k)[i] == split(k, n)[i]`) and stays reported, and so does an episode loop whose
    # step loop never re-splits.
    assert lines("""
        import jax

        def rollout(rng, reset, step, policy, episodes, horizon):
            for _ in range(episodes):
                state = reset(jax.random.split(rng, 4))
                for t in range(horizon):
                    act_rng, rng = jax.random.split(rng)
                    state = step(state, policy(state, act_rng))
            return state

        def rollout_fixed(rng, reset, step, policy, episodes, horizon):
            for _ in range(episodes):
                state = reset(jax.random.split(rng, 4))
                for t in range(horizon):
                    state = step(state, policy(state, t))
            return state
    """) == [7, 13]


def test_restoring_a_saved_key_every_k_steps_replays_the_data_on_purpose():
    # `if step % cycle == 0: key = saved` cycles the same batches every `cycle` steps.
    # Restoring it on every step, unguarded, replays one batch forever and is reported.
    assert lines("""
        import jax

        def cycled(key, update, state, steps, cycle):
            saved = key
            for step in range(steps):
                if step % cycle == 0:
                    key = saved
                batch_key, key = jax.random.split(key)
                state = update(state, jax.random.normal(batch_key, (8,)))
            return state

        def every_step(key, update, state, steps):
            saved = key
            for step in range(steps):
                key = saved
                batch_key, key = jax.random.split(key)
                state = update(state, jax.random.normal(batch_key, (8,)))
            return state
    """) == [16]


def test_two_ifs_on_one_setting_equal_to_different_literals_never_both_draw():
    # `if noise == "uniform": ... uniform(key)` then `if noise == "gaussian": ...
    # normal(key)`. Two tests that can both hold (different names) draw twice and are reported.
    assert lines("""
        import jax

        def add_noise(x, key, noise):
            if noise == "uniform":
                x = x + jax.random.uniform(key, x.shape)
            if noise == "gaussian":
                x = x + jax.random.normal(key, x.shape)
            return x

        def add_both(x, key, uniform, gaussian):
            if uniform == "yes":
                x = x + jax.random.uniform(key, x.shape)
            if gaussian == "yes":
                x = x + jax.random.normal(key, x.shape)
            return x
    """) == [14]


def test_a_key_used_after_its_split_is_named_with_the_use_that_consumed_it():
    # `key, sub = split(key)` then `fill(state, key)`, which splits it too: the loop
    # does re-split `key`,
    # so the message names the use that hands the next iteration a consumed key instead of
    # saying the key is never re-split (which it still says for a key never rebound).
    found = messages("""
        import jax

        def fill(state, key):
            key, sub = jax.random.split(key)
            return state + jax.random.normal(sub, state.shape)

        def warm_up(state, key, n):
            for _ in range(n):
                key, sub = jax.random.split(key)
                state = fill(state, key)
            return state

        def never_rebound(state, key, n):
            for _ in range(n):
                state = state + jax.random.normal(key, state.shape)
            return state
    """)
    assert len(found) == 2
    assert "which `fill(state, key)` already consumed in the previous iteration" in found[0]
    assert "never re-split" in found[1]


def test_a_fixed_evaluation_key_each_epoch_gives_comparable_scores():
    # `evaluate(params, valid_key)` every epoch, or a key named `test_key`: the
    # same evaluation randomness each time, so the scores compare. A training draw on a fixed
    # key every epoch is still reported.
    assert lines("""
        import jax

        def evaluate(params, key):
            return params + jax.random.normal(key, (3,))

        def elbo(params, key):
            return params - jax.random.uniform(key, (3,))

        def fit(params, key, epochs, update):
            key, valid_key, test_key = jax.random.split(key, 3)
            for epoch in range(epochs):
                key, sub = jax.random.split(key)
                params = update(params, sub)
                print(evaluate(params, valid_key), elbo(params, test_key))
            return params

        def fit_fixed(params, key, epochs, update):
            for epoch in range(epochs):
                params = update(params, jax.random.normal(key, (3,)))
            return params
    """) == [19]


def test_quiet_on_stand_in_inputs_of_a_measurement():
    # Random inputs for a timed comparison drawn from one key (`u`, `delta`,
    # `B`, `C` of a kernel benchmark; mock positions and forces for a batching benchmark). A
    # measurement needs their shapes; equal numbers change nothing it reports. Quiet in a
    # function that reads a timer, one named for a benchmark or mock data, and a `__main__`
    # block that reads a timer. The same draws in an untimed helper, or a draw handed straight
    # to a computation, are still reported.
    assert lines("""
import time
import jax
import jax.numpy as jnp

def bench_matmul(n):
    key = jax.random.PRNGKey(0)
    a = jax.random.normal(key, (n, n)) / 10
    b = jax.random.normal(key, (n, n))
    start = time.perf_counter()
    (a @ b).block_until_ready()
    return time.perf_counter() - start

def make_mock_batch(n):
    key = jax.random.PRNGKey(1)
    return {"x": jax.random.normal(key, (n, 3)), "y": jax.random.normal(key, (n,))}

def make_batch(key, n):
    x = jax.random.normal(key, (n, 3))
    y = jax.random.normal(key, (n,))
    return x, y

def timed_step(step, params, key):
    start = time.time()
    x = jax.random.normal(key, (8, 3))
    params = step(params, jax.random.normal(key, (8, 3)) + x)
    return params, time.time() - start

if __name__ == "__main__":
    key = jax.random.PRNGKey(0)
    u = jax.random.normal(key, (64, 64))
    v = jax.random.normal(key, (64, 64))
    t0 = time.time()
    jnp.dot(u, v).block_until_ready()
    print(time.time() - t0)
""") == [19, 25]


def test_quiet_on_a_modules_smoke_test_and_reported_in_a_script_that_trains():
    # A layer module ends with a `__main__` smoke test drawing its example
    # inputs from one key, running the layer once and printing shapes. A `__main__` block that
    # trains in a loop is a script whose draws matter: reported.
    smoke = """
import jax
import jax.numpy as jnp

def layer(w, x, t):
    return jnp.tanh(x @ w + t)

if __name__ == "__main__":
    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (4, 3))
    t = jax.random.normal(key, (4, 2))
    w = jax.random.normal(key, (3, 2))
    print(layer(w, x, t).shape)
"""
    assert lines(smoke) == []
    assert lines(smoke.replace("    print(layer(w, x, t).shape)", """    for step in range(100):
        w = w - 0.1 * jax.grad(lambda w: jnp.sum(layer(w, x, t)))(w)""")) == [10, 11]


def test_quiet_on_a_draw_stored_under_a_name_that_says_it_is_a_stand_in():
    # A genetic algorithm draws its population with `r_init`, then draws
    # `dummy_indices` with the same key for a warm-up call whose result is thrown away.
    source = """
        import jax

        def random_configs(key, n):
            return jax.random.uniform(key, (n, 12)) * 2.0 - 1.0

        def evolve(rng, simulate, pop_size):
            rng, r_init = jax.random.split(rng)
            population = random_configs(r_init, pop_size)
            {name} = jax.random.randint(r_init, (pop_size, 3), 0, pop_size)
            _ = simulate(population, {name})
            return population
    """
    assert lines(source.replace("{name}", "dummy_indices")) == []
    assert lines(source.replace("{name}", "opponents")) == [9]


def test_an_evaluation_or_a_plot_sharing_the_training_key_is_not_a_reuse():
    # `evaluate_loss(params, key, test_batch)` every k steps with the key the next
    # training step splits, `test(params, data, key)` plotting samples: a logged score's noise
    # matches one step's, which changes no result.
    source = """
        import jax

        def loss(params, key, batch):
            return jax.random.normal(key, batch.shape).sum() * params

        def {name}(params, key, batch):
            return loss(params, key, batch)

        def fit(params, key, batches, held_out):
            for i, batch in enumerate(batches):
                key, sub = jax.random.split(key)
                params = params - 0.1 * jax.grad(loss)(params, sub, batch)
                if i % 100 == 0:
                    print({name}(params, key, held_out))
            return params
    """
    assert lines(source.replace("{name}", "evaluate_loss")) == []
    assert lines(source.replace("{name}", "plot_samples")) == []
    assert lines(source.replace("{name}", "refine")) == [11]  # the next split meets it
    assert lines(source.replace("{name}", "train_test_split")) == [11]  # training words win
    # a training loop that never splits its key is still reported, evaluation or not
    unsplit = """
        import jax

        def loss(params, key, batch):
            return jax.random.normal(key, batch.shape).sum() * params

        def test(params, key, batch):
            return loss(params, key, batch)

        def fit(params, key, batches, held_out):
            for i, batch in enumerate(batches):
                params = params - 0.1 * jax.grad(loss)(params, key, batch)
                if i % 100 == 0:
                    print(test(params, key, held_out))
            return params
    """
    assert lines(unsplit) == [11]


def test_quiet_on_inputs_of_a_program_lowered_but_never_run():
    # An HLO dump draws its scan's inputs from one key, then `jax.jit(f).lower()`s it
    # and writes the text; only shapes and dtypes reach the output.
    source = """
        import jax

        def dump(path, n):
            key = jax.random.key(0)
            p = jax.random.normal(key, (n, 4))
            q = jax.random.normal(key, (n, 4))
            lowered = jax.jit(lambda: p @ q.T).{how}
            return lowered
    """
    assert lines(source.replace("{how}", "lower()")) == []
    assert lines(source.replace("{how}", "__call__()")) == [6]


def test_example_inputs_for_init_beside_a_nested_forward_of_the_same_names_or_never_read():
    # Network builders draw `x` and `t` from one key as example inputs for `init`; a
    # nested `def forward_fn(x, t)` has its own `x` and `t`, and one builder initialises on zeros,
    # never reading the draws.
    source = """
        import haiku as hk
        import jax
        import jax.numpy as jnp

        def make_net(key, n):
            x = jax.random.uniform(key, (n, 2))
            t = jax.random.uniform(key)

            def forward_fn(x, t):
                return hk.Linear(2)(x * t)

            net = hk.without_apply_rng(hk.transform(forward_fn))
            params = net.init(key, {inputs})
            return params, net.apply
    """
    assert lines(source.replace("{inputs}", "x, t")) == []
    assert lines(source.replace("{inputs}", "jnp.zeros((n, 2)), 1.0")) == []
    assert lines(source.replace("{inputs}", "x, t").replace("return params, net.apply",
                                                          "return params, net.apply, x * t")) == [7]


def test_keys_split_off_and_never_used_are_not_a_use_of_the_key():
    # Dataset builders split `key` into `subkeys` that nothing reads (left over from an
    # edit), then draw their noise from `key`: its only real use.
    source = """
        import jax

        def toy_dataset(key, n):
            subkeys = jax.random.split(key, n)
            noise = jax.random.normal(key, (n,))
            return {returned}
    """
    assert lines(source.replace("{returned}", "noise")) == []
    # the split keys used after all: the noise shares bits with them
    assert lines(source.replace("{returned}", "noise, subkeys")) == [5]
    # kept on an object, they are read elsewhere
    kept = source.replace("subkeys = ", "toy_dataset.keys = ").replace("{returned}", "noise")
    assert lines(kept) == [5]


def test_a_use_whose_result_is_discarded_draws_numbers_nobody_sees():
    # A sampler compiles its step on `split(rng, n)` into `_` before the timed run on
    # `rng`.
    source = """
        import jax

        def sample(rng, x, step):
            {target} = jax.vmap(step)(jax.random.split(rng, 4), x)
            out = x + jax.random.normal(rng, x.shape)
            return out
    """
    assert lines(source.replace("{target}", "_")) == []
    assert lines(source.replace("{target}", "warm")) == [5]


def test_two_ifs_on_disjoint_ranges_of_one_value_never_both_draw():
    # A proposal drawn with `normal(key)` under `if self.D == 1:` and with
    # `multivariate_normal(key, ...)` under `if self.D > 1:`. Overlapping ranges
    # can both hold: reported.
    source = """
        import jax

        class Proposal:
            def draw(self, x, key):
                if self.D {first}:
                    xp = jax.random.normal(key)
                if {second}:
                    xp = jax.random.uniform(key, x.shape)
                return xp
    """
    assert lines(source.replace("{first}", "== 1").replace("{second}", "self.D > 1")) == []
    assert lines(source.replace("{first}", "< 2").replace("{second}", "2 <= self.D")) == []
    assert lines(source.replace("{first}", ">= 1").replace("{second}", "self.D > 0")) == [8]


def test_draws_on_the_two_sides_of_one_flag_never_both_run():
    # A notebook splits device keys from `rng_key` under `if use_tpu:` and, in its
    # training loop's `else:` of another `if use_tpu:`, draws a batch from `rng_key`.
    source = """
        import jax

        def run(rng_key, use_tpu, x):
            if use_tpu:
                keys = jax.random.split(rng_key, 8)
            if use_tpu:
                x = x + jax.random.normal(keys[0], x.shape)
            {branch}
                x = x + jax.random.normal(rng_key, x.shape)
            return x
    """
    assert lines(source.replace("{branch}", "else:")) == []
    assert lines(source.replace("{branch}", "if not use_tpu or x.ndim:")) == [9]


def test_a_split_rebound_before_anything_reads_it_is_no_use_of_the_key():
    # A UNet's constructor splits `key` into 12, then, before reading them, binds
    # `keys` again to a longer split of the same key; the first split is dead code. Rebound
    # only under an `if`, or read before the second split, it is still a use.
    assert lines("""
        import jax.random as jr

        def build(key, n):
            keys = jr.split(key, 12)
            width = n * 2
            keys = jr.split(key, n + 5)
            return [jr.normal(k, (width,)) for k in keys]

        def build_if(key, n):
            keys = jr.split(key, 12)
            if n > 3:
                keys = jr.split(key, n + 5)
            return [jr.normal(k, (3,)) for k in keys]

        def build_read(key, n):
            keys = jr.split(key, 12)
            first = keys[0]
            keys = jr.split(key, n + 5)
            return first, keys
    """) == [12, 18]


def test_layers_built_from_one_key_are_reported_and_the_loop_reuse_is_named_over_a_one_off():
    found = scan_text("""
        import jax
        import jax.numpy as jnp

        def init_layer(key, n_in, n_out):
            return jax.random.normal(key, (n_in, n_out)), jnp.zeros(n_out)

        def init_mlp(key, layer_sizes):
            params = []
            for n_in, n_out in zip(layer_sizes[:-1], layer_sizes[1:]):
                params.append(init_layer(key, n_in, n_out))
            return params

        def walk(key, x, n):
            start = x + jax.random.normal(key, x.shape)
            for _ in range(n):
                x = x + jax.random.normal(key, x.shape)
            return start, x
    """, RULE)
    assert [f.line for f in found] == [10, 16]
    assert "every iteration of the loop at line 9" in found[0].message
    assert "every iteration of the loop at line 15 (after `jax.random.normal(key, x.shape)` at line 14" \
        in found[1].message


def test_quiet_on_a_benchmark_warm_up_before_the_timed_repeats():
    assert lines("""
        import time
        import jax

        @jax.jit
        def kernel(keys):
            return jax.vmap(lambda k: jax.random.normal(k, (8,)).sum())(keys)

        def bench(key, repeats):
            keys = jax.random.split(key, 16)
            kernel(keys).block_until_ready()
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                kernel(keys).block_until_ready()
                times.append(time.perf_counter() - start)
            return times
    """) == []


def test_a_timed_simulation_whose_initial_state_and_field_share_a_key_is_reported():
    # the timer makes the function look like a benchmark, but the first draw is the state it evolves
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def simulate(u, kappa):
            return jax.lax.fori_loop(0, 100, lambda _, u: u + 0.1 * kappa * jnp.roll(u, 1), u)

        def main():
            key = jax.random.key(9)
            u = jax.random.normal(key, (16, 16))
            kappa = jax.random.uniform(key, (16, 16))
            start = time.perf_counter()
            u = simulate(u, kappa).block_until_ready()
            return u, time.perf_counter() - start
    """) == [12]
