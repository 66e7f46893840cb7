"""Turn a trace into the predictor's targets (seed 001 §2.3, §3.1; Driple).

Per resource r present in the trace:

* the samples are split into *burst* and *idle* (``method``):

  - ``peakband`` (default): a series with one level (the k-means centres
    less than ``MIN_GAP_FRACTION`` of capacity apart, as for ``kmeans``) is all burst (all
    idle at zero), one with two (centres more than twice that apart) is cut at a band of
    thresholds, and between the two the labels are blended linearly in the gap
    (:func:`two_level_weight`). The cuts: burst = above a threshold theta, for ``N_BAND`` thresholds spread
    evenly over ``PEAK_BAND`` (0.2-0.4) of the resource's steady-state peak (below), and
    ``r_burst_s`` / ``r_idle_s`` are the means over the thresholds of the mean run lengths at
    each. The peak is continuous in the samples, and averaging over a band of thresholds
    makes the labels move by at most 1/``N_BAND`` of the way when a level crosses one
    threshold, so a run whose training level sits near a threshold no longer flips between
    "burst" and "idle" with the sensor noise. (k-means on three levels -- start-up and
    checkpoint at 0, training at 39-44 %, evaluation and autotuning above -- has two stable
    splits, and two noise seeds of the same run picked different ones: the label noise floor
    missed its target.) The band sits below the evaluation level of a job
    (0.6-0.85 x training in the emulator) so that the steady state's levels are rarely in it;
  - ``kmeans`` (seed 001 §3.1, paper-literal): k-means with k=2 (the higher centre is
    burst; two centres less than ``MIN_GAP_FRACTION`` of capacity apart are one level);
  - ``median`` (seed 001 §2.3: "burst time is the upper half of the median");

  the same rule for measured and emulated traces (``gpuscope.predictor.physics.analytic``
  mirrors ``peakband`` and ``kmeans`` in closed form);
* ``r_burst_s`` / ``r_idle_s`` = mean length in seconds of the contiguous runs of burst / idle
  samples (run-length encoding in numpy; a sample lasts until the next one, the last one a
  median period);
* ``r_peak`` = the steady-state peak: the ``PEAK_QUANTILE`` (95th) percentile of the
  resource's samples in the run's steady state (:func:`steady_state_mask`: from the first
  sample at which device memory reaches 90 % of its maximum -- the training footprint is
  allocated during the first step -- to the end; the whole run when the trace has no memory
  series). Seed 001's "mean of the samples above 90 % of capacity, 0 when there are
  none" is discontinuous at 90 % (a run at 89 % labels 0, one at 91 % labels 91) and counts
  start-up bursts, so two runs of the same job could get labels 90 points apart; the
  quantile is continuous in the samples, ignores the start-up and isolated spikes, and
  equals the old value on a saturated resource. The same rule applies to measured and
  emulated traces;

then ``exec_time_s`` (wall clock of the run). Resources absent from the trace give NaN, and
non-``ok`` runs keep NaN targets except ``exec_time_s`` (design.md, Labels).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.core.targets import PEAK_FRACTION, PEAK_QUANTILE, RESOURCES, TARGETS, capacity
from gpuscope.jobs.spec import TABLE3_CNNS, TABLE3_GENERATIVE
from gpuscope.profiling.ledger import job_graph_key, trace_paths
from gpuscope.profiling.trace import TraceMeta, read_trace

METHODS: tuple[str, ...] = ("peakband", "kmeans", "median")
#: The labeler's default burst/idle rule (module docstring; the paper-literal one is kmeans).
DEFAULT_METHOD = "peakband"
#: ``peakband``: burst thresholds as shares of the steady-state peak, ``N_BAND`` midpoints
#: (0.2-0.4: the lowest of 0.2-0.4, 0.3-0.5, 0.4-0.6 tried on the titanx noise floor).
PEAK_BAND: tuple[float, float] = (0.2, 0.4)
N_BAND = 8
IDENTITY_COLUMNS: tuple[str, ...] = (
    "run_id", "device", "provenance", "model", "dataset", "optimizer", "batch_size", "epochs",
    "steps_per_epoch", "precision", "graph_key", "split",
)
LABEL_COLUMNS: tuple[str, ...] = (*IDENTITY_COLUMNS, *TARGETS, "status")
TRAIN_MODELS: frozenset[str] = frozenset(TABLE3_CNNS + TABLE3_GENERATIVE)
RANDOM_STATE = 0
#: Two k-means centres closer than this fraction of capacity are one level (burst_mask).
MIN_GAP_FRACTION = 0.05


def band_fractions() -> np.ndarray:
    """The ``peakband`` thresholds as shares of the peak (midpoints of ``N_BAND`` equal
    parts of ``PEAK_BAND``); ``analytic_labels`` uses the same ones."""
    lo, hi = PEAK_BAND
    return lo + (hi - lo) * (np.arange(N_BAND) + 0.5) / N_BAND


def burst_mask(x: np.ndarray, method: str = "kmeans", min_gap: float = 0.0) -> np.ndarray:
    """True for burst samples of one resource's series ``x`` (no NaN) by one of the
    single-split rules (``kmeans``, ``median``; ``peakband`` averages over several
    thresholds in :func:`resource_stats`, its masks are :func:`peakband_masks`).

    k-means: k=2 on the 1-D values, initialised at the min and max (deterministic; one init
    suffices in 1-D), burst = the cluster with the higher centre (:func:`kmeans_threshold`). A constant series has no
    split: all burst when above zero, all idle otherwise; so has a series whose two centres
    are less than ``min_gap`` apart (splitting sensor noise made burst/idle
    lengths of a flat series random; the labeler passes ``MIN_GAP_FRACTION`` of capacity).
    """
    if method not in METHODS or method == "peakband":
        raise InputError(f"unknown single-split labeling method {method!r}; expected kmeans "
                         "or median")
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return np.zeros(0, dtype=bool)
    if _is_constant(x):
        return np.full(x.shape, float(x.max()) > 0.0)
    if method == "median":
        return x > np.median(x)
    mask, gap = _kmeans_split(x)
    if min_gap > 0 and gap < min_gap:
        # two "clusters" closer than the sensor noise: one level, no burst/idle split
        return np.full(x.shape, float(x.mean()) > 0.0)
    return mask


def _is_constant(x: np.ndarray) -> bool:
    lo, hi = float(x.min()), float(x.max())
    return hi - lo <= 1e-12 * max(1.0, abs(hi))


def _kmeans_split(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Burst mask of the 2-means split of a non-constant series and the distance between its
    two centres (both clusters are non-empty: :func:`kmeans_threshold`)."""
    mask = x > kmeans_threshold(x)
    return mask, float(x[mask].mean() - x[~mask].mean())


