"""Figures of an allocation: a Gantt chart per GPU and a JCT / makespan bar chart per policy.

matplotlib with the Agg backend (no display). Every figure's title states where the durations
come from (measured, emulated or predicted), as every gpuscope figure must.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuscope.allocator.metrics import Metrics
from gpuscope.cluster.counts import ClusterSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _plt() -> ModuleType:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Figure, path: str | Path) -> Path:
    """Lay out, write (creating the folder) and close a figure."""
    from gpuscope.core.io import write_figure

    fig.tight_layout()
    try:
        return write_figure(fig, path, check=False)
    finally:
        _plt().close(fig)


#: Bars a Gantt chart draws one by one; above it every lane is sampled at GANTT_BINS points.
GANTT_EXACT: int = 20_000
GANTT_BINS: int = 4_000


def _sampled(y: np.ndarray, x0: np.ndarray, x1: np.ndarray, code: np.ndarray, end: float
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The bars as the chart's pixels show them: per lane, the job (its colour ``code``)
    running at each of :data:`GANTT_BINS` points of ``[0, end]``, neighbours of one code
    merged into one bar; a GPU runs one job at a time, so a point has at most one."""
    width = max(end, 1e-9) / GANTT_BINS
    centres = (np.arange(GANTT_BINS) + 0.5) * width
    parts = []
    for lane in np.unique(y):
        m = np.flatnonzero(y == lane)
        m = m[np.argsort(x0[m], kind="stable")]
        k = np.searchsorted(x0[m], centres, side="right") - 1
        at = m[np.clip(k, 0, None)]
        col = np.where((k >= 0) & (centres < x1[at]), code[at], -1)
        cut = np.flatnonzero(np.diff(col)) + 1
        lo, hi = np.r_[0, cut], np.r_[cut, GANTT_BINS]
        keep = col[lo] >= 0
        parts.append((np.full(int(keep.sum()), lane), lo[keep] * width, hi[keep] * width,
                      col[lo][keep]))
    return tuple(np.concatenate(a) for a in zip(*parts))  # type: ignore[return-value]


def gantt(schedule: pd.DataFrame, path: str | Path, title: str = "",
          models: Sequence[str] | None = None, cluster: ClusterSpec | None = None) -> Path:
    """One row per GPU instance (``device#gpu``), one bar per job from start to finish, coloured
    by model when ``models`` (one per schedule row) is given; failed (OOM) runs hatched. With
    ``cluster`` every GPU gets a row, those that ran nothing labelled ``(idle)``."""
    plt = _plt()
    kept = schedule["status"].to_numpy() != "rejected"
    ran = schedule[kept]  # already a new frame: no copy of its 10**6 rows more
    ran_model = (np.asarray(models, dtype=object)[kept] if models is not None
                 else np.full(len(ran), "job", dtype=object))
    # a lane per GPU instance, named from the distinct (device, gpu) pairs only
    dev, devs = pd.factorize(ran["device"].astype(str))
    gpu = ran["gpu"].to_numpy(dtype=np.int64)
    per = int(gpu.max(initial=0)) + 1
    pairs, pair = np.unique(dev * per + gpu, return_inverse=True)
    names = [f"{devs[p // per]}#{p % per}" for p in pairs]
    lanes = sorted(names, key=lambda s: (s.split("#")[0], int(s.split("#")[1])))
    if cluster is not None:
        lanes = [f"{d}#{i}" for d, c in zip(cluster.devices, cluster.counts) for i in range(c)]
    used = set(names)
    model, uniques = pd.factorize(ran_model)  # in order of appearance
    kinds = list(uniques)
    cmap = plt.get_cmap("tab10")
    colour = {k: cmap(i % 10) for i, k in enumerate(kinds)}
    h = 1.2 + 0.45 * len(lanes)
    fig, ax = plt.subplots(figsize=(10, max(2.5, h)))
    end = float(ran["finish_s"].max()) if len(ran) else 0.0
    scale, unit = (3600.0, "h") if end > 4 * 3600 else (60.0, "min")
    # one collection of bars per model and outcome, its rectangles built in numpy; above
    # GANTT_EXACT bars each lane is drawn as its pixels show it (_sampled), so 10**6 jobs
    # draw in seconds and bounded memory; edges only where bars are few enough to see them
    from matplotlib.collections import PolyCollection

    row = {lane: i for i, lane in enumerate(lanes)}
    code = 2 * model + (ran["status"] == "oom").to_numpy(dtype=np.int64)
    bars = (np.array([row[n] for n in names], dtype=float)[pair], ran["start_s"].to_numpy(float) / scale,
            ran["finish_s"].to_numpy(float) / scale, code)
    if len(ran) > GANTT_EXACT:
        bars = _sampled(*bars, end / scale)
    y, x0, x1, code = bars
    edge = {"edgecolors": "black", "linewidths": 0.3} if len(ran) <= 5000 else {"linewidths": 0}
    for j in np.unique(code):
        idx = np.flatnonzero(code == j)
        name, oom = kinds[j // 2], bool(j % 2)
        corners = ((x0, y - 0.35), (x0, y + 0.35), (x1, y + 0.35), (x1, y - 0.35))
        verts = np.stack([np.stack([a[idx], b[idx]], 1) for a, b in corners], axis=1)
        # an (N, 4, 2) array as it is (a list of N arrays is N paths to check one by one)
        ax.add_collection(PolyCollection(verts, facecolors=colour[name],  # type: ignore[arg-type]
                                         hatch="//" if oom else None, **edge))
    ax.set_xlim(0, max(end / scale, 1e-9) * 1.02)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    ax.set_yticks(range(len(lanes)), [ln if ln in used else f"{ln} (idle)" for ln in lanes])
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit})")
    ax.set_title(title or "schedule", fontsize=10)
    if models is not None and len(kinds) <= 12:
        handles = [plt.Rectangle((0, 0), 1, 1, color=colour[k]) for k in kinds]
        ax.legend(handles, kinds, fontsize=7, loc="lower right", ncol=min(4, len(kinds)))
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)


def policy_bars(rows: Sequence[tuple[str, Metrics]], path: str | Path, title: str = "") -> Path:
    """Average JCT and makespan per policy/order, side by side (hours)."""
    plt = _plt()
    labels = [label for label, _ in rows]
    jct = np.array([m.avg_jct_s for _, m in rows]) / 3600.0
    mk = np.array([m.makespan_s for _, m in rows]) / 3600.0
    y = np.arange(len(rows))
    fig, axes = plt.subplots(1, 2, figsize=(11, 1.2 + 0.38 * len(rows)), sharey=True)
    for ax, vals, name, c in ((axes[0], jct, "average JCT (h)", "tab:blue"),
                              (axes[1], mk, "makespan (h)", "tab:orange")):
        ax.barh(y, vals, color=c)
        for yi, v in zip(y, vals):
            ax.text(v, yi, f" {v:.2f}", va="center", fontsize=7)
        ax.set_xlabel(name)
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlim(0, max(vals.max() * 1.18, 1e-9))
    axes[0].set_yticks(y, labels, fontsize=8)
    axes[0].invert_yaxis()
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)
