"""A helper that runs a few Newton iterations of a jitted update per item, stopping on a host
test, called once per item from main's loop; the results are stacked after the loop. The
Newton chains are short, so the loop over items is the one to vmap."""

import jax
import jax.numpy as jnp

ITEMS = 300


@jax.jit
def newton(x, target):
    step = (x * x - target) / (2.0 * x)
    return x - step, step


def square_root(target):
    x = jnp.float32(1.0)
    for _ in range(20):
        x, step = newton(x, target)
        if abs(float(step)) < 1e-4:
            break
    return x


def main():
    targets = jnp.linspace(1.0, 4.0, ITEMS)
    roots = []
    for i in range(ITEMS):
        roots.append(square_root(targets[i]))
    print(f"last root {float(jnp.stack(roots)[-1]):.4f}")


main()
