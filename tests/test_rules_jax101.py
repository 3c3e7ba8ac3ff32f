"""JAX101 on gradient steps written out where they run: a derivative evaluated eagerly in a step
loop (inline or through a name bound to `jax.grad(f)`), a whole training step in a function
nothing jits, and the near misses that stay quiet (compiled derivatives, traced code, one-off
calls, guarded calls, loops over structure, an eager-versus-jit benchmark)."""

from __future__ import annotations

from jaxopt_audit.rules.jax101_missing_jit import MissingJit

from conftest import scanners

findings, lines = scanners([MissingJit])

LOSS = """
import time
import jax
import jax.numpy as jnp
import optax

def loss(params, x, y):
    return jnp.mean((jnp.tanh(x @ params["w"]) - y) ** 2)
"""


def test_inline_gradient_and_update_in_a_training_loop_is_one_finding_at_the_gradient():
    found = findings(LOSS + """
def fit(params, loader, model):
    optimizer = optax.adam(1e-3)
    state = optimizer.init(params)
    for epoch in range(10):
        for x, y in loader:
            value, grads = jax.value_and_grad(loss)(params, x, y)
            updates, state = optimizer.update(grads, state)
            params = optax.apply_updates(params, updates)
    return params
""")
    assert [f.line for f in found] == [14]  # not the loss's def, not a second finding at the update
    message = found[0].message
    assert message.startswith("`jax.value_and_grad(loss)` is evaluated eagerly on every iteration of the "
                              "loop at line 13")
    assert "`optimizer.update` (line 15) and `optax.apply_updates` (line 16)" in message
    assert "@jax.jit" in found[0].fix


def test_named_derivative_in_a_descent_loop_names_its_binding():
    found = findings("""
import jax

def minimise(x, energy, steps=1000, lr=0.01):
    force = jax.grad(energy)
    for _ in range(steps):
        x = x - lr * force(x)
    return x
""")
    assert [f.line for f in found] == [6]
    assert found[0].message.startswith("`force` (`jax.grad(energy)`, line 4) is evaluated eagerly")
    assert "optimizer update" not in found[0].message


def test_compiled_or_traced_derivatives_are_quiet():
    # jitted under a name, jitted inline, and inside a jitted step called in the loop
    assert lines(LOSS + """
grad_fn = jax.jit(jax.grad(loss))

@jax.jit
def step(params, x, y):
    g = jax.grad(loss)(params, x, y)
    return jax.tree.map(lambda p, q: p - 0.1 * q, params, g)

def fit(params, loader):
    for x, y in loader:
        params = step(params, x, y)
        g2 = jax.jit(jax.grad(loss))(params, x, y)
        g3 = grad_fn(params, x, y)
    return params
""") == []


def test_one_off_and_guarded_derivatives_are_quiet():
    assert lines(LOSS + """
def report(params, x, y, batches):
    first = jax.grad(loss)(params, x, y)
    for step, (xb, yb) in enumerate(batches):
        params = train_step(params, xb, yb)
        if step % 100 == 0:
            norms = jax.grad(loss)(params, xb, yb)
    return first, norms

train_step = jax.jit(lambda p, x, y: p)
""") == []


def test_loop_over_structure_and_short_literal_loops_are_quiet():
    assert lines("""
import jax

def per_layer(params, energy):
    force = jax.grad(energy)
    for name in params.keys():
        params = force(params)
    for _ in range(1):
        params = force(params)
    return params
""") == []


def test_eager_versus_jit_benchmark_baseline_is_not_an_eager_step():
    assert 10 not in lines(LOSS + """
def compare(params, x, y):
    fast = jax.jit(jax.grad(loss))
    start = time.perf_counter()
    for _ in range(100):
        g = jax.grad(loss)(params, x, y)
        params = jax.tree.map(lambda p, q: p - q, params, g)
    eager = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(100):
        g = fast(params, x, y)
    return eager, time.perf_counter() - start
""")


