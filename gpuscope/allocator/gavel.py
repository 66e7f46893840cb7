"""Measured ground truth from Gavel's throughputs (Narayanan et al., OSDI 2020; MIT licence).

``datasets/external/gavel/simulation_throughputs.json`` holds measured steps/s of 26 job types
on k80, p100 and v100 GPUs; the ``msr-traces-seed0`` traces give job types, total steps and
arrival times (Philly-derived). Execution time of a job on a GPU type = total steps / that
type's steps per second running alone on one GPU. Gavel has no utilisation data, so it can only
ground execution-time policies (``exec-time``, ``oracle``, ``ect``, ``random``,
``round-robin``), and gpuscope's predictor does not know these models: the experiment gives the
policies the measured times perturbed by seeded log-normal noise (``pred_noise``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.core.data import GAVEL_DEVICES, gavel_dir, gavel_entries, read_gavel_trace
from gpuscope.core.errors import InputError

DEFAULT_GAVEL_DIR = gavel_dir()


def load_throughputs(path: str | Path) -> pd.DataFrame:
    """``job_type, device, steps_per_s`` for single-GPU, unshared runs of each Gavel job type."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"cannot read Gavel throughputs {path}: {e}") from None
    rows = [(job_type, dev, float(val["null"])) for dev, job_type, n, val in gavel_entries(data)
            if n == 1 and val.get("null")]
    return pd.DataFrame(rows, columns=["job_type", "device", "steps_per_s"])


def load_trace(path: str | Path, max_jobs: int | None = None) -> pd.DataFrame:
    """Single-GPU jobs of one MSR trace: ``job_id, job_type, total_steps, arrival_s``."""
    tr = read_gavel_trace(path)
    tr = tr[tr["gpus"] == 1].reset_index(drop=True)
    if max_jobs is not None:
        tr = tr.iloc[:max_jobs]
    width = max(4, len(str(len(tr))))
    return pd.DataFrame({
        "job_id": [f"g{i:0{width}d}" for i in range(len(tr))],
        "job_type": tr["job_type"].astype(str), "total_steps": tr["total_steps"].astype(float),
        "arrival_s": tr["arrival_s"].astype(float),
    })


def gavel_tables(
    trace: pd.DataFrame, throughputs: pd.DataFrame, pred_noise: float = 0.2, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(predictions, truth)`` long frames on :data:`GAVEL_DEVICES`.

    ``truth`` (``provenance = measured``): total steps / measured steps per second.
    ``predictions``: ``exec_time_s`` = truth × exp(N(0, pred_noise)), ``oom_prob`` 0 (the
    throughputs list only configurations that ran). Job types missing on a device are dropped
    from the trace.
    """
    thr = throughputs.pivot(index="job_type", columns="device", values="steps_per_s")
    thr = thr.reindex(columns=list(GAVEL_DEVICES)).dropna()
    tr = trace[trace["job_type"].isin(thr.index)].reset_index(drop=True)
    if tr.empty:
        raise InputError("no trace job has throughputs on all Gavel devices")
    t = tr["total_steps"].to_numpy()[:, None] / thr.loc[tr["job_type"]].to_numpy()
    rng = np.random.default_rng(seed)
    p = t * rng.lognormal(0.0, pred_noise, t.shape)
    m = len(GAVEL_DEVICES)
    base = {"job_id": np.repeat(tr["job_id"].to_numpy(), m), "device": np.tile(GAVEL_DEVICES, len(tr))}
    truth = pd.DataFrame({**base, "exec_time_s": t.ravel(), "status": "ok",
                          "provenance": "measured"})
    pred = pd.DataFrame({**base, "exec_time_s": p.ravel(), "oom_prob": 0.0})
    return pred, truth
