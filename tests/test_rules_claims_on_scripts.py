"""Claims the speed rules make about scripts as people write them: a timed eager baseline beside
its jitted copy, a method jitted by a caller in another module, values a host simulator makes
each step, and host reads of values that never reached the device."""

from __future__ import annotations

from jaxopt_audit.rules.jax101_missing_jit import MissingJit
from jaxopt_audit.rules.jax201_loop_to_scan import LoopToScan
from jaxopt_audit.rules.jax301_host_sync_in_step import HostSyncInStep
from jaxopt_audit.rules.jax302_host_to_device_in_step import HostToDeviceInStep
from jaxopt_audit.rules.jax701_unsynchronized_timing import UnsynchronizedTiming

from conftest import scanners

jit_or_scan, jit_or_scan_lines = scanners([MissingJit, LoopToScan])

# The same `def` written twice, the second copy compiled: the eager loop is the measured baseline.
TIMED_TWINS = """
import time
import jax.numpy as jnp
from jax import jit

xs = jnp.linspace(0.0, 1.0, 50)
ys = 3.0 * xs + 1.0
a, c = 0.5, 0.5

def step(a, c, x):
    err = a * x + c - ys
    da, dc = jnp.mean(2 * err * x), jnp.mean(2 * err)
    return a - 0.01 * da, c - 0.01 * dc

t0 = time.perf_counter()
for _ in range(500):
    a, c = step(a, c, xs)
print("eager", time.perf_counter() - t0)

def step(a, c, x):
    err = a * x + c - ys
    da, dc = jnp.mean(2 * err * x), jnp.mean(2 * err)
    return a - 0.01 * da, c - 0.01 * dc

t0 = time.perf_counter()
for _ in range(500):
    a, c = {call}(a, c, xs)
print("compiled", time.perf_counter() - t0)
"""


def test_timed_eager_loop_beside_a_jitted_copy_of_its_step_is_a_baseline():
    lines = jit_or_scan_lines(TIMED_TWINS.format(call="jit(step)"))
    assert 9 not in lines and 15 not in lines  # neither the eager def nor its loop


def test_timed_eager_loop_without_a_jitted_copy_is_reported():
    # the second copy is called eagerly too: nothing in the file shows the compiled version
    lines = jit_or_scan_lines(TIMED_TWINS.format(call="step"))
    assert 15 in lines


def test_a_jitted_function_with_another_body_is_no_twin():
    source = TIMED_TWINS.format(call="jit(step)").replace(
        "    return a - 0.01 * da, c - 0.01 * dc\n\nt0 = time.perf_counter()\nfor _ in range(500):\n"
        "    a, c = jit(", "    return a - 0.1 * da, c - 0.1 * dc\n\nt0 = time.perf_counter()\n"
        "for _ in range(500):\n    a, c = jit(")
    assert "0.1 * da" in source
    assert 15 in jit_or_scan_lines(source)


def test_untimed_eager_loop_beside_a_jitted_copy_is_reported():
    source = TIMED_TWINS.format(call="jit(step)").replace("time.perf_counter()", "0.0")
    assert 15 in jit_or_scan_lines(source)


host_copy = scanners([HostToDeviceInStep])[1]

ENV_LOOP = """
import jax
import jax.numpy as jnp
import numpy as np

@jax.jit
def learn(q, obs, done):
    return q - 0.1 * jnp.mean(obs) * (1.0 - done)

def run(env, q, steps):
    obs = env.reset()
    done = np.zeros(1)
    for t in range(steps):
        obs, term, trunc = env.step(q)
        if done[0] == 0:
            done = {made}
            q = learn(q, obs, done)
        else:
            done = np.zeros(1)
    return q
"""


def test_a_flag_the_environment_returned_this_step_is_not_a_data_set():
    # the `np.zeros(1)` of the `else:` never reaches the call: the flag comes from the env's step
    assert host_copy(ENV_LOOP.format(made="np.logical_or(term, trunc)")) == []


def test_an_array_rebuilt_from_nothing_the_loop_makes_right_before_the_call_is_reported():
    assert host_copy(ENV_LOOP.format(made="np.ones(64)")) == [16]


NOISE = """
import jax
import jax.numpy as jnp
import numpy as np

@jax.jit
def advance(state, disturbance):
    return state * 0.9 + jnp.tanh(state) * disturbance

def simulate(state, steps):
    noise = np.random.uniform(-0.1, 0.1, {size})
    for t in range(steps):
        state = advance(state, noise[t])
    return state
"""


def test_one_number_of_a_host_vector_per_step_is_not_a_data_set_to_move():
    assert host_copy(NOISE.format(size="steps")) == []


def test_a_row_of_a_host_matrix_per_step_is_reported():
    assert host_copy(NOISE.format(size="(steps, 128)")) == [12]


host_read = scanners([HostSyncInStep])[1]

ROUND_TRIP = """
import jax
import jax.numpy as jnp
import numpy as np

@jax.jit
def step(w, x, y):
    pred = jnp.tanh(x @ w)
    return w - 0.01 * x.T @ (pred - y), jnp.mean((pred - y) ** 2)

def report(x, y):
    return {{"mean": float(x.mean()), "count": len(y)}}

def fit(w, batches):
    for x, y in batches:
        x, y = jnp.array(x), jnp.array(y)
        w, loss = step(w, x, y)
        summary = report(np.array({read}), np.array(y))
    return w
"""


def test_reading_back_what_the_loop_just_uploaded_is_no_stall():
    # the batch came from the host this iteration: the read waits for its own upload only
    assert host_read(ROUND_TRIP.format(read="x")) == []


def test_reading_the_steps_result_is_still_reported():
    assert host_read(ROUND_TRIP.format(read="loss")) == [17]


timer = scanners([UnsynchronizedTiming])[1]

EPISODES = """
import time
import jax
import jax.numpy as jnp
import optax

policy = jax.jit(lambda params, s: jnp.tanh(s @ params))
grad_fn = jax.jit(jax.grad(lambda params, s: jnp.sum(jnp.tanh(s @ params))))

def train(env, params, key, episodes):
    optimizer = optax.adam(1e-3)
    state = optimizer.init(params)
    total = 0.0
    for episode in range(episodes):
        start = time.time()
        s = env.reset()
        for t in range(200):
            key, sub = jax.random.split(key)
            action = {action}
            s = env.step(action)
        grads = grad_fn(params, s)
        updates, state = optimizer.update(grads, state)
        params = optax.apply_updates(params, updates)
        total += time.time() - start
    return params, total
"""


def test_an_episode_timer_whose_next_episode_reads_the_updated_params_is_waited_for():
    # `int(...)` of the policy's output at the next episode's first step waits for this
    # episode's update: summed, the figures miss only the last episode's tail
    assert timer(EPISODES.format(action="int(jax.random.categorical(sub, policy(params, s)))")) == []


def test_an_episode_timer_whose_reads_do_not_depend_on_the_update_is_reported():
    assert timer(EPISODES.format(action="int(jax.random.randint(sub, (), 0, 4))")) == [23]
