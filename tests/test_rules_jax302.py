"""JAX302 host-to-device-in-step: what counts as host data fed to a step every iteration, and
the near misses seen in real set-up code, library internals and benchmarks."""

from __future__ import annotations

from jaxopt_audit.rules.jax302_host_to_device_in_step import HostToDeviceInStep

from conftest import scan_text


def lines(source: str) -> list[int]:
    return [f.line for f in scan_text(source, [HostToDeviceInStep])]


STEP = """
import jax
import jax.numpy as jnp
import numpy as np

@jax.jit
def update(w, x):
    return w - 0.01 * jnp.mean(x) * w
"""


def test_rebinding_the_loop_variable_to_numpy_does_not_hide_the_copy():
    # `x = np.array(x.numpy())`: the batch is NumPy when it reaches the jitted step
    assert lines(STEP + """
def train(w, loader):
    for x, y in loader:
        x = np.array(x.numpy())
        w = update(w, x)
    return w
""") == [12]


def test_a_numpy_data_set_passed_whole_every_step_is_reported():
    assert lines(STEP + """
data = np.random.rand(512, 8)
w = jnp.ones(8)
for _ in range(1000):
    w = update(w, data)
""") == [12]


def test_quiet_on_set_up_loops_metadata_and_unknown_values():
    assert lines(STEP + """
def build(levels, w, observation):
    boards = []
    for level in levels:  # converts each item once: no step runs here
        boards.append(jnp.array(level, jnp.uint8))
    for i in range(10):
        w = update(w, jnp.zeros(np.shape(w)))
        cells = jnp.array(observation[i])  # what `observation` holds is unknown
        angles = jnp.array([i, 2 * i])  # two Python scalars, not a data set
    return boards, w, cells, angles
""") == []


def test_quiet_on_a_benchmark_body_that_only_waits_for_its_result():
    assert lines(STEP + """
def bench(state, w):
    x = np.ones((128, 128), np.float32)
    while state:
        jax.block_until_ready(update(w, x))
    while state:
        out = update(w, x)
    out.block_until_ready()
    f = jax.jit(lambda out: out + 1)
    return f
""") == []


def test_quiet_when_the_helper_says_it_computes_with_numpy():
    assert lines(STEP + """
def repel(forces: np.ndarray, pos: np.ndarray, k: float) -> np.ndarray:
    return forces + k * jnp.asarray(pos).sum()

def layout(pos, iterations, w):
    k = np.sqrt(5.0)
    for _ in range(iterations):
        forces = repel(np.zeros((4, 2)), pos, k)
        pos = pos + forces
    for _ in range(iterations):
        w = update(w, np.zeros(4))
    return pos, w
""") == [18]


def test_data_generated_each_step_or_placed_from_an_unseen_loader_is_an_input_pipeline():
    # a fresh problem sampled on the host every step, and an explicit device_put of a loader's
    # batch, are input pipelines by design; a data set held in memory and sliced on the host is not
    assert lines(STEP + """
def make_problem(rng, n):
    return rng.normal(size=(n, 8))

def train(w, rng, loader, steps):
    data = np.random.rand(512, 8)
    for _ in range(steps):
        problem = make_problem(rng, 16)
        w = update(w, problem)
    for batch in loader:
        x = jax.device_put(batch["image"])
        w = update(w, x)
    for i in range(steps):
        w = update(w, data[i * 32:(i + 1) * 32])
    return w
""") == [21]


def test_a_loader_batch_merely_converted_is_how_data_reaches_the_device():
    # `x = jnp.array(x)` of each batch a torch DataLoader or a
    # tfds iterator yields (the JAX docs' own loop) is no finding: the batch must reach the
    # device and nothing here does host work on it. Per-batch NumPy
    # preprocessing before the conversion, and a loop reading rows of a NumPy array held in
    # memory, are still reported.
    assert lines(STEP + """
def train(w, loader, path):
    for x, y in loader:
        x = jnp.array(x)
        w = update(w, x)
    for x, y in loader:
        x = jnp.array(np.clip(x, 0, 255) / 255.0)
        w = update(w, x)
    data = np.load(path)
    for row in data:
        w = update(w, jnp.array(row))
    return w
""") == [14, 18]


