"""Runs 3 of 6 steps, then raises: the report must still come, with exit status 1."""

import jax
import jax.numpy as jnp


@jax.jit
def step(x):
    return x * 2.0


def main() -> None:
    x = jnp.ones(2)
    for i in range(6):
        if i == 3:
            raise RuntimeError("data loader broke at step 3")
        x = step(x)


if __name__ == "__main__":
    main()
