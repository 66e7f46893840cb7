"""Honest evaluation for both predictor kinds: leave-family-out splits, one scorer, intervals
over seeds, and ``evaluate`` (the table of ``gpuscope evaluate``).

**Splits.** ``family_folds`` is the one leave-family-out split: scikit-learn's ``GroupKFold``
with the families shuffled by a seed, so every fold holds whole families (a model scored on a
fold never saw one of its families). ``family_split`` views the folds as train / val / test
(one fold each for test and val, the rest train: 60/20/20 of the families with five folds);
the physics model's inner model selection uses the folds directly.

**Scorer.** ``score`` compares predictions with labels (label units) of a set of rows in the
plain min-max space of the *training* rows (``MinMaxLabels.plain``, seed 001's metric):

* normalised MSE per target (``by="target"``: ``nmse_<target>``) or per resource group
  (``by="group"``: ``nmse_gpu_util``, …, ``nmse_exec_time``: the mean over the group's
  burst/idle/peak targets), seed 001 Eq. 1 over observed rows;
* ``nmse``: over all observed entries, only for predictions of every observed entry (a
  candidate that predicts some targets only gets NaN);
* ``mape_exec_pct``: mean |ŷ − y| / y of execution time over rows with y > 0, in %;
* ``r2``: 1 − Σ(ŷ' − y')² / Σ(y' − ȳ')² over all observed normalised entries.

Over seeds: the mean and a 95 % Student-t interval (``ci95``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gpuscope.core.errors import InputError
from gpuscope.core.targets import RESOURCES

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.predictor.scaling import MinMaxLabels

#: Resource groups of ``score(by="group")``: the four resources and execution time.
GROUPS: tuple[str, ...] = RESOURCES + ("exec_time",)


def family_folds(groups: np.ndarray, n_folds: int, seed: int) -> list[np.ndarray]:
    """``n_folds`` disjoint sorted row-index arrays covering every row, each holding whole
    families (``groups[i]`` is row i's family): ``GroupKFold(shuffle=True)``, seeded."""
    from sklearn.model_selection import GroupKFold

    g = np.asarray(groups).astype(str)
    n_groups = len(set(g.tolist()))
    if n_folds < 2 or n_groups < n_folds:
        raise InputError(f"a {n_folds}-fold family split needs at least {max(n_folds, 2)} "
                         f"families, found {n_groups}")
    kf = GroupKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    return [np.sort(test) for _, test in kf.split(np.zeros((len(g), 1)), groups=g)]


def family_split(groups: np.ndarray, seed: int, folds: int = 5) -> dict[str, np.ndarray]:
    """Row indices of ``train``, ``val``, ``test`` holding out whole families: one of
    ``folds`` family folds each for test and val, the rest train (with fewer families than
    folds, one fold per family; with two families, no val)."""
    n_groups = len(set(np.asarray(groups).astype(str).tolist()))
    parts = family_folds(groups, min(folds, n_groups), seed)
    empty = np.zeros(0, dtype=np.int64)
    val = parts[1] if len(parts) >= 3 else empty
    rest = parts[2:] if len(parts) >= 3 else parts[1:]
    return {"train": np.sort(np.concatenate(rest)), "val": val, "test": parts[0]}


def _group(target: str) -> str:
    return "exec_time" if target == "exec_time_s" else next(
        r for r in RESOURCES if target.startswith(r + "_")
        and target[len(r) + 1:] in ("burst_s", "idle_s", "peak"))


def score(pred: np.ndarray, true: np.ndarray, ranges: MinMaxLabels, by: str = "target"
          ) -> dict[str, float]:
    """The metrics of the module docstring for predictions ``pred`` and labels ``true``
    [rows × targets of ``ranges``] (NaN: not observed / not predicted); ``ranges`` is the
    plain min-max normalisation of the training rows (``MinMaxLabels(targets).fit(Y_train)``)."""
    if by not in ("target", "group"):
        raise ValueError(f"by must be 'target' or 'group', got {by!r}")
    targets = tuple(ranges.targets)
    pred, true = np.asarray(pred, np.float64), np.asarray(true, np.float64)
    p, t = ranges.plain(pred), ranges.plain(true)
    obs = np.isfinite(t)
    sq = np.where(obs & np.isfinite(p), (p - np.nan_to_num(t)) ** 2, np.nan)
    out: dict[str, float] = {}
    names = targets if by == "target" else GROUPS
    for name in names:
        cols = [j for j, tg in enumerate(targets) if (tg if by == "target" else _group(tg))
                == name]
        vals = sq[:, cols][np.isfinite(sq[:, cols])] if cols else np.array([])
        out[f"nmse_{name}"] = float(vals.mean()) if vals.size else float("nan")
    full = bool(np.isfinite(p[obs]).all())
    allv = sq[np.isfinite(sq)]
    out["nmse"] = float(allv.mean()) if allv.size and full else float("nan")
    out["mape_exec_pct"] = float("nan")
    if "exec_time_s" in targets:
        j = targets.index("exec_time_s")
        ok = np.isfinite(true[:, j]) & (true[:, j] > 0) & np.isfinite(pred[:, j])
        if ok.any():
            out["mape_exec_pct"] = float(100 * np.mean(np.abs(pred[ok, j] - true[ok, j])
                                                       / true[ok, j]))
    tv = t[obs]
    denom = float(((tv - tv.mean()) ** 2).sum()) if tv.size else 0.0
    out["r2"] = 1 - float(allv.sum()) / denom if denom > 0 and full else float("nan")
    return out


def ci95(values: list[float] | np.ndarray) -> tuple[float, float]:
    """(mean, half-width of the 95 % Student-t interval) over seeds (NaNs dropped)."""
    from scipy import stats

    v = np.asarray([x for x in values if x == x], dtype=np.float64)
    if v.size == 0:
        return float("nan"), float("nan")
    if v.size == 1:
        return float(v[0]), float("nan")
    half = float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return float(v.mean()), half


def evaluate(model: str | Path, dataset: str | Path, baseline: str | None = None,
             progress: bool = False) -> pd.DataFrame:
    """A checkpoint (either kind) scored per split of a dataset folder: one row per
    ``(model, split)`` with ``rows`` and the ``score`` metrics (per target for a physics
    checkpoint, per resource group for a GNN; for a GNN, ``baseline="gbt"`` adds the GBT
    baseline fitted on its training rows; a physics checkpoint's baselines are the ablation's). ``table.attrs["report"]`` holds the text
    ``gpuscope evaluate`` prints (a header line naming what the figures mean, then the
    table)."""
    from gpuscope.predictor.checkpoint import read_checkpoint_dict
    from gpuscope.predictor.physics.model import FORMAT_VERSION

    if read_checkpoint_dict(model).get("format_version") == FORMAT_VERSION:
        from gpuscope.predictor.physics.model import evaluate_physics

        return evaluate_physics(model, dataset, progress)
    from gpuscope.predictor.gnn.evaluation import evaluate_gnn

    return evaluate_gnn(model, dataset, baseline)
