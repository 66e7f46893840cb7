"""Ground truth for the simulator: actual execution times of queue jobs on each device.

The simulator never runs a job for its *predicted* time: each placed job takes the execution
time recorded for that job on that device, from the labels of a measured or emulated dataset
(``datasets/<provenance>/<device>/labels.parquet``, design.md "Labels"). Queue jobs are matched
to label rows by their JobSpec fields (model, dataset, optimizer, batch size, epochs, and
steps per epoch when both sides set it). A run whose status is not ``ok`` (out of memory) means
the job does not fit that device: the oracle never places it there, and a policy that does
sees the job fail after the recorded time to crash.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.errors import InputError
from gpuscope.jobs import JobSpec

TRUTH_COLUMNS: tuple[str, ...] = ("job_id", "device", "exec_time_s", "status", "provenance")
_KEY5 = ("model", "dataset", "optimizer", "batch_size", "epochs")


def labels_path(truth_dir: str | Path, device: str) -> Path | None:
    """``<dir>/<device>/labels.parquet``; under a ``datasets/`` root, measured before emulated."""
    d = Path(truth_dir)
    for cand in (d / device, d / "measured" / device, d / "emulated" / device):
        if (cand / "labels.parquet").is_file():
            return cand / "labels.parquet"
    return None


def _int_str(s: pd.Series) -> pd.Series:
    v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return pd.Series(["-" if np.isnan(x) else str(int(x)) for x in v], index=s.index)


def _key(df: pd.DataFrame, with_steps: bool) -> pd.Series:
    parts = [df[c].astype(str).str.lower() if c in ("model", "dataset", "optimizer")
             else _int_str(df[c]) for c in _KEY5]
    if with_steps:
        spe = df["steps_per_epoch"] if "steps_per_epoch" in df \
            else pd.Series(np.nan, index=df.index)
        parts.append(_int_str(spe))
    key = parts[0]
    for p in parts[1:]:
        key = key + "|" + p
    return key


def match_labels(jobs: Sequence[JobSpec], labels: pd.DataFrame, device: str) -> pd.DataFrame:
    """Rows of ``labels`` (one device) for each job: ``job_id, device, exec_time_s, status,
    provenance``; jobs without a matching run are absent from the result."""
    missing = [c for c in (*_KEY5, "exec_time_s", "status") if c not in labels.columns]
    if missing:
        raise InputError(f"labels of {device} lack column(s): {', '.join(missing)}")
    q = pd.DataFrame([{**{k: getattr(j, k) for k in _KEY5},
                       "steps_per_epoch": j.steps_per_epoch, "job_id": j.job_id} for j in jobs])
    lab = labels.copy()
    if "provenance" not in lab.columns:
        lab["provenance"] = "unknown"
    # a job run twice: keep the last row (the ledger's latest run of that configuration)
    out = []
    matched: set[str] = set()
    for with_steps in (True, False):  # exact match first, then ignoring steps per epoch
        lk = _key(lab, with_steps)
        qk = _key(q, with_steps)
        dedup = lab.assign(_k=lk).drop_duplicates("_k", keep="last").set_index("_k")
        hit = qk.isin(dedup.index) & ~q["job_id"].isin(matched)
        rows = dedup.loc[qk[hit]]
        matched |= set(q.loc[hit, "job_id"])
        out.append(pd.DataFrame({
            "job_id": q.loc[hit, "job_id"].to_numpy(), "device": device,
            "exec_time_s": pd.to_numeric(rows["exec_time_s"]).to_numpy(dtype=float),
            "status": rows["status"].astype(str).to_numpy(),
            "provenance": rows["provenance"].astype(str).to_numpy(),
        }))
    return pd.concat(out, ignore_index=True)


def load_truth(
    jobs: Sequence[JobSpec], devices: Sequence[str], truth_dir: str | Path, strict: bool = True
) -> pd.DataFrame:
    """Ground truth of ``jobs`` on every device, long format (:data:`TRUTH_COLUMNS`).

    Raises ``InputError`` when a device has no labels under ``truth_dir`` or (``strict``) a
    job has no run on some device (naming a few).
    """
    frames = []
    for dev in devices:
        p = labels_path(truth_dir, dev)
        if p is None:
            raise InputError(f"no ground truth for {dev}: {truth_dir}/{dev}/labels.parquet missing")
        cols = [*_KEY5, "steps_per_epoch", "exec_time_s", "status", "provenance"]
        lab = pd.read_parquet(p)
        frames.append(match_labels(jobs, lab[[c for c in cols if c in lab.columns]], dev))
    truth = pd.concat(frames, ignore_index=True)
    have = set(zip(truth["job_id"], truth["device"]))
    miss = [(j.job_id, d) for d in devices for j in jobs if (j.job_id, d) not in have]
    if miss and strict:
        eg = ", ".join(f"{j}@{d}" for j, d in miss[:3])
        raise InputError(
            f"ground truth under {truth_dir} lacks {len(miss)} job×device run(s), e.g. {eg}"
        )
    bad = truth["status"].eq("ok") & ~(truth["exec_time_s"] > 0)
    if bad.any():
        r = truth[bad].iloc[0]
        raise InputError(f"ground truth of {r.job_id} on {r.device} has no valid exec_time_s")
    return truth


def truth_provenance(truth: pd.DataFrame) -> str:
    """``measured``, ``emulated`` or ``measured+emulated`` (a mixed cluster)."""
    p = sorted(set(truth["provenance"].astype(str)))
    return "+".join(p)
