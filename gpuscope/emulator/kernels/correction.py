"""Learnt shape corrections on top of the analytic class models (the hybrid part).

Each analytic class model (``gemm``, ``conv``, ...) leaves errors that follow the shape the
same way on every GPU (cuBLAS's and cuDNN's kernel choices that the tile model does not
capture). A correction multiplies the class's device time by ``exp(f(x))``, where ``x`` are
device-relative shape features (``FEATURES``: logs of the GEMM/convolution dimensions, of the
tiles per SM, of the working set over the L2, of the predicted time) and ``f`` an additive
model: per feature a linear term and hinges ``max(0, x - knot)`` at fixed knots (the
training range's quantiles), ridge-fitted (``calibration.kernel_fit``) on the measured GPUs'
log residuals, features clamped to the range seen in the fit, ``f`` clipped to
``+-MAX_CORRECTION``. Stored as numbers in the parameters file; no device enters except
through the features.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gpuscope.emulator.kernels.device import KernelDevice

#: Largest correction, in natural log (a factor of ~2.7 either way).
MAX_CORRECTION: float = 1.0
#: The class whose features each parameter table's correction uses.
TABLE_CLASS: dict[str, str] = {"gemm_simt": "gemm", "conv": "conv", "memory": "memory",
                               "softmax": "rows", "layer_norm": "rows", "batch_norm": "rows",
                               "reduce": "rows"}
#: Feature names per corrected class.
FEATURES: dict[str, tuple[str, ...]] = {
    "gemm": ("log_m", "log_n", "log_k", "log_b", "log_waves"),
    "conv": ("log_n", "log_c", "log_k", "log_hw", "log_waves", "log_t"),
    "memory": ("log_l2", "log_t"),
    "rows": ("log_rows", "log_cols", "log_l2", "log_t"),
}


def features(cls: str, geo: Mapping[str, np.ndarray], dev: KernelDevice,
             t: np.ndarray) -> np.ndarray:
    """Feature matrix (rows x ``FEATURES[cls]``) from the kernels' shapes ``geo`` (arrays
    ``m n k b`` for a GEMM; ``n c k hw m_gemm`` for a convolution; ``work`` for memory
    kernels; ``rows cols work`` for row reductions) and their analytic times ``t`` (s)."""
    lg = np.log2
    cols: dict[str, np.ndarray] = {"log_t": lg(np.maximum(t, 1e-7) * 1e6)}
    if "work" in geo:
        cols["log_l2"] = lg(np.maximum(geo["work"], 1.0) / dev.l2)
    for k in ("m", "n", "k", "b", "c", "hw", "rows", "cols"):
        if k in geo:
            cols[f"log_{k}"] = lg(np.maximum(geo[k], 1.0))
    if cls == "gemm":
        tiles = geo["b"] * np.ceil(geo["m"] / 128.0) * np.ceil(geo["n"] / 128.0)
        cols["log_waves"] = lg(tiles / dev.sms)
    if cls == "conv":
        cols["log_waves"] = lg(np.maximum(geo["m_gemm"], 1.0) * np.maximum(geo["k"], 1.0)
                               / (128.0 * 128.0 * dev.sms))
    return np.stack([cols[f] for f in FEATURES[cls]], axis=1)


def basis(x: np.ndarray, knots: list[list[float]], lo: list[float], hi: list[float]) -> np.ndarray:
    """Linear and hinge terms of each (clamped) feature."""
    x = np.clip(x, np.asarray(lo), np.asarray(hi))
    parts = []
    for j, ks in enumerate(knots):
        parts.append(x[:, j:j + 1])
        parts.extend(np.maximum(0.0, x[:, j:j + 1] - kn) for kn in ks)
    return np.concatenate(parts, axis=1)


def apply(x: np.ndarray, model: Mapping[str, Any]) -> np.ndarray:
    """``f(x)`` of a stored correction (``{}``: none)."""
    if not model:
        return np.zeros(len(x))
    b = basis(x, model["knots"], model["lo"], model["hi"])
    f = model["intercept"] + b @ np.asarray(model["coef"])
    return np.clip(f, -MAX_CORRECTION, MAX_CORRECTION)


def fit(x: np.ndarray, r: np.ndarray, n_knots: int = 3, ridge: float = 1.0) -> dict[str, Any]:
    """Ridge fit of ``f`` to log residuals ``r`` (knots at feature quantiles)."""
    qs = np.linspace(0, 1, n_knots + 2)[1:-1]
    knots = [np.unique(np.quantile(x[:, j], qs)).tolist() for j in range(x.shape[1])]
    lo, hi = x.min(axis=0).tolist(), x.max(axis=0).tolist()
    b = basis(x, knots, lo, hi)
    mu, sd = b.mean(axis=0), b.std(axis=0) + 1e-9
    z = (b - mu) / sd
    a = z.T @ z + ridge * len(r) * 1e-3 * np.eye(z.shape[1])
    w = np.linalg.solve(a, z.T @ (r - r.mean()))
    coef = w / sd
    return {"knots": knots, "lo": lo, "hi": hi, "coef": coef.tolist(),
            "intercept": float(r.mean() - mu @ coef)}