def test_a_data_set_unpacked_from_a_file_and_indexed_per_step_is_reported_float64_when_shown():
    found = scan_text("""
        import jax
        import jax.numpy as jnp
        import numpy as np

        @jax.jit
        def step(w, xb, yb):
            return w - 0.01 * xb.T @ (xb @ w - yb)

        def train(path, n_epochs, bs):
            data = np.load(path)
            X, Y = data["x"], data["y"]
            w = jnp.zeros(X.shape[1])
            for epoch in range(n_epochs):
                perm = np.random.permutation(len(X))
                for i in range(len(X) // bs):
                    idx = perm[i * bs:(i + 1) * bs]
                    w = step(w, X[idx], Y[idx])
            return w

        def simulate(n_steps, bs):
            X = np.random.randn(10_000, 8)
            Y = np.zeros(10_000)
            w = jnp.zeros(8)
            for i in range(n_steps):
                w = step(w, X[i * bs:(i + 1) * bs], Y[i * bs:(i + 1) * bs])
            return w
    """, [HostToDeviceInStep])
    assert [f.line for f in found] == [17, 25]
    assert "float64" not in found[0].message and "loop at line 15" in found[0].message
    assert "(float64: also converted to float32 on each copy" in found[1].message


def test_a_data_set_returned_by_a_host_helper_of_the_file_is_followed():
    found = scan_text("""
        import jax
        import jax.numpy as jnp
        import numpy as np

        def make_dataset(n, d):
            rng = np.random.default_rng(0)
            x = rng.normal(size=(n, d)) * 2.0
            y = (x.sum(axis=1) > 0).astype(np.float64)
            return x, y

        @jax.jit
        def step(w, x, y):
            return w - 0.1 * x.T @ (x @ w - y) / x.shape[0]

        def train(steps):
            x, y = make_dataset(4096, 8)
            w = jnp.zeros(8)
            for _ in range(steps):
                w = step(w, x[:2048], y[:2048])
            return w
    """, [HostToDeviceInStep])
    assert [f.line for f in found] == [19]
    assert "`x[:2048]`, `y[:2048]`" in found[0].message and "(float64:" in found[0].message


BROWNIAN = """
import jax
import jax.numpy as jnp
import numpy as np

@jax.jit
def rollout_loss(w, dW):
    return jnp.mean((jnp.cumsum(dW, axis=1) @ w) ** 2)

grad_loss = jax.jit(jax.grad(rollout_loss))

def increments(key, m, n, d, dt):
    return jnp.sqrt(dt) * np.random.normal(size=(m, n, d))

def train(w, key, steps):
    for _ in range(steps):
        key, sub = jax.random.split(key)
        dW = increments(sub, 64, 50, 8, 0.02)
        w = w - 1e-3 * grad_loss(w, dW)
    return w
"""


def test_noise_drawn_with_numpy_in_a_helper_run_every_step_is_reported():
    found = scan_text(BROWNIAN, [HostToDeviceInStep])
    assert [f.line for f in found] == [12]
    assert found[0].message.startswith("`np.random.normal(size=(m, n, d))` draws random numbers on the host on "
                                       "every iteration of the loop at line 15")
    assert "`jax.random`" in found[0].message


def test_noise_drawn_with_jax_random_a_single_number_or_a_batch_for_the_step_are_quiet():
    on_device = BROWNIAN.replace("np.random.normal(size=(m, n, d))", "jax.random.normal(key, (m, n, d))")
    assert lines(on_device) == []
    one_number = BROWNIAN.replace("np.random.normal(size=(m, n, d))", "np.random.normal()")
    assert lines(one_number) == []
    # a draw handed whole to the compiled step is an input pipeline (the data-set checks' business)
    handed = BROWNIAN.replace("dW = increments(sub, 64, 50, 8, 0.02)", "dW = np.random.normal(size=(64, 50, 8))")
    assert lines(handed) == []


def test_a_test_loop_over_shapes_converting_what_it_draws_runs_no_step():
    assert lines("""
import jax.numpy as jnp
import numpy as np

def check_round_trip(save, load):
    for shape in [(), (5,), (10, 10), (1, 20, 30, 1)]:
        arr = jnp.array(np.random.uniform(-100, 100, size=shape))
        np.testing.assert_array_equal(load(save(arr)), arr)
""") == []
