"""JAX701 unsynchronized-timing: a notebook's `%time jnp.dot(...)` written as a script, timing that
silently includes the first (compiling) call, `timeit` statements, and the "Quiet on" clauses."""

from __future__ import annotations

from jaxopt_audit.rules.jax701_unsynchronized_timing import UnsynchronizedTiming

from conftest import scanners

findings, lines = scanners([UnsynchronizedTiming])


def test_dot_timed_without_block_until_ready():
    found = findings("""
        import time
        import jax

        key = jax.random.key(42)
        x_jnp = jax.random.normal(key, (3000, 3000))
        start = time.time()
        jax.numpy.dot(x_jnp, x_jnp.T)
        print("Wall time:", time.time() - start)

        start = time.time()
        jax.numpy.dot(x_jnp, x_jnp.T).block_until_ready()
        print("Wall time:", time.time() - start)
    """)
    assert [f.line for f in found] == [8]
    assert "jax.numpy.dot(x_jnp, x_jnp.T)" in found[0].message and "dispatch" in found[0].message


def test_benchmark_loop_without_final_sync_and_timeit_statements():
    assert lines("""
        import time
        import timeit
        import jax
        import jax.numpy as jnp

        @jax.jit
        def selu(x):
            return 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67)

        def bench(x, n=100):
            selu(x).block_until_ready()
            t0 = time.perf_counter()
            for _ in range(n):
                y = selu(x)
            per_call = (time.perf_counter() - t0) / n
            by_string = timeit.timeit("selu(x)", globals={"selu": selu, "x": x}, number=n)
            synced = timeit.timeit(lambda: selu(x).block_until_ready(), number=n)
            return per_call, by_string, synced
    """) == [15, 16]


def test_first_call_of_a_jitted_function_timed_as_steady_state():
    found = findings("""
        import time
        import jax
        import jax.numpy as jnp

        def selu(x):
            return 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67)

        def main(x):
            fast = jax.jit(selu)
            start = time.perf_counter()
            fast(x).block_until_ready()
            duration = time.perf_counter() - start
            print(f"jit selu: {duration:.4f}s")
    """)
    assert [f.line for f in found] == [12]
    assert "first call of `fast`" in found[0].message


def test_quiet_when_synced_warmed_up_or_labelled_as_compile_time():
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp
        import numpy as np

        @jax.jit
        def step(w, x):
            return w - 0.1 * jnp.mean(x @ w) * w

        def bench(w, x, n=10):
            fast = jax.jit(lambda v: v * 2)
            t0 = time.perf_counter()
            fast(x).block_until_ready()
            compile_s = time.perf_counter() - t0

            t0 = time.perf_counter()
            out = step(w, x)
            jax.block_until_ready(out)
            t1 = time.perf_counter()

            t2 = time.perf_counter()
            loss = float(jnp.mean(step(w, x)))
            host = np.asarray(step(w, x))
            t3 = time.perf_counter()

            t4 = time.perf_counter()
            fast(x).block_until_ready()
            steady = time.perf_counter() - t4
            return compile_s, t1 - t0, t3 - t2, steady, loss, host
    """) == []


def test_quiet_when_a_logger_may_sync_or_the_timed_function_syncs_itself():
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def train_step(state, batch):
            return state - 0.1 * jnp.mean(batch) * state, jnp.mean(batch)

        def run_epoch(state, batches):
            for batch in batches:
                state, loss = train_step(state, batch)
            return float(loss), state

        def train(state, epochs, writer, batches):
            window_start = time.time()
            metrics = []
            for step, batch in enumerate(batches):
                state, loss = train_step(state, batch)
                metrics.append(loss)
                if step % 100 == 0:
                    writer.write_scalars(step, {"loss": jnp.stack(metrics).mean()})
                    print("steps/s", 100 / (time.time() - window_start))
                    window_start = time.time()
            for epoch in range(epochs):
                start = time.time()
                loss, state = run_epoch(state, batches)
                print(epoch, loss, time.time() - start)
            return state
    """) == []


