"""Synthetic datasets with the real sizes, fed through a CPU input pipeline that does real work.

Each sample is produced in a DataLoader worker the way a real image pipeline produces it:

1. *decode*: a JPEG-like decode — random quantised 8×8 DCT coefficients with a natural-image
   spectrum (energy falling as 1/(1+u+v)), dequantised with the JPEG luminance table and turned
   into pixels by the inverse 2-D DCT of every block (the core of baseline JPEG decoding,
   ITU-T T.81 §A.3.3), then clipped to uint8 HWC. ImageNet images are stored at 288×288 (then
   cropped), CIFAR-10 at 32×32, MNIST at 28×28.
2. *augment*: ImageNet — random-resized crop (scale 0.08–1, aspect 3/4–4/3) resized bilinearly
   to 224×224, horizontal flip; CIFAR-10 — pad 4, random 32×32 crop, flip (He et al. 2016
   §4.2); MNIST — none.
3. *normalise* to float32 CHW: per-channel mean/std for classifiers, [-1, 1] for GANs,
   [0, 1] for the VAE.

Everything is a pure function of (seed, epoch, index), so a run is reproducible with any number
of workers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, RandomSampler

from gpuscope.jobs.spec import DATASETS, DatasetSpec

#: Stored (decoded) image side per dataset, before cropping.
STORED_SIDE: dict[str, int] = {"imagenet": 288, "cifar10": 32, "mnist": 28}
#: JPEG Annex K luminance quantisation table.
_JPEG_Q = np.array([
    [16, 11, 10, 16, 24, 40, 51, 61], [12, 12, 14, 19, 26, 58, 60, 55],
    [14, 13, 16, 24, 40, 57, 69, 56], [14, 17, 22, 29, 51, 87, 80, 62],
    [18, 22, 37, 56, 68, 109, 103, 77], [24, 35, 55, 64, 81, 104, 113, 92],
    [49, 64, 78, 87, 103, 121, 120, 101], [72, 92, 95, 98, 112, 100, 103, 99],
], dtype=np.float32)
_MEAN_STD: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "mnist": ((0.1307,), (0.3081,)),
}


def _dct_matrix(n: int = 8) -> np.ndarray:
    """Orthonormal DCT-II matrix: X = D x D^T, so x = D^T X D."""
    k = np.arange(n)[:, None]
    i = np.arange(n)[None, :]
    d = np.cos(math.pi * (2 * i + 1) * k / (2 * n)) * math.sqrt(2 / n)
    d[0] /= math.sqrt(2)
    return d.astype(np.float32)


_D = _dct_matrix()
_SPECTRUM = (1.0 / (1.0 + np.add.outer(np.arange(8), np.arange(8)))).astype(np.float32)


def decode_image(rng: np.random.Generator, side: int, channels: int) -> np.ndarray:
    """Decode a synthetic JPEG-like image: uint8 array (side, side, channels)."""
    nb = math.ceil(side / 8)
    # Quantised coefficients: integers whose magnitude falls with frequency; DC carries the
    # block's brightness (in level-shifted units, as JPEG stores it).
    coef = rng.standard_normal((channels, nb, nb, 8, 8), dtype=np.float32) * (6.0 * _SPECTRUM)
    coef[..., 0, 0] = rng.uniform(-60, 60, (channels, nb, nb)).astype(np.float32)
    return blocks_to_image(np.rint(coef) * _JPEG_Q / 2.0, side)  # dequantise, then IDCT


def blocks_to_image(coef: np.ndarray, side: int) -> np.ndarray:
    """Inverse 2-D DCT of dequantised 8×8 blocks ``(C, nb, nb, 8, 8)`` -> uint8 (side, side, C),
    level-shifted by 128 and clipped (T.81 §A.3.3)."""
    channels, nb = coef.shape[0], coef.shape[1]
    pix = _D.T @ coef.astype(np.float32) @ _D
    img = pix.transpose(1, 3, 2, 4, 0).reshape(nb * 8, nb * 8, channels)[:side, :side]
    return np.clip(np.rint(img + 128.0), 0, 255).astype(np.uint8)


@dataclass(frozen=True)
class PipelineSpec:
    """What the pipeline does for one job: dataset, output range and augmentation."""

    dataset: str
    target: str = "classifier"  # classifier (mean/std) | gan ([-1, 1]) | vae ([0, 1])
    augment: bool = True
    size: int | None = None  # samples per epoch; None = the dataset's real training-set size


class SyntheticImageDataset(Dataset):
    """``train_size`` samples of ``dataset`` (or ``spec.size``); item ``i`` is
    (image float32 CHW, label)."""

    def __init__(self, spec: PipelineSpec, seed: int = 0, epoch: int = 0) -> None:
        self.spec = spec
        self.seed = seed
        self.epoch = epoch
        self.ds: DatasetSpec = DATASETS[spec.dataset]

    def __len__(self) -> int:
        return self.ds.train_size if self.spec.size is None else self.spec.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        ds = self.ds
        rng = np.random.default_rng([self.seed, index])  # content: fixed per sample
        label = int(rng.integers(ds.num_classes))
        img = decode_image(rng, STORED_SIDE[ds.name], ds.channels)
        aug = np.random.default_rng([self.seed, self.epoch, index, 1])  # augmentation: per epoch
        x = torch.from_numpy(img).permute(2, 0, 1).float().div_(255.0)
        if self.spec.augment:
            x = self._augment(x, aug)
        return self._normalise(x), label

    def _augment(self, x: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
        name, out = self.ds.name, self.ds.height
        if name == "imagenet":
            x = _random_resized_crop(x, out, rng)
        elif name == "cifar10":
            x = F.pad(x, (4, 4, 4, 4))
            i, j = rng.integers(0, 9, 2)
            x = x[:, i : i + out, j : j + out]
        if name != "mnist" and rng.random() < 0.5:
            x = x.flip(2)
        return x.contiguous()

    def _normalise(self, x: torch.Tensor) -> torch.Tensor:
        if self.spec.target == "gan":
            return x.mul_(2.0).sub_(1.0)
        if self.spec.target == "vae":
            return x
        mean, std = _MEAN_STD[self.ds.name]
        m = torch.tensor(mean).view(-1, 1, 1)
        s = torch.tensor(std).view(-1, 1, 1)
        return (x - m) / s


def _random_resized_crop(x: torch.Tensor, out: int, rng: np.random.Generator) -> torch.Tensor:
    """Inception-style crop (Szegedy et al. 2015 §6): area 8–100 %, aspect 3/4–4/3, resize."""
    _, h, w = x.shape
    for _ in range(10):
        area = h * w * rng.uniform(0.08, 1.0)
        ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
        cw, ch = int(round(math.sqrt(area * ratio))), int(round(math.sqrt(area / ratio)))
        if 0 < cw <= w and 0 < ch <= h:
            i, j = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
            break
    else:
        ch = cw = min(h, w)
        i, j = (h - ch) // 2, (w - cw) // 2
    crop = x[None, :, i : i + ch, j : j + cw]
    return F.interpolate(crop, size=(out, out), mode="bilinear", align_corners=False)[0]


def default_workers() -> int:
    """min(4, CPU cores)."""
    return max(0, min(4, os.cpu_count() or 1))


def _worker_init(_: int) -> None:
    torch.set_num_threads(1)  # each worker is one core's worth of decoding, as in real loaders


def make_loader(
    spec: PipelineSpec,
    batch_size: int,
    num_workers: int | None = None,
    seed: int = 0,
    epoch: int = 0,
    pin_memory: bool = False,
) -> DataLoader:
    """A shuffling DataLoader over the synthetic dataset for one epoch."""
    workers = default_workers() if num_workers is None else num_workers
    dataset = SyntheticImageDataset(spec, seed=seed, epoch=epoch)
    sampler = RandomSampler(dataset, generator=torch.Generator().manual_seed(seed * 1000 + epoch))
    return DataLoader(
        dataset, batch_size=batch_size, sampler=sampler, num_workers=workers,
        pin_memory=pin_memory, drop_last=False, worker_init_fn=_worker_init if workers else None,
        prefetch_factor=2 if workers else None,
    )


def epoch_batches(
    spec: PipelineSpec, batch_size: int, steps: int, num_workers: int | None = None,
    seed: int = 0, epoch: int = 0, pin_memory: bool = False,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield exactly ``steps`` batches of one epoch (re-shuffling if ``steps`` exceeds the data)."""
    done, rnd = 0, 0
    while done < steps:
        loader = make_loader(spec, batch_size, num_workers, seed, epoch * 7919 + rnd, pin_memory)
        for batch in loader:
            yield batch
            done += 1
            if done >= steps:
                return
        rnd += 1
