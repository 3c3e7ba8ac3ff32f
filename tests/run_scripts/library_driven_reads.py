"""SciPy's optimizer evaluates a jitted value-and-gradient a few times; the objective reads the
results on the host (SciPy needs floats) and copies SciPy's x to the device. Then a loop of 30
jitted steps reads a value every step."""

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize


def loss(w):
    return jnp.sum((w - 3.0) ** 2)


value_and_grad = jax.jit(jax.value_and_grad(loss))


def objective(x):
    value, g = value_and_grad(jnp.asarray(x, dtype=jnp.float32))
    return float(value), np.asarray(g, dtype=np.float64)


@jax.jit
def step(w):
    value, g = jax.value_and_grad(loss)(w)
    return w - 0.1 * g, value


def main() -> None:
    result = scipy.optimize.minimize(objective, np.zeros(4), jac=True, method="L-BFGS-B",
                                     options={"maxiter": 3})
    w = jnp.asarray(result.x, dtype=jnp.float32)
    for _ in range(30):
        w, value = step(w)
        print(float(value))


if __name__ == "__main__":
    main()
