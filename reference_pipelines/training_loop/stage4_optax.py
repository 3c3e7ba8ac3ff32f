"""+ optax: the hand-written dict update becomes `optax.sgd` with optimizer state (JAX702).

The case study's "Optimization 3" switched to adam; here it is plain SGD at the same learning rate,
so the math is exactly stage 3's and any measured difference is optax's alone (adam would change the
math and needs its own learning rate).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import optax
from jax import value_and_grad

from .model import model_forward
from .workload import LEARNING_RATE, NOISE_SCALE, Workload, make_workload

optimizer = optax.sgd(learning_rate=LEARNING_RATE)


@jax.jit
def train_step(params, opt_state, batch):
    def loss_fn(params):
        predictions = model_forward(params, batch["x"])
        return jnp.mean((predictions - batch["y"]) ** 2)

    loss, grads = value_and_grad(loss_fn)(params)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss


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
    opt_state = optimizer.init(params)
    key = jax.random.key(workload.noise_seed)
    losses = []
    for epoch in range(workload.n_epochs):
        order = orders[epoch]
        for start in range(0, workload.n_samples, workload.batch_size):
            size = min(workload.batch_size, workload.n_samples - start)  # the last batch is partial
            batch = get_batch(x, y, order, start, batch_size=size)
            key, noise_key = jax.random.split(key)
            batch = preprocess_batch(batch, noise_key)
            params, opt_state, loss = train_step(params, opt_state, batch)
            losses.append(loss)
    return {"params": params, "losses": jnp.stack(losses)}


if __name__ == "__main__":
    outputs = run(make_workload("small"))
    print(f"training_loop.stage4_optax: {outputs['losses'].shape[0]} steps, "
          f"loss {float(outputs['losses'][0]):.4f} -> {float(outputs['losses'][-1]):.4f}")
