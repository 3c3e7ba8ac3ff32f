"""pmap called every step; a jitted shard_map fed a batch whose length changes every step."""

from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

doubled = jax.pmap(lambda x: x * 2)
mesh = jax.make_mesh((1,), ("d",))


@jax.jit
@partial(jax.shard_map, mesh=mesh, in_specs=P(), out_specs=P())
def total(x):
    return jnp.sum(x) * 2


for n in range(3, 7):
    y = doubled(jnp.ones((jax.local_device_count(), 3)))
    s = total(jnp.ones((n,)))
