"""The label noise floor of an emulated dataset (the predictor's nMSE goal is relative to it).

The same jobs on the same device, emulated twice with different trace seeds and labelled the
same way (``gpuscope.emulator.synth_trace`` → ``gpuscope.profiling.labeling.label_trace``),
disagree by the trace synthesis's randomness alone: no predictor can beat that disagreement.
Per target, the floor is the MSE between the two labellings in the plain min-max space of the
first one (seed 001's metric, as ``evaluation.score``). The ``benchmarks/
emulator_noise_floor.py`` figure of the emulator stage, when present, takes precedence.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from gpuscope.core.targets import TARGETS
from gpuscope.jobs.spec import JobSpec
from gpuscope.predictor.physics.dataset import PhysicsData
from gpuscope.predictor.physics.features import FeatureBuilder


def relabel(jobs: Sequence[JobSpec], device: str, seed: int,
            builder: FeatureBuilder | None = None) -> pd.DataFrame:
    """Labels of ``jobs`` emulated on ``device`` with trace seed ``seed``."""
    from gpuscope.cluster.devices import get_device
    from gpuscope.emulator import default_params, estimate, synth_trace
    from gpuscope.emulator.runs import run_meta
    from gpuscope.emulator.traces import PERIOD_S, effective_period
    from gpuscope.profiling.labeling import label_trace

    builder = builder or FeatureBuilder()
    dev = get_device(device)
    p = default_params()
    rows = []
    for j in jobs:
        est = estimate(j, builder.graph_entry(j)[1], dev, p)
        df, exec_s = synth_trace(est, j, dev, p, seed=seed, period_s=PERIOD_S)
        period = effective_period(est, PERIOD_S, int(p.max_trace_samples))
        rows.append(label_trace(df, run_meta(j, dev, est, exec_s, seed, period)))
    return pd.DataFrame(rows)


def noise_floor(jobs: Sequence[JobSpec], device: str, seeds: tuple[int, int] = (0, 1),
                builder: FeatureBuilder | None = None) -> pd.DataFrame:
    """``target, nmse`` between two trace seeds' labels of the same jobs (``ok`` runs)."""
    a, b = (relabel(jobs, device, s, builder) for s in seeds)
    return floor_of_labels(a, b)


def floor_of_labels(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """``target, nmse, rows`` between two labellings of the same runs (``relabel`` with two
    seeds), in the plain min-max space of the first."""
    # the ok runs only: the rows the predictor is scored on (v2data.PhysicsData.Y); an OOM
    # run's execution time is the same with every seed and would pull the floor down
    run_ok = (a["status"].astype(str) == "ok").to_numpy() & (b["status"].astype(str) == "ok").to_numpy()
    out = []
    for t in TARGETS:
        ya = pd.to_numeric(a[t], errors="coerce").to_numpy(np.float64)
        yb = pd.to_numeric(b[t], errors="coerce").to_numpy(np.float64)
        ok = np.isfinite(ya) & np.isfinite(yb) & run_ok
        lo, hi = (ya[ok].min(), ya[ok].max()) if ok.any() else (0.0, 1.0)
        if hi <= lo:
            from gpuscope.predictor.scaling import MinMaxLabels

            hi = lo + MinMaxLabels._fallback_range(t)
        out.append({"target": t, "nmse": float(np.mean(((ya[ok] - yb[ok]) / (hi - lo)) ** 2))
                    if ok.any() else float("nan"), "rows": int(ok.sum())})
    return pd.DataFrame(out)


def split_noise_floor(data: PhysicsData, device: str, seeds: Sequence[int] = (0, 1, 2),
                      other_seed: int = 1, builder: FeatureBuilder | None = None,
                      other: pd.DataFrame | None = None) -> pd.DataFrame:
    """``seed, target, nmse``: the floor in the space the predictor is scored in.

    ``noise_floor`` normalises by the whole dataset's range; ``physics.ablation.run_ablation`` scores
    each leave-family-out split's test rows in the min-max space of that split's training
    rows, which is narrower when a held-out family has the extreme labels (Table 4's AlexNet
    idles 1.2-1.8 s on the CPU, every other family < 0.8 s). Here the labels of a second trace
    seed (``other_seed``; ``other``: those labels when already computed, one row per job of
    ``data``) are scored as predictions of ``data``'s labels by ``evaluation.score`` on
    the same splits (``family_split`` per seed) and rows (``PhysicsData.Y``: ``ok`` runs): the
    predictor's own metric applied to label noise. ``data``'s labels must be the dataset's
    own trace seed (the bundles use 0)."""
    from gpuscope.predictor.evaluation import family_split, score
    from gpuscope.predictor.scaling import MinMaxLabels

    y = data.Y()
    lab = other if other is not None else relabel(data.jobs, device, other_seed, builder)
    # the same label matrix as the predictor's (PhysicsData.Y), on the same rows
    y1 = PhysicsData(lab, data.jobs, data.frame, data.targets).Y()
    y1[~np.isfinite(y)] = np.nan
    rows = []
    for s in seeds:
        sp = family_split(data.groups(), int(s))
        fit = np.concatenate([sp["train"], sp["val"]])
        sc = score(y1[sp["test"]], y[sp["test"]], MinMaxLabels(data.targets).fit(y[fit]))
        rows += [{"seed": int(s), "target": t, "nmse": sc[f"nmse_{t}"]} for t in data.targets]
    return pd.DataFrame(rows)
