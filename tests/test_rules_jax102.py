"""JAX102 jit-in-loop: the shapes docs/rules.md lists, a benchmark's inline `jax.jit(selu)(x)`, and the
"Quiet on" clauses (module level, `__init__`, a factory called once, memoisation, traced code)."""

from __future__ import annotations

import pytest

from jaxopt_audit.rules.jax102_jit_in_loop import JitInLoop

from conftest import backend_compiles, scanners

findings, lines = scanners([JitInLoop])


def test_inline_jit_in_a_timing_loop_reuses_the_cache_but_not_the_wrapper():
    found = findings("""
        import jax
        import jax.numpy as jnp

        def selu(x, alpha=1.67, lmbda=1.05):
            return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

        x_jnp = jnp.ones((3000, 3000))
        for _ in range(100):
            jax.jit(selu)(x_jnp).block_until_ready()
    """)
    assert [f.line for f in found] == [9]
    assert "JAX's cache" in found[0].message and "slow dispatch" in found[0].message


@pytest.mark.parametrize("wrapped", [
    "lambda p: loss_fn(p, batch)",
    "functools.partial(loss_fn, batch=batch)",
    "jax.grad(loss_fn)",
])
def test_a_new_function_each_step_is_traced_and_compiled_each_step(wrapped):
    found = findings(f"""
        import functools
        import jax
        import jax.numpy as jnp

        def loss_fn(p, batch):
            return jnp.mean((batch @ p) ** 2)

        def train(params, batches):
            for batch in batches:
                loss = jax.jit({wrapped})(params)
            return loss
    """)
    assert [f.line for f in found] == [10]
    assert "traced and compiled again on every iteration" in found[0].message


def test_jit_in_an_unjitted_function_called_every_step_names_the_loop():
    found = findings("""
        import jax
        import jax.numpy as jnp

        def predict(params, x):
            def forward(x):
                return jnp.tanh(x @ params)
            return jax.jit(forward)(x)

        def evaluate(params, xs):
            outs = []
            for x in xs:
                outs.append(predict(params, x))
            return outs
    """)
    assert [f.line for f in found] == [7]
    assert "`predict`" in found[0].message and "for x in xs" in found[0].message


def test_aliases_pmap_and_a_decorated_def_in_the_loop_are_found():
    assert lines("""
        from jax import jit as J, pmap
        import jax.numpy as jnp

        def run(xs):
            out = []
            for x in xs:
                @J
                def double(v):
                    return v * 2
                out.append(double(x) + pmap(lambda v: jnp.sin(v))(x))
            return out
    """) == [7, 10]


def test_a_fresh_pmap_of_a_function_made_once_is_quiet_and_a_fresh_jit_is_not():
    # pmap's compiled code is cached for the same function and its new wrapper costs ~20 us a
    # call (the rule's Measured); jit's fresh wrapper misses the fast path, about 15x a hoisted one
    source = """
        import jax
        import jax.numpy as jnp

        def update(w, g):
            return w - 0.1 * g

        def train(w, grads):
            for g in grads:
                w = jax.{wrapper}(update)(w, g)
            return w
    """
    assert lines(source.replace("{wrapper}", "pmap")) == []
    assert lines(source.replace("{wrapper}", "jit")) == [9]


def test_quiet_on_module_level_init_and_a_factory_called_once():
    assert lines("""
        import jax
        import jax.numpy as jnp

        def loss(w, x):
            return jnp.mean((x @ w) ** 2)

        grad_fn = jax.jit(jax.grad(loss))

        def make_step(lr):
            def step(w, x):
                return w - lr * grad_fn(w, x)
            return jax.jit(step)

        class Trainer:
            def __init__(self, lr):
                self.step = jax.jit(self._step)
                self.lr = lr

            def _step(self, w, x):
                return w - self.lr * grad_fn(w, x)

        def train(w, batches, lr=0.1):
            step = make_step(lr)
            trainer = Trainer(lr)
            for x in batches:
                w = step(w, x)
                w = trainer.step(w, x)
            return w
    """) == []


