"""The physics predictor's ablation (``gpuscope predictor ablation``): candidate models on the
same leave-family-out splits, several seeds, 95 % intervals, per target; every scaler fitted
on training rows only.

Protocol: all rows of a dataset (Table 3 and Table 4 jobs alike) are grouped by model family
and split by ``evaluation.family_split`` (per seed); a model is fitted on train (+ val where
it needs no early stopping) and scored on test by ``evaluation.score`` (per target: nMSE in
the plain min-max space of the training rows, seed 001's metric, and execution-time MAPE).
Over seeds: the mean and a 95 % Student-t interval (``evaluation.ci95``).

Candidates of the ablation (``ABLATION``), all on the same split:

* ``analytic``: the emulator's estimate alone (execution time, and the peak rule on its
  steady-state utilisations and memory for the four peaks);
* ``gbt-totals`` / ``mlp-totals``: boosted trees / MLP on graph totals + context + device +
  run length (no analytic input);
* ``physics-gbt`` / ``physics-mlp`` / ``physics``: the same learners on the corrections of
  the analytic estimate, and the shipped per-target choice;
* ``gnn-mean`` / ``gnn``: the Driple network with a plain mean readout / with message passing
  and Set2Set (``benchmarks/predictor_goals.py`` runs them; they need encoded graphs).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from gpuscope.predictor.evaluation import ci95, family_split, score
from gpuscope.predictor.physics.dataset import PhysicsData
from gpuscope.predictor.physics.features import (
    CONTEXT_FEATURES,
    DEVICE_FEATURES,
    GRAPH_FEATURES,
)
from gpuscope.predictor.physics.hybrid import HybridModel, analytic_z, decode_targets, has_analytic
from gpuscope.predictor.physics.mlp import MaskedMLP
from gpuscope.predictor.scaling import MinMaxLabels

#: Inputs of the non-physics candidates: graph totals, device, context and the job's own run
#: length. Not ``r_log_epoch_s`` / ``r_log_exec_analytic``: those are the emulator's estimate
#: (with them "GBT on totals" scored 0.4 % on the corpus, whose labels are that estimate).
TOTALS: tuple[str, ...] = (GRAPH_FEATURES + DEVICE_FEATURES + CONTEXT_FEATURES
                           + ("r_log_epochs", "r_log_total_steps"))
ABLATION: tuple[str, ...] = ("analytic", "gbt-totals", "mlp-totals", "physics-gbt",
                             "physics-mlp", "physics")


def fit_candidate(name: str, train: PhysicsData, seed: int) -> Callable[[PhysicsData],
                                                                         np.ndarray]:
    """Fit ablation candidate ``name`` on ``train``; returns rows → predictions [n × T]."""
    tr = train.subset(np.flatnonzero(train.usable()))
    Y, steps = tr.Y(), tr.total_steps()
    targets = tr.targets
    if name == "analytic":
        cols = [j for j, t in enumerate(targets) if has_analytic(t)]

        def analytic(d: PhysicsData) -> np.ndarray:
            Z = np.full((len(d), len(targets)), np.nan)
            for j in cols:
                Z[:, j] = analytic_z(d.frame, targets[j])
            return decode_targets(d.frame, Z, targets, d.total_steps())
        return analytic
    if name in ("gbt-totals", "mlp-totals"):
        X = tr.frame[list(TOTALS)].to_numpy(np.float64)
        Z = np.log1p(np.clip(Y, 0, None))  # every target in log1p space, exec time included
        # no prediction beyond 10x the largest training label (an MLP extrapolates wildly)
        zmax = np.array([np.nanmax(c) if np.isfinite(c).any() else 0.0 for c in Z.T]) + \
            np.log(10.0)
        if name == "mlp-totals":
            mlp = MaskedMLP(random_state=seed).fit(X, Z)
            return lambda d: np.expm1(np.clip(mlp.predict(d.frame[list(TOTALS)].to_numpy(
                np.float64)), 0, zmax))
        from sklearn.ensemble import HistGradientBoostingRegressor
        from threadpoolctl import threadpool_limits

        models = []
        with threadpool_limits(1):
            for j in range(Z.shape[1]):
                ok = np.isfinite(Z[:, j])
                models.append(HistGradientBoostingRegressor(
                    max_iter=200, learning_rate=0.05, max_leaf_nodes=15, min_samples_leaf=5,
                    random_state=seed).fit(X[ok], Z[ok, j]) if ok.sum() >= 10 else None)

        def gbt(d: PhysicsData) -> np.ndarray:
            Xd = d.frame[list(TOTALS)].to_numpy(np.float64)
            with threadpool_limits(1):
                return np.column_stack([np.expm1(np.clip(m.predict(Xd), 0, zmax[j]))
                                        if m is not None
                                        else np.full(len(d), np.nan)
                                        for j, m in enumerate(models)])
        return gbt
    kinds = {"physics-gbt": "gbt", "physics-mlp": "mlp", "physics": "auto"}[name]
    m = HybridModel(targets=targets, kinds=kinds, random_state=seed)
    m.fit(tr.frame, Y, steps, tr.groups(), tr.oom())
    return lambda d: m.predict(d.frame, d.total_steps())


def run_ablation(data: PhysicsData, seeds: tuple[int, ...] = (0, 1, 2),
                 models: tuple[str, ...] = ABLATION,
                 extra: dict[str, Callable[[dict[str, np.ndarray], int], np.ndarray]]
                 | None = None, progress: bool = False) -> pd.DataFrame:
    """Long table: one row per (model, seed) with ``score`` of the test families.
    ``extra`` adds candidates fitted outside this module (the GNNs): name → fn(split, seed)
    → predictions of ``split["test"]`` [n × T] (a GNN uses ``split["val"]`` for early
    stopping; the other candidates train on train + val)."""
    from tqdm.auto import tqdm

    rows = []
    Y = data.Y()
    jobs = [(s, m) for s in seeds for m in (*models, *(extra or {}))]
    for seed, name in tqdm(jobs, desc="ablation", disable=not progress):
        sp = family_split(data.groups(), seed)
        fit_rows = np.concatenate([sp["train"], sp["val"]])
        if extra and name in extra:
            pred = extra[name](sp, seed)
        else:
            pred = fit_candidate(name, data.subset(fit_rows), seed)(data.subset(sp["test"]))
        sc = score(pred, Y[sp["test"]], MinMaxLabels(data.targets).fit(Y[fit_rows]))
        rows.append({"model": name, "seed": seed, "test_rows": len(sp["test"]),
                     "test_families": ",".join(sorted(set(data.groups()[sp["test"]]))), **sc})
    return pd.DataFrame(rows)


def summarise(long: pd.DataFrame, targets: tuple[str, ...]) -> pd.DataFrame:
    """Per model: mean ± 95 % half-width over seeds of exec MAPE, nMSE and each target's
    nMSE."""
    out = []
    for name, g in long.groupby("model", sort=False):
        r: dict[str, object] = {"model": name, "seeds": len(g)}
        for c in ["mape_exec_pct", "nmse", *(f"nmse_{t}" for t in targets)]:
            m, h = ci95(g[c].to_numpy())
            r[c] = m
            r[c + "_ci"] = h
        out.append(r)
    return pd.DataFrame(out)
