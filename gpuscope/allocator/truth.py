"""Ground truth for the simulator: actual execution times of queue jobs on each device.

The simulator never runs a job for its *predicted* time: each placed job takes the execution
time recorded for that job on that device, from the labels of a measured or emulated dataset
(``datasets/<provenance>/<device>/labels.parquet``, design.md "Labels"). Queue jobs are matched
to label rows by their JobSpec fields (model, dataset, optimizer, batch size, epochs) and the
number of steps per epoch actually run (so a full-length job never borrows the time of a
shortened profiling run). A run whose status is not ``ok`` (out of memory) means
the job does not fit that device: the oracle never places it there, and a policy that does
sees the job fail after the recorded time to crash.

A ``--truth`` folder must exist, and each device's labels must hold rows of that
device and of one provenance (:func:`read_truth_labels`); devices of a cluster may differ in
provenance (``measured+emulated``), rows of one device never do.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import DATASETS, JobSpec

TRUTH_COLUMNS: tuple[str, ...] = ("job_id", "device", "exec_time_s", "status", "provenance")
_KEY5 = ("model", "dataset", "optimizer", "batch_size", "epochs")


def check_truth_dir(truth_dir: str | Path) -> Path:
    """A ``--truth`` folder must exist (a missing one must never be ignored)."""
    d = Path(truth_dir)
    if not d.is_dir():
        raise InputError(f"--truth {truth_dir}: no such folder")
    return d


def read_truth_labels(path: Path, device: str) -> pd.DataFrame:
    """One device's ground-truth labels: every row of that device and of one provenance
    (never taken from one row), else one :class:`InputError` line."""
    from gpuscope.core.io import read_parquet
    from gpuscope.core.provenance import LABEL_COLUMNS, check_folder_labels

    lab = read_parquet(path, "ground-truth labels", schema=LABEL_COLUMNS)
    if "device" not in lab.columns:
        lab["device"] = device
    dev, prov = check_folder_labels(lab, path.parent, unknown_ok=True)
    if dev != device:
        raise InputError(f"ground truth {path}: rows of device {dev!r}, not {device!r}")
    lab["provenance"] = prov
    return lab


def labels_path(truth_dir: str | Path, device: str) -> Path | None:
    """``<dir>/<device>/labels.parquet``; under a ``datasets/`` root, measured before emulated."""
    d = check_truth_dir(truth_dir)
    for cand in (d / device, d / "measured" / device, d / "emulated" / device):
        if (cand / "labels.parquet").is_file():
            return cand / "labels.parquet"
    return None


def _int_str(s: pd.Series) -> pd.Series:
    v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return pd.Series(["-" if np.isnan(x) else str(int(x)) for x in v], index=s.index)


def _effective_steps(df: pd.DataFrame) -> pd.Series:
    """Steps per epoch actually run: the override, else ceil(dataset size / batch size), as
    ``JobSpec.steps`` computes it — so a job without an override matches a run with the same
    number of steps written out, and never a shortened profiling run."""
    spe = pd.to_numeric(df["steps_per_epoch"], errors="coerce") if "steps_per_epoch" in df \
        else pd.Series(np.nan, index=df.index)
    size = df["dataset"].astype(str).str.lower().map(
        {k: v.train_size for k, v in DATASETS.items()}).astype(float)
    full = np.ceil(size / pd.to_numeric(df["batch_size"]).astype(float))
    return spe.where(spe.notna(), full)


def _key(df: pd.DataFrame) -> pd.Series:
    parts = [df[c].astype(str).str.lower() if c in ("model", "dataset", "optimizer")
             else _int_str(df[c]) for c in _KEY5]
    parts.append(_int_str(_effective_steps(df)))
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
    # a configuration run twice: keep the last row (the ledger's latest run)
    dedup = lab.assign(_k=_key(lab)).drop_duplicates("_k", keep="last").set_index("_k")
    qk = _key(q)
    hit = qk.isin(dedup.index).to_numpy()
    rows = dedup.loc[qk[hit]]
    return pd.DataFrame({
        "job_id": q.loc[hit, "job_id"].to_numpy(), "device": device,
        "exec_time_s": pd.to_numeric(rows["exec_time_s"]).to_numpy(dtype=float),
        "status": rows["status"].astype(str).to_numpy(),
        "provenance": rows["provenance"].astype(str).to_numpy(),
    })


def truth_steps(truth_dir: str | Path, devices: Sequence[str]) -> int | None:
    """The steps per epoch of the ground-truth runs of seed 001's unseen (Table 4) jobs, when
    every device's dataset used one value (emulated campaigns shorten epochs), else None."""
    vals: set[float] = set()
    for d in devices:
        p = labels_path(truth_dir, d)
        if p is None:
            continue
        lab = read_truth_labels(p, d)
        if "steps_per_epoch" not in lab.columns:
            continue
        if "split" in lab.columns and (lab["split"] == "unseen").any():
            lab = lab[lab["split"] == "unseen"]
        vals |= set(pd.to_numeric(lab["steps_per_epoch"]).dropna())
    return int(vals.pop()) if len(vals) == 1 else None


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
        lab = read_truth_labels(p, dev)
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

