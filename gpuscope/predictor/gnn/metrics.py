"""Evaluation metrics (seed 001 §4.3) and the one evaluation table of ``gpuscope evaluate``.

For predictions ŷ and labels y (label units) of a set of rows, with the plain min-max
normalisation of the *training* split (``MinMaxLabels.plain``, the seed's label space):

* normalised MSE per target j: mean over observed rows of (ŷ'_j − y'_j)² (seed 001 Eq. 1);
  per resource group (``gpu_util``, ``gpu_mem_util``, ``gpu_mem``, ``cpu_util``: the mean over
  its burst/idle/peak targets; ``exec_time``) and over all observed entries (``nmse``);
* execution-time MAPE = mean |ŷ − y| / y over observed rows with y > 0, in %;
* R² = 1 − Σ(ŷ' − y')² / Σ(y' − ȳ')² over all observed normalised entries (one number).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuscope.core.targets import RESOURCES
from gpuscope.predictor.gnn.scaling import MinMaxLabels

GROUPS: tuple[str, ...] = RESOURCES + ("exec_time",)


def _group(target: str) -> str:
    return "exec_time" if target == "exec_time_s" else next(r for r in RESOURCES
                                                             if target.startswith(r + "_")
                                                             and target[len(r) + 1:] in
                                                             ("burst_s", "idle_s", "peak"))


def score(y_pred: np.ndarray, y_true: np.ndarray, labels: MinMaxLabels) -> dict[str, float]:
    """The metrics of the module docstring as a flat dict (NaN where nothing is observed)."""
    p, t = labels.plain(y_pred), labels.plain(y_true)
    obs = np.isfinite(t)
    sq = np.where(obs, (p - np.nan_to_num(t)) ** 2, np.nan)
    out: dict[str, float] = {"rows": float(len(y_true))}
    for g in GROUPS:
        cols = [j for j, tg in enumerate(labels.targets) if _group(tg) == g]
        vals = sq[:, cols][np.isfinite(sq[:, cols])] if cols else np.array([])
        out[f"nmse_{g}"] = float(vals.mean()) if vals.size else float("nan")
    allv = sq[np.isfinite(sq)]
    out["nmse"] = float(allv.mean()) if allv.size else float("nan")
    out["mape_exec_pct"] = float("nan")
    if "exec_time_s" in labels.targets:
        j = labels.targets.index("exec_time_s")
        ok = np.isfinite(y_true[:, j]) & (y_true[:, j] > 0)
        if ok.any():
            out["mape_exec_pct"] = float(
                100 * np.mean(np.abs(y_pred[ok, j] - y_true[ok, j]) / y_true[ok, j]))
    tv = t[obs]
    denom = float(((tv - tv.mean()) ** 2).sum()) if tv.size else 0.0
    out["r2"] = 1 - float(allv.sum()) / denom if denom > 0 else float("nan")
    return out


def evaluation_table(results: list[dict[str, object]]) -> pd.DataFrame:
    """Rows ``{model, split, **score}`` → a DataFrame in a fixed column order."""
    df = pd.DataFrame(results)
    cols = ["model", "split", "rows"] + [f"nmse_{g}" for g in GROUPS] + \
        ["nmse", "mape_exec_pct", "r2"]
    return df[[c for c in cols if c in df.columns]]


def format_table(df: pd.DataFrame) -> str:
    """Fixed-width text of an evaluation table (MSEs to 4 decimals, MAPE 1, R² 3)."""
    fmt = df.copy()
    for c in fmt.columns:
        if c.startswith("nmse"):
            fmt[c] = fmt[c].map(lambda v: "-" if pd.isna(v) else f"{v:.4f}")
        elif c == "mape_exec_pct":
            fmt[c] = fmt[c].map(lambda v: "-" if pd.isna(v) else f"{v:.1f}")
        elif c == "r2":
            fmt[c] = fmt[c].map(lambda v: "-" if pd.isna(v) else f"{v:.3f}")
        elif c == "rows":
            fmt[c] = fmt[c].map(lambda v: f"{int(v)}")
    fmt.columns = [c.replace("nmse_", "").replace("mape_exec_pct", "exec_MAPE%")
                   for c in fmt.columns]
    return fmt.to_string(index=False)
