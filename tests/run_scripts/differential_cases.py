"""Small JAX programs whose results must not depend on `jaxopt-audit run` being on.

Each case is a function returning a pytree (or raising); every case runs once, and the results,
frozen to bytes (each leaf's dtype, shape and raw bytes, and the tree's structure), are pickled to
the file named by DIFFERENTIAL_OUT. tests/test_run_transparency.py runs this file plainly and
under `jaxopt-audit run` and compares the two files byte for byte. Cases also print some values,
so the program's stdout is compared too.

Every API `run` instruments (jax.jit, jax.pmap, eager jnp/jax.nn/jax.random entry points, array
operators, host reads and syncs, host-to-device copies) appears here, alone and composed with
the transformations that wrap it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import pickle
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

CASES: dict[str, Callable[[], Any]] = {}


def case(fn: Callable[[], Any]) -> Callable[[], Any]:
    CASES[fn.__name__] = fn
    return fn


def f(x):
    return jnp.sum(x ** 2 + jnp.sin(x))


def two_out(x):
    return jnp.sum(x ** 3), x * 2.0


X = np.linspace(-1.0, 1.0, 6, dtype=np.float32)
M = np.arange(12, dtype=np.float32).reshape(3, 4) / 7.0


# ---------------------------------------------------------------- jit composed with transformations

@case
def jit_grad_jit():
    return jax.jit(jax.grad(jax.jit(f)))(X)


@case
def jit_value_and_grad_jit():
    return jax.jit(jax.value_and_grad(jax.jit(f)))(X)


@case
def jit_vmap_jit_sum():
    return jax.jit(jax.vmap(jax.jit(jnp.sum)))(jnp.ones((2, 3)))


@case
def grad_of_jit_eager_outer():
    return jax.grad(jax.jit(f))(X)


@case
def value_and_grad_has_aux():
    def loss(w, x):
        out = jnp.tanh(x @ w)
        return jnp.mean(out ** 2), {"out": out}
    return jax.jit(jax.value_and_grad(jax.jit(loss), has_aux=True))(jnp.ones((4, 2)), M)


@case
def grad_argnums_tuple():
    def g(a, b, c):
        return jnp.sum(a * b + c)
    return jax.jit(jax.grad(jax.jit(g), argnums=(0, 2)))(X, X + 1, X * 3)


@case
def vmap_in_axes_jit():
    return jax.vmap(jax.jit(lambda a, b: a * b + 1.0), in_axes=(0, None))(M, M[0])


@case
def jit_of_jit():
    return jax.jit(jax.jit(jax.jit(f)))(X)


@case
def hessian_jacfwd_jacrev():
    g = jax.jit(f)
    return jax.hessian(g)(X[:3]), jax.jacfwd(jax.jit(two_out))(X[:3]), jax.jacrev(g)(X)


@case
def jvp_vjp_linearize():
    g = jax.jit(f)
    primal, tangent = jax.jvp(g, (X,), (jnp.ones_like(X),))
    out, pullback = jax.vjp(jax.jit(two_out), X)
    lin_out, lin = jax.linearize(g, X)
    return primal, tangent, out, pullback((1.0, jnp.ones_like(X))), lin_out, lin(X)


@case
def nested_vmap_grad_jit():
    per_example = jax.vmap(jax.grad(jax.jit(lambda w, x: jnp.sum(jnp.tanh(w * x)))), in_axes=(None, 0))
    return jax.jit(per_example)(X[:4], M)


@case
def jit_grad_of_closure_over_jit():
    inner = jax.jit(lambda w: w * 3.0)

    def outer(w):
        return jnp.sum(inner(w) ** 2)
    return jax.jit(jax.grad(outer))(X), jax.grad(outer)(X)


# ---------------------------------------------------------------- pmap and shard_map (one device is enough)

@case
def pmap_plain():
    return jax.pmap(lambda a: a * 2 + 1)(M[None])


@case
def pmap_of_jit_with_psum():
    inner = jax.jit(lambda a: a ** 2)
    return jax.pmap(lambda a: lax.psum(inner(a), "i"), axis_name="i")(M[None])


@case
def jit_of_pmap():
    return jax.jit(jax.pmap(lambda a: jnp.cumsum(a)))(X[None])


@case
def shard_map_under_jit():
    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:
        return "shard_map not available"
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P
    mesh = jax.make_mesh((1,), ("x",))
    fn = shard_map(lambda a: a * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    sharded = jax.device_put(M, NamedSharding(mesh, P("x")))
    return jax.jit(fn)(sharded), fn(sharded), jax.jit(jax.grad(lambda a: jnp.sum(jax.jit(fn)(a) ** 2)))(sharded)


# ---------------------------------------------------------------- control flow

@case
def scan_with_jitted_body():
    step = jax.jit(lambda c, x: (c * 0.9 + x, c * x))
    carry, ys = lax.scan(step, jnp.float32(1.0), X)
    return carry, ys, jax.jit(lambda xs: lax.scan(step, jnp.float32(0.5), xs))(X)


@case
def nested_jit_inside_scan_body():
    inner = jax.jit(lambda v: jnp.sin(v) * 2)

    def body(c, x):
        return c + inner(x), inner(c)
    return jax.jit(lambda xs: lax.scan(body, jnp.zeros(()), xs))(X)


@case
def fori_while_cond():
    g = jax.jit(lambda v: v * 1.5)
    a = lax.fori_loop(0, 5, lambda i, v: g(v) - i, X)
    b = lax.while_loop(lambda v: jnp.sum(v) < 100.0, g, jnp.abs(X) + 1)
    c = jax.jit(lambda p, v: lax.cond(p, g, jnp.negative, v))(True, X)
    return a, b, c


@case
def checkpoint_remat():
    g = jax.checkpoint(jax.jit(f))
    return jax.grad(g)(X), jax.jit(jax.grad(jax.remat(lambda w: jnp.sum(jnp.exp(w)))))(X)


# ---------------------------------------------------------------- custom derivatives

@jax.custom_jvp
def softplus(x):
    return jnp.log1p(jnp.exp(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t * jax.nn.sigmoid(x) * 2.0  # deliberately not the true derivative


@jax.custom_vjp
def clip_gradient(x):
    return x


def _clip_fwd(x):
    return x, None


def _clip_bwd(_, g):
    return (jnp.clip(g, -0.1, 0.1),)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


@case
def custom_jvp_through_jit():
    g = jax.jit(lambda v: jnp.sum(softplus(v)))
    return g(X), jax.grad(g)(X), jax.jit(jax.grad(jax.jit(g)))(X)


@case
def custom_vjp_through_jit():
    g = jax.jit(lambda v: jnp.sum(clip_gradient(v) * 5.0))
    return jax.grad(g)(X), jax.jit(jax.grad(g))(X)


@case
def custom_jvp_of_jitted_function():
    inner = jax.jit(lambda v: v ** 3)

    @jax.custom_jvp
    def cube(v):
        return inner(v)

    @cube.defjvp
    def _cube_jvp(primals, tangents):
        (v,), (t,) = primals, tangents
        return inner(v), 3.0 * v ** 2 * t
    return jax.jit(jax.grad(lambda v: jnp.sum(cube(v))))(X)


# ---------------------------------------------------------------- static arguments and donation

@case
def static_argnums_and_argnames():
    def power(x, n, *, scale):
        return x ** n * scale
    by_num = jax.jit(power, static_argnums=1, static_argnames="scale")
    by_name = jax.jit(power, static_argnames=("n", "scale"))
    return by_num(X, 3, scale=2.0), by_name(X, n=2, scale=0.5), by_num(X, 2, scale=1.0)


@case
def decorator_factory_static():
    @jax.jit
    def plain(x):
        return x + 1

    @functools.partial(jax.jit, static_argnames="axis")
    def reduce(x, axis):
        return jnp.max(x, axis=axis)

    @jax.jit(static_argnames="k")
    def top(x, k):
        return lax.top_k(x, k)[0]
    return plain(X), reduce(M, axis=1), reduce(M, 0), top(X, k=2)


@case
def negative_static_argnum():
    return jax.jit(lambda x, n: jnp.repeat(x, n), static_argnums=-1)(X[:2], 3)


@case
def donate_argnums():
    step = jax.jit(lambda s, g: jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, s, g), donate_argnums=0)
    state = {"w": jnp.ones((3, 3)), "b": jnp.zeros(3)}
    for _ in range(3):
        state = step(state, {"w": jnp.full((3, 3), 0.5), "b": jnp.ones(3)})
    donated = jnp.arange(4.0)
    out = jax.jit(lambda a: a * 2, donate_argnames="a")(a=donated)
    return state, out, donated.is_deleted() in (True, False)


# ---------------------------------------------------------------- pytrees

class Pair(NamedTuple):
    a: Any
    b: Any


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Params:
    w: Any
    b: Any
    name: str = dataclasses.field(default="layer", metadata={"static": True})


@jax.tree_util.register_pytree_node_class
class Box:
    def __init__(self, value, label):
        self.value, self.label = value, label

    def tree_flatten(self):
        return (self.value,), self.label

    @classmethod
    def tree_unflatten(cls, label, children):
        return cls(children[0], label)


@case
def pytrees_in_and_out():
    def apply(p: Params, batch: dict, pair: Pair, box: Box):
        y = batch["x"] @ p.w + p.b
        return {"y": y, "pair": Pair(pair.a * 2, (pair.b, box.value + 1)), "box": Box(y.sum(), box.label)}
    p = Params(jnp.ones((4, 2)), jnp.zeros(2))
    out = jax.jit(apply)(p, {"x": M}, Pair(X, [X[:2], None]), Box(jnp.float32(3.0), "lbl"))
    grads = jax.jit(jax.grad(jax.jit(lambda p: jnp.sum(apply(p, {"x": M}, Pair(X, 1.0), Box(0.0, "z"))["y"]))))(p)
    return out["y"], out["pair"], out["box"].value, out["box"].label, grads


@case
def empty_and_none_outputs():
    return jax.jit(lambda x: None)(X), jax.jit(lambda x: ())(X), jax.jit(lambda: {})()


# ---------------------------------------------------------------- methods, partials, callables

class Model:
    def __init__(self, scale: float) -> None:
        self.scale = scale

    def __hash__(self) -> int:
        return hash(self.scale)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Model) and other.scale == self.scale

    @functools.partial(jax.jit, static_argnums=0)
    def forward(self, x):
        return x * self.scale

    double = jax.jit(lambda x: x * 2)  # a jitted function stored on the class: bound as a method

    def __call__(self, x):
        return jnp.tanh(x) * self.scale


@case
def methods_and_callables():
    m = Model(1.5)
    bound_error = None
    try:
        m.double(X)  # `self` is passed as x: an error plainly, the same error under run
    except TypeError as exc:
        bound_error = type(exc).__name__
    return m.forward(X), Model.double(X), bound_error, jax.jit(m)(X), jax.grad(lambda v: jnp.sum(jax.jit(m)(v)))(X)


@case
def partials():
    def scaled(x, k, bias=0.0):
        return x * k + bias
    g = jax.jit(functools.partial(scaled, k=3.0))
    h = jax.jit(jax.tree_util.Partial(scaled, bias=1.0), static_argnums=1)
    return g(X), g(X, bias=2.0), h(X, 2.0)


# ---------------------------------------------------------------- AOT and the jitted function's attributes

@case
def lower_compile_trace_eval_shape():
    g = jax.jit(f)
    compiled = g.lower(X).compile()
    traced = g.trace(X)
    shape = g.eval_shape(X)
    return compiled(X), traced.lower().compile()(X), (shape.shape, str(shape.dtype)), compiled(X * 2)


@case
def jitted_function_metadata():
    def documented(x):
        """Doubles x."""
        return x * 2
    documented.tag = "mine"
    g = jax.jit(documented)
    outer = jax.grad(lambda v: jnp.sum(g(v)))
    vm = jax.vmap(g)
    return (g.__name__, g.__qualname__, g.__doc__, g.tag, str(inspect.signature(g)),
            inspect.unwrap(g) is documented, vm.__name__, getattr(jax.vmap(g), "tag", None),
            getattr(jax.grad(g), "tag", None), outer.__name__, repr(g).replace(hex(id(documented)), "ID")
            .split(" at ")[0])


@case
def jitted_function_unwrapped_once():
    def head(x, n):
        return jnp.sum(x[:n])
    g = jax.jit(head)
    # `__wrapped__` is the user's function, so it can be jitted again with other options
    again = jax.jit(g.__wrapped__, static_argnums=1)
    return g.__wrapped__ is head, again(X, 2), again(X, 4)


@case
def library_jitted_function_attributes():
    lowered = jnp.exp.lower(X)
    return (jnp.exp.__name__, jnp.exp.lower(X).compile()(X), "exp" in lowered.as_text(),
            jax.nn.sigmoid.eval_shape(X).shape, jnp.cumsum.__name__, inspect.unwrap(jnp.exp).__name__)


@case
def function_attributes_travel_up():
    def tagged(x):
        return jnp.sum(x)
    tagged.note = 7
    return (getattr(jax.jit(tagged), "note", None), getattr(jax.grad(jax.jit(tagged)), "note", None),
            getattr(jax.jit(jax.grad(jax.jit(tagged))), "note", None))


@case
def jitted_function_as_static_argument():
    apply = jax.jit(lambda fn, x: fn(x) + 1, static_argnums=0)
    return apply(jax.jit(jnp.sin), X), apply(jnp.cos, X), apply(jax.jit(jnp.sin), X * 2)


# ---------------------------------------------------------------- host data in, host reads out

@case
def host_arguments_and_scalars():
    g = jax.jit(lambda a, b, c: a * b + c)
    return g(np.ones(3, np.float32), 2.0, np.float32(0.5)), g(X, 3, True), g(jnp.ones(3), np.int32(2), 1)


@case
def host_reads():
    y = jax.jit(f)(X)
    v = jax.jit(two_out)(X)[1]
    values = [float(y), y.item(), int(v[0] > 0), bool(y > 0), v.tolist(), np.asarray(v), np.array(v, copy=True),
              np.asanyarray(v, dtype=np.float64), jax.device_get({"a": v, "b": 3}), complex(y), v.tobytes(),
              format(y, ".3f"), str(v), repr(v), np.asarray(a=v)]
    synced = jax.block_until_ready({"v": v}), v.block_until_ready(), jax.block_until_ready(x=v)
    print("host reads", float(y), v)
    index = jnp.int32(2)
    return values, synced, [1, 2, 3, 4][index], v.__array__(), operator_index(index)


def operator_index(i):
    import operator
    return operator.index(i)


@case
def host_writes():
    return (jax.device_put(np.ones(3)), jax.device_put(x=np.ones(2)), jnp.asarray(M), jnp.array([1, 2, 3]),
            jnp.asarray(a=X), jnp.array(object=M, dtype=jnp.float16), jax.device_put({"a": np.zeros(2), "b": 1.0}))


# ---------------------------------------------------------------- eager (op-by-op) work

@case
def eager_ops_and_operators():
    a = jnp.asarray(M)
    b = a + np.ones((3, 4), np.float32) * 2
    c = (a @ b.T) @ a - a.sum() / 3 + (a > 0.5) * 1.0
    d = -a ** 2 % 3.0 // 1.5
    e = jnp.exp(a) + jnp.cumsum(a, axis=1) + jnp.where(a > 1, a, 0.0)
    g = jnp.add(a, 1.0) + jnp.add.reduce(a, axis=0) + jnp.sum(a=a)
    h = jax.nn.relu(a - 1) + jax.nn.softmax(a) + jax.nn.sigmoid(a) + jax.nn.gelu(a)
    key = jax.random.key(0)
    k1, k2 = jax.random.split(key)
    r = jax.random.normal(k1, (3,)) + jax.random.uniform(k2, (3,))
    i = a[1:, ::2] + a[jnp.array([0, 2])][:, :2].sum() + a.at[0, 0].set(5.0)[0, 0]
    return b, c, d, e, g, h, r, i, a.T, a.reshape(-1), jnp.float32(3) + 1, a.astype(jnp.int32)


@case
def eager_ufunc_methods():
    return jnp.add.outer(X[:3], X[:2]), jnp.multiply.accumulate(X), jnp.minimum.at(X.copy(), 0, -5.0, inplace=False)


@case
def eager_loop_with_grad():
    def loss(w, x):
        return jnp.mean((x @ w) ** 2)
    w = jnp.ones((4, 2))
    for _ in range(3):
        g = jax.grad(loss)(w, M)
        w = w - 0.01 * g
    return w


# ---------------------------------------------------------------- optax

@case
def optax_training_steps():
    try:
        import optax
    except ImportError:
        return "optax not installed"
    opt = optax.adam(1e-2)
    params = {"w": jnp.ones((4, 2)), "b": jnp.zeros(2)}
    state = opt.init(params)

    @jax.jit
    def step(params, state, x):
        loss, grads = jax.value_and_grad(jax.jit(lambda p: jnp.mean((x @ p["w"] + p["b"]) ** 2)))(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss
    losses = []
    for _ in range(4):
        params, state, loss = step(params, state, M)
        losses.append(loss)
    eager_updates, _ = opt.update(params, state, params)  # un-jitted optax too
    return params, losses, eager_updates


# ---------------------------------------------------------------- host callbacks

def _host_cube(x):
    return np.asarray(x) ** 3


@case
def host_callbacks():
    from jax.experimental import io_callback
    seen = []

    def log(step, value):
        seen.append((int(step), float(value)))

    @jax.jit
    def step(x, i):
        jax.debug.callback(log, i, jnp.sum(x))
        cubed = jax.pure_callback(_host_cube, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        counted = io_callback(lambda v: np.asarray(v + 1, np.float32), jax.ShapeDtypeStruct((), jnp.float32),
                              jnp.sum(x), ordered=True)
        return cubed * 0.5, counted
    outs = [step(X, i) for i in range(3)]
    mapped = jax.jit(jax.vmap(lambda row: jax.pure_callback(_host_cube, jax.ShapeDtypeStruct(row.shape, row.dtype),
                                                            row, vmap_method="sequential")))(M)
    keyword = jax.pure_callback(callback=_host_cube, result_shape_dtypes=jax.ShapeDtypeStruct(X.shape, X.dtype), x=X) \
        if "callback" in inspect.signature(jax.pure_callback).parameters else jnp.asarray(_host_cube(X))
    scanned = lax.scan(lambda c, v: (c + jax.pure_callback(_host_cube, jax.ShapeDtypeStruct((), v.dtype), v), None),
                       jnp.float32(0), X)[0]
    jax.effects_barrier()
    return outs, mapped, keyword, scanned, seen, jax.pure_callback(_host_cube, jax.ShapeDtypeStruct((), jnp.float32),
                                                                   jnp.float32(2.0))


# ---------------------------------------------------------------- errors are the same errors

@case
def errors_are_unchanged():
    raised = []
    g = jax.jit(lambda x: x.sum())
    for call in (lambda: g(X, X), lambda: jax.jit(lambda x: 1 if x > 0 else 0)(1.0),
                 lambda: jax.jit(lambda x, n: x * n, static_argnums=1)(X, np.ones(2)),
                 lambda: jax.grad(jax.jit(lambda x: x))(X), lambda: jax.jit(None),
                 lambda: jax.pmap(), lambda: jnp.exp("a")):
        try:
            call()
            raised.append(None)
        except Exception as exc:  # noqa: BLE001 - the kind of error is the result
            raised.append(type(exc).__name__)
    return raised


# ---------------------------------------------------------------- equinox, where installed

try:
    import equinox as eqx
except ImportError:
    eqx = None

if eqx is not None:
    class Linear(eqx.Module):
        weight: jax.Array
        bias: jax.Array
        activation: str = eqx.field(static=True, default="tanh")

        def __call__(self, x):
            y = x @ self.weight + self.bias
            return jnp.tanh(y) if self.activation == "tanh" else y

        @eqx.filter_jit
        def jitted_method(self, x):
            return self(x) * 2

    @case
    def eqx_filter_jit_grad_vmap():
        layer = Linear(jnp.ones((4, 2)) / 3, jnp.zeros(2))
        loss = eqx.filter_jit(lambda model, x: jnp.mean(model(x) ** 2))
        grads = eqx.filter_jit(eqx.filter_grad(loss))(layer, M)
        value, grads_too = eqx.filter_value_and_grad(eqx.filter_jit(loss))(layer, M)
        per_row = eqx.filter_vmap(eqx.filter_jit(lambda model, x: model(x)), in_axes=(None, 0))(layer, M)
        return loss(layer, M), grads, value, grads_too, per_row, layer.jitted_method(M)

    @case
    def eqx_mlp_training_with_optax():
        import optax
        model = eqx.nn.MLP(4, 1, 8, 2, key=jax.random.key(0))
        opt = optax.sgd(0.1)
        state = opt.init(eqx.filter(model, eqx.is_array))

        @eqx.filter_jit
        def step(model, state, x, y):
            loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
            updates, state = opt.update(grads, state, eqx.filter(model, eqx.is_array))
            return eqx.apply_updates(model, updates), state, loss
        losses = []
        for _ in range(3):
            model, state, loss = step(model, state, M, M[:, :1])
            losses.append(loss)
        return eqx.filter(model, eqx.is_array), losses


def _freeze(tree: Any) -> Any:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    frozen = []
    for leaf in leaves:
        if isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
            array = np.asarray(leaf)
            frozen.append(("array", array.dtype.str, array.shape, array.tobytes()))
        else:
            frozen.append(("value", repr(leaf)))
    return str(treedef), frozen


def main() -> None:
    chosen = set(sys.argv[1:])
    results = {}
    for name, fn in CASES.items():
        if chosen and name not in chosen:
            continue
        try:
            results[name] = ("ok", _freeze(fn()))
        except Exception as exc:  # noqa: BLE001 - a case that raises is compared by its error
            results[name] = ("raised", type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
    with open(os.environ["DIFFERENTIAL_OUT"], "wb") as out:
        pickle.dump(results, out)
    print(f"{len(results)} cases")


if __name__ == "__main__":
    main()
