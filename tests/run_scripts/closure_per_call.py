"""An ODE solved through `odeint` (jitted inside JAX, the function a static argument) with a
closure made anew on every call: each call traces and compiles again. JAX logs no cache-miss
explanation for it. Then the same solve with one module-level function passed every time: one
compilation, nothing to report."""

import jax.numpy as jnp
from jax.experimental import ode


def decay(y, t, rate):
    return -rate * y


def solve_with_closure(rate, y0, ts):
    def field(y, t):
        return -rate * y
    return ode.odeint(field, y0, ts)


def solve_with_one_function(rate, y0, ts):
    return ode.odeint(decay, y0, ts, rate)


def main() -> None:
    ts = jnp.linspace(0.0, 1.0, 4)
    y0 = jnp.ones(2)
    closures = [solve_with_closure(jnp.float32(r), y0, ts) for r in (1.0, 2.0, 3.0)]
    shared = [solve_with_one_function(jnp.float32(r), y0 * 2, ts) for r in (1.0, 2.0, 3.0)]
    print(float(closures[-1][-1, 0]), float(shared[-1][-1, 0]))


if __name__ == "__main__":
    main()