def test_quiet_on_timer_readings_that_are_not_a_measurement():
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp

        def run_until(deadline_s, x):
            deadline = time.time() + deadline_s
            while time.time() < deadline:
                x = jnp.sin(x)
            return x

        @jax.jit
        def traced(x):
            t = time.time()
            return x * 2, time.time() - t
    """) == []


def test_fstring_formatting_a_device_value_before_the_timer_is_a_sync():
    # the loss field is formatted (a host read that waits) before `time.time()` is evaluated
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def evaluate(w, x):
            return jnp.mean((x @ w) ** 2)

        def report(w, x, epochs):
            for epoch in range(epochs):
                t0 = time.time()
                loss = evaluate(w, x)
                print(f"epoch {epoch}: loss {loss} ({time.time() - t0:.2f}s)")
    """) == []
    # the timer is read first: the loss is still in flight
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def evaluate(w, x):
            return jnp.mean((x @ w) ** 2)

        def report(w, x, epochs):
            for epoch in range(epochs):
                t0 = time.time()
                loss = evaluate(w, x)
                print(f"({time.time() - t0:.2f}s) loss {loss}")
    """) == [13]


def test_quiet_on_pytree_bookkeeping_and_leafwise_host_reads():
    assert lines("""
        import time
        import jax
        import numpy as np

        def count_leaves(tree, steps):
            t0 = time.perf_counter()
            for _ in range(steps):
                jax.tree_util.tree_flatten(tree)
            return (time.perf_counter() - t0) / steps

        def save(tree, writer):
            start = time.time()
            is_leaf = jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(tree))
            writer.write(tree, is_leaf)
            return time.time() - start

        def run_eval(rollout, params, key):
            t = time.time()
            metrics = rollout(params, key)
            metrics = jax.tree.map(np.asarray, metrics)
            return metrics, time.time() - t
    """) == []


def test_quiet_on_aot_warm_up_and_on_jitted_functions_that_compute_nothing():
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def update(w, x):
            return w - 0.1 * jnp.mean(x) * w

        @jax.jit
        def passthrough(graph, state):
            return graph, state

        def measure(w, x, graph, state, steps):
            update.lower(w, x).compile()
            start = time.perf_counter()
            w = jax.block_until_ready(update(w, x))
            total = time.perf_counter() - start
            t0 = time.perf_counter()
            for _ in range(steps):
                graph, state = passthrough(graph, state)
            overhead = (time.perf_counter() - t0) / steps
            return total, overhead
    """) == []


def test_quiet_on_a_throughput_window_read_every_k_steps():
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def update(w, x):
            return w - 0.1 * jnp.mean(x) * w

        def train(w, x, steps, log_every=100):
            last = time.time()
            for step in range(steps):
                w = update(w, x)
                if step % log_every == 0:
                    rate = log_every / (time.time() - last)
                    last = time.time()
            return w
    """) == []


def test_eager_helpers_are_followed_into_their_bodies():
    # A helper of the file is pending work only when its own body ends with work nothing waits
    # for and it hands that work back. One that returns nothing (it plots or prints), or that
    # gives its result to code the file does not show (a sampler's summary, a checkpoint
    # library), has nothing to wait on or may have waited already: the timer is left alone.
    # A record built from the results (a NamedTuple) holds them, it does not read them.
    assert lines("""
        import time
        from typing import NamedTuple
        import jax
        import jax.numpy as jnp
        import numpy as np
        import matplotlib.pyplot as plt
        import sampler_lib

        class Posterior(NamedTuple):
            mean: jax.Array
            scale: jax.Array

        @jax.jit
        def fit(x):
            return jnp.cumsum(x) / 3.0

        def draw(x, path):
            image = fit(x)
            plt.imsave(path, image)

        def refresh(cache, x):
            cache["fit"] = fit(x)

        def fit_and_summarise(x):
            samples = fit(x)
            chain = sampler_lib.Chain()
            chain.record(samples)
            return samples

        def moments(x):
            y = jnp.sort(x)
            return Posterior(jnp.mean(y), jnp.std(y))

        def main(x):
            t0 = time.time()
            draw(x, "a.png")
            print("plot", time.time() - t0)
            t3 = time.time()
            refresh({}, x)
            print("refresh", time.time() - t3)
            t1 = time.time()
            fitted = fit_and_summarise(x)
            print("fit", time.time() - t1)
            t2 = time.time()
            post = moments(x)
            print("moments", time.time() - t2)  # <- pending: the record holds running work
            return fitted, post
    """) == [46]


def test_an_if_or_while_test_on_a_device_value_waits_for_it():
    # `if done(mask): break` asks Python for the truth of a device value every step: the loop
    # cannot run ahead of the device, so the timer after it measures the computation.
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(state):
            return state * 0.5, jnp.abs(state).max()

        @jax.jit
        def done(err):
            return err < 1e-3

        def rollout(state, limit):
            t0 = time.perf_counter()
            for _ in range(limit):
                state, err = step(state)
                if done(err):
                    break
            settled = time.perf_counter() - t0
            t1 = time.perf_counter()
            state, err = step(state)
            if limit > 3:
                print("more")
            return settled, time.perf_counter() - t1  # <- JAX701: a Python test reads nothing
    """) == [24]


