"""The shrunk correctors of the emulator's log step time on measured rows, split out of ``residual_tl`` (which holds the measured sets and the held-out
protocol). Every corrector predicts ĉ in ``t_step = t_analytic × exp(ĉ)``, is shrunk toward a
prior (0: the emulator alone) by leave-group-out CV on its training groups only, and is
clipped to the training corrections' range; see ``residual_tl``'s docstring for the list.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from gpuscope.predictor.scaling import Standardizer

LAMBDAS: tuple[float, ...] = (*(10.0 ** k for k in range(-3, 4)), math.inf)
SHRINKS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)


# -- ridge with a prior mean ---------------------------------------------------------------

def design(sc: Standardizer, X: np.ndarray) -> np.ndarray:
    """Standardised columns plus a column of ones (the penalised intercept)."""
    return np.hstack([sc.transform(X), np.ones((len(X), 1))])


def ridge_theta(A: np.ndarray, c: np.ndarray, lam: float, theta0: np.ndarray) -> np.ndarray:
    """argmin ‖c − Aθ‖² + λ·n·‖θ − θ0‖² (λ = ∞: θ0)."""
    if not math.isfinite(lam):
        return theta0.copy()
    n, p = A.shape
    r = c - A @ theta0
    return theta0 + np.linalg.solve(A.T @ A + lam * n * np.eye(p), A.T @ r)


@dataclass
class LinearPrior:
    """A linear correction in raw feature units: ĉ = X·w + b."""

    w: np.ndarray
    b: float

    def theta(self, sc: Standardizer) -> np.ndarray:
        """The same function in ``sc``'s standardised design (``design``)."""
        return np.append(self.w * np.asarray(sc.std_), self.b + float(self.w @ np.asarray(sc.mean_)))