STEP_METHOD = """
import jax
import jax.numpy as jnp
import optax

class Trainer:
    def __init__(self, params):
        self.params = params
        self.tx = optax.adam(1e-3)
        self.state = self.tx.init(params)

    def loss(self, params, x):
        return jnp.mean(jnp.tanh(x @ params) ** 2)

    def train_on_batch(self, x):
        grad_fn = jax.value_and_grad(self.loss)
        value, grads = grad_fn(self.params, x)
        updates, self.state = self.tx.update(grads, self.state)
        self.params = optax.apply_updates(self.params, updates)
        return value.item()
"""


def test_whole_step_method_the_file_does_not_call_is_reported_at_the_transform():
    found = findings(STEP_METHOD)
    assert [f.line for f in found] == [15]
    message = found[0].message
    assert message.startswith("`Trainer.train_on_batch` is a whole training step run without jit")
    assert "`self.tx.update` (line 17) and `optax.apply_updates` (line 18)" in message
    assert "this file does not call it" in message


def test_whole_step_called_in_a_loop_names_the_loop_even_when_it_reads_a_value_back():
    found = findings(STEP_METHOD + """
def fit(trainer: Trainer, batches):
    losses = []
    for x in batches:
        losses.append(trainer.train_on_batch(x))
    return losses

def main(batches):
    return fit(Trainer(jnp.zeros((3, 3))), batches)
""")
    assert [f.line for f in found] == [15]
    assert "it is called on every iteration of the loop at line 23" in found[0].message


def test_whole_step_called_once_jitted_or_handed_on_is_quiet():
    once = STEP_METHOD + """
def main(x):
    t = Trainer(jnp.zeros((3, 3)))
    return Trainer.train_on_batch(t, x)
"""
    handed = STEP_METHOD + """
def main(fit):
    return fit(Trainer.train_on_batch)
"""
    jitted = """
import jax
import jax.numpy as jnp
import optax

tx = optax.sgd(0.1)

def loss(p, x):
    return jnp.sum((x @ p) ** 2)

def train_step(p, s, x):
    g = jax.grad(loss)(p, x)
    u, s = tx.update(g, s)
    return optax.apply_updates(p, u), s

fast_step = jax.jit(train_step)
"""
    assert lines(once) == [] and lines(handed) == [] and lines(jitted) == []


def test_eager_optax_update_beside_a_compiled_gradient_is_reported_at_the_update():
    found = findings(LOSS + """
grad_fn = jax.jit(jax.grad(loss))

def fit(params, loader):
    optimizer = optax.adam(1e-3)
    state = optimizer.init(params)
    for x, y in loader:
        grads = grad_fn(params, x, y)
        updates, state = optimizer.update(grads, state)
        params = optax.apply_updates(params, updates)
    return params
""")
    assert [f.line for f in found] == [16]
    assert found[0].message.startswith("`optimizer.update(grads, state)` and `optax.apply_updates(params, updates)` "
                                       "(line 17) run outside jit")


def test_a_pure_step_the_file_does_not_call_and_a_derivative_of_a_jitted_function_are_quiet():
    # another file may call the pure step from jitted code; grad of a jitted function runs compiled
    pure = STEP_METHOD.replace("return value.item()", "return value")
    assert lines(pure) == []
    assert lines("""
import jax

def run(f, x, opt, state):
    grads_fn = jax.grad(jax.jit(f))
    for _ in range(100):
        g = grads_fn(x)
        u, state = opt.update(g, state)
        x = x + u
    return x
""") == []


ROLLOUT = """
import jax
import jax.numpy as jnp
from jax.example_libraries import optimizers

@jax.jit
def rollout(w, dW):
    def body(x, dw):
        x = x + jnp.tanh(x @ w) * 0.02 + dw
        return x, x
    _, xs = jax.lax.scan(body, jnp.zeros(w.shape[0]), dW)
    return xs

batched = jax.vmap(rollout, in_axes=(None, 0))

def loss(w, dW):
    return jnp.mean(jnp.sum(batched(w, dW) ** 2, axis=-1))

opt_init, opt_update, get_params = optimizers.adam(1e-3)

def update(i, opt_state, dW):
    w = get_params(opt_state)
    return opt_update(i, jax.grad(loss)(w, dW), opt_state)

def train(w, noise):
    opt_state = opt_init(w)
    for i in range(2000):
        opt_state = update(i, opt_state, noise[i])
    return get_params(opt_state)
"""


