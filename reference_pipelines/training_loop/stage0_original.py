"""Original: no jit, NumPy preprocessing and a jnp.array conversion per batch, hand-written SGD.

Kept as the case study wrote it, mistakes included: train_step runs op by op (JAX101), every batch is
preprocessed with NumPy and copied to the device (JAX302), the augmentation noise is pulled to the
host (JAX301) and drawn from `jax.random.PRNGKey(0)` on every batch, so every batch gets the same
"random" noise (JAX502), and the update is written by hand (JAX702).
"""

from __future__ import annotations

from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax import value_and_grad

from .model import model_forward
from .workload import LEARNING_RATE, NOISE_SCALE, Workload, make_workload


def train_step(params, batch):
    def loss_fn(params):
        predictions = model_forward(params, batch["x"])
        return jnp.mean((predictions - batch["y"]) ** 2)

    loss, grads = value_and_grad(loss_fn)(params)
    # Update params (no optimizer state)
    new_params = {k: params[k] - LEARNING_RATE * grads[k] for k in params}
    return new_params, loss


def preprocess_batch(batch):
    x = batch["x"]
    x = (x - np.mean(x)) / np.std(x)
    # Augmentation noise from JAX's PRNG, brought back to NumPy
    noise = np.asarray(jax.random.normal(jax.random.PRNGKey(0), x.shape)) * NOISE_SCALE
    return {"x": (x + noise).astype(np.float32), "y": batch["y"]}


def data_loader(x: np.ndarray, y: np.ndarray, order: np.ndarray,
                batch_size: int) -> Iterator[dict[str, np.ndarray]]:
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        yield {"x": x[idx], "y": y[idx]}


def run(workload: Workload) -> dict[str, jax.Array]:
    params = {k: jnp.array(v) for k, v in workload.init_params.items()}
    losses = []
    for epoch in range(workload.n_epochs):
        for batch in data_loader(workload.x, workload.y, workload.orders[epoch], workload.batch_size):
            # Data preprocessing on CPU with NumPy
            batch_np = preprocess_batch(batch)
            # Convert to JAX arrays every iteration
            batch_jax = {k: jnp.array(v) for k, v in batch_np.items()}
            params, loss = train_step(params, batch_jax)
            losses.append(loss)
    return {"params": params, "losses": jnp.stack(losses)}


if __name__ == "__main__":
    outputs = run(make_workload("small"))
    print(f"training_loop.stage0_original: {outputs['losses'].shape[0]} steps, "
          f"loss {float(outputs['losses'][0]):.4f} -> {float(outputs['losses'][-1]):.4f}")
