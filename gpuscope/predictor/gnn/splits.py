"""Train/validation/test splits of a dataset's ``split == "train"`` rows (seed 001 §4.3).

* ``random``: 60/20/20 of the rows, shuffled with a fixed seed (the seed's setting).
* ``family``: whole model families (``gpuscope.jobs.spec.MODEL_FAMILY``) are held out, so test and
  validation models were never seen in training (seed 001 Table 4's idea):
  ``gpuscope.predictor.evaluation.family_split`` (one of five seeded family folds each for
  test and validation, the rest for training).

Rows with ``split == "unseen"`` (seed 001 Table 4 jobs, the allocator's workload) are never in
any of the three; they are returned as ``unseen`` for evaluation only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import MODEL_FAMILY

SPLIT_KINDS: tuple[str, ...] = ("random", "family")


def make_splits(labels: pd.DataFrame, kind: str = "random", seed: int = 0,
                fractions: tuple[float, float, float] = (0.6, 0.2, 0.2)) -> dict[str, np.ndarray]:
    """Row indices (into ``labels``) of ``train``, ``val``, ``test`` and ``unseen``."""
    if kind not in SPLIT_KINDS:
        raise InputError(f"unknown split {kind!r}; expected one of {', '.join(SPLIT_KINDS)}")
    split_col = labels["split"].astype(str).to_numpy() if "split" in labels else \
        np.full(len(labels), "train")
    pool = np.flatnonzero(split_col != "unseen")
    unseen = np.flatnonzero(split_col == "unseen")
    if pool.size < 3:
        raise InputError(f"need at least 3 trainable rows to split, found {pool.size}")
    if kind == "random":
        perm = np.random.default_rng(seed).permutation(pool)
        n_val = max(1, round(fractions[1] * pool.size))
        n_test = max(1, round(fractions[2] * pool.size))
        n_train = pool.size - n_val - n_test
        parts = {"train": perm[:n_train], "val": perm[n_train:n_train + n_val],
                 "test": perm[n_train + n_val:]}
    else:
        from gpuscope.predictor.evaluation import family_split

        fam = np.array([MODEL_FAMILY.get(str(m), str(m)) for m in labels["model"]])
        families = set(fam[pool].tolist())
        if len(families) < 3:
            raise InputError(f"the family split needs ≥ 3 model families, found {len(families)}")
        sp = family_split(fam[pool], seed, folds=max(3, round(1 / fractions[2])))
        parts = {k: pool[v] for k, v in sp.items()}
    parts = {k: np.sort(v) for k, v in parts.items()}
    parts["unseen"] = unseen
    return parts


def subsample(rows: np.ndarray, fraction: float, seed: int = 0) -> np.ndarray:
    """A seeded random ``fraction`` of ``rows`` (at least one), for data-efficiency curves."""
    if not 0 < fraction <= 1:
        raise InputError(f"fraction must be in (0, 1], got {fraction}")
    if fraction == 1:
        return rows
    rng = np.random.default_rng(seed + 7919)
    n = max(1, round(fraction * rows.size))
    return np.sort(rng.choice(rows, size=n, replace=False))