def test_quiet_under_memoisation_periodic_guard_and_in_cached_functions():
    assert lines("""
        import functools
        import jax
        import jax.numpy as jnp

        _compiled = {}

        @functools.lru_cache(maxsize=None)
        def compiled_for(n):
            return jax.jit(lambda x: jnp.sum(x[:n]))

        def get(n):
            if n not in _compiled:
                _compiled[n] = jax.jit(lambda x: x * n)
            return _compiled[n]

        def run(xs, n):
            outs = []
            for step, x in enumerate(xs):
                outs.append(get(n)(x) + compiled_for(n)(x))
                if step % 1000 == 0:
                    report = jax.jit(jnp.linalg.norm)(x)
            return outs
    """) == []


def test_quiet_in_traced_code_and_single_pass_loops():
    assert lines("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def outer(x):
            for _ in range(10):
                x = jax.jit(jnp.sin)(x)
            return x

        def check(x):
            for _ in range(1):
                y = jax.jit(jnp.cos)(x)
            return y
    """) == []


def test_a_short_literal_loop_is_reported_and_named():
    # five passes compile five times: a small cost, but a fact of the code (impact says how small)
    found = findings("""
        import jax
        import jax.numpy as jnp

        def refine(x, lr):
            for _ in range(5):
                x = jax.jit(lambda v: v - lr * jnp.sin(v))(x)
            return x
    """)
    assert [f.line for f in found] == [6]
    assert "for _ in range(5)" in found[0].message


def test_quiet_on_one_compilation_per_configuration():
    assert lines("""
        import itertools
        import numpy as np
        import jax
        import jax.numpy as jnp

        def make_train(config):
            def train(key):
                return jax.random.normal(key, (config["width"],)).sum()
            return jax.jit(train)

        def tune(x, configs, key, shapes):
            best = []
            for blocks, tile in itertools.product((4, 8, 16), (128, 256)):
                @jax.jit
                def kernel(v):
                    return jnp.reshape(v, (blocks, -1))[:, :tile].sum()
                best.append(kernel(x))
            for config in configs:
                best.append(make_train(config)(key))
            executables = {}
            for shape in shapes:
                executables[shape] = jax.jit(jnp.tanh).lower(jnp.zeros(shape)).compile()
            return best, executables
    """) == []


def _compiles_during(body, calls: int = 3) -> int:
    """Backend compilations while `body` runs `calls` times, after one warm-up run."""
    body()
    with backend_compiles() as compiles:
        for _ in range(calls):
            body()
    return len(compiles)


@pytest.mark.slow
def test_the_two_messages_match_what_jax_does():
    """The rule says a fresh wrapper of the same def reuses the compiled code, and a new function
    object (lambda, partial, bound method) compiles again: check both on the installed JAX."""
    jax = pytest.importorskip("jax")
    import functools

    import jax.numpy as jnp

    class Model:
        def __init__(self, scale: float) -> None:
            self.scale = scale

        def apply(self, v):
            return jnp.sin(v) * self.scale

    x = jnp.ones((8,))
    model = Model(2.0)

    def scaled(v, s):
        return jnp.sin(v) * s

    assert _compiles_during(lambda: jax.jit(jnp.sin)(x)) == 0
    assert _compiles_during(lambda: jax.jit(Model.apply, static_argnums=0)(model, x)) == 0
    assert _compiles_during(lambda: jax.jit(lambda v: jnp.sin(v) * 2.0)(x)) == 3
    assert _compiles_during(lambda: jax.jit(functools.partial(scaled, s=2.0))(x)) == 3
    assert _compiles_during(lambda: jax.jit(model.apply)(x)) == 3


def test_quiet_when_each_wrapper_serves_many_calls():
    # a benchmark builds one wrapper per case and hands it to its timer (warm-up and repeats);
    # a server builds one per batch size and keeps it in a closure; a builder returns it
    assert lines("""
        import jax
        import jax.numpy as jnp

        def timed(fn, repeats):
            fn()
            return [fn() for _ in range(repeats)]

        def kernel(x, scale):
            return jnp.tanh(x) * scale

        def bench(sizes, scales):
            for n in sizes:
                for s in scales:
                    x = jnp.ones((n, n))
                    fn = jax.jit(lambda: kernel(x, s))
                    print(timed(fn, 10))
                    again = jax.jit(lambda: kernel(x, 2 * s))
                    for _ in range(10):
                        again()

        class Server:
            def serving_fn(self, batch_size):
                compiled = jax.jit(lambda x: kernel(x, batch_size))

                def serve(x):
                    return compiled(x)
                return serve

            def load(self, batch_sizes):
                for b in batch_sizes:
                    self.fns = {b: self.serving_fn(b)}
                    print(self.fns[b](jnp.ones((b, 4))))

        def make_step(scale):
            @jax.jit
            def step(x):
                return kernel(x, scale)
            return step

        def sweep(scales, x):
            for s in scales:
                step = make_step(s)
                for _ in range(100):
                    x = step(x)
            return x
    """) == []


def test_quiet_on_jit_in_a_builder_that_returns_a_function_per_configuration():
    # the builder sets a case up (state made by an inline jitted init) and returns what the
    # caller times: it runs once per configuration, not once per step
    assert lines("""
        import jax
        import jax.numpy as jnp

        def init(key, n):
            return jax.random.normal(key, (n,))

        def build_case(key, n):
            state = jax.jit(init, static_argnums=1)(key, n)
            return lambda: jnp.sum(state ** 2)

        def time_all(key, sizes):
            for n in sizes:
                run = build_case(key, n)
                print(run())
    """) == []


def test_quiet_on_a_recovery_branch_under_a_divergence_test():
    # re-initialising after a NaN loss happens on a few steps of a run, not on every one
    assert lines("""
        import math
        import jax
        import jax.numpy as jnp

        def fresh_state(key):
            @jax.jit
            def init(key):
                return jax.random.normal(key, (8,))
            return init(key)

        @jax.jit
        def train_step(state):
            return state * 0.9, jnp.sum(state)

        def train(key, steps):
            state = fresh_state(key)
            for step in range(steps):
                state, loss = train_step(state)
                if math.isnan(float(loss)):
                    state = fresh_state(jax.random.fold_in(key, step))
            return state
    """) == []


def test_a_wrapper_rebuilt_and_called_each_step_is_still_reported():
    assert lines("""
        import jax
        import jax.numpy as jnp

        def loss(w, x):
            return jnp.mean((x @ w) ** 2)

        def fit(w, batches, lr):
            for x in batches:
                grad = jax.jit(jax.grad(loss))  # <- JAX102: called twice, rebuilt every step
                g = grad(w, x)
                w = w - lr * g - lr * grad(w, 2 * x)
            return w
    """) == [9]


def test_a_wrapper_rebuilt_alike_on_each_epoch_is_reported_and_one_per_configuration_is_not():
    found = findings("""
        import jax
        import jax.numpy as jnp

        def update(p, x, lr):
            return p - lr * jnp.mean(x) * p

        def train(params, batches, lr):
            for epoch in range(5):
                step = jax.jit(lambda p, x: update(p, x, lr))
                for x in batches:
                    params = step(params, x)
            return params

        def train_decorated(params, batches, lr):
            for epoch in range(5):
                @jax.jit
                def step(p, x):
                    return update(p, x, lr)
                for x in batches:
                    params = step(params, x)
            return params

        def sweep(params, batches, rates):
            for lr in rates:
                step = jax.jit(lambda p, x: update(p, x, lr))
                for x in batches:
                    params = step(params, x)
            return params
    """)
    assert [f.line for f in found] == [9, 16]
    assert all("for epoch in range(5)" in f.message and "compiled again" in f.message for f in found)


def test_a_wrapper_never_called_never_compiles():
    # A benchmark builds `jitted_loop = jax.jit(vmapped_loop, ...)` each run and then
    # calls `vmapped_loop` itself (nothing compiles).
    source = """
        import jax
        import jax.numpy as jnp

        def run(x):
            return jnp.cumsum(x)

        def bench(xs, runs=10):
            out = []
            for r in range(runs):
                jitted = jax.jit(run)
                out.append({call}(xs))
            return out
    """
    assert lines(source.replace("{call}", "run")) == []
    assert lines(source.replace("{call}", "jitted")) == [10]


def test_a_wrapper_rebuilt_each_epoch_around_a_scheduled_number_says_to_pass_it_as_an_argument():
    found = findings("""
        import jax
        import jax.numpy as jnp

        def update(c, x, lr):
            return c - lr * jnp.mean(x) * c

        def train(c, xs, epochs):
            for epoch in range(epochs):
                lr = 0.5 * 0.95 ** epoch
                step = jax.jit(lambda c, x: update(c, x, lr))
                for x in xs:
                    c = step(c, x)
            return c
    """)
    assert [f.line for f in found] == [10]
    assert "`lr` baked in as a constant" in found[0].message and "with `lr` as an argument" in found[0].message


BUILT_PER_CALL = """
import jax
import jax.numpy as jnp

def shift(x):
    return x - 0.1 * jnp.tanh(x)

class Agent:
    def __init__(self, n_rounds):
        self.n_rounds = n_rounds
        self.hoisted = jax.jit(shift)

    def improve(self, params, data):
        @jax.jit
        def inner(p, d):
            return jax.lax.fori_loop(0, 10, lambda _, q: q - 0.01 * jnp.mean(d) * q, p)
        return inner(params, data)

    def refine(self, params, data):
        return jax.jit(lambda p: p * jnp.mean(data))(params)

    def improve_hoisted(self, params):
        return self.hoisted(params)

    def train(self, key, params, pool):
        for r in range(self.n_rounds):
            key, sub = jax.random.split(key)
            data = jax.random.choice(sub, pool, (64,))
            params = self.improve(params, data)
            params = self.refine(params, data)
            params = self.improve_hoisted(params)
        return params
"""


def test_a_jit_built_in_a_method_that_a_loop_calls_is_reported_with_the_loop():
    found = findings(BUILT_PER_CALL)
    assert [f.line for f in found] == [13, 19]
    assert "each time `improve` runs, and `improve` is called on every iteration of the loop at line 25" \
        in found[0].message
    assert "traced and compiled again on every iteration" in found[1].message


def test_quiet_on_a_builder_per_configuration_and_a_builder_called_once():
    assert lines("""
import jax
import jax.numpy as jnp

def evaluate(params, width):
    @jax.jit
    def score(p):
        return jnp.sum(jnp.tanh(p[:width]))
    return score(params)

def make_step(lr):
    @jax.jit
    def step(p):
        return p - lr * p
    return step

def sweep(params, widths):
    results = []
    for width in widths:  # one program per width: compiling each is the point
        results.append(evaluate(fit(params, 20), width))
    return results

def fit(params, n):
    step = make_step(0.1)
    for _ in range(n):
        params = step(params)
    return params
""") == []


@pytest.mark.slow
def test_a_jit_built_per_call_compiles_on_every_call():
    """The claim behind the message: a jitted def built inside a function compiles on each call."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def improve(p):
        @jax.jit
        def inner(q):
            return q - 0.01 * jnp.mean(q) * q
        return inner(p)

    assert _compiles_during(lambda: improve(jnp.ones((8,)))) == 3


def test_a_solver_of_closures_called_by_the_time_loop_names_the_call():
    # the fresh closures are built where the solver is defined, and the loop's call is where they
    # are built again every step: the finding sits at the first and names the second
    source = """
import jax
import jax.numpy as jnp

def simulate(p, u, steps):
    def relax(p, u):
        def keep_going(state):
            return jnp.abs(state[0] - state[1]).max() > 1e-4

        def sweep(state):
            q = 0.25 * (jnp.roll(state[0], 1) + jnp.roll(state[0], -1)) - u
            return q, state[0]

        return jax.lax.while_loop(keep_going, sweep, (p, p + 1.0))[0]

    p = relax(p, u)
    for _ in range(steps):
        u = u - 0.1 * jnp.gradient(p)
        p = relax(p, u)
    return p, u
"""
    found = findings(source)
    assert [f.line for f in found] == [13]
    assert "the loop at line 16 calls it on every iteration (line 18)" in found[0].message
    fixed = source.replace("    def relax(p, u):\n", "    @jax.jit\n    def relax(p, u):\n")
    assert lines(fixed) == []
