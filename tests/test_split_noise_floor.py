"""``noise.split_noise_floor``: the label noise floor in the predictor's own metric space."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuscope.predictor.evaluation import family_split
from gpuscope.predictor.physics.dataset import PhysicsData
from research.noise_floor import split_noise_floor


def _data() -> PhysicsData:
    # 4 families x 5 runs; family "d" holds the extreme labels (10x the others' range)
    fams = np.repeat(["a", "b", "c", "d"], 5)
    x = np.tile(np.arange(5, dtype=float), 4) * np.where(fams == "d", 10.0, 1.0)
    labels = pd.DataFrame({"family": fams, "status": "ok", "x": x})
    return PhysicsData(labels, [None] * 20, pd.DataFrame(index=range(20)),  # type: ignore[list-item]
                       targets=("x",))


def test_same_labels_have_zero_floor() -> None:
    d = _data()
    f = split_noise_floor(d, "unused", seeds=(0, 1), other=d.labels.copy())
    assert list(f.seed) == [0, 1] and np.allclose(f.nmse, 0.0)


def test_floor_is_scored_in_each_split_training_range() -> None:
    d = _data()
    other = d.labels.copy()
    other["x"] = other["x"] + 0.5  # every row off by 0.5
    f = split_noise_floor(d, "unused", seeds=(0, 1, 2), other=other)
    for s in (0, 1, 2):
        sp = family_split(d.groups(), s)
        fit = np.concatenate([sp["train"], sp["val"]])
        x = d.labels["x"].to_numpy()
        rng = x[fit].max() - x[fit].min()  # 4 without family "d" in training, 40 with it
        assert f.loc[f.seed == s, "nmse"].item() == pytest.approx((0.5 / rng) ** 2)
    # a non-ok run is not scored (as PhysicsData.Y)
    d.labels.loc[:, "status"] = "oom"
    assert split_noise_floor(d, "unused", seeds=(0,), other=other).nmse.isna().all()


def test_row_count_must_match() -> None:
    d = _data()
    with pytest.raises(ValueError, match="one row each"):
        split_noise_floor(d, "unused", other=d.labels.iloc[:3])
