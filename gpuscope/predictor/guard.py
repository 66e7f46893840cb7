"""The guards both predictor kinds put on a prediction: the training domain of its inputs and
the physical limits of its outputs (``base.PREDICTION_COLUMNS``: ``in_domain``,
``domain_reason``, ``oom``, ``oom_prob``).

* **Domain** (``out_of_domain``): an input outside its training range, widened by ``TOL`` ×
  the range, makes a row out of domain; the reason names the worst three inputs (by distance
  in training ranges), e.g. ``r_log_total_steps=5.95 outside [2, 3.3]``. A checkpoint that
  records no domain (a GNN trained before it did, whose dataset is not at hand) leaves every
  row in domain with the reason ``NO_DOMAIN``.
* **Limits** (``limit``): no peak exceeds its capacity. A percentage peak above 100 % by more
  than ``TOL`` (a saturated resource's noise is tolerated) is clipped and flagged; a memory peak
  above the device's memory is clipped, flagged and makes the job out of memory (``oom``
  True, ``oom_prob`` 1) whatever the learnt probability says. Negative values are clipped to 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpuscope.core.targets import PERCENT_CAPACITY, RESOURCES, UNITS

#: Widening of a training range, and tolerance of a percentage peak over 100 %, as a share.
TOL: float = 0.05
#: ``domain_reason`` of a row whose checkpoint records no training domain.
NO_DOMAIN: str = "no domain recorded"
#: Percentage peaks (capacity 100 %) and the memory peak (capacity: the device's memory, MB).
PERCENT_PEAKS: tuple[str, ...] = tuple(f"{r}_peak" for r in RESOURCES if UNITS[r] == "%")
MEMORY_PEAK: str = "gpu_mem_peak"


def out_of_domain(X: np.ndarray, names: Sequence[str], lo: np.ndarray, hi: np.ndarray,
                  tol: float = TOL) -> tuple[np.ndarray, list[str]]:
    """(in_domain per row, reason per row) of inputs ``X`` [rows × names] against their
    training ranges ``[lo, hi]`` (module docstring)."""
    X = np.asarray(X, np.float64)
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    pad = tol * (hi - lo) + 1e-9
    bad = (X < lo - pad) | (X > hi + pad)
    # how far outside, in training ranges: the worst offenders are named first
    dist = np.maximum(lo - X, X - hi) / (hi - lo + 1e-9)
    reasons = []
    for i in range(len(X)):
        idx = np.flatnonzero(bad[i])
        idx = idx[np.argsort(-dist[i, idx], kind="stable")]
        reasons.append("; ".join(f"{names[k]}={X[i, k]:.3g} outside [{lo[k]:.3g}, "
                                 f"{hi[k]:.3g}]" for k in idx[:3])
                       + (f" (+{len(idx) - 3} more)" if len(idx) > 3 else ""))
    return ~bad.any(axis=1), reasons


def limit(y: np.ndarray, targets: Sequence[str], capacity_mb: np.ndarray | float | None,
          raw: np.ndarray | None = None, tol: float = TOL
          ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Clip predictions ``y`` [rows × targets] (label units) in place to what is physically
    possible (module docstring); ``raw`` are the values before an earlier clip (default
    ``y``), ``capacity_mb`` the device memory per row (None: unknown, no memory limit).

    Returns (over_memory per row, flagged per row, reason per row)."""
    n = len(y)
    src = y if raw is None else raw
    over = np.zeros(n, dtype=bool)
    flagged = np.zeros(n, dtype=bool)
    parts: list[list[str]] = [[] for _ in range(n)]
    for j, t in enumerate(targets):
        v = np.asarray(src[:, j], np.float64)
        if t in PERCENT_PEAKS:
            cap = np.full(n, PERCENT_CAPACITY)
            bad = v > PERCENT_CAPACITY * (1 + tol)
            fmt, what = "{:.1f}%", "(clipped)"
        elif t == MEMORY_PEAK and capacity_mb is not None:
            cap = np.broadcast_to(np.asarray(capacity_mb, np.float64), (n,))
            bad = v > cap
            over |= bad
            fmt, what = "{:.0f} MB", "device memory (out of memory)"
        else:
            y[:, j] = np.where(np.isfinite(y[:, j]), np.maximum(y[:, j], 0.0), y[:, j])
            continue
        for i in np.flatnonzero(bad):
            parts[i].append(f"{t}={fmt.format(v[i])} above {fmt.format(cap[i])} {what}")
        flagged |= bad
        y[:, j] = np.where(np.isfinite(y[:, j]), np.clip(y[:, j], 0.0, cap), y[:, j])
    return over, flagged, ["; ".join(p) for p in parts]


def join_reasons(*reasons: Sequence[str]) -> list[str]:
    """Per row, the non-empty reasons of each list joined by ``; ``."""
    return ["; ".join(r for r in row if r) for row in zip(*reasons, strict=True)]
