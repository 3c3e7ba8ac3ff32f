"""jax.jit of a lambda evaluated inside the loop: a new wrapper, a new trace, every step."""

import jax
import jax.numpy as jnp


def main() -> None:
    x = jnp.zeros(4)
    for _ in range(4):
        step = jax.jit(lambda v: v + 1.0)
        x = step(x)
    x.block_until_ready()


if __name__ == "__main__":
    main()
