"""A few eager ops (each compiles once) and a jitted call; prints the XLA compilations JAX reported."""

import jax
import jax.numpy as jnp

compiles = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kwargs: compiles.append(event) if event.endswith("backend_compile_duration") else None)

x = jnp.zeros(())
y = jnp.ones(3) + 1
total = jax.jit(lambda v: v * 2)(y).sum()
print(len(compiles))
