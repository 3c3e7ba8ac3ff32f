"""The training_loop workload: synthetic regression data, MLP initial weights, epoch orders.

The case study trains an MLP on 50,000 samples, batch 32, for 10 epochs (15,630 steps). The data
here is synthetic: raw features with an offset and scale (so the per-batch normalisation in the
preprocessing matters) and targets from a fixed random "teacher" network plus noise. Every stage
sees the same batches in the same order: the per-epoch shuffles are drawn once, here, with NumPy.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

LEARNING_RATE = 0.01  # plain SGD; the same rate for the hand-written update and optax.sgd
NOISE_SCALE = 0.01  # augmentation noise added to the normalised features (as in the case study)
INPUT_DIM = 64
HIDDEN_DIM = 1024  # wide enough that a batch-32 step is matmul work, not per-op overhead
TEACHER_DIM = 32


class Workload(NamedTuple):
    """Host (NumPy) data; each stage decides where and how it is moved to the device."""

    x: np.ndarray  # (n_samples, INPUT_DIM) float32, raw (un-normalised) features
    y: np.ndarray  # (n_samples,) float32 targets
    orders: np.ndarray  # (n_epochs, n_samples) int32: the shuffled sample order of each epoch
    init_params: dict[str, np.ndarray]  # MLP weights, float32
    batch_size: int
    noise_seed: int  # seeds the per-step noise keys once the constant-key bug is fixed

    @property
    def n_epochs(self) -> int:
        return int(self.orders.shape[0])

    @property
    def n_samples(self) -> int:
        return int(self.x.shape[0])

    @property
    def steps_per_epoch(self) -> int:
        return -(-self.n_samples // self.batch_size)  # the last, partial batch is kept


SIZES = {"small": (2_000, 2), "full": (50_000, 10)}  # (samples, epochs); batch 32 for both


def init_mlp(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A 64-1024-1024-1 tanh MLP as a flat dict, as in the case study's `params[k]` update."""
    dims = (INPUT_DIM, HIDDEN_DIM, HIDDEN_DIM, 1)
    params = {}
    for layer, (fan_in, fan_out) in enumerate(zip(dims[:-1], dims[1:], strict=True), start=1):
        params[f"w{layer}"] = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        params[f"b{layer}"] = np.zeros(fan_out, np.float32)
    return params


def make_workload(size: str, seed: int = 0) -> Workload:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r} for training_loop; choose from {', '.join(SIZES)}")
    n_samples, n_epochs = SIZES[size]
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n_samples, INPUT_DIM))
    teacher_in = rng.standard_normal((INPUT_DIM, TEACHER_DIM)) / np.sqrt(INPUT_DIM)
    teacher_out = rng.standard_normal(TEACHER_DIM)
    y = np.tanh(2.0 * z @ teacher_in) @ teacher_out + 0.1 * rng.standard_normal(n_samples)
    y = (y - y.mean()) / y.std()
    x = 5.0 + 3.0 * z  # raw features are offset and scaled; preprocessing normalises them
    orders = np.stack([rng.permutation(n_samples) for _ in range(n_epochs)]).astype(np.int32)
    return Workload(x=x.astype(np.float32), y=y.astype(np.float32), orders=orders,
                    init_params=init_mlp(rng), batch_size=32, noise_seed=seed + 1)


def prefix(workload: Workload, fraction: float) -> Workload:
    """The first whole epochs making up `fraction` of the run (at least one epoch)."""
    n_epochs = max(1, round(workload.n_epochs * fraction))
    return workload._replace(orders=workload.orders[:n_epochs])


def work_units(workload: Workload) -> float:
    """Training samples processed: samples x epochs."""
    return float(workload.n_samples * workload.n_epochs)