def peakband_masks(x: np.ndarray, peak: float) -> np.ndarray:
    """[``N_BAND`` x n] burst masks of series ``x``: ``x > f * peak`` for each band fraction
    f (:func:`band_fractions`)."""
    x = np.asarray(x, dtype=np.float64)
    return x[None, :] > (band_fractions() * max(float(peak), 0.0))[:, None]


def two_level_weight(x: np.ndarray, min_gap: float) -> float:
    """``peakband``'s level test: the weight of the two-level (band) labels against the
    one-level ones (all burst, or all idle at zero), continuous in the k-means gap g (the
    distance between the two centres, :func:`kmeans_threshold`): 0 for g <= ``min_gap``, 1
    for g >= 2 ``min_gap``, linear in between (``kmeans``'s hard cut at ``min_gap`` flipped
    the labels of series whose gap is near it between two noise seeds)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0 or _is_constant(x):
        return 0.0
    return gap_weight(_kmeans_split(x)[1], min_gap)


def gap_weight(gap: float, min_gap: float) -> float:
    """0 below ``min_gap``, 1 above twice it, linear in between (:func:`two_level_weight`)."""
    if min_gap <= 0:
        return 1.0
    return float(np.clip(gap / min_gap - 1.0, 0.0, 1.0))


def kmeans_threshold(x: np.ndarray, max_iter: int = 300) -> float:
    """Threshold between the two clusters of 1-D k-means (k=2), Lloyd's algorithm.

    Identical to ``sklearn.cluster.KMeans(n_clusters=2, init=[[min], [max]], n_init=1)`` run
    to convergence (the test suite checks it against scikit-learn), but in 1-D a Lloyd step
    is one binary search on the sorted values with prefix sums, so a 10,000-sample trace
    labels in well under a millisecond instead of ~30 ms per resource. Samples at or below
    the returned threshold belong to the low (idle) cluster.
    """
    xs = np.sort(np.asarray(x, dtype=np.float64))
    cs = np.cumsum(xs)
    n = xs.size
    c0, c1 = float(xs[0]), float(xs[-1])
    k_prev = -1
    for _ in range(max_iter):
        thr = 0.5 * (c0 + c1)
        k = int(np.searchsorted(xs, thr, side="right"))  # ties go to the first (low) centre
        k = min(max(k, 1), n - 1)
        if k == k_prev:
            break
        k_prev = k
        c0 = cs[k - 1] / k
        c1 = (cs[-1] - cs[k - 1]) / (n - k)
    return float(xs[k_prev - 1])


def sklearn_burst_mask(x: np.ndarray, random_state: int = RANDOM_STATE) -> np.ndarray:
    """Reference: the same split with scikit-learn's KMeans (slower; used to check
    :func:`kmeans_threshold`)."""
    from sklearn.cluster import KMeans

    x = np.asarray(x, dtype=np.float64)
    km = KMeans(
        n_clusters=2, init=np.array([[x.min()], [x.max()]]), n_init=1,
        random_state=random_state, algorithm="lloyd", tol=0.0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning on near-degenerate series
        km.fit(x.reshape(-1, 1))
    return km.labels_ == int(np.argmax(km.cluster_centers_[:, 0]))


def sample_durations(t: np.ndarray, period_s: float) -> np.ndarray:
    """Seconds each sample stands for: until the next sample; the last one a median period."""
    t = np.asarray(t, dtype=np.float64)
    if t.size == 0:
        return t
    d = np.diff(t)
    last = float(np.median(d)) if d.size else float(period_s)
    return np.append(d, last)


def run_lengths(mask: np.ndarray, durations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Durations of the contiguous runs of True and of False in ``mask`` (vectorised RLE)."""
    mask = np.asarray(mask, dtype=bool)
    if mask.size == 0:
        return np.zeros(0), np.zeros(0)
    starts = np.flatnonzero(np.concatenate(([True], mask[1:] != mask[:-1])))
    lengths = np.add.reduceat(np.asarray(durations, dtype=np.float64), starts)
    values = mask[starts]
    return lengths[values], lengths[~values]


