"""Bug fix: fresh noise per batch from a key split every step, not `PRNGKey(0)` each batch (JAX502, JAX602).

Stages 0-2 create `jax.random.PRNGKey(0)` inside the per-batch preprocessing, so every batch gets the
same "random" noise. Here one key is made before the loop (the typed `jax.random.key`) and split
every step. This changes the math: validation compares loss curves, not weights.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax import value_and_grad

from .model import model_forward
from .workload import LEARNING_RATE, NOISE_SCALE, Workload, make_workload


@jax.jit
def train_step(params, batch):
    def loss_fn(params):
        predictions = model_forward(params, batch["x"])
        return jnp.mean((predictions - batch["y"]) ** 2)

    loss, grads = value_and_grad(loss_fn)(params)
    # Update params (no optimizer state)
    new_params = {k: params[k] - LEARNING_RATE * grads[k] for k in params}
    return new_params, loss


@jax.jit
def preprocess_batch(batch, key):
    x = batch["x"]
    x = (x - jnp.mean(x)) / jnp.std(x)
    noise = jax.random.normal(key, x.shape) * NOISE_SCALE
    return {"x": x + noise, "y": batch["y"]}


@partial(jax.jit, static_argnames="batch_size")
def get_batch(x: jax.Array, y: jax.Array, order: jax.Array, start: int,
              batch_size: int) -> dict[str, jax.Array]:
    idx = jax.lax.dynamic_slice_in_dim(order, start, batch_size)
    return {"x": x[idx], "y": y[idx]}


def run(workload: Workload) -> dict[str, jax.Array]:
    params = {k: jnp.asarray(v) for k, v in workload.init_params.items()}
    # Load the data set to the device once
    x, y, orders = jnp.asarray(workload.x), jnp.asarray(workload.y), jnp.asarray(workload.orders)
    key = jax.random.key(workload.noise_seed)
    losses = []
    for epoch in range(workload.n_epochs):
        order = orders[epoch]
        for start in range(0, workload.n_samples, workload.batch_size):
            size = min(workload.batch_size, workload.n_samples - start)  # the last batch is partial
            batch = get_batch(x, y, order, start, batch_size=size)
            key, noise_key = jax.random.split(key)
            batch = preprocess_batch(batch, noise_key)
            params, loss = train_step(params, batch)
            losses.append(loss)
    return {"params": params, "losses": jnp.stack(losses)}


if __name__ == "__main__":
    outputs = run(make_workload("small"))
    print(f"training_loop.stage3_fresh_noise: {outputs['losses'].shape[0]} steps, "
          f"loss {float(outputs['losses'][0]):.4f} -> {float(outputs['losses'][-1]):.4f}")
