"""Real training data that ships with a dependency: scikit-learn's ``load_digits``.

The synthetic pipeline (``data.py``) draws random labels, so a classifier's loss never
converges and a loss curve says nothing about convergence (seed 004 needs real curves). With
``python -m gpuscope.workloads.run --real-data digits`` a job trains on the 1,797 real 8×8
handwritten digits of UCI's optical-digits set (bundled with scikit-learn, no download),
upsampled bilinearly to the job's MNIST shape, with their true labels:

* ``mnist`` images ``(b, 1, 28, 28)``: in [0, 1] for the VAE, standardised with MNIST's
  mean/std for classifiers (as ``data.py`` does);
* ``mnist_seq`` sequences ``(b, 28, 28)``: the [0, 1] image read row by row.

Batches are drawn without replacement from a per-epoch shuffle (seeded), cycling as needed.
The loss logs of such runs are real measurements: label them ``measured``.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from gpuscope.core.errors import InputError

REAL_DATASETS: tuple[str, ...] = ("digits",)
#: Dataset kinds / names the digits can stand in for.
SUPPORTED: tuple[str, ...] = ("mnist", "mnist_seq")
_MNIST_MEAN, _MNIST_STD = 0.1307, 0.3081


@lru_cache(maxsize=2)
def digits_28() -> tuple[torch.Tensor, torch.Tensor]:
    """All 1,797 digits as float32 ``(n, 1, 28, 28)`` in [0, 1] and int64 labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.from_numpy(d.images.astype(np.float32) / 16.0).unsqueeze(1)
    x = F.interpolate(x, size=(28, 28), mode="bilinear", align_corners=False).clamp_(0.0, 1.0)
    return x, torch.from_numpy(d.target.astype(np.int64))


def real_batches(name: str, dataset: str, target: str, batch_size: int, steps: int,
                 seed: int = 0, epoch: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield ``steps`` (inputs, labels) batches of real data ``name`` shaped for ``dataset``;
    ``target`` is ``vae`` ([0, 1] images) or ``classifier`` (standardised)."""
    if name not in REAL_DATASETS:
        raise InputError(f"unknown real dataset {name!r}; expected one of {', '.join(REAL_DATASETS)}")
    if dataset not in SUPPORTED:
        raise InputError(f"--real-data {name} stands in for {'/'.join(SUPPORTED)}, not {dataset!r}")
    x, y = digits_28()
    if dataset == "mnist" and target != "vae":
        x = (x - _MNIST_MEAN) / _MNIST_STD
    if dataset == "mnist_seq":
        x = x.squeeze(1)  # 28 steps of 28 features
    n = x.shape[0]
    g = torch.Generator().manual_seed(seed * 1000 + epoch)
    order = torch.randperm(n, generator=g)
    pos = 0
    for _ in range(steps):
        if pos + batch_size > n:
            order, pos = torch.randperm(n, generator=g), 0
        idx = order[pos: pos + batch_size]
        pos += batch_size
        yield x[idx], y[idx]


__all__ = ["REAL_DATASETS", "digits_28", "real_batches"]