def steady_state_mask(df: pd.DataFrame) -> np.ndarray:
    """True for the samples of the run's steady state: from the first sample at which
    ``gpu_mem`` reaches ``PEAK_FRACTION`` of its maximum to the end (all samples when the
    trace has no usable memory series)."""
    n = len(df)
    if "gpu_mem" not in df.columns:
        return np.ones(n, dtype=bool)
    m = df["gpu_mem"].to_numpy(dtype=np.float64)
    if not np.isfinite(m).any() or np.nanmax(m) <= 0:
        return np.ones(n, dtype=bool)
    first = int(np.argmax(np.nan_to_num(m, nan=-1.0) >= PEAK_FRACTION * np.nanmax(m)))
    out = np.zeros(n, dtype=bool)
    out[first:] = True
    return out


def robust_peak(x: np.ndarray, steady: np.ndarray | None = None) -> float:
    """The ``PEAK_QUANTILE`` percentile of the steady-state samples (NaN dropped; all samples
    when the steady state has none)."""
    x = np.asarray(x, dtype=np.float64)
    if steady is not None and steady.shape == x.shape:
        sub = x[steady & ~np.isnan(x)]
        if sub.size:
            return float(np.quantile(sub, PEAK_QUANTILE))
    x = x[~np.isnan(x)]
    return float(np.quantile(x, PEAK_QUANTILE)) if x.size else math.nan


