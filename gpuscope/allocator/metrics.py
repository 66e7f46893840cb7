"""JCT, makespan, per-device totals and job distribution, laid out as seed 001 Tables 9–20.

Seed 001 §4.5 reports, per policy and order: for each GPU the average JCT of the jobs it ran
(Tables 10, 12, 15, 17, 19), the average JCT over all jobs and the makespan, and the job
distribution as "count (percent)" (Tables 11, 13, 16, 18, 20). Per-device average JCTs weighted
by job counts give the overall average (checked on Table 10: 32·3627.14 + 54·11135.98 +
42·19748.27 = 128 · 12084.68).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class Metrics:
    """Summary of one simulated schedule.

    Attributes:
        avg_jct_s: mean JCT over the jobs that ran (failed runs count with their time to crash).
        makespan_s: last finish − first arrival of the jobs that ran.
        per_device: one row per device type: ``device, n_jobs, pct, avg_jct_s, busy_s,
            last_finish_s`` (``avg_jct_s`` and ``last_finish_s`` NaN for a type that ran no
            job: it was idle).
        n_rejected: jobs no device fits (never run).
        n_failed: jobs that ran out of memory on their device in reality.
    """

    avg_jct_s: float
    makespan_s: float
    per_device: pd.DataFrame
    n_rejected: int
    n_failed: int


#: What a table shows for a GPU type that ran no job.
IDLE: str = "idle"


def summarize(schedule: pd.DataFrame, devices: Sequence[str]) -> Metrics:
    """Metrics of a per-job schedule frame (:func:`gpuscope.allocator.simulate.schedule_frame`)."""
    ran = schedule[schedule["status"] != "rejected"]
    n = len(schedule)
    g = ran.groupby("device", sort=False)
    per = pd.DataFrame({"device": list(devices)})
    per["n_jobs"] = per["device"].map(g.size()).fillna(0).astype(int)
    per["pct"] = 100.0 * per["n_jobs"] / max(n, 1)
    per["avg_jct_s"] = per["device"].map(g["jct_s"].mean())  # NaN: the type ran no job
    busy = (ran["finish_s"] - ran["start_s"]).groupby(ran["device"]).sum()
    per["busy_s"] = per["device"].map(busy).fillna(0.0)
    per["last_finish_s"] = per["device"].map(g["finish_s"].max())
    if len(ran):
        avg = float(ran["jct_s"].mean())
        mk = float(ran["finish_s"].max() - ran["arrival_s"].min())
    else:
        avg = mk = float("nan")
    return Metrics(avg, mk, per, int((schedule["status"] == "rejected").sum()),
                   int((schedule["status"] == "oom").sum()))


def comparison_table(rows: Sequence[tuple[str, Metrics]], digits: int = 2) -> pd.DataFrame:
    """Seed 001 Tables 10/12/15/17/19: per-GPU average JCT, Average JCT, Makespan (s). A GPU
    type that ran no job reads ``idle`` (it has no JCT; 0.00 would read as instant jobs)."""
    out = []
    for label, m in rows:
        rec: dict[str, object] = {"": label}
        for d, v, c in zip(m.per_device["device"], m.per_device["avg_jct_s"],
                           m.per_device["n_jobs"]):
            rec[d] = round(float(v), digits) if c > 0 else IDLE
        rec["Average JCT"] = round(m.avg_jct_s, digits)
        rec["Makespan"] = round(m.makespan_s, digits)
        if m.n_rejected or m.n_failed:
            rec["rejected/failed"] = f"{m.n_rejected}/{m.n_failed}"
        out.append(rec)
    df = pd.DataFrame(out).set_index("")
    if "rejected/failed" in df.columns:
        df["rejected/failed"] = df["rejected/failed"].fillna("0/0")
    return df


def distribution_table(rows: Sequence[tuple[str, Metrics]]) -> pd.DataFrame:
    """Seed 001 Tables 11/13/16/18/20: jobs per GPU as ``count (pct%)``."""
    out = []
    for label, m in rows:
        rec: dict[str, object] = {"": label}
        for d, c, p in zip(m.per_device["device"], m.per_device["n_jobs"], m.per_device["pct"]):
            rec[d] = f"{int(c)} ({_pct(p)}%)"
        out.append(rec)
    return pd.DataFrame(out).set_index("")


def _pct(p: float) -> str:
    s = f"{p:.2f}".rstrip("0").rstrip(".")
    return s if s else "0"


def to_markdown(df: pd.DataFrame, title: str = "", note: str = "") -> str:
    """A small pipe table (no tabulate dependency)."""
    cols = [df.index.name or ""] + [str(c) for c in df.columns]
    lines = []
    if title:
        lines += [f"**{title}**", ""]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "|".join("---" for _ in cols) + "|")
    for idx, row in df.iterrows():
        cells = [str(idx)] + [_cell(v) for v in row.tolist()]
        lines.append("| " + " | ".join(cells) + " |")
    if note:
        lines += ["", note]
    return "\n".join(lines) + "\n"


def _cell(v: object) -> str:
    if isinstance(v, float | np.floating):
        return f"{float(v):,.2f}"
    return str(v)
