"""Every estimator that claims scikit-learn's conventions keeps them: ``__init__`` stores its
arguments only, ``get_params``/``set_params``/``clone`` work, ``fit`` returns ``self`` and
everything it learns ends in ``_`` (as ``sklearn.utils.estimator_checks`` asks)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, clone

from gpuscope.predictor.gnn.baselines import GBTBaseline
from gpuscope.predictor.physics.features import ANALYTIC_COLUMNS, FEATURES, STEP_FEATURES
from gpuscope.predictor.physics.hybrid import HybridModel
from gpuscope.predictor.physics.mlp import MaskedMLP
from research.measured_correctors.breakdown_tl import BreakdownRidge

RNG = np.random.default_rng(0)


def _hybrid_fit(m: HybridModel) -> HybridModel:
    n = 40
    frame = pd.DataFrame(RNG.uniform(0.1, 1.0, (n, len(FEATURES) + len(ANALYTIC_COLUMNS))),
                         columns=[*FEATURES, *ANALYTIC_COLUMNS])
    y = np.full((n, 1), np.nan)
    y[:, 0] = 100 * frame["an_iter_s"] * RNG.uniform(0.9, 1.1, n) + frame["an_overhead_s"]
    return m.fit(frame, y, np.full(n, 100.0))


CASES: list[tuple[BaseEstimator, dict[str, Any], Callable[[Any], Any]]] = [
    (HybridModel(targets=("exec_time_s",), kinds="gbt", gbt_iter=5), {"gbt_iter": 7},
     _hybrid_fit),
    (MaskedMLP(hidden=4, epochs=3), {"epochs": 2},
     lambda m: m.fit(RNG.normal(size=(20, 3)), RNG.normal(size=(20, 2)))),
    (GBTBaseline(("gpu_util_peak", "exec_time_s"), max_iter=5), {"max_iter": 3},
     lambda m: m.fit(RNG.normal(size=(30, 3)), RNG.uniform(1, 2, size=(30, 2)))),
    (BreakdownRidge(lambdas=(0.1, 1.0)), {"one_se": False},
     lambda m: m.fit(RNG.normal(size=(20, len(STEP_FEATURES))), RNG.normal(size=20),
                     np.arange(20) % 4)),
]


@pytest.mark.parametrize(("est", "change", "fit"), CASES,
                         ids=[type(c[0]).__name__ for c in CASES])
def test_estimator_follows_sklearn_conventions(est: BaseEstimator, change: dict[str, Any],
                                               fit: Callable[[Any], Any]) -> None:
    names = [p for p in inspect.signature(type(est).__init__).parameters if p != "self"]
    assert sorted(vars(est)) == sorted(names)  # __init__ stores its arguments, nothing else
    params = est.get_params()
    assert sorted(params) == sorted(names)
    twin = clone(est)
    assert twin is not est and twin.get_params() == params
    twin.set_params(**change)
    assert twin.get_params()[next(iter(change))] == next(iter(change.values()))
    assert est.get_params() == params  # the original is untouched
    before = set(vars(est))
    assert fit(est) is est
    learnt = set(vars(est)) - before
    assert learnt and all(a.endswith("_") and not a.startswith("_") for a in learnt), learnt
    fresh = clone(est)  # a clone of a fitted estimator is unfitted
    assert set(vars(fresh)) == before
