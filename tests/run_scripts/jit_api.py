"""The jitted-function API a program may rely on keeps working under `jaxopt-audit run`.

Decorator factory with static_argnames, a jitted method, `.lower`, `__wrapped__`, nested jit,
grad and vmap through jitted functions. Known counts: outer 2 calls / 1 compile, raise_to 3 calls /
2 compiles (static `power` changed), Model.apply 2 calls / 1 compile, no host transfers.
"""

import functools

import jax
import jax.numpy as jnp


@jax.jit(static_argnames="power")
def raise_to(x, power):
    return x ** power


@jax.jit
def inner(x):
    return jnp.sin(x)


@jax.jit
def outer(x):
    return inner(x) * 2.0


class Model:
    def __init__(self, scale: float) -> None:
        self.scale = scale

    @functools.partial(jax.jit, static_argnums=0)
    def apply(self, x):
        return x * self.scale


def main() -> None:
    x = jnp.arange(4.0)
    assert "sine" in outer.lower(x).as_text()
    y = outer(outer(x))
    g = jax.grad(lambda v: outer(v).sum())(x)
    v = jax.vmap(inner)(jnp.ones((3, 2)))
    r = raise_to(x, power=2) + raise_to(x, power=2)
    r3 = raise_to(x, power=3)
    model = Model(3.0)
    m = model.apply(x) + model.apply(x)
    print(outer.__name__, inner.__wrapped__.__name__)
    jax.block_until_ready((y, g, v, r, r3, m))


if __name__ == "__main__":
    main()
