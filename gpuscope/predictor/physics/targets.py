"""Label spaces of the physics predictor's targets and their analytic estimates.

``target_space`` of each target, encoding labels into it and decoding predictions out of it
(peaks clipped to capacity, durations capped), and the analytic estimate of each target in
its label space: the closed-form analytic label (``analytic``). ``hybrid`` re-exports every
name.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuscope.core.targets import UNITS
from gpuscope.predictor.physics.analytic import LABEL_TARGETS
from gpuscope.predictor.physics.features import compose_exec, step_correction


def target_space(t: str) -> str:
    if t == "exec_time_s":
        return "step"
    if t.endswith("_peak"):
        return "cap" if UNITS.get(t[:-5]) != "%" else "pct"
    return "log1p"


def encode_targets(frame: pd.DataFrame, Y: np.ndarray, targets: tuple[str, ...],
                   total_steps: np.ndarray) -> np.ndarray:
    Z = np.full(np.shape(Y), np.nan)
    for j, t in enumerate(targets):
        y = np.asarray(Y[:, j], np.float64)
        sp = target_space(t)
        if sp == "step":
            ok = np.isfinite(y) & (y > 0)
            Z[ok, j] = step_correction(frame[ok], np.asarray(total_steps)[ok], y[ok])
        elif sp == "pct":
            Z[:, j] = y / 100.0
        elif sp == "cap":
            Z[:, j] = y / frame["an_capacity_mb"].to_numpy(np.float64)
        else:
            Z[:, j] = np.log1p(np.clip(y, 0, None))
    return Z


def decode_targets(frame: pd.DataFrame, Z: np.ndarray, targets: tuple[str, ...],
                   total_steps: np.ndarray, zmax: np.ndarray | None = None) -> np.ndarray:
    """Label units from label-space values; ``zmax`` caps log1p targets (10x the largest
    training label: a learner must not extrapolate a duration without bound)."""
    Y = np.full(np.shape(Z), np.nan)
    for j, t in enumerate(targets):
        z = Z[:, j] if zmax is None or not np.isfinite(zmax[j]) else np.minimum(Z[:, j], zmax[j])
        sp = target_space(t)
        if sp == "step":
            Y[:, j] = compose_exec(frame, total_steps, np.clip(z, -5, 5))
        elif sp == "pct":
            Y[:, j] = 100.0 * np.clip(z, 0, 1)
        elif sp == "cap":
            Y[:, j] = np.clip(z, 0, 1) * frame["an_capacity_mb"].to_numpy(np.float64)
        else:
            Y[:, j] = np.expm1(np.clip(z, 0, 25))
    return np.where(np.isnan(Z), np.nan, Y)


#: Label version of the targets' analytic bases: every target has its analytic label
#: (``analytic``) and learners predict the correction to it. A checkpoint of an earlier
#: version (label-space learners, the seed-001 peak rule) must be retrained.
LABEL_VERSION = 2


def has_analytic(t: str) -> bool:
    return t == "exec_time_s" or t in LABEL_TARGETS


def analytic_z(frame: pd.DataFrame, t: str) -> np.ndarray:
    """The analytic estimate of target ``t`` in its label space: no step correction for
    execution time; otherwise the analytic label (``an_<t>``: the label rules on the run's
    phase structure) encoded as the label is."""
    if t == "exec_time_s":
        return np.zeros(len(frame))
    if t not in LABEL_TARGETS:
        raise ValueError(f"no analytic estimate of {t}")
    y = frame[f"an_{t}"].to_numpy(np.float64)
    sp = target_space(t)
    if sp == "pct":
        return y / 100.0
    if sp == "cap":
        return y / frame["an_capacity_mb"].to_numpy(np.float64)
    return np.log1p(np.clip(y, 0, None))
