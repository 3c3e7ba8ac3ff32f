"""The model's answers about jit wrappers built in loops (jit_construction, memoisation,
configurations) and about loops over independent items (independence, mapped_arguments), asked
directly of small programs: each answer on a case where it holds and one where it does not."""

import textwrap

import libcst as cst

from jaxopt_audit.static import (
    Function,
    SemanticModel,
    Site,
    describe,
    fresh_function,
    independent_items,
    item_names,
    jit_target,
    rebuilt_alike,
    runs_once,
    stable_function,
    structural_use,
    under_memo_guard,
    updates_shared_object,
    wrapper_reuse,
)


def _model(source: str) -> SemanticModel:
    return SemanticModel(cst.parse_module(textwrap.dedent(source)))


def _function(model: SemanticModel, name: str) -> Function:
    return next(fn for fn in model.functions if fn.name == name)


def _jit_sites(model: SemanticModel, fn: Function) -> list[Site]:
    return [s for s in fn.calls if jit_target(model, s.node) is not None]


JITS = """
import jax

def update(p, x, lr):
    return p - lr * x

class Trainer:
    def __init__(self):
        self.step = jax.jit(update)

    def evaluate(self, x):
        if self._eval is None:
            self._eval = jax.jit(lambda v: v * 2)
        return self._eval(x)

def inline(params, batches):
    for x in batches:
        params = jax.jit(update)(params, x, 0.1)
    return params

def per_epoch(params, batches, epochs):
    for epoch in range(epochs):
        lr = 0.5 * 0.95 ** epoch
        step = jax.jit(lambda p, x: update(p, x, lr))
        for x in batches:
            params = step(params, x)
    return params

def per_config(params, batches, configs):
    for config in configs:
        step = jax.jit(lambda p, x: update(p, x, config))
        for x in batches:
            params = step(params, x)
    return params

def builder():
    return jax.jit(update)
"""


def test_what_a_jit_wraps_and_whether_it_is_a_new_object_each_time():
    model = _model(JITS)
    inline = _function(model, "inline")
    (site,) = _jit_sites(model, inline)
    target = jit_target(model, site.node)
    assert isinstance(target, cst.Name) and target.value == "update"
    assert not fresh_function(model, target, site)
    assert stable_function(model, target, inline)
    per_epoch = _function(model, "per_epoch")
    (rebuilt,) = _jit_sites(model, per_epoch)
    made_anew = jit_target(model, rebuilt.node)
    assert isinstance(made_anew, cst.Lambda) and fresh_function(model, made_anew, rebuilt)


def test_how_many_calls_one_build_serves():
    model = _model(JITS)
    inline = _function(model, "inline")
    (called_once,) = _jit_sites(model, inline)
    assert wrapper_reuse(inline, called_once.node, called_once.loop) is None
    per_epoch = _function(model, "per_epoch")
    (inner,) = _jit_sites(model, per_epoch)
    assert wrapper_reuse(per_epoch, inner.node, inner.loop) == "inner loop"
    init = _function(model, "__init__")
    (stored,) = _jit_sites(model, init)
    assert wrapper_reuse(init, stored.node, stored.loop) == "kept"


def test_a_schedule_is_one_program_rebuilt_and_a_configuration_is_another():
    model = _model(JITS)
    per_epoch = _function(model, "per_epoch")
    (site,) = _jit_sites(model, per_epoch)
    target = jit_target(model, site.node)
    assert target is not None and rebuilt_alike(model, target, site) == ["lr"]
    per_config = _function(model, "per_config")
    (site,) = _jit_sites(model, per_config)
    target = jit_target(model, site.node)
    assert target is not None and rebuilt_alike(model, target, site) is None  # reads `config`


def test_setup_methods_and_memoisation_guards_run_once():
    model = _model(JITS)
    assert runs_once(model, _function(model, "__init__"))
    assert not runs_once(model, _function(model, "inline"))
    evaluate = _function(model, "evaluate")
    (guarded,) = _jit_sites(model, evaluate)
    assert under_memo_guard(evaluate, guarded.node)
    inline = _function(model, "inline")
    (unguarded,) = _jit_sites(model, inline)
    assert not under_memo_guard(inline, unguarded.node, unguarded.loop)


ITEMS = """
import jax
import jax.numpy as jnp

@jax.jit
def run(key, n):
    return jax.random.normal(key, (3,)) * n

def train_step(model, optimizer, batch):
    optimizer.update(batch)

def sweep(seeds, data, model, optimizer):
    out = []
    for seed in seeds:
        key = jax.random.key(seed)
        out.append(run(key, 2.0))
        grid = jnp.zeros(seed)
    for batch in data:
        train_step(model, optimizer, batch)
    return out
"""


def test_a_loops_items_and_whether_they_are_independent():
    model = _model(ITEMS)
    sweep = _function(model, "sweep")
    over_seeds, over_data = sweep.loops
    assert item_names(sweep, over_seeds) == {"seed", "key", "grid"}
    assert independent_items(model, sweep, over_seeds)  # seeds turned into keys
    assert not independent_items(model, sweep, over_data)  # batches: nothing says independent


def test_what_the_items_reach_in_a_call():
    model = _model(ITEMS)
    sweep = _function(model, "sweep")
    over_seeds, over_data = sweep.loops
    items = item_names(sweep, over_seeds)
    calls = {describe(s.node.func): s.node for s in sweep.calls}
    assert structural_use(model, sweep, calls["jnp.zeros"], items)  # a shape per item
    assert not structural_use(model, sweep, calls["run"], items)
    # `optimizer` is updated in place and passed again every iteration: state carried
    assert updates_shared_object(model, sweep, calls["train_step"], item_names(sweep, over_data))
