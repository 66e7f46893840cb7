"""A corrector of the emulator on inputs that mean the same thing for every model
(emulated → measured transfer on Gavel).

``BreakdownRidge`` predicts ĉ = log(t_measured / t_analytic) from the emulator's own
*breakdown* of the (job, device) step — shares of the step spent GPU-busy, memory-busy, in
host dispatch and in the input pipeline, the mean kernel size and the kernel rate, the
bottleneck — plus the device's specs and the log batch size (``BREAKDOWN_FEATURES``). These
describe *why* a step takes its time rather than *which* model it is, so a correction learnt on
six models has a chance to carry to a seventh (the graph totals and op histograms of
``STEP_FEATURES`` mostly identify the model). It is a ridge with the intercept penalised too
(a Gaussian prior at 0 on every coefficient: with few rows it stays on the emulator), its λ
chosen by leave-one-group-out CV on the **training groups only**, λ = ∞ (the emulator alone)
included, with a paired one-standard-error rule: the most shrunk λ whose per-group MAPE is not
worse than the CV-best λ's by more than one SE of the per-group differences (Breiman et al.,
CART §3.4.3, applied to paired differences). Nothing extrapolates: every input is clipped to
its training range before the ridge reads it (Gavel's Recommendation runs batches of 512–8,192,
the other models ≤ 256: a batch coefficient learnt on those would otherwise be applied 5
doublings out), and the prediction to the training corrections' range (and 0).

``oracle_floor`` is a diagnostic, not a method: the MAPE a held-out group would get if its
*own* best constant correction (per group, or per group and device) were known — it looks at
the held-out rows, and says how far any corrector that cannot tell models apart could go.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin

from gpuscope.predictor.physics.features import STEP_FEATURES
from research.measured_correctors.correctors import LAMBDAS, group_mape, logo_folds, ridge_theta

#: Derived inputs (all model-agnostic): breakdown shares of the analytic step, log10 FLOPs per
#: kernel, log10 kernels per second, log2 batch, bottleneck flags, device specs.
BREAKDOWN_FEATURES: tuple[str, ...] = (
    "share_gpu", "share_mem", "share_dispatch", "share_pipeline", "log_kernel_flops",
    "log_kernel_rate", "g_log2_batch", "a_bneck_dispatch", "a_bneck_input", "d_log_fp32",
    "d_log_bw", "d_host_core",
)
_IDX = {f: i for i, f in enumerate(STEP_FEATURES)}


def breakdown_features(X: np.ndarray | pd.DataFrame) -> np.ndarray:
    """``BREAKDOWN_FEATURES`` of rows of ``physics.STEP_FEATURES`` (an array in that column
    order, or a frame holding those columns)."""
    if isinstance(X, pd.DataFrame):
        X = X[list(STEP_FEATURES)].to_numpy(np.float64)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != len(STEP_FEATURES):
        raise ValueError(f"breakdown features need rows of the {len(STEP_FEATURES)} "
                         f"physics.STEP_FEATURES, got shape {X.shape}")

    def col(name: str) -> np.ndarray:
        return X[:, _IDX[name]]

    it = col("a_log_iter")
    share = [np.clip(10.0 ** (col(k) - it), 0.0, 2.0)
             for k in ("a_log_gpu", "a_log_mem_busy", "a_log_dispatch", "a_log_pipeline")]
    derived = [col("g_log_flops") - col("g_log_kernels"), col("g_log_kernels") - it]
    rest = [col(k) for k in BREAKDOWN_FEATURES[6:]]
    return np.column_stack([*share, *derived, *rest])


class BreakdownRidge(BaseEstimator, RegressorMixin):
    """Shrunk ridge of the log correction on ``BREAKDOWN_FEATURES`` (module docstring).

    ``fit(X, y, groups)``: X rows of ``physics.STEP_FEATURES``, y the log corrections, groups
    the held-out unit (model); without groups every row is its own group. With fewer than two
    groups (or no rows) it is the emulator (λ = ∞, ĉ = 0). Learnt: ``lambda_``, ``theta_``
    (standardised coefficients, intercept last), ``mean_``, ``scale_``, ``zmin_``, ``zmax_``
    (the inputs' training range), ``lo_``, ``hi_``,
    ``oof_`` (leave-group-out predictions of the chosen λ), ``cv_mape_`` (λ → mean per-group
    MAPE). Deterministic (closed form, no randomness)."""

    def __init__(self, lambdas: Sequence[float] = LAMBDAS, one_se: bool = True) -> None:
        self.lambdas = lambdas
        self.one_se = one_se

    @staticmethod
    def _scaling(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(mean, scale, min, max) of the training inputs ``Z`` (non-empty)."""
        sd = Z.std(axis=0)
        return Z.mean(axis=0), np.where(sd > 1e-9, sd, 1.0), Z.min(axis=0), Z.max(axis=0)

    @staticmethod
    def _apply(Z: np.ndarray, mean: np.ndarray, scale: np.ndarray, zmin: np.ndarray,
               zmax: np.ndarray) -> np.ndarray:
        """The ridge's design: inputs clipped to the training range, standardised, intercept."""
        return np.hstack([(np.clip(Z, zmin, zmax) - mean) / scale, np.ones((len(Z), 1))])

    def _design(self, Z: np.ndarray) -> np.ndarray:
        return self._apply(Z, self.mean_, self.scale_, self.zmin_, self.zmax_)

    def fit(self, X: np.ndarray | pd.DataFrame, y: np.ndarray,
            groups: np.ndarray | None = None) -> BreakdownRidge:
        Z = breakdown_features(X)
        c = np.asarray(y, dtype=np.float64).ravel()
        if len(c) != len(Z):
            raise ValueError(f"X has {len(Z)} rows, y {len(c)}")
        g = np.arange(len(c)).astype(str) if groups is None else np.asarray(groups).astype(str)
        p = Z.shape[1] + 1
        zero = np.zeros(Z.shape[1])
        stats = self._scaling(Z) if len(Z) else (zero, zero + 1.0, zero, zero)
        self.mean_: np.ndarray = stats[0]
        self.scale_: np.ndarray = stats[1]
        self.zmin_: np.ndarray = stats[2]
        self.zmax_: np.ndarray = stats[3]
        self.lo_ = min(0.0, float(c.min())) if len(c) else 0.0
        self.hi_ = max(0.0, float(c.max())) if len(c) else 0.0
        self.lambda_, self.cv_mape_ = math.inf, {}
        self.oof_ = np.zeros(len(c))
        A = self._design(Z)
        folds = logo_folds(g) if np.unique(g).size >= 2 else []
        # every row's design as a fit on the fold's rows alone builds it: CV sees what predict does
        fold_A = [self._apply(Z, *self._scaling(Z[tr])) for tr, _ in folds]
        if folds:
            per: dict[float, np.ndarray] = {}
            oofs: dict[float, np.ndarray] = {}
            for lam in sorted({float(v) for v in self.lambdas} | {math.inf}, reverse=True):
                oof = np.empty(len(c))
                for (tr, te), Af in zip(folds, fold_A, strict=True):
                    th = ridge_theta(Af[tr], c[tr], lam, np.zeros(p))
                    oof[te] = np.clip(Af[te] @ th, min(0.0, c[tr].min()), max(0.0, c[tr].max()))
                oofs[lam], per[lam] = oof, group_mape(oof, c, g)
                self.cv_mape_[lam] = float(per[lam].mean())
            best = min(per, key=lambda k: (self.cv_mape_[k], -k))  # a tie: more shrinkage
            self.lambda_ = best
            if self.one_se:
                for lam in sorted(per, reverse=True):  # most shrunk first
                    d = per[lam] - per[best]
                    se = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else 0.0
                    if lam >= best and d.mean() <= se + 1e-12:
                        self.lambda_ = lam
                        break
            self.oof_ = oofs[self.lambda_]
        self.theta_ = (ridge_theta(A, c, self.lambda_, np.zeros(p)) if len(c)
                       else np.zeros(p))
        return self

    def predict(self, X: np.ndarray | pd.DataFrame) -> np.ndarray:
        return np.clip(self._design(breakdown_features(X)) @ self.theta_, self.lo_, self.hi_)

    # the ``correctors.Auto`` interface
    @property
    def oof(self) -> np.ndarray:
        return self.oof_

    @property
    def choice(self) -> str:
        return f"lambda={self.lambda_:g}"


def best_constant(c: np.ndarray) -> float:
    """The constant a minimising mean |exp(a − c) − 1| (step-time MAPE of t_an·exp(a)): the
    weighted median of c with weights exp(−c) (the objective is convex in exp(a))."""
    c = np.asarray(c, dtype=np.float64)
    o = np.argsort(c)
    w = np.exp(-c[o])
    k = int(np.searchsorted(np.cumsum(w), 0.5 * w.sum()))
    return float(c[o][min(k, len(c) - 1)])


def oracle_floor(c: np.ndarray, groups: np.ndarray, devices: np.ndarray) -> pd.DataFrame:
    """Per group: step-time MAPE % of the emulator, of the group's own best constant
    correction, and of its own best constant per device (both fitted on the group's rows:
    oracles, not methods)."""
    c, g, d = np.asarray(c, np.float64), np.asarray(groups).astype(str), np.asarray(devices)
    rows = []
    for grp in np.unique(g):
        m = g == grp
        const = np.full(m.sum(), best_constant(c[m]))
        per_dev = np.zeros(m.sum())
        for dev in np.unique(d[m]):
            k = d[m] == dev
            per_dev[k] = best_constant(c[m][k])
        rows.append({"group": grp, "emulator": 100 * float(np.abs(np.exp(-c[m]) - 1).mean()),
                     "oracle_const": 100 * float(np.abs(np.exp(const - c[m]) - 1).mean()),
                     "oracle_const_per_device":
                         100 * float(np.abs(np.exp(per_dev - c[m]) - 1).mean())})
    return pd.DataFrame(rows)