def test_an_eager_function_of_another_module_is_not_known_to_leave_work_running(tmp_path):
    # A project's own helper defined in another module (a metrics summary, an evaluation loop)
    # may wait for the device inside; its summary does not say, so the timer is left alone. The
    # same summary written in the timed file itself is read, and the missing wait reported.
    import textwrap

    from jaxopt_audit.static.pipeline.engine import scan_paths

    (tmp_path / "helpers.py").write_text(textwrap.dedent("""
        import jax
        import jax.numpy as jnp
        import numpy as np

        def summarise(metrics):
            total = jnp.sum(jnp.stack([jnp.mean(m) for m in metrics])) * 2.0
            print("total", np.asarray(total))
            return total
    """))
    (tmp_path / "main.py").write_text(textwrap.dedent("""
        import time
        import jax
        import jax.numpy as jnp
        from helpers import summarise

        def summarise_here(metrics):
            return jnp.sum(jnp.stack([jnp.mean(m) for m in metrics])) * 2.0

        def report(metrics):
            t0 = time.time()
            summary = summarise(metrics)
            print("summary", time.time() - t0)
            t1 = time.time()
            means = summarise_here(metrics)
            print("means", time.time() - t1)
            return summary, means

        def per_metric(metrics):  # a call in a loop: the project pass gives this file the summaries
            out = []
            for m in metrics:
                out.append(summarise([m]))
            return out
    """))
    result = scan_paths([str(tmp_path)], select=["JAX701"], jobs=1)
    assert sorted((f.path.rsplit("/", 1)[-1], f.line) for f in result.findings) == [("main.py", 16)]


