"""JAX201's unrolled-loop case: a Python `for` loop inside a function JAX compiles runs at trace
time, one copy of its body per iteration in the compiled program. Reported when the file shows
the compilation and the count is large (or changes per call); quiet on structure, short loops,
loops without array work and functions only traced by `grad`/`vmap`."""

from __future__ import annotations

import textwrap

import libcst as cst

from jaxopt_audit.rules.jax201_loop_to_scan import LoopToScan
from jaxopt_audit.static import SemanticModel, unrolled_loop

from conftest import scan_text


def found(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.message) for f in scan_text(source, [LoopToScan])]


def lines(source: str) -> list[int]:
    return [line for line, _ in found(source)]


def test_time_steps_of_a_jitted_solver_are_unrolled():
    reported = found("""
import jax
import jax.numpy as jnp

N_STEPS = 60

def laplacian(u):
    return jnp.roll(u, 1) + jnp.roll(u, -1) - 2.0 * u

@jax.jit
def evolve(u0, dt):
    u = u0
    for step in range(N_STEPS):
        u = jax.scipy.sparse.linalg.cg(lambda v: v - dt * laplacian(v), u)[0]
    return u
""")
    assert [line for line, _ in reported] == [12]
    message = reported[0][1]
    assert "`evolve`" in message and "jitted at line 9" in message and "60 iterations" in message
    assert "one copy of the body each" in message and "jax.lax.fori_loop" in message


def test_a_helper_called_from_jitted_code_and_a_scan_body():
    reported = found("""
import jax
import jax.numpy as jnp

def refine(x):
    for _ in range(25):
        x = x - 0.1 * jnp.tanh(x)
    return x

@jax.jit
def solve(x):
    return refine(x) * 2.0

def body(carry, x):
    for _ in range(16):
        carry = jnp.sin(carry) + x
    return carry, carry

def run(xs):
    return jax.lax.scan(body, 0.0, xs)
""")
    assert [line for line, _ in reported] == [5, 14]
    assert "reached from `solve`, jitted at line 9" in reported[0][1]
    assert "compiled by the `scan` at line 19" in reported[1][1]


def test_nested_loops_report_the_outer_one():
    assert lines("""
import jax
import jax.numpy as jnp

@jax.jit
def grid(u):
    for i in range(40):
        for j in range(40):
            u = u.at[i, j].set(jnp.cos(u[i, j]))
    return u
""") == [6]


def test_the_count_a_call_passes_through_a_jitted_gradient():
    reported = found("""
import jax
import jax.numpy as jnp

class Tuner:
    def epoch(self, gain, noise, steps):
        x = 0.0
        for t in range(steps):
            x = x + gain * (1.0 - x) + noise[t]
        return jnp.mean(x ** 2)

    def fit(self, gain, noise, steps_per_epoch=30, use_jit=True):
        loss_grad = jax.value_and_grad(self.epoch)
        if use_jit:
            loss_grad = jax.jit(loss_grad, static_argnames=["steps"])
        return loss_grad(gain, noise, steps_per_epoch)
""")
    assert [line for line, _ in reported] == [7]
    message = reported[0][1]
    assert "30 iterations" in message and "`steps` is `steps_per_epoch` in the call at line 15" in message
    assert "jitted at line 14, when `use_jit` holds" in message


def test_an_episode_list_refilled_before_each_jitted_call():
    reported = found("""
import jax
import jax.numpy as jnp

def collect(policy_step, params, obs, env, episodes):
    for episode in range(episodes):
        rewards = []
        done = False
        while not done:
            obs, reward, done = env.step(policy_step(params, obs))
            rewards.append(reward)
        params = update(params, rewards)
    return params

@jax.jit
def update(params, rewards):
    total = 0.0
    for r in reversed(rewards):
        total = r + 0.9 * total
    return params + 0.01 * jnp.tanh(total)
""")
    assert [line for line, _ in reported] == [17]
    message = reported[0][1]
    assert "`rewards` is the list `collect` empties and refills with `.append` in a `while` loop" in message
    assert "each new length traces and compiles the function again" in message


def test_quiet_on_structure_short_loops_and_host_work():
    assert lines("""
import jax
import jax.numpy as jnp

num_heads = 16

@jax.jit
def attention(params, x):
    for i in range(len(params)):
        x = jnp.tanh(params[i] @ x)
    for name, w in params.items():
        x = x + w.sum()
    for h in range(num_heads):
        x = x + h * jnp.ones_like(x)
    for _ in range(8):
        x = jnp.sin(x)
    labels = []
    for k in range(100):
        labels.append(f"step {k}")
    return x

@jax.jit
def apply_layers(weights, x):
    for i in range(20):
        x = jnp.tanh(weights[i] @ x)
    return x
""") == []


def test_quiet_without_compilation_or_a_known_count():
    assert lines("""
import jax
import jax.numpy as jnp

def energy(x, n):
    for _ in range(100):
        x = jnp.cos(x)
    return jnp.sum(x)

force = jax.grad(energy)
batched = jax.vmap(energy)

@jax.jit
def run(x, n):
    for _ in range(n):
        x = jnp.cos(x)
    return x

@jax.jit
def rows(x):
    for i in range(x.shape[0]):
        x = x.at[i].set(jnp.cos(x[i]))
    return x

@jax.jit
def total(xs):
    out = 0.0
    for x in xs:
        out = out + x
    return out

def host(xs):
    return total([jnp.ones(3) for _ in range(3)])
""") == []


def test_nine_literal_iterations_are_past_the_short_loop_bound():
    assert lines("""
import jax
import jax.numpy as jnp

@jax.jit
def smooth(u):
    for _ in range(9):
        u = 0.5 * (u + jnp.roll(u, 1))
    return u
""") == [6]


def test_the_model_answers_with_the_count_and_its_source():
    model = SemanticModel(cst.parse_module(textwrap.dedent("""
        import jax
        import jax.numpy as jnp

        def run(x, steps=200):
            for _ in range(steps):
                x = jnp.cos(x)
            return x

        fast = jax.jit(run)
    """)))
    fn = next(f for f in model.functions if f.name == "run")
    found_loop = unrolled_loop(model, fn.loops[0])
    assert found_loop is not None
    assert (found_loop.count, found_loop.source, found_loop.compiled) == (
        200, "the default of parameter `steps`", "jitted at line 10")


def test_a_default_the_call_overrides_is_not_the_count():
    assert lines("""
import jax
import jax.numpy as jnp
from functools import partial

@partial(jax.jit, static_argnames=["iters"])
def attack(x, iters=20):
    for _ in range(iters):
        x = jnp.clip(x + 0.1 * jnp.sign(x), -1.0, 1.0)
    return x

def run(x, iters):
    return attack(x, iters=iters)
""") == []
