"""Shrunk emulator corrections on measured rows (``research.measured_correctors.residual_tl``).

Synthetic rows only (no graph export): fast and in-process."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuscope.core.errors import InputError
from gpuscope.predictor.physics.features import ANALYTIC_COLUMNS, FEATURES, STEP_FEATURES
from research.measured_correctors import residual_tl as R


def _rows(n_groups: int, per: int, signal: bool, seed: int = 0
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_groups * per, 5))
    groups = np.repeat([f"g{i}" for i in range(n_groups)], per)
    if signal:  # the same linear correction in every group
        c = 0.5 * X[:, 0] - 0.3 * X[:, 1] + 0.02 * rng.normal(size=len(X))
    else:  # a per-group offset of random sign: nothing transfers across groups
        off = {g: rng.choice([-1.0, 1.0]) for g in np.unique(groups)}
        c = np.array([off[g] for g in groups]) + 0.01 * rng.normal(size=len(X))
    return X, c, groups


def test_ridge_learns_a_shared_correction_and_keeps_the_prior_on_noise() -> None:
    X, c, g = _rows(6, 10, signal=True)
    r = R.Ridge().fit(X, c, g)
    assert np.isfinite(r.lam)
    assert np.mean(np.abs(r.predict(X) - c)) < 0.1
    X, c, g = _rows(6, 10, signal=False)
    z = R.Ridge().fit(X, c, g)
    assert z.lam == np.inf and np.allclose(z.predict(X), 0.0)
    prior = R.LinearPrior(np.array([0.1, 0, 0, 0, 0]), 0.2)
    p = R.Ridge(prior).fit(X, c, g)
    assert p.lam == np.inf
    assert np.allclose(p.predict(X), np.clip(X[:, 0] * 0.1 + 0.2, p.lo, p.hi))


def test_predictions_are_clipped_to_the_training_corrections() -> None:
    X, c, g = _rows(6, 10, signal=True)
    r = R.Ridge(lambdas=(1e-3,)).fit(X, c, g)
    far = 100 * np.ones((3, 5))
    pred = r.predict(far)
    assert pred.max() <= max(0.0, c.max()) + 1e-12 and pred.min() >= min(0.0, c.min()) - 1e-12


def _toy_correctors() -> dict:
    """The candidates that read any feature matrix (``breakdown`` needs STEP_FEATURES rows:
    ``tests/test_predictor_breakdown_tl.py``)."""
    return {k: f for k, f in R.correctors(None, 0).items() if k != "breakdown"}


def test_auto_falls_back_to_the_emulator_without_evidence() -> None:
    X, c, g = _rows(6, 10, signal=False)
    fitted = {k: f().fit(X, c, g) for k, f in _toy_correctors().items()}
    a = R.Auto(fitted).fit(X, c, g)
    assert a.pick == "emulator" and np.allclose(a.predict(X), 0.0)
    X, c, g = _rows(6, 10, signal=True)
    fitted = {k: f().fit(X, c, g) for k, f in _toy_correctors().items()}
    assert R.Auto(fitted).fit(X, c, g).pick != "emulator"


def test_curve_holds_each_group_out() -> None:
    rng = np.random.default_rng(1)
    n = 24
    frame = pd.DataFrame(np.zeros((n, len(FEATURES) + len(ANALYTIC_COLUMNS))),
                         columns=[*FEATURES, *ANALYTIC_COLUMNS])
    frame[STEP_FEATURES[0]] = rng.normal(size=n)
    frame["an_iter_s"] = 0.01 * np.exp(rng.normal(size=n))
    c = 0.3 * frame[STEP_FEATURES[0]].to_numpy()
    rows = pd.DataFrame({"group": np.repeat(["a", "b", "c", "d"], 6), "device": "h100",
                         "step_s": frame["an_iter_s"].to_numpy() * np.exp(c)})
    long = R.curve(R.MeasuredSet("toy", rows, frame), None, fractions=(1.0,), seeds=(0,))
    assert set(long["held_out"]) == {"a", "b", "c", "d"}
    assert set(long["method"]) == {"emulator", "ridge", "gbt", "breakdown", "auto", "scratch"}
    assert (long.loc[long["method"] != "emulator", "train_rows"] <= 18).all()
    emu = long[long["method"] == "emulator"]["mape_pct"].mean()
    assert long[(long["method"] == "ridge") & (long["fraction"] == 1.0)]["mape_pct"].mean() < emu
    s = R.summarise(long)
    assert {"mape_pct", "ci95", "groups"} <= set(s.columns)
    assert np.isnan(s[s["method"] == "emulator"]["ci95"]).all()


def test_h100_set_rejects_bad_files(tmp_path) -> None:
    p = tmp_path / "steps.csv"
    p.write_text("model,step_s\nresnet50,0.1\n")
    with pytest.raises(InputError, match="missing column"):
        R.h100_set(p)
    p.write_text("model,dataset,optimizer,batch_size,precision,status,step_s\n"
                 "resnet50,imagenet,sgd,32,fp32,ok,-1\n")
    with pytest.raises(InputError, match="positive"):
        R.h100_set(p)
