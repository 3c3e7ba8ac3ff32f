"""A jitted function called with a different batch length every call: 5 compilations."""

import jax
import jax.numpy as jnp


@jax.jit
def total(batch, scale):
    return jnp.sum(batch) * scale


def main() -> None:
    scale = jnp.float32(2.0)
    results = [total(jnp.ones(n), scale) for n in range(1, 6)]
    jax.block_until_ready(results)


if __name__ == "__main__":
    main()