def group_mape(pred_c: np.ndarray, c: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Step-time MAPE (%) of each group, in ``np.unique(groups)`` order."""
    err = np.abs(np.exp(pred_c - c) - 1.0)
    return np.array([100 * err[groups == g].mean() for g in np.unique(groups)])


def one_thread():  # type: ignore[no-untyped-def]
    """One OpenMP/BLAS thread for the tiny fits here. The trees are scikit-learn's exact
    ``GradientBoostingRegressor`` (no OpenMP): the histogram variant spent 20 s a fit of 60
    rows spinning OpenMP threads on the shared 2-core machine (load 8), limit or not."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1)


def logo_folds(groups: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Leave-one-group-out (train, test) index pairs (scikit-learn's ``LeaveOneGroupOut``)."""
    from sklearn.model_selection import LeaveOneGroupOut

    return list(LeaveOneGroupOut().split(groups, groups=groups))


class Corrector(ABC):
    """ĉ(X); ``fit`` sees training rows and their groups only. ``oof`` holds the
    leave-group-out predictions of the chosen setting (for ``auto``). Every prediction is
    clipped to the training corrections' range (and 0): no corrector extrapolates a
    correction larger than any it was shown."""

    choice: str = ""
    oof: np.ndarray
    lo: float = 0.0
    hi: float = 0.0

    def fit(self, X: np.ndarray, c: np.ndarray, groups: np.ndarray) -> Corrector:
        self.lo, self.hi = min(0.0, float(c.min())), max(0.0, float(c.max()))
        with one_thread():
            self._fit(X, c, groups)
        self.oof = np.clip(self.oof, self.lo, self.hi)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        with one_thread():
            return np.clip(self._predict(X), self.lo, self.hi)

    @abstractmethod
    def _fit(self, X: np.ndarray, c: np.ndarray, groups: np.ndarray) -> None:
        """Fit on the training rows and set ``oof`` (and ``choice``)."""

    @abstractmethod
    def _predict(self, X: np.ndarray) -> np.ndarray:
        """The unclipped correction for ``X``."""


class Zero(Corrector):
    choice = "c=0"

    def _fit(self, X: np.ndarray, c: np.ndarray, groups: np.ndarray) -> None:
        self.oof = np.zeros(len(c))

    def _predict(self, X: np.ndarray) -> np.ndarray:
        return np.zeros(len(X))


class Ridge(Corrector):
    """Ridge on standardised features; prior mean ``prior`` (None: 0); λ by LOGO CV."""

    def __init__(self, prior: LinearPrior | None = None,
                 lambdas: Sequence[float] = LAMBDAS) -> None:
        self.prior, self.lambdas = prior, tuple(lambdas)

    def _theta0(self, sc: Standardizer, p: int) -> np.ndarray:
        return np.zeros(p) if self.prior is None else self.prior.theta(sc)

    def _fit(self, X: np.ndarray, c: np.ndarray, groups: np.ndarray) -> None:
        self.sc = Standardizer(min_std=1e-9).fit(X)
        A = design(self.sc, X)
        th0 = self._theta0(self.sc, A.shape[1])
        folds = logo_folds(groups)
        best, best_lam, best_oof = math.inf, math.inf, A @ th0
        if len(folds) >= 2:  # most shrinkage first: a tie keeps the prior
            for lam in sorted(self.lambdas, reverse=True):
                oof = np.empty(len(c))
                for tr, te in folds:
                    oof[te] = A[te] @ ridge_theta(A[tr], c[tr], lam, th0)
                s = float(group_mape(oof, c, groups).mean())
                if s < best - 1e-9:
                    best, best_lam, best_oof = s, lam, oof
        self.lam, self.oof = best_lam, best_oof
        self.theta = ridge_theta(A, c, best_lam, th0)
        self.choice = f"lambda={best_lam:g}"

    def _predict(self, X: np.ndarray) -> np.ndarray:
        return design(self.sc, X) @ self.theta


def source_prior(X: np.ndarray, c: np.ndarray, groups: np.ndarray) -> LinearPrior:
    """The emulated corpus's own correction as a raw-unit linear function (ridge, λ by
    leave-family-out CV on the source) — the prior mean of ``ridge-tl``."""
    r = Ridge(lambdas=LAMBDAS[:-1])
    r.fit(X, c, groups)
    w = r.theta[:-1] / np.asarray(r.sc.std_)
    return LinearPrior(w, float(r.theta[-1] - w @ np.asarray(r.sc.mean_)))


class ShrunkGBT(Corrector):
    """Strongly regularised boosted trees on c, scaled by s chosen by LOGO CV."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def _model(self, n: int):  # type: ignore[no-untyped-def]
        from sklearn.ensemble import GradientBoostingRegressor

        return GradientBoostingRegressor(
            n_estimators=100, learning_rate=0.05, max_depth=2, max_leaf_nodes=4,
            min_samples_leaf=max(3, n // 10), random_state=self.seed)

    def _fit(self, X: np.ndarray, c: np.ndarray, groups: np.ndarray) -> None:
        raw = np.zeros(len(c))
        folds = logo_folds(groups)
        for tr, te in folds:
            if tr.size >= 6:
                raw[te] = np.clip(self._model(tr.size).fit(X[tr], c[tr]).predict(X[te]),
                                  min(0.0, c[tr].min()), max(0.0, c[tr].max()))
        best, self.s = math.inf, 0.0
        if len(folds) >= 2:
            for s in SHRINKS:
                v = float(group_mape(s * raw, c, groups).mean())
                if v < best - 1e-9:
                    best, self.s = v, s
        self.oof = self.s * raw
        self.m = self._model(len(c)).fit(X, c) if self.s > 0 and len(c) >= 6 else None
        self.choice = f"s={self.s:g}"

    def _predict(self, X: np.ndarray) -> np.ndarray:
        return np.zeros(len(X)) if self.m is None else self.s * self.m.predict(X)


class Fitted(Protocol):
    """What ``Auto`` reads of a fitted candidate (a ``Corrector`` or ``BreakdownRidge``)."""

    @property
    def oof(self) -> np.ndarray: ...

    @property
    def choice(self) -> str: ...

    def predict(self, X: np.ndarray) -> np.ndarray: ...


class Auto(Corrector):
    """Of fitted candidates, the one with the lowest LOGO MAPE if it beats the emulator by
    more than one standard error of the per-group differences; else the emulator."""

    def __init__(self, fitted: Mapping[str, Fitted]) -> None:
        self.fitted = fitted

    def _fit(self, X: np.ndarray, c: np.ndarray, groups: np.ndarray) -> None:
        base = group_mape(np.zeros(len(c)), c, groups)
        self.pick, best = "emulator", float(base.mean())
        if np.unique(groups).size >= 2:
            for k, m in self.fitted.items():
                d = base - group_mape(m.oof, c, groups)  # > 0: k better than the emulator
                se = float(d.std(ddof=1) / math.sqrt(d.size))
                score = float(base.mean() - d.mean())
                if d.mean() > se and score < best - 1e-9:
                    self.pick, best = k, score
        self.model: Fitted = self.fitted.get(self.pick) or Zero().fit(X, c, groups)
        self.oof = self.model.oof
        self.choice = f"{self.pick}:{self.model.choice}"

    def _predict(self, X: np.ndarray) -> np.ndarray:
        return self.model.predict(X)


class Scratch:
    """Boosted trees on log step time without the emulator (measured rows only)."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def fit(self, X: np.ndarray, logt: np.ndarray) -> Scratch:
        from sklearn.ensemble import GradientBoostingRegressor

        with one_thread():
            self.m = GradientBoostingRegressor(
                n_estimators=200, learning_rate=0.05, max_leaf_nodes=8,
                min_samples_leaf=max(2, min(20, len(logt) // 5)),
                random_state=self.seed).fit(X, logt)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        with one_thread():
            return self.m.predict(X)