def test_waits_named_by_the_library_end_the_pending_work():
    # A multihost all-gather hands back host NumPy arrays; a function or method of another
    # library named for waiting (`runner.sync()`, `synchronize_all()`) is taken at its word.
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp
        from jax.experimental import multihost_utils
        import runtime_lib

        @jax.jit
        def generate(params, tokens):
            return jnp.tanh(tokens @ params)

        def bench(params, tokens, runner):
            t0 = time.perf_counter()
            images = multihost_utils.process_allgather(generate(params, tokens))
            gathered = time.perf_counter() - t0
            t4 = time.perf_counter()
            shared = multihost_utils.broadcast_one_to_all(generate(params, tokens))
            broadcast = time.perf_counter() - t4
            t1 = time.perf_counter()
            out = generate(params, tokens)
            runner.sync()
            synced = time.perf_counter() - t1
            t2 = time.perf_counter()
            out = generate(params, tokens)
            sync_devices = runtime_lib.device_barrier_fn()
            sync_devices()
            barrier = time.perf_counter() - t2
            t3 = time.perf_counter()
            out = generate(params, tokens)
            runner.flush_logs()
            return images, shared, gathered, broadcast, synced, barrier, time.perf_counter() - t3  # <- JAX701
    """) == [30]


def test_work_in_a_branch_that_leaves_does_not_reach_a_later_reading():
    # the `continue` branch starts device work and goes to the next iteration, which reads the
    # start again: the reading after the branch never follows that work
    assert lines("""
        import time
        import jax.numpy as jnp
        from .types import Staged

        def postprocess(batches, prefetch, pending):
            host_time = 0.0
            for batch in batches:
                t0 = time.perf_counter()
                if prefetch:
                    pending.append(Staged(values=jnp.asarray(batch) * 2))
                    continue
                rows = [len(row) for row in batch]
                pending.append(rows)
                host_time += time.perf_counter() - t0
            return host_time

        def solve(x, tol):
            t0 = time.perf_counter()
            if tol is None:
                return Staged(values=jnp.linalg.inv(x))
            n = len(x)
            return n, time.perf_counter() - t0
    """) == []


def test_work_that_breaks_out_of_a_loop_still_reaches_a_reading_after_it():
    assert lines("""
        import time
        import jax.numpy as jnp
        from .types import Staged

        def search(xs, records):
            t0 = time.perf_counter()
            for x in xs:
                if x is None:
                    records.append(Staged(values=jnp.cumsum(jnp.ones(1000))))
                    break
            return time.perf_counter() - t0  # <- JAX701: the break leads here
    """) == [11]


def test_the_result_of_a_compiled_loop_is_the_work_to_wait_for():
    # `lax.scan` runs its body now and hands back arrays: it is the pending work, not its input
    found = findings("""
        import time
        import jax.numpy as jnp
        from jax import lax

        def step(carry, x):
            return carry + x, carry

        start = time.time()
        final, history = lax.scan(step, 0.0, jnp.arange(1000))
        print(time.time() - start)
    """)
    assert [f.line for f in found] == [10]
    assert "lax.scan(step, 0.0, jnp.arange(1000))" in found[0].message


def test_first_call_check_reads_the_def_bound_at_the_call_not_a_later_one():
    # a notebook times a step written for another framework, then redefines the name as a
    # jitted JAX step in a later cell: the timed call is the earlier def, which compiles nothing
    source = """
        import time
        import jax
        import jax.numpy as jnp

        {first}
        def step(w):
            return jnp.tanh(w) * 0.5

        w = jnp.ones(3)
        start = time.time()
        step(w).block_until_ready()
        print(f"took {time.time() - start:.2f} s")

        @jax.jit
        def step(w):
            return jnp.tanh(w) * 0.5
    """
    assert lines(source.replace("{first}", "")) == []
    # the same timing where the def bound at the call is the jitted one
    assert lines(source.replace("{first}", "@jax.jit")) == [12]


def test_a_timing_labelled_as_compile_time_needs_no_wait():
    # the first call traces and compiles before it returns: a figure logged as compile time is
    # that, with or without the execution after it; the same timing labelled as a step is not
    source = """
        import logging
        import time
        import jax
        import jax.numpy as jnp

        def loss(w, x):
            return jnp.mean((x @ w) ** 2)

        def main(w, x):
            step = jax.jit(jax.grad(loss))
            start = time.perf_counter()
            step(w, x)
            logging.info("{label} in %.1f s", time.perf_counter() - start)
    """
    assert lines(source.replace("{label}", "compiled the step")) == []
    # "Initial step time", a first call timed on purpose: its compilation is meant to be
    # in the figure, but the run it queued is still left out without a wait
    waited = source.replace("step(w, x)\n", "step(w, x).block_until_ready()\n").replace(
        "jax.jit(jax.grad(loss))", "jax.jit(loss)")
    assert lines(waited.replace("{label}", "initial step time")) == []
    assert lines(waited.replace("{label}", "ran the step")) == [13]
    unwaited = findings(source.replace("{label}", "initial step time"))
    assert [f.line for f in unwaited] == [13] and "without waiting" in unwaited[0].message
    assert lines(source.replace("{label}", "ran the step")) == [13]
    # the region announces what it times: "Compiling the step..." logged between the readings
    call = "            step(w, x)\n"
    announced = source.replace(call, "            logging.info('{said} the step...')\n" + call)
    assert lines(announced.replace("{said}", "Compiling").replace("{label}", "done")) == []
    assert lines(announced.replace("{said}", "Running").replace("{label}", "done")) == [14]


def test_quiet_where_the_code_asks_not_to_wait_or_does_no_device_work():
    # a serving loop that starts a device-to-host copy without waiting times the issue on
    # purpose; entering a mesh context computes nothing
    source = """
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def decode(w, x):
            return jnp.tanh(x @ w)

        def serve(w, x, mesh):
            start = time.perf_counter()
            logits = decode(w, x)
            {after}
            print("issued in", time.perf_counter() - start)
            return logits
    """
    assert lines(source.replace("{after}", "jax.copy_to_host_async(logits)")) == []
    assert lines(source.replace("{after}", "logits.copy_to_host_async()")) == []
    assert lines(source.replace("{after}", "jax.block_until_ready(logits)")) == []
    assert lines(source.replace("{after}", "pass")) == [13]


def test_entering_a_mesh_context_is_not_device_work():
    assert lines("""
        import time
        import jax

        def transfer(mesh):
            t_acquired = time.perf_counter()
            with jax.set_mesh(mesh):
                t_in = time.perf_counter()
            return t_in - t_acquired
    """) == []


def test_a_reading_named_through_a_derived_variable_says_compile_time():
    # `end = time.time()` then `first_call_ms = (end - start) * 1000`: the name that reports the
    # figure says what it is
    source = """
        import time
        import jax
        import jax.numpy as jnp

        selu = jax.jit(lambda x: jnp.where(x > 0, x, jnp.exp(x) - 1))
        x = jnp.ones(1000)
        start = time.time()
        selu(x).block_until_ready()
        end = time.time()
        {name} = (end - start) * 1000
        print({name})
    """
    assert lines(source.replace("{name}", "first_call_ms")) == []
    assert lines(source.replace("{name}", "elapsed_ms")) == [9]


def test_an_epoch_fed_from_a_host_loader_is_timed_to_within_its_last_steps():
    """Each step takes its batch from the loader, so the host cannot run ahead of the device by
    more than a few steps: the epoch time is right to within those. One large dispatch timed
    without a wait is still reported, and so is a loop that hands its steps nothing new."""
    source = """
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def update(w, x):
            return w - 0.1 * jnp.mean(x @ w) * w

        def epoch(w, loader):
            start = time.time()
            for x in loader:
                w = update(w, jnp.asarray(x))
            print("epoch", time.time() - start)
            return w

        def batches(data):
            for i in range(0, len(data), 32):
                yield data[i:i + 32]

        def epoch_of_generated_batches(w, data):
            start = time.time()
            for x in batches(data):
                w = update(w, x)
            print("epoch", time.time() - start)
            return w

        def fixed(w, x, steps):
            start = time.time()
            for _ in range(steps):
                w = update(w, x)
            print("steps", time.time() - start)
            return w
    """
    assert lines(source) == [31]


def test_scalar_follow_ups_after_the_step_was_waited_for_are_not_pending_work():
    """The loop waits for the step's loss, then converts it and computes the learning rate for
    the log before reading the clock: a few scalar ops dispatched after the wait. A jitted call
    after the wait is real pending work and is still reported."""
    source = """
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def train_step(w, x):
            return w - 0.1 * jnp.mean(x @ w) * w, jnp.mean(x @ w)

        def schedule(step):
            return 1e-3 * jnp.minimum(1.0, step / 100) * jnp.cos(step / 1000)

        def train(w, x, steps):
            for step in range(steps):
                start = time.time()
                w, loss = train_step(w, x)
                loss.block_until_ready()
                loss = jnp.float32(loss)
                lr = schedule(step)
                elapsed = time.time() - start
                print(step, elapsed)
            return w

        def train_then_eval(w, x, steps):
            start = time.time()
            w, loss = train_step(w, x)
            loss.block_until_ready()
            w, loss = train_step(w, x)
            return w, time.time() - start
    """
    assert lines(source) == [28]


def test_a_while_loop_leaves_only_after_its_test_reads_the_last_values():
    """`while not jnp.all(dones):` reads `dones` once more after the last iteration before the
    loop can end, so the updates at the end of the body are waited for by then."""
    source = """
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(state):
            return state * 0.5, state < 0.1

        def rollout(state):
            start = time.time()
            dones = jnp.zeros(4, dtype=bool)
            lengths = jnp.zeros(4)
            while not jnp.all(dones):
                state, dones = step(state)
                lengths = lengths.at[0].set(lengths[0] + 1)
            return state, time.time() - start

        def rollout_for(state, n):
            start = time.time()
            lengths = jnp.zeros(4)
            for _ in range(n):
                state, dones = step(state)
                lengths = lengths.at[0].set(lengths[0] + 1)
            return state, time.time() - start
    """
    assert lines(source) == [24]


def test_compilation_timed_with_arguments_made_for_lowering_is_synchronous():
    # `jax.jit(f).lower(x, jnp.arange(n)).compile()` between two timer reads measures
    # compilation, which returns when done; lowering reads only the shapes of its arguments.
    # An array made outside the lowering and then timed alone is still dispatch.
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp

        def compile_seconds(f, x, n):
            started = time.perf_counter()
            compiled = jax.jit(f).lower(x, jnp.arange(n, dtype=jnp.int32)).compile()
            return compiled, time.perf_counter() - started

        def fill_seconds(x):
            started = time.perf_counter()
            y = jnp.cumsum(x) * 2.0
            return y, time.perf_counter() - started
    """) == [13]