def test_a_gradient_step_through_a_scanned_rollout_is_a_step_not_an_epoch():
    # the scan is the loss's rollout inside one training step: the loop around the un-jitted
    # update still runs one step per iteration
    found = findings(ROLLOUT)
    assert [f.line for f in found] == [20]
    assert found[0].message.startswith("`update` does JAX array work and is called on every iteration of the loop "
                                       "at line 26 without jit")
    assert lines(ROLLOUT.replace("def update(i,", "@jax.jit\ndef update(i,")) == []


def test_a_jitted_epoch_that_scans_its_steps_is_still_an_epoch():
    source = ROLLOUT.replace("""def train(w, noise):""", """@jax.jit
def epoch(opt_state, noise):
    def one(state, dW):
        return update(0, state, dW), None
    return jax.lax.scan(one, opt_state, noise)[0]

def summarise(opt_state):
    w = get_params(opt_state)
    return jnp.mean(jnp.abs(w)) + jnp.std(w) + jnp.max(w) - jnp.min(w) + jnp.sum(w ** 2)

def train(w, noise):""").replace("opt_state = update(i, opt_state, noise[i])",
                                  "opt_state = epoch(opt_state, noise[i])\n        summarise(opt_state)")
    assert lines(source) == []


def test_an_optimizer_update_in_a_step_function_the_loop_calls_is_reported_there():
    source = LOSS + """
grad_fn = jax.jit(jax.grad(loss))
optimizer = optax.adam(1e-3)

def step(params, state, x, y):
    grads = grad_fn(params, x, y)
    updates, state = optimizer.update(grads, state)
    return optax.apply_updates(params, updates), state

def fit(params, xs, ys):
    state = optimizer.init(params)
    for i in range(500):
        params, state = step(params, state, xs[i], ys[i])
    return params
"""
    found = findings(source)
    assert [f.line for f in found] == [12]  # at the def, where the jit goes
    assert found[0].message.startswith("`step` runs `optimizer.update(grads, state)` (line 14) and "
                                       "`optax.apply_updates(params, updates)` (line 15) outside jit, and the loop "
                                       "at line 19 calls it on every iteration")
    # a step doing enough array work of its own is reported once, as a function called without jit
    busy = source.replace("grads = grad_fn(params, x, y)",
                          "grads = grad_fn(params, x, y)\n    grads = jnp.clip(grads, -1, 1) / (jnp.std(grads) + 1e-6)"
                          "\n    grads = grads * jnp.minimum(1.0, 1.0 / jnp.linalg.norm(grads))")
    assert [f.line for f in findings(busy)] == [12]
    assert lines(source.replace("def step(", "@jax.jit\ndef step(")) == []
    # a decorator the file does not resolve (a fragment using `@jax.jit` without importing jax,
    # a library's compiler) may be jit: silence when unsure
    assert lines(source.replace("def step(", "@accelerated\ndef step(")) == []


def test_optimizer_functions_rebound_per_learning_rate_are_named_as_functions():
    # `opt_update` and `get_params` are made again for each learning rate: jit would freeze the
    # first ones, and the message calls them what they are
    source = ROLLOUT.replace("""opt_init, opt_update, get_params = optimizers.adam(1e-3)
""", "").replace("""def train(w, noise):
    opt_state = opt_init(w)
    for i in range(2000):
        opt_state = update(i, opt_state, noise[i])
    return get_params(opt_state)""", """for lr in (1e-3, 1e-4):
    opt_init, opt_update, get_params = optimizers.adam(lr)
    opt_state = opt_init(jnp.zeros((8, 8)))
    for i in range(2000):
        opt_state = update(i, opt_state, jnp.ones((16, 50, 8)))""")
    found = findings(source)
    assert [f.line for f in found] == [19]
    assert "it reads `get_params`, `opt_update`, module-level functions that the program rebinds" in found[0].message
