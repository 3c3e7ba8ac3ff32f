"""A jitted step that hands its loss to a Python logger through a host callback on every call,
and a second logger the step calls only every 100 steps (under lax.cond)."""

import time

import jax
import jax.numpy as jnp

history = []


def log_loss(step, loss):
    history.append((int(step), float(loss)))
    time.sleep(0.002)  # a log line written to a slow disk


def log_summary(step, loss):
    print(f"step {int(step)}: loss {float(loss):.4f}")


@jax.jit
def step(w, i):
    loss = jnp.sum((w - 1.0) ** 2)
    jax.debug.callback(log_loss, i, loss)
    jax.lax.cond(i % 100 == 0, lambda: jax.debug.callback(log_summary, i, loss), lambda: None)
    return w - 0.01 * 2 * (w - 1.0)


w = jnp.zeros(16)
for i in range(300):
    w = step(w, i)
jax.effects_barrier()
print(len(history), float(w[0]))
