"""Input and label scaling shared by both predictor kinds (seed 001 §3.1).

* ``Standardizer``: ``(x − mean) / std`` per column, fitted on training rows (NaN entries
  ignored; a constant column keeps std 1), optionally after ``sign(x) · log1p(|x|)``. The GNN
  scales node features (which span many orders of magnitude: ``log=True``), context vectors
  and graph statistics with it; ``MaskedMLP`` its inputs and targets.
* ``MinMaxLabels``: seed 001 trains with MSE on min-max normalised labels,
  ``y' = (y − min)/(max − min)``, min and max fitted on the training split. A target flagged
  ``log`` is min-max normalised after ``log1p`` (useful for execution time, whose range covers
  3–4 decades); reported metrics always use the plain min-max space (``MinMaxLabels.plain``,
  the scorer's ranges), so runs stay comparable.

All scalers are plain lists of floats, stored in checkpoints (``to_dict``/``from_dict``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
import torch
from torch import Tensor

from gpuscope.core.targets import PERCENT_CAPACITY, RESOURCES, UNITS


def signed_log1p(x: Tensor) -> Tensor:
    return torch.sign(x) * torch.log1p(torch.abs(x))


@dataclass
class Standardizer:
    """``(x − mean) / std`` per column, fitted on training rows.

    NaN entries are ignored when fitting (a column with no value gets mean 0; with fewer than
    two, std 1); a std not above ``min_std`` (a constant column) is replaced by 1. ``log``
    transforms ``x`` by ``signed_log1p`` first. ``transform`` takes a NumPy array (returns
    float64) or a tensor (returns float32, computed in float64 as the GNN always has).
    """

    log: bool = False
    min_std: float = 1e-12
    mean_: list[float] = field(default_factory=list)
    std_: list[float] = field(default_factory=list)

    def fit(self, x: np.ndarray | Tensor) -> Standardizer:
        if isinstance(x, Tensor):
            a = (signed_log1p(x.double()) if self.log else x.double()).numpy()
        else:
            a = np.asarray(x, dtype=np.float64)
            a = np.sign(a) * np.log1p(np.abs(a)) if self.log else a
        a = a.reshape(len(a), -1)
        finite = np.isfinite(a)
        if finite.all():
            mean = a.mean(axis=0) if len(a) else np.zeros(a.shape[1])
            std = a.std(axis=0) if len(a) > 1 else np.ones(a.shape[1])
        else:
            n = finite.sum(axis=0)
            with warnings.catch_warnings():  # an all-NaN column: handled just below
                warnings.simplefilter("ignore", RuntimeWarning)
                mean = np.where(n > 0, np.nanmean(a, axis=0), 0.0)
                std = np.where(n > 1, np.nanstd(a, axis=0), 1.0)
        std = np.where(std > self.min_std, std, 1.0)
        self.mean_, self.std_ = [float(v) for v in mean], [float(v) for v in std]
        return self

    @overload
    def transform(self, x: Tensor) -> Tensor: ...
    @overload
    def transform(self, x: np.ndarray) -> np.ndarray: ...

    def transform(self, x: np.ndarray | Tensor) -> np.ndarray | Tensor:
        if isinstance(x, Tensor):
            t = signed_log1p(x.double()) if self.log else x.double()
            mean = torch.tensor(self.mean_, dtype=torch.float64)
            std = torch.tensor(self.std_, dtype=torch.float64)
            return ((t - mean) / std).float()
        a = np.asarray(x, dtype=np.float64)
        a = np.sign(a) * np.log1p(np.abs(a)) if self.log else a
        return (a - np.asarray(self.mean_)) / np.asarray(self.std_)

    def inverse(self, z: np.ndarray) -> np.ndarray:
        """Standardised values back to the (log-transformed, when ``log``) input scale."""
        return np.asarray(z, dtype=np.float64) * np.asarray(self.std_) + np.asarray(self.mean_)

    def to_dict(self) -> dict[str, Any]:
        return {"log": bool(self.log), "mean": list(self.mean_), "std": list(self.std_)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Standardizer:
        return cls(log=bool(d["log"]), mean_=[float(v) for v in d["mean"]],
                   std_=[float(v) for v in d["std"]])


@dataclass
class MinMaxLabels:
    """Min-max label normalisation per target (``log`` flags as in the module docstring).

    NaN labels stay NaN (the loss masks them); a target with no observed training value gets
    min 0, max 1; a target constant on the training split gets the range of
    ``_fallback_range`` (100 for a percentage peak, 1024 MB for the memory peak, else 1).
    """

    targets: tuple[str, ...]
    log: tuple[bool, ...] = ()
    min_: list[float] = field(default_factory=list)
    max_: list[float] = field(default_factory=list)
    plain_min_: list[float] = field(default_factory=list)
    plain_max_: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.log:
            self.log = tuple(False for _ in self.targets)
        if len(self.log) != len(self.targets):
            raise ValueError("one log flag per target is needed")

    def _f(self, y: np.ndarray) -> np.ndarray:
        out = y.astype(np.float64).copy()
        for j, lg in enumerate(self.log):
            if lg:
                out[:, j] = np.log1p(np.clip(out[:, j], 0.0, None))
        return out

    def _range(self, y: np.ndarray) -> tuple[list[float], list[float]]:
        lo, hi = [], []
        for j in range(y.shape[1]):
            col = y[:, j][np.isfinite(y[:, j])]
            a, b = (float(col.min()), float(col.max())) if col.size else (0.0, 1.0)
            if b <= a:  # constant on the training split (e.g. a peak never reached)
                b = a + self._fallback_range(self.targets[j])
            lo.append(a)
            hi.append(b)
        return lo, hi

    @staticmethod
    def _fallback_range(target: str) -> float:
        """Range of a target that is constant on the training split (a peak never reached):
        one physical unit of scale — 100 for a percentage peak, 1024 (1 GiB) for the memory
        peak in MB, 1 (second) for times — so rows that leave the constant are scored on a
        physical scale instead of an arbitrary one."""
        percent_peaks = {f"{r}_peak" for r in RESOURCES if UNITS[r] == "%"}
        if target in percent_peaks:
            return PERCENT_CAPACITY
        return 1024.0 if target == "gpu_mem_peak" else 1.0

    def fit(self, y: np.ndarray) -> MinMaxLabels:
        self.min_, self.max_ = self._range(self._f(y))
        self.plain_min_, self.plain_max_ = self._range(np.asarray(y, dtype=np.float64))
        return self

    def transform(self, y: np.ndarray) -> np.ndarray:
        lo, hi = np.asarray(self.min_), np.asarray(self.max_)
        return (self._f(np.asarray(y)) - lo) / (hi - lo)

    def inverse(self, z: np.ndarray) -> np.ndarray:
        lo, hi = np.asarray(self.min_), np.asarray(self.max_)
        y = np.asarray(z, dtype=np.float64) * (hi - lo) + lo
        for j, lg in enumerate(self.log):
            if lg:
                y[:, j] = np.expm1(y[:, j])
        return y

    def plain(self, y: np.ndarray) -> np.ndarray:
        """Raw labels in the plain min-max space of the training split (the seed's metric)."""
        lo, hi = np.asarray(self.plain_min_), np.asarray(self.plain_max_)
        return (np.asarray(y, dtype=np.float64) - lo) / (hi - lo)

    def to_dict(self) -> dict[str, Any]:
        return {"targets": list(self.targets), "log": [bool(v) for v in self.log],
                "min": list(self.min_), "max": list(self.max_),
                "plain_min": list(self.plain_min_), "plain_max": list(self.plain_max_)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MinMaxLabels:
        return cls(targets=tuple(d["targets"]), log=tuple(bool(v) for v in d["log"]),
                   min_=[float(v) for v in d["min"]], max_=[float(v) for v in d["max"]],
                   plain_min_=[float(v) for v in d["plain_min"]],
                   plain_max_=[float(v) for v in d["plain_max"]])