def test_a_timer_inside_a_factory_made_function_run_under_jit_of_vmap_times_the_trace():
    # `jax.jit(jax.vmap(make_train(config)))`, with `time.time()` around a scan inside
    # `train`: under the trace the timer reads happen once, at trace time, and there is nothing to
    # wait for. The same factory's function called directly, un-jitted, is reported.
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp

        def make_train(steps):
            def train(rng):
                def body(carry, _):
                    return carry * 0.9 + jax.random.normal(rng, ()), carry
                start = time.time()
                out, hist = jax.lax.scan(body, jnp.zeros(()), None, length=steps)
                return out, time.time() - start
            return train

        def make_run(steps):
            def run(rng):
                def body(carry, _):
                    return carry * 0.9 + jax.random.normal(rng, ()), carry
                start = time.time()
                out, hist = jax.lax.scan(body, jnp.zeros(()), None, length=steps)
                return out, time.time() - start
            return run

        train_all = jax.jit(jax.vmap(make_train(100)))
        result = train_all(jax.random.split(jax.random.key(0), 4))
        single = make_run(100)(jax.random.key(0))
    """) == [20]


def test_appending_results_to_a_list_reads_nothing():
    # A sampler's steps, jitted from another library's object (`jax.jit(sampler.step)`),
    # run in a timed loop that appends each state to a list; the timer is read right after the
    # loop. Storing a device value in a list keeps a reference: nothing waited. Handing it to
    # an object the file does not show (`recorder.append(state)`) may read it: quiet.
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp
        import blackjax

        def logdensity(x):
            return -jnp.sum(x ** 2)

        sampler = blackjax.nuts(logdensity, step_size=0.1, inverse_mass_matrix=jnp.ones(3))
        step = jax.jit(sampler.step)

        def run(key, state, n, recorder):
            samples = []
            start = time.time()
            for _ in range(n):
                key, sub = jax.random.split(key)
                state, info = step(sub, state)
                samples.append(state.position)
            elapsed = time.time() - start
            start = time.time()
            for _ in range(n):
                key, sub = jax.random.split(key)
                state, info = step(sub, state)
                recorder.append(state.position)
            return samples, elapsed, time.time() - start
    """) == [19]


