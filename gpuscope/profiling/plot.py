"""Plot a run like seed 001 Fig. 2: per resource, samples coloured by k-means cluster (burst /
idle), the median (black dotted) and the 90 %-of-capacity peak line (red dotted)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.core.targets import PEAK_FRACTION, RESOURCES, UNITS, capacity
from gpuscope.profiling.labeling import (
    DEFAULT_METHOD,
    PEAK_BAND,
    burst_mask,
    robust_peak,
    steady_state_mask,
)
from gpuscope.profiling.trace import TraceMeta

PANEL_RESOURCES: tuple[str, ...] = (*RESOURCES, "proc_cpu_util")
TITLES: dict[str, str] = {
    "gpu_util": "GPU utilization", "gpu_mem_util": "GPU memory utilization",
    "gpu_mem": "GPU memory used", "cpu_util": "CPU utilization (all cores)",
    "proc_cpu_util": "job process-tree CPU (share of all cores)",
}


def plot_trace(df: pd.DataFrame, meta: TraceMeta, out: str | Path,
               method: str = DEFAULT_METHOD) -> Path:
    """Write a PNG with one panel per resource present in the trace (``peakband``: samples
    coloured by the middle threshold of the band, 0.3 x the steady-state peak)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    present = [r for r in PANEL_RESOURCES if r in df.columns and df[r].notna().any()]
    n = max(1, len(present))
    fig, axes = plt.subplots(n, 1, figsize=(9, 2.3 * n + 0.8), sharex=True, squeeze=False)
    t = df["t_s"].to_numpy(dtype=float)
    steady = steady_state_mask(df)
    for ax, r in zip(axes[:, 0], present):
        x = df[r].to_numpy(dtype=float)
        ok = ~np.isnan(x)
        burst = x[ok] > float(np.mean(PEAK_BAND)) * robust_peak(x, steady) if method == "peakband" \
            else burst_mask(x[ok], method)
        ax.scatter(t[ok][~burst], x[ok][~burst], s=9, c="tab:blue", label="idle")
        ax.scatter(t[ok][burst], x[ok][burst], s=9, c="tab:orange", label="burst")
        ax.axhline(float(np.median(x[ok])), color="black", ls=":", lw=1.2, label="median")
        unit = UNITS.get(r, "%")
        cap = capacity(r, meta.mem_total_mb) if r in RESOURCES and (
            r != "gpu_mem" or meta.mem_total_mb) else 100.0
        ax.axhline(PEAK_FRACTION * cap, color="red", ls=":", lw=1.2, label="90 % of capacity")
        ax.set_ylabel(f"{r} ({unit})")
        ax.set_title(TITLES.get(r, r), fontsize=9, loc="left")
        if unit == "%":
            ax.set_ylim(-3, 105)
        ax.grid(alpha=0.3)
    if present:  # one legend above the panels: it never hides samples
        handles, names = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, 0.955), ncol=4,
                   fontsize=8, frameon=False)
    else:
        axes[0, 0].text(0.5, 0.5, "no samples", ha="center", va="center")
    axes[-1, 0].set_xlabel("time since start (s)")
    missing = ", ".join(sorted(meta.missing)) or "none"
    fig.suptitle(
        f"{meta.run_id} on {meta.device} [{meta.provenance}] — status {meta.status}, "
        f"exec {meta.exec_time_s:.1f} s, {method}; absent: {missing}",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    from gpuscope.core.io import write_figure

    try:
        return write_figure(fig, out)
    finally:
        plt.close(fig)
