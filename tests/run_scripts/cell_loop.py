"""A per-generation function that loops over the cells of a small board, calls a jitted rule
on each cell's neighbourhood and stacks the results after its loop."""

import jax
import jax.numpy as jnp

SIZE, GENERATIONS = 16, 30


@jax.jit
def rule(patch):
    alive = jnp.sum(patch) - patch[1, 1]
    return jnp.where((alive == 3) | ((patch[1, 1] == 1) & (alive == 2)), 1, 0)


def generation(board):
    padded = jnp.pad(board, 1, mode="wrap")
    cells = []
    for i in range(SIZE):
        for j in range(SIZE):
            cells.append(rule(padded[i:i + 3, j:j + 3]))
    return jnp.stack(cells).reshape(SIZE, SIZE)


board = jnp.zeros((SIZE, SIZE), jnp.int32).at[1, 2].set(1).at[2, 3].set(1).at[3, 1:4].set(1)
for _ in range(GENERATIONS):
    board = generation(board)
print(f"alive: {int(board.sum())}")