def test_writing_arrays_to_a_file_waits_for_them():
    # `eqx.tree_serialise_leaves(path, model)` timed for a log line. Writing the leaves
    # out copies each to the host first: the measured save is the real save. A function that
    # only keeps a reference (`checkpoints[name] = model`) waits for nothing.
    assert lines("""
        import time
        import pickle
        import equinox as eqx
        import jax
        import jax.numpy as jnp

        step = jax.jit(lambda w: w * 2.0)

        def save(path, model, w):
            start = time.time()
            eqx.tree_serialise_leaves(path, model)
            print(time.time() - start)
            start = time.time()
            out = step(w)
            with open(path, "wb") as f:
                pickle.dump(out, f)
            print(time.time() - start)
            start = time.time()
            out = step(w)
            print(time.time() - start)
            return out
    """) == [20]


def test_a_whole_training_run_timed_end_to_end_may_include_compilation():
    # "Training time" around every epoch of a PINN script, whose jitted step threads
    # the state. A run's wall time legitimately includes compiling its step. A loop repeating
    # the same call to average it (a benchmark) still counts the compilation in the average.
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def train_step(w, x):
            return w - 0.1 * jnp.mean(x * w) * x

        @jax.jit
        def forward(w, x):
            return jnp.tanh(x * w)

        x = jnp.linspace(0.0, 1.0, 64)
        w = jnp.ones(64)
        start = time.time()
        for epoch in range(1000):
            w = train_step(w, x)
        w.block_until_ready()
        print("Training time:", time.time() - start)
        start = time.time()
        for _ in range(100):
            y = forward(w, x)
        y.block_until_ready()
        print("per call:", (time.time() - start) / 100)
    """) == [24]


def test_a_message_printed_just_before_the_timer_names_what_it_times():
    # `print("Compiling and running simulation loop...")`, then the timer around the
    # first call of a jitted scan, waited for. The run is announced as including compilation.
    # Without the announcement the same region is reported as including it.
    source = """
        import time
        import jax
        import jax.numpy as jnp

        run = jax.jit(lambda x: jax.lax.scan(lambda c, _: (c * 0.9, c), x, None, length=100))
        x = jnp.ones(8)
        print("Compiling and running the simulation...")
        t0 = time.time()
        out, hist = run(x)
        hist.block_until_ready()
        print(f"done in {time.time() - t0:.2f}s")
    """
    assert lines(source) == []
    assert lines(source.replace('print("Compiling and running the simulation...")', 'print("Simulating")')) == [11]


def test_copies_casts_and_keys_are_not_the_work_a_timer_covers():
    # A weight loader logs how long its `device_put` and `astype` took, and a
    # serving loop times issuing a host-to-device copy that overlaps the previous step. The call
    # returns while the copy runs and the copy's cost lands in the wait for whatever reads it, so
    # a timer after a copy, a cast or a key split is a dispatch metric, not a missed wait. The
    # computation before them is still the work to wait for.
    source = """
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def forward(w, x):
            return jnp.tanh(x @ w)

        def shard(batch, sharding):
            return jax.tree.map(lambda x: jax.make_array_from_process_local_data(sharding, x), batch)

        def load(host_weights, sharding, dtype, key, batch):
            t3 = time.monotonic()
            batch = shard(batch, sharding)
            low = jax.tree.map(lambda x: x.astype(jnp.bfloat16), host_weights)
            keys = jax.random.split(key, 8).reshape(4, 2, 2)
            shard_s = time.monotonic() - t3
            t0 = time.monotonic()
            w = jax.device_put(host_weights, sharding)
            put_s = time.monotonic() - t0
            t1 = time.monotonic()
            w = w.astype(dtype)
            cast_s = time.monotonic() - t1
            t2 = time.monotonic()
            y = forward(w, w)
            key, sub = jax.random.split(key)
            step_s = time.monotonic() - t2
            return y, sub, batch, low, keys, shard_s, put_s, cast_s, step_s
    """
    assert lines(source) == [27]


def test_an_eager_call_of_a_function_also_jitted_elsewhere_leaves_its_work_running():
    # A notebook times `selu(x)` against `selu_jit = jax.jit(selu)`; the plain call
    # dispatches selu's operations one by one and returns before they finish, like any eager call.
    source = """
        import time
        import jax
        import jax.numpy as jnp

        def selu(x, alpha=1.67, lam=1.05):
            return lam * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

        selu_jit = jax.jit(selu)

        def compare(x):
            t0 = time.perf_counter()
            y = selu(x){wait}
            eager_s = time.perf_counter() - t0
            return y, eager_s
    """
    assert lines(source.replace("{wait}", "")) == [13]
    assert lines(source.replace("{wait}", ".block_until_ready()")) == []


def test_a_timeit_of_one_first_run_or_named_for_compilation_needs_no_wait():
    # `compile_time = timeit.timeit(lambda: jitted(x, y), number=1)` then
    # `jit_time = timeit.timeit(lambda: jitted(x, y), number=100) / 100`: the first figure is
    # tracing and compilation, which block; the second leaves each run unwaited.
    source = """
        import timeit
        import jax
        import jax.numpy as jnp

        similarity = jax.jit(lambda x, y: jnp.dot(x, y) / (jnp.linalg.norm(x) * jnp.linalg.norm(y)))

        def measure(x, y):
            {first} = timeit.timeit(lambda: similarity(x, y), number=1)
            steady = timeit.timeit(lambda: similarity(x, y), number=100) / 100
            return steady
    """
    assert lines(source.replace("{first}", "compile_time")) == [9]
    assert lines(source.replace("{first}", "first_s")) == [9]  # one run of the first call
    # named for compilation, the figure needs no wait even when it is not the first call
    warmed = source.replace("def measure(x, y):\n", "def measure(x, y):\n            similarity(x, y)\n")
    assert lines(warmed.replace("{first}", "compile_time")) == [10]
    assert lines(warmed.replace("{first}", "once")) == [9, 10]


def test_a_region_timing_a_torch_tensor_times_no_jax_work():
    # A PyTorch-vs-JAX comparison timed `loss = torch_rollout(); loss.backward()`, where
    # `loss` names a JAX array elsewhere in the script. No JAX array has `.backward()`.
    source = """
        import time
        import jax
        import jax.numpy as jnp
        import torch

        def torch_loss():
            return torch.ones(3).sum()

        start = time.time()
        loss = torch_loss()
        loss.{method}()
        torch_s = time.time() - start

        loss = jnp.ones(3).sum()
        start = time.time()
        loss = jnp.exp(loss)
        jax_s = time.time() - start
    """
    assert lines(source.replace("{method}", "backward")) == [17]
    assert lines(source.replace("{method}", "sum")) == [12, 17]


def test_a_constant_fill_is_not_the_work_a_timer_covers():
    # An epoch timer read after `losses = jnp.zeros((num_epochs, 1))`, the only JAX
    # call since the previous reading: an allocation, not a computation.
    source = """
        import time
        import jax.numpy as jnp

        def setup(n):
            start = time.time()
            losses = jnp.{make}((n, 1))
            print(time.time() - start)
            return losses
    """
    assert lines(source.replace("{make}", "zeros")) == []
    assert lines(source.replace("{make}", "cumsum")) == [7]


def test_storing_each_result_into_a_numpy_array_waits_for_it():
    # A timed sampler writes every step's sample into `samples = np.zeros(...)`; each
    # store converts the device value on the host, so the loop never runs ahead.
    source = """
        import time
        import jax
        import jax.numpy as jnp
        import numpy as np

        @jax.jit
        def kernel(x):
            return x + 0.1 * jnp.sin(x)

        def sampler(x, n):
            samples = {buffer}
            for i in range(n):
                x = kernel(x)
                samples[i] = x
            return samples

        start = time.time()
        out = sampler(jnp.ones(3), 1000)
        print(time.time() - start)
    """
    assert lines(source.replace("{buffer}", "np.zeros((n, 3))")) == []
    assert lines(source.replace("{buffer}", "[None] * n")) == [19]  # a list keeps references


def test_a_total_time_over_cycles_of_compiled_loops_includes_compilation_on_purpose():
    # A molecular dynamics script times the whole run over 5 cycles, each a waited
    # `jax.lax.fori_loop` of steps followed by a first call of a jitted energy diagnostic
    # (compilation belongs in a total).
    source = """
        import time
        import jax
        import jax.numpy as jnp

        def step(i, x):
            return x * 0.99

        energy = jax.jit(lambda x: jnp.sum(x ** 2))
        x = jnp.ones(64)
        start = time.time()
        for cycle in range(5):
            {work}
            print(energy(x).block_until_ready())
        print("Total simulation time:", time.time() - start)
    """
    assert lines(source.replace("{work}", "x = jax.block_until_ready(jax.lax.fori_loop(0, 1000, step, x))")) == []
    # the same call repeated (a benchmark averaging over repetitions): the first one compiles
    assert lines(source.replace("{work}", "pass")) == [14]


def test_a_message_printed_just_after_the_reading_names_what_it_timed():
    # `end = perf_counter()` after the first call of a freshly jitted simulation, then
    # `print("compilation complete!")` and the time: a compile time, which blocks.
    source = """
        import time
        import jax
        import jax.numpy as jnp

        def simulate(width):
            return jnp.cumsum(jnp.ones(width))

        def main(width=80):
            start = time.perf_counter()
            fast = jax.jit(simulate, static_argnames=["width"])
            states = fast(width=width)
            end = time.perf_counter()
            print("{message}")
            print(f"time taken {end - start:.5f} seconds")
    """
    assert lines(source.replace("{message}", "compilation complete!")) == []
    assert lines(source.replace("{message}", "simulation complete!")) == [12]


def test_an_epoch_loop_over_a_batch_stream_timed_end_to_end_includes_compilation_on_purpose():
    # "Training completed in" over 10 epochs of a batch generator feeding a jitted step
    # that updates its model in place (NNX); its first call compiles inside the total.
    source = """
        import time
        import jax
        import jax.numpy as jnp

        def batches(n):
            for i in range(n):
                yield jnp.ones((8, 4)) * i

        train_step = jax.jit(lambda w, x: jnp.sum(x @ w))
        w = jnp.ones((4, 2))
        start = time.perf_counter()
        for epoch in range(10):
            for x in {stream}:
                print(float(train_step(w, x)))
        print("Training completed in", time.perf_counter() - start)
    """
    assert lines(source.replace("{stream}", "batches(100)")) == []
    # a counter, not items: a benchmark repeating one call, whose first run compiles
    assert lines(source.replace("{stream}", "range(100)")) == [15]


def test_a_one_off_first_call_of_a_small_jitted_function_times_its_compilation():
    # A script's `test()`, run once from `__main__`, times the first call of a small
    # jitted function without a wait: the figure is tracing and compilation, which run before the
    # call returns, so a wait would not change it.
    source = """
        import time
        import jax
        import jax.numpy as jnp

        @jax.jit
        def f(x):
            {body}

        def test():
            x = jnp.arange(10.0)
            t = time.perf_counter()
            f(x)
            print(f"took {time.perf_counter() - t:.3f}s")

        if __name__ == "__main__":
            {entry}
    """
    small = "return jnp.cos(jnp.sin(x))"
    assert lines(source.replace("{body}", small).replace("{entry}", "test()")) == []
    # run again and again (from a loop), every call after the first is timed as dispatch
    again = source.replace("{body}", small).replace("{entry}", "for _ in range(3):\n                test()")
    assert lines(again) == [13]
    # a whole run (a program with a compiled loop) is mostly its run, which the reading leaves out
    whole = "return jax.lax.fori_loop(0, 1000, lambda i, v: jnp.cos(v), x)"
    assert lines(source.replace("{body}", whole).replace("{entry}", "test()")) == [13]
    # a first step timed as "initial step time" is a real step whose run leaks into what follows
    initial = source.replace("{body}", small).replace("{entry}", "test()").replace("took", "initial step time")
    assert lines(initial) == [13]


def test_a_training_scan_reporting_progress_through_jax_tqdm_is_timed_to_its_end():
    # Notebooks time `gd(...)`, whose epochs run in a `lax.scan` with a body decorated
    # `@scan_tqdm(epochs)`; the saved outputs (50-780 s, growing with the model) show the figure
    # is the run's. Without the progress callbacks the same timing reads the dispatch.
    source = """
        from time import time
        import jax
        import jax.numpy as jnp
        from jax_tqdm import scan_tqdm

        def train(params, xs, epochs):
            @jax.jit
            def step(p, x):
                return p - 0.1 * jnp.mean(x) * p, jnp.mean(x)

            @scan_tqdm(epochs)
            def epoch(p, i):
                p, losses = jax.lax.scan(step, p, xs)
                return p, losses.mean()

            return jax.lax.scan(epoch, params, jnp.arange(epochs))

        start = time()
        params, history = train(jnp.ones(3), jnp.ones((10, 4)), 500)
        print(time() - start, "seconds")
    """
    assert lines(source) == []
    quiet = "\n".join(line for line in source.splitlines() if "@scan_tqdm" not in line)
    assert lines(quiet) == [19]


# A script run after another in one namespace (`exec(open(...).read())`): it uses `jax` and
# `optax` without importing them, and times each stage of a step.
FRAGMENT_STEP = """
    import time
    import optax

    opt = optax.sgd(0.1)

    {decorator}
    def update(params, state, batch):
        t = time.perf_counter()
        grads = jax.grad(lambda p: jnp.sum((batch @ p) ** 2))(params)
        print("grad", time.perf_counter() - t)
        t = time.perf_counter()
        updates, state = opt.update(grads, state)
        print("opt", time.perf_counter() - t)
        return optax.apply_updates(params, updates), state
"""


def test_timers_inside_a_jitted_step_of_a_file_that_never_imports_jax_are_quiet():
    # under jit the timers run once, while tracing: there is no dispatched work to wait for
    assert lines(FRAGMENT_STEP.replace("{decorator}", "@jax.jit")) == []
    # the same step run eagerly does dispatch `opt.update` and returns before it finishes
    assert lines(FRAGMENT_STEP.replace("{decorator}", "")) != []


def test_timers_in_a_helper_only_a_scanned_body_calls_are_quiet():
    assert lines("""
        import time
        import jax
        import jax.numpy as jnp

        def stage(x):
            t = time.time()
            y = jnp.tanh(x @ x)
            print("stage", time.time() - t)
            return y

        @jax.jit
        def run(x):
            def body(c, _):
                return stage(c), None
            return jax.lax.scan(body, x, None, length=3)[0]
    """) == []
