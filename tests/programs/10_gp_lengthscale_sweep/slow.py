"""Choose a Gaussian-process length scale by the marginal likelihood over a grid."""

import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

N = 160
LENGTH_SCALES = np.linspace(0.1, 2.0, 24)


def neg_log_marginal(x, y, length_scale, noise):
    d2 = (x[:, None] - x[None, :]) ** 2
    k = jnp.exp(-0.5 * d2 / length_scale**2) + noise * jnp.eye(x.shape[0])
    chol = jnp.linalg.cholesky(k)
    alpha = jax.scipy.linalg.cho_solve((chol, True), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(chol))) + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi)


def main():
    kx, ky = jax.random.split(jax.random.key(4))
    x = jnp.sort(jax.random.uniform(kx, (N,), minval=-3.0, maxval=3.0))
    y = jnp.sin(2.0 * x) + 0.1 * jax.random.normal(ky, (N,))

    scores = []
    for ls in LENGTH_SCALES:  # <- JAX202
        objective = jax.jit(partial(neg_log_marginal, length_scale=ls, noise=0.01))  # <- JAX102 major
        scores.append(objective(x, y))

    scores = np.asarray(jnp.stack(scores))
    best = LENGTH_SCALES[int(np.argmin(scores))]
    out = os.environ.get("JAXOPT_PROGRAM_OUT")
    if out:
        np.savez(out, scores=scores, best=np.asarray(best))
    print(f"best length scale {best:.3f} (nll {scores.min():.2f})")


if __name__ == "__main__":
    main()
