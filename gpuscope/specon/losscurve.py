"""Loss curves in Optimus' form (Peng et al., EuroSys'18, §3.1): ``l(p) = c + 1/(a·p + b)``.

p ∈ [0, 1] is training progress. The share of the maximum reduction reached by progress p is
``f(p) = (l(0) − l(p)) / (l(0) − l(1)) = p(1 + r) / (1 + r·p)`` with ``r = a/b``, so seed 004's
Fig. 1 (share reached in the first 20 % of training) fixes ``r = (F − 0.2) / (0.2(1 − F))``:
VAE 65 % → r = 6.43, GRU 90 % → 35, Bi-RNN 98 % → 195.

``fit`` follows Optimus' estimator (pengyanghua/optimus ``estimator.py``): ``curve_fit`` with
bounds ≥ 0 and later points weighted more (segment k of 4 gets weight 4^k, given to scipy as
σ ∝ 4^−k/2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpuscope.core.errors import InputError


def r_from_f20(f20: float) -> float:
    """The curvature ratio r = a/b that reaches share ``f20`` at p = 0.2."""
    return (f20 - 0.2) / (0.2 * (1.0 - f20))


@dataclass(frozen=True)
class LossCurve:
    """``l(p) = c + 1/(a·p + b)`` with multiplicative minibatch noise ``sigma`` (per step)."""

    a: float
    b: float
    c: float
    sigma: float = 0.0
    source: str = "preset"

    @classmethod
    def from_shape(cls, l0: float, l1: float, r: float, sigma: float = 0.0,
                   source: str = "preset") -> LossCurve:
        """The curve starting at ``l0``, ending at ``l1`` with curvature ``r`` (needs
        ``l1·(1 + r) ≥ l0`` so that c ≥ 0)."""
        inv_b = (l0 - l1) * (1.0 + r) / r
        b = 1.0 / inv_b
        return cls(a=r * b, b=b, c=l0 - inv_b, sigma=sigma, source=source)

    @property
    def r(self) -> float:
        return self.a / self.b

    def __call__(self, p: np.ndarray | float) -> np.ndarray | float:
        return self.c + 1.0 / (self.a * np.asarray(p) + self.b)

    def f(self, p: float) -> float:
        """Share of the maximum loss reduction reached at progress ``p``."""
        r = self.r
        return p * (1.0 + r) / (1.0 + r * p)

    def mean(self, p1: float, p2: float) -> float:
        """Mean of l over [p1, p2] (exact: ∫ 1/(a p + b) = ln(a p + b)/a)."""
        if p2 - p1 < 1e-12:
            return float(self(p2))
        return self.c + math.log((self.a * p2 + self.b) / (self.a * p1 + self.b)) / (
            self.a * (p2 - p1))


#: Presets for seed 004's workloads (Table II): (l0, l1, f20, sigma). f20 is Fig. 1's value
#: for VAE/GRU/Bi-RNN; RNN and dynamic RNN have none in the paper and take f20 = 0.87, the
#: share measured on real data (sklearn digits). Scales: the VAE's negative ELBO
#: per MNIST image starts at 784·ln 2 ≈ 543 and ends near 100; cross-entropy starts at ln 10.
#: Noise: 1.5 % (VAE) and 40 % (cross-entropy tails), measured.
PRESETS: dict[str, tuple[float, float, float, float]] = {
    "vae": (543.0, 105.0, 0.65, 0.015),
    "gru": (2.303, 0.08, 0.90, 0.40),
    "birnn": (2.303, 0.05, 0.98, 0.40),
    "rnn": (2.303, 0.10, 0.87, 0.40),
    "dynamic_rnn": (2.303, 0.10, 0.87, 0.40),
}


def preset(model: str) -> LossCurve:
    if model not in PRESETS:
        raise InputError(f"no loss-curve preset for {model!r}; expected one of {', '.join(PRESETS)}")
    l0, l1, f20, sigma = PRESETS[model]
    return LossCurve.from_shape(l0, l1, r_from_f20(f20), sigma, source=f"preset:{model} (Fig. 1)")


def preset_points(model: str, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """The noiseless preset curve sampled at n progress points (what the tests fit)."""
    p = np.linspace(0.0, 1.0, n)
    return p, np.asarray(preset(model)(p))


#: Most points a loss curve is fitted on (a log of one row per step can hold millions).
MAX_FIT_POINTS: int = 100_000


def fit(p: np.ndarray, loss: np.ndarray, source: str = "fit") -> LossCurve:
    """Fit ``c + 1/(a p + b)`` to (progress, loss) with bounds ≥ 0, later points weighted
    4^segment (Optimus). Raises ``InputError`` on fewer than 4 points. A curve of more than
    :data:`MAX_FIT_POINTS` points is fitted on that many, evenly spaced (the solver's
    Jacobian costs tens of bytes a point: 5 million points took 1.5 GB)."""
    from scipy.optimize import curve_fit

    p, loss = np.asarray(p, float), np.asarray(loss, float)
    ok = np.isfinite(p) & np.isfinite(loss)
    p, loss = p[ok], loss[ok]
    if len(p) > MAX_FIT_POINTS:
        keep = np.unique(np.linspace(0, len(p) - 1, MAX_FIT_POINTS).astype(np.int64))
        p, loss = p[keep], loss[keep]
    if len(p) < 4:
        raise InputError(f"need at least 4 loss points to fit, got {len(p)}")
    seg = np.minimum((p * 4).astype(int), 3)
    sigma = 1.0 / np.sqrt(4.0 ** seg)
    l0, l1 = float(loss[: max(1, len(loss) // 50)].mean()), float(loss[-max(1, len(loss) // 10):].mean())
    span = max(l0 - l1, 1e-9)
    guess = (10.0 / span, 1.0 / span, max(l1 - span / 10, 0.0))

    def model(x: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
        return c + 1.0 / (a * x + b)

    try:
        (a, b, c), _ = curve_fit(model, p, loss, p0=guess, sigma=sigma, bounds=(0, np.inf),
                                 maxfev=20000)
    except (RuntimeError, ValueError) as e:  # no convergence, or values it cannot fit
        raise InputError(f"{source}: the loss curve cannot be fitted "
                         f"({str(e).splitlines()[0][:120]})") from None
    resid = loss - model(p, a, b, c)
    tail = resid[p >= 0.5]
    noise = float(np.std(tail) / max(abs(np.mean(loss[p >= 0.5])), 1e-12)) if len(tail) > 1 else 0.0
    return LossCurve(a=float(a), b=float(b), c=float(c), sigma=noise, source=source)


def read_loss_log(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """A ``step, epoch, t_s, loss`` CSV (the workloads entry point's loss log) as
    (progress = step / last step, loss). Read through the bounded table reader, the numbers
    checked column-wise: a row whose step or loss is not a number in range (a run killed
    mid-write leaves a partial last row; a diverged run NaN) is skipped."""
    import pandas as pd

    from gpuscope.core.io import read_csv
    from gpuscope.core.limits import MAX_INT

    path = Path(path)
    df = read_csv(path, "loss log")
    if "step" not in df.columns or "loss" not in df.columns:
        raise InputError(f"{path}: expected a CSV with columns step, loss")
    step, loss = (pd.to_numeric(df[c], errors="coerce").to_numpy(np.float64, na_value=np.nan)
                  for c in ("step", "loss"))
    del df
    with np.errstate(invalid="ignore"):
        ok = (step >= 0) & (step <= MAX_INT) & (np.abs(loss) <= 1e30)
    if not ok.any():
        raise InputError(f"{path}: no readable step, loss rows")
    step, loss = step[ok], loss[ok]
    if not step.max() > 0:
        raise InputError(f"{path}: every step is 0; a loss log needs steps > 0")
    return step / step.max(), loss


__all__ = ["LossCurve", "PRESETS", "fit", "preset", "preset_points", "r_from_f20",
           "read_loss_log"]
