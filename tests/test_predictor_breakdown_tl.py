"""The breakdown ridge and the oracle floor
(``research.measured_correctors.breakdown_tl``). Synthetic rows only: fast and in-process."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone

from gpuscope.predictor.physics.features import STEP_FEATURES
from research.measured_correctors.breakdown_tl import (
    BREAKDOWN_FEATURES,
    BreakdownRidge,
    best_constant,
    breakdown_features,
    oracle_floor,
)

IDX = {f: i for i, f in enumerate(STEP_FEATURES)}


def _rows(n_groups: int, per: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """STEP_FEATURES rows whose breakdown varies: random batch, shares and device specs."""
    rng = np.random.default_rng(seed)
    n = n_groups * per
    X = np.zeros((n, len(STEP_FEATURES)))
    X[:, IDX["a_log_iter"]] = rng.uniform(-2, 0, n)
    for k in ("a_log_gpu", "a_log_mem_busy", "a_log_dispatch", "a_log_pipeline"):
        X[:, IDX[k]] = X[:, IDX["a_log_iter"]] + np.log10(rng.uniform(0.05, 1.0, n))
    X[:, IDX["g_log_flops"]] = rng.uniform(9, 12, n)
    X[:, IDX["g_log_kernels"]] = rng.uniform(2, 3.5, n)
    X[:, IDX["g_log2_batch"]] = rng.integers(3, 9, n).astype(float)
    X[:, IDX["a_bneck_dispatch"]] = rng.integers(0, 2, n).astype(float)
    X[:, IDX["d_log_fp32"]] = rng.choice([0.6, 1.0, 1.2], n)
    X[:, IDX["d_log_bw"]] = rng.choice([2.5, 2.9], n)
    X[:, IDX["d_host_core"]] = rng.uniform(0.8, 1.2, n)
    groups = np.repeat([f"m{i}" for i in range(n_groups)], per)
    return X, groups


def test_breakdown_features_are_the_emulator_shares() -> None:
    X, _ = _rows(1, 5)
    Z = breakdown_features(X)
    assert Z.shape == (5, len(BREAKDOWN_FEATURES))
    gpu = 10 ** (X[:, IDX["a_log_gpu"]] - X[:, IDX["a_log_iter"]])
    assert np.allclose(Z[:, BREAKDOWN_FEATURES.index("share_gpu")], gpu)
    kf = X[:, IDX["g_log_flops"]] - X[:, IDX["g_log_kernels"]]
    assert np.allclose(Z[:, BREAKDOWN_FEATURES.index("log_kernel_flops")], kf)


def test_recovers_a_linear_correction_shared_by_every_group() -> None:
    X, g = _rows(7, 10)
    c = 0.1 * (X[:, IDX["g_log2_batch"]] - 6.0)  # known: log error linear in log2 batch
    m = BreakdownRidge().fit(X, c, g)
    assert math.isfinite(m.lambda_) and m.lambda_ <= 1e-2
    Xn, _ = _rows(2, 10, seed=5)
    want = 0.1 * (Xn[:, IDX["g_log2_batch"]] - 6.0)
    assert np.abs(m.predict(Xn) - np.clip(want, m.lo_, m.hi_)).max() < 0.02


def test_stays_on_the_emulator_when_groups_disagree() -> None:
    X, g = _rows(6, 8)
    rng = np.random.default_rng(3)
    off = {k: rng.choice([-0.8, 0.8]) for k in np.unique(g)}
    c = np.array([off[k] for k in g]) + 0.01 * rng.normal(size=len(g))
    m = BreakdownRidge().fit(X, c, g)
    assert m.lambda_ == math.inf and np.allclose(m.predict(X), 0.0)


def test_zero_rows_or_one_group_is_the_emulator() -> None:
    X, g = _rows(1, 6)
    empty = BreakdownRidge().fit(X[:0], np.zeros(0), g[:0])
    assert empty.lambda_ == math.inf and np.allclose(empty.predict(X), 0.0)
    one = BreakdownRidge().fit(X, 0.5 * np.ones(6), g)
    assert one.lambda_ == math.inf and np.allclose(one.predict(X), 0.0)


def test_sklearn_conventions_and_determinism() -> None:
    m = BreakdownRidge(lambdas=(0.1, 1.0), one_se=False)
    assert m.get_params() == {"lambdas": (0.1, 1.0), "one_se": False}
    X, g = _rows(5, 6)
    c = 0.2 * X[:, IDX["d_log_fp32"]]
    a = clone(m).fit(X, c, g)
    b = clone(m).fit(X, c, g)
    assert not hasattr(clone(m), "theta_")
    assert np.array_equal(a.predict(X), b.predict(X)) and a.choice == b.choice
    assert set(a.cv_mape_) == {0.1, 1.0, math.inf}
    with pytest.raises(ValueError):
        BreakdownRidge().fit(X, c[:-1], g)


def test_predictions_are_clipped_to_the_training_range() -> None:
    X, g = _rows(6, 8)
    c = 0.05 * X[:, IDX["g_log2_batch"]]
    m = BreakdownRidge(lambdas=(1e-3,), one_se=False).fit(X, c, g)
    far = X[:3].copy()
    far[:, IDX["g_log2_batch"]] = 1000.0
    assert m.predict(far).max() <= c.max() + 1e-12


def test_best_constant_and_oracle_floor() -> None:
    c = np.log(np.array([1.0, 2.0, 4.0]))
    a = best_constant(c)
    grid = np.linspace(-1, 2, 3001)
    brute = grid[np.argmin([np.abs(np.exp(x - c) - 1).sum() for x in grid])]
    assert np.abs(np.exp(a - c) - 1).sum() <= np.abs(np.exp(brute - c) - 1).sum() + 1e-9
    fl = oracle_floor(np.array([0.5, 0.5, -0.2, 0.3]), np.array(["a", "a", "b", "b"]),
                      np.array(["k80", "v100", "k80", "v100"]))
    row = fl.set_index("group").loc["a"]
    assert row["oracle_const"] == pytest.approx(0.0) and row["emulator"] > 30
    assert (fl["oracle_const_per_device"] <= fl["oracle_const"] + 1e-9).all()
    assert fl.set_index("group").loc["b", "oracle_const_per_device"] == pytest.approx(0.0)


def test_inputs_are_clipped_to_their_training_range() -> None:
    X, g = _rows(6, 8)
    c = 0.05 * (X[:, IDX["g_log2_batch"]] - 6.0)
    m = BreakdownRidge(lambdas=(1e-3,), one_se=False).fit(X, c, g)
    edge, far = X[:2].copy(), X[:2].copy()
    edge[:, IDX["g_log2_batch"]] = X[:, IDX["g_log2_batch"]].max()
    far[:, IDX["g_log2_batch"]] = X[:, IDX["g_log2_batch"]].max() + 5
    assert np.allclose(m.predict(far), m.predict(edge))
    assert m.predict(edge).mean() > 0.05  # the learnt slope is used up to the edge
