"""A training-like loop reading two metrics on the host every step (2 syncs per step, 30 steps)."""

import sys

import jax
import jax.numpy as jnp

STEPS = 30  # more than a demo's handful: the static scan reports loops of over 20 literal steps


@jax.jit
def step(w):
    loss = jnp.sum(w ** 2)
    return w * 0.9, loss, jnp.max(w)


def main() -> None:
    w = jnp.ones(8)
    history = []
    for _ in range(STEPS):
        w, loss, peak = step(w)
        history.append(float(loss))
        history.append(peak.item())
    print(f"final {history[-2]:.4f}")
    sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)


if __name__ == "__main__":
    main()
