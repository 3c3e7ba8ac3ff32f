"""The model's answers about host transfers in step loops (host_reads.py, host_values.py), asked
directly: which reads happen every step and of what kind, which the loop needs, which stall, and
which values a step loop hands to JAX are NumPy data on the host."""

from __future__ import annotations

import textwrap

import libcst as cst

from jaxopt_audit.static import (
    SemanticModel,
    StepReads,
    checks_every_result,
    first_waits,
    from_data_set,
    is_host_data,
    numpy_origin,
    whole_history_read,
)
from jaxopt_audit.static.model.host_reads import displays


def _model(source: str) -> SemanticModel:
    return SemanticModel(cst.parse_module(textwrap.dedent(source)))


def _function(model: SemanticModel, name: str):
    return next(fn for fn in model.functions if fn.name == name)


def _call(model: SemanticModel, fn, text: str):
    return next(s for s in fn.calls if cst.Module([]).code_for_node(s.node) == text)


READS = """
import jax
import jax.numpy as jnp
import numpy as np

@jax.jit
def step(w):
    loss = jnp.sum(w ** 2)
    return w * 0.9, loss, jnp.max(w)

def train(w, env, n):
    history = []
    for i in range(n):
        w, loss, peak = step(w)
        history.append(loss)
        print(float(loss))
        print(peak.item())
        if all(jnp.isfinite(w)):
            pass
        a = jax.device_get(w)
        env.step(a)
        np.mean(jnp.stack(history))
        if i % 10 == 0:
            print(f"{loss}")
    return w
"""


def test_reads_every_step_are_classified_by_what_they_read():
    model = _model(READS)
    train = _function(model, "train")
    reads = StepReads(model, train)
    kinds = {cst.Module([]).code_for_node(s.node): reads.pull(s) for s in train.calls if reads.per_step(s)}
    assert kinds["float(loss)"] == "call"
    assert kinds["peak.item()"] == "call"
    assert kinds["all(jnp.isfinite(w))"] == "each"
    assert kinds["history.append(loss)"] is None
    device_get = _call(model, train, "jax.device_get(w)")
    assert reads.needed(device_get)  # handed to `env.step`: the host consumes it every step
    assert not reads.needed(_call(model, train, "float(loss)"))
    assert whole_history_read(model, _call(model, train, "np.mean(jnp.stack(history))")) == "history"
    assert whole_history_read(model, _call(model, train, "float(loss)")) is None


def test_a_second_output_of_the_same_compiled_call_adds_no_stall():
    model = _model(READS)
    train = _function(model, "train")
    first = _call(model, train, "float(loss)")
    second = _call(model, train, "peak.item()")
    kept = first_waits(model, [(first.node, first, "a"), (second.node, second, "b")], [])
    assert [what for _, _, what, _ in kept] == ["a"]


def test_debug_nans_makes_every_jitted_call_wait():
    assert checks_every_result(_model('import jax\njax.config.update("jax_debug_nans", True)\n'))
    assert not checks_every_result(_model('import jax\njax.config.update("jax_debug_nans", False)\n'))


def test_display_functions_are_named_for_showing_values():
    model = _model("def render_frame(x):\n    pass\n\ndef train(x):\n    pass\n\nf = lambda x: x\n")
    assert displays(_function(model, "render_frame"))
    assert not displays(_function(model, "train"))
    assert not displays(model.module_function)


VALUES = """
import jax
import jax.numpy as jnp
import numpy as np

@jax.jit
def step(w, x):
    return w + x.sum()

DATA = np.random.rand(1000, 32)

def train(w, loader):
    for i in range(100):
        x = np.clip(DATA[i], 0.0, 1.0)
        w = step(w, x)
    for batch in loader:
        w = step(w, jnp.array(batch))
    return w
"""


def test_numpy_built_in_the_loop_from_a_data_set_the_file_holds_is_host_data():
    model = _model(VALUES)
    train = _function(model, "train")
    site = next(s for s in train.calls if cst.Module([]).code_for_node(s.node) == "step(w, x)")
    x = site.node.args[1].value
    origin = numpy_origin(model, train, site, x)
    assert origin is not None and cst.Module([]).code_for_node(origin) == "np.clip(DATA[i], 0.0, 1.0)"
    assert is_host_data(model, train, site, x)
    assert from_data_set(model, train, site, x)


def test_a_loader_batch_merely_converted_is_not_host_data_the_file_shows():
    model = _model(VALUES)
    train = _function(model, "train")
    site = next(s for s in train.calls if cst.Module([]).code_for_node(s.node) == "jnp.array(batch)")
    batch = site.node.args[0].value
    assert numpy_origin(model, train, site, batch) is None
    assert not from_data_set(model, train, site, batch)