def resource_stats(
    t: np.ndarray, x: np.ndarray, cap: float, period_s: float, method: str = DEFAULT_METHOD,
    steady: np.ndarray | None = None,
) -> dict[str, float]:
    """``burst_s``, ``idle_s``, ``peak`` of one resource's series (NaN samples dropped);
    ``steady`` marks the steady-state samples for the peak (module docstring). ``cap`` is
    kept for callers; the peak no longer thresholds on it."""
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    keep = ~np.isnan(x)
    if not keep.any():
        return {"burst_s": math.nan, "idle_s": math.nan, "peak": math.nan}
    if method not in METHODS:
        raise InputError(f"unknown labeling method {method!r}; expected {' or '.join(METHODS)}")
    peak = robust_peak(x, steady)
    t, x = t[keep], x[keep]
    d = sample_durations(t, period_s)
    if method != "peakband":
        return {**_mean_runs(burst_mask(x, method, MIN_GAP_FRACTION * cap)[None, :], d),
                "peak": peak}
    w = two_level_weight(x, MIN_GAP_FRACTION * cap)
    two = _mean_runs(peakband_masks(x, peak), d) if w > 0 else {"burst_s": 0.0, "idle_s": 0.0}
    one = _mean_runs(np.full((1, x.size), float(x.mean()) > 0.0), d) if w < 1 \
        else {"burst_s": 0.0, "idle_s": 0.0}
    return {k: w * two[k] + (1.0 - w) * one[k] for k in ("burst_s", "idle_s")} | {"peak": peak}


def _mean_runs(masks: np.ndarray, d: np.ndarray) -> dict[str, float]:
    """Mean over the rows of ``masks`` of the mean burst and idle run lengths (0 without
    runs of a class); ``d``: the samples' durations."""
    b, i = np.zeros(len(masks)), np.zeros(len(masks))
    for k, mask in enumerate(masks):
        bursts, idles = run_lengths(mask, d)
        b[k] = float(bursts.mean()) if bursts.size else 0.0
        i[k] = float(idles.mean()) if idles.size else 0.0
    return {"burst_s": float(b.mean()), "idle_s": float(i.mean())}


def split_of(model: str) -> str:
    """``train`` for seed 001 Table 3 models, ``unseen`` for everything else (Table 4)."""
    return "train" if model in TRAIN_MODELS else "unseen"


def identity(meta: TraceMeta) -> dict[str, Any]:
    job = meta.job
    return {
        "run_id": meta.run_id, "device": meta.device, "provenance": meta.provenance,
        "model": job.get("model"), "dataset": job.get("dataset"),
        "optimizer": job.get("optimizer"), "batch_size": job.get("batch_size"),
        "epochs": job.get("epochs"), "steps_per_epoch": job.get("steps_per_epoch"),
        "precision": job.get("precision") or "fp32",
        "graph_key": job_graph_key(job), "split": split_of(str(job.get("model"))),
    }


def label_trace(df: pd.DataFrame, meta: TraceMeta, method: str = DEFAULT_METHOD) -> dict[str, Any]:
    """One labels row (design.md, Labels) for a trace and its metadata."""
    row: dict[str, Any] = identity(meta)
    row.update({k: math.nan for k in TARGETS})
    row["exec_time_s"] = float(meta.exec_time_s)
    row["status"] = meta.status
    if meta.status != "ok" or len(df) == 0:
        return row
    t = df["t_s"].to_numpy(dtype=np.float64)
    steady = steady_state_mask(df)
    for r in RESOURCES:
        if r not in df.columns:
            continue
        if r == "gpu_mem" and not meta.mem_total_mb:
            continue  # no capacity known: peak undefined, leave the targets NaN
        cap = capacity(r, meta.mem_total_mb)
        stats = resource_stats(t, df[r].to_numpy(dtype=np.float64), cap, meta.sample_period_s, method,
                               steady)
        for s, v in stats.items():
            row[f"{r}_{s}"] = v
    return row


def labels_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows → DataFrame with the contract's columns and dtypes."""
    df = pd.DataFrame(rows, columns=list(LABEL_COLUMNS))
    for c in ("batch_size", "epochs", "steps_per_epoch"):
        df[c] = df[c].astype("Int64")
    for c in TARGETS:
        df[c] = df[c].astype("float64")
    return df


def label_runs(runs_dir: str | Path, method: str = DEFAULT_METHOD,
               progress: bool = True) -> pd.DataFrame:
    """Label every run of ``runs_dir`` (those in its ledger; or its ``traces/*.parquet``).
    The runs must be of one device and provenance (one line otherwise);
    ``progress``: a bar on a terminal past 2 s."""
    from tqdm import tqdm

    from gpuscope.core.provenance import check_labels

    rows = []
    for tp in tqdm(trace_paths(runs_dir), desc="label", unit="run", delay=2.0,
                   disable=None if progress else True):
        df, meta = read_trace(tp)
        rows.append(label_trace(df, meta, method))
    out = labels_frame(rows)
    if len(out):
        check_labels(out, f"runs folder {runs_dir}")
    return out
