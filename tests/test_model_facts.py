"""The model's derived facts: each is named, documented, computed once per model and shared,
and asking them never changes the model's own attributes (no cache glued on with setattr)."""

import textwrap

import libcst as cst

from jaxopt_audit.static import SemanticModel
from jaxopt_audit.static.model import FACTS, fact
from jaxopt_audit.static.model.eager import eager_functions, host_side
from jaxopt_audit.static.model.per_step import per_step_functions, why_every_step
from jaxopt_audit.static.model.traced import really_traced
from jaxopt_audit.static.pipeline.registry import load_rules

SOURCE = """
import time
import jax
import jax.numpy as jnp

@jax.jit
def step(params, x):
    print("tracing")
    return params - 0.1 * jnp.mean(x)

def train(params, data, key):
    for x in data:
        params = step(params, x)
        noise = jax.random.normal(key, (3,))
        t0 = time.time()
        print(float(params), time.time() - t0)
    return params
"""


def _model() -> SemanticModel:
    return SemanticModel(cst.parse_module(SOURCE))


def test_every_fact_is_documented_and_registered_once():
    assert FACTS, "the fact modules register their facts on import"
    names = [f.__qualname__ for f in FACTS]
    assert len(names) == len(set(names))
    assert all(f.__doc__ for f in FACTS)


def test_a_fact_without_a_docstring_is_refused():
    def undocumented(model):
        return 1

    try:
        fact(undocumented)
    except TypeError as error:
        assert "docstring" in str(error)
    else:
        raise AssertionError("an undocumented fact was accepted")


def test_a_fact_is_computed_once_per_model_and_shared():
    model = _model()
    first = eager_functions(model)
    assert eager_functions(model) is first
    assert eager_functions(_model()) is not first  # another model, its own answer


def test_running_every_rule_leaves_the_model_attributes_unchanged():
    model = _model()
    before = set(vars(model))
    for rule in load_rules():
        list(rule().check(model))
    assert set(vars(model)) == before
    assert model.facts  # the rules' questions were answered through the facts table


def test_the_two_per_step_questions_differ_only_on_traced_code():
    model = _model()
    step = next(fn for fn in model.functions if fn.name == "step")
    train = next(fn for fn in model.functions if fn.name == "train")
    print_site = next(s for s in step.calls if model.resolve(s.node.func) == "builtins.print")
    normal_site = next(s for s in train.calls if model.resolve(s.node.func) == "jax.random.normal")
    # host code in the step loop: dispatched by Python every step, and executed every step
    assert model.dispatched_per_step(normal_site)
    assert why_every_step(model, normal_site) is not None
    # the jitted step's body: executed every step (it is called from the loop), never dispatched
    assert id(step) in really_traced(model)
    assert not model.dispatched_per_step(print_site)
    assert step in per_step_functions(model)
    assert "every iteration" in why_every_step(model, print_site).describe(model)


DEPRECATED = """
import jax

@jax.jit
def step(tree):
    return jax.tree_map(lambda x: x * 2, tree)
"""


def test_rules_that_only_resolve_names_skip_the_analysis(tmp_path, monkeypatch):
    from jaxopt_audit.static.model.core import SemanticModel as Core
    from jaxopt_audit.static.pipeline.engine import scan_paths

    (tmp_path / "train.py").write_text(DEPRECATED)
    analysed = scan_paths([str(tmp_path)], config=None, jobs=1, extend_select=["PREVIEW"])

    def refuse(self):
        raise AssertionError("a rule that only resolves names asked for the analysis")

    monkeypatch.setattr(Core, "_analyse", refuse)
    quick = scan_paths([str(tmp_path)], config=None, jobs=1, select=["JAX601"])  # names and imports only
    assert quick.errors == []
    assert [(f.line, f.code) for f in quick.findings] == [(f.line, f.code) for f in analysed.findings
                                                          if f.code == "JAX601"] == [(6, "JAX601")]
    assert all(not rule.ANALYSIS for rule in quick.rules)


def test_a_name_or_attribute_rebound_to_its_wrapper_is_called_jitted():
    # `f = jax.jit(jax.value_and_grad(f))` and, under a mode test in `__init__`,
    # `self.step = jax.jit(self.step)`: calls made later go through the wrapper
    model = SemanticModel(cst.parse_module("""
import jax
import jax.numpy as jnp

def loss(w, x):
    return jnp.mean((x @ w) ** 2)

loss = jax.jit(jax.value_and_grad(loss))

class Runner:
    def __init__(self, mode):
        if mode == "eval":
            self.step = jax.jit(self.step)

    def step(self, w, x):
        return jnp.tanh(x @ w).sum()

    def run(self, w, xs):
        return [loss(w, x) for x in xs] + [self.step(w, x) for x in xs]
"""))
    run = next(f for f in model.functions if f.name == "run")
    callees = {cst.Module([]).code_for_node(s.node.func): model.callee(s.node, run) for s in run.calls}
    assert callees["loss"].jitted
    assert callees["self.step"].jitted and callees["self.step"].function.name == "step"


