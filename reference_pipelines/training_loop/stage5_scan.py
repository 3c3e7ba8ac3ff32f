"""+ scan: each epoch is one compiled `lax.scan` over device-resident batches, not 1,563 steps (JAX201).

The per-step Python loop (a dispatch, a device slice and a key split per step) becomes one jitted
call per epoch: the epoch's batches are gathered on device, the full ones are scanned and the last,
partial batch is one more step in the same compiled program. Same math as stages 3 and 4.
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
def train_epoch(params, opt_state, key, x, y, order, batch_size: int):
    n_full = order.shape[0] // batch_size
    full = order[:n_full * batch_size].reshape(n_full, batch_size)
    last = order[n_full * batch_size:]

    def step(carry, batch):
        params, opt_state, key = carry
        key, noise_key = jax.random.split(key)
        batch = preprocess_batch(batch, noise_key)
        params, opt_state, loss = train_step(params, opt_state, batch)
        return (params, opt_state, key), loss

    carry, losses = jax.lax.scan(step, (params, opt_state, key), {"x": x[full], "y": y[full]})
    if last.shape[0] > 0:  # the partial last batch has a static size: one more step
        carry, last_loss = step(carry, {"x": x[last], "y": y[last]})
        losses = jnp.append(losses, last_loss)
    return (*carry, losses)


def run(workload: Workload) -> dict[str, jax.Array]:
    params = {k: jnp.asarray(v) for k, v in workload.init_params.items()}
    # Load the data set to the device once
    x, y, orders = jnp.asarray(workload.x), jnp.asarray(workload.y), jnp.asarray(workload.orders)
    opt_state = optimizer.init(params)
    key = jax.random.key(workload.noise_seed)
    losses = []
    for epoch in range(workload.n_epochs):
        params, opt_state, key, epoch_losses = train_epoch(
            params, opt_state, key, x, y, orders[epoch], batch_size=workload.batch_size)
        losses.append(epoch_losses)
    return {"params": params, "losses": jnp.concatenate(losses)}


if __name__ == "__main__":
    outputs = run(make_workload("small"))
    print(f"training_loop.stage5_scan: {outputs['losses'].shape[0]} steps, "
          f"loss {float(outputs['losses'][0]):.4f} -> {float(outputs['losses'][-1]):.4f}")
