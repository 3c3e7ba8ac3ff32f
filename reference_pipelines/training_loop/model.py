"""The MLP every stage trains: its forward pass (unchanged by every rewrite)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def model_forward(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    """64-1024-1024-1 tanh MLP on a batch `x` of shape (batch, 64); returns (batch,) predictions."""
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    h = jnp.tanh(h @ params["w2"] + params["b2"])
    return (h @ params["w3"] + params["b3"])[:, 0]