def test_picking_an_element_of_a_python_list_of_arrays_is_not_array_work():
    # `out = [a, b]; out[0]` indexes a Python list: nothing is dispatched, so a helper that only
    # does that around a jitted call does no eager array work; `jnp.stack([a, b])[0]` does
    source = textwrap.dedent("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def render(x):
            return jnp.sin(x), jnp.cos(x)

        def collect(x):
            a, b = render(x)
            out = {out}
            return out[0]
    """)
    for out, ops in (("[a, b]", 0), ("jnp.stack([a, b])", 2)):
        model = SemanticModel(cst.parse_module(source.replace("{out}", out)))
        collect = next(f for f in model.functions if f.name == "collect")
        assert (collect.array_ops, collect.does_array_work) == (ops, ops > 0)


def test_literal_trip_counts_follow_names_and_zip():
    # A parity check walks `zip(names, reference, candidate)` with five literal names;
    # tutorials loop `range(num_steps)` with `num_steps = 20` bound once. A list bound once
    # counts only when written out and never grown (an empty one is usually filled later), and
    # a name bound twice does not count.
    from jaxopt_audit.static.model.loops import literal_trip_count
    source = textwrap.dedent("""
        names = ("q", "k", "v", "g", "b")
        STEPS = 20
        pending = []
        cases = [1, 2, 3]
        grown = [1, 2]
        twice = 3
        twice = 300

        def run(reference, candidate, n):
            for name, ref, out in zip(names, reference, candidate):
                pass
            for i, name in enumerate(names):
                pass
            for step in range(STEPS):
                pass
            for item in pending:
                pass
            for case in cases:
                pass
            grown.append(3)
            for item in grown:
                pass
            for step in range(twice):
                pass
            for step in range(n):
                pass
            for a, b in zip(reference, candidate):
                pass
    """)
    model = SemanticModel(cst.parse_module(source))
    run = next(fn for fn in model.functions if fn.name == "run")
    counts = [literal_trip_count(loop, model.resolve) for loop in run.loops]
    assert counts == [5, 5, 20, None, 3, None, None, None, None]


def test_arrays_made_from_python_values_are_not_counted_as_operations():
    # `make_batch` builds a decode step's arrays from Python lists; uploads and
    # constants are not operations jit could fuse. Constructors fed arrays still count.
    source = textwrap.dedent("""
        import jax.numpy as jnp

        def make_batch(token_ids, seq_len, max_blocks):
            return (jnp.array([token_ids], dtype=jnp.int32), jnp.array([seq_len]),
                    jnp.arange(max_blocks)[None, :], jnp.zeros((1, max_blocks)))

        def rescale(x):
            t = jnp.asarray(x * 2.0)
            return jnp.zeros_like(t) + jnp.full(t.shape, 1.0) + jnp.array(t)
    """)
    model = SemanticModel(cst.parse_module(source))
    ops = {fn.name: fn.array_ops for fn in model.functions if not fn.is_module}
    assert ops["make_batch"] == 0
    assert ops["rescale"] >= 5


def test_a_name_reset_to_a_literal_at_the_end_of_each_iteration_is_not_carried():
    # An epoch loop summarises the epoch's metrics into `logs` through a tree map,
    # prints them, then sets `logs = []`: the next epoch starts from the empty list. Without
    # the reset the summary reaches the next epoch, and `logs` is carried.
    from jaxopt_audit.static.model.loops import carried_names

    model = SemanticModel(cst.parse_module(textwrap.dedent("""
        import jax
        import jax.numpy as jnp

        def fit(params, batches, epochs, step):
            logs = []
            for epoch in range(epochs):
                for batch in batches:
                    params, out = step(params, batch)
                    logs.append(out)
                logs = jax.tree_util.tree_map(lambda *xs: jnp.mean(jnp.array(xs)), *logs)
                print(epoch, logs)
                logs = []
            return params

        def fit_kept(params, batches, epochs, step):
            logs = []
            for epoch in range(epochs):
                for batch in batches:
                    params, out = step(params, batch)
                    logs.append(out)
                logs = [jax.tree_util.tree_map(lambda *xs: jnp.mean(jnp.array(xs)), *logs)]
                print(epoch, logs)
            return params
    """)))
    outer = {fn.name: next(loop for loop in fn.loops if loop.parent is None)
             for fn in model.functions if fn.name in ("fit", "fit_kept")}
    assert "logs" not in carried_names(model, outer["fit"])
    assert "logs" in carried_names(model, outer["fit_kept"])


def test_a_slice_with_device_bounds_is_host_work():
    # LLM scripts build each batch as `jnp.stack([jnp.array(tokens[i:i + n]) for i in ix])`
    # with `ix` drawn by `randint`: every bound is pulled to the host, and under jit the slice fails,
    # so JAX101 must not ask to jit the helper. Slicing by Python ints is not host work.
    source = """
import jax
import jax.numpy as jnp

def get_batch(key, tokens, n):
    ix = {starts}
    return jnp.stack([jnp.array(tokens[i:i + n]) for i in ix])
"""
    for starts, host in (("jax.random.randint(key, (8,), 0, 100)", True), ("range(0, 64, 8)", False)):
        model = SemanticModel(cst.parse_module(textwrap.dedent(source.replace("{starts}", starts))))
        fn = next(f for f in model.functions if f.name == "get_batch")
        assert host_side(model, fn) is host
