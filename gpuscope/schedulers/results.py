"""Writing a simulation's results.

Output folder (``gpuscope schedule ... -o OUT``), linear in the number of jobs:

* ``segments.parquet``: the schedule, one row per job per contiguous run on one node and
  configuration: ``job_id, node, vm_type, gpu_type, n_gpus, start_s, end_s, exec_cost``
  (the job's GPU share of its node's cost over the segment) and ``completion_pct`` at its end.
* ``slots.parquet``: one row per interval between rescheduling points (open nodes, busy
  GPUs, running and waiting jobs, execution cost).
* ``jobs.csv`` (one row per job) and ``summary.json`` (totals, solver times; ``result:
  simulated`` — an online simulation over the instance's t_jng times — and ``tjng_source``,
  where those times come from).
* with ``--full-log`` only: ``schedule.csv``, one row per rescheduling point × job in the
  system, with the reference simulator's column names and order (GPUScheduler
  ``Schedule::print_names``): ``n_iterate, sim_time, UniqueJobsID, SubmissionTime, Deadline,
  TardinessWeight, MinExecTime, MaxExecTime, SelectedTime, ExecutionTime, CompletionPercent,
  StartTime, FinishTime, node_ID, GPUtype, n_assigned_GPUs, Tardiness, GPUcost,
  TardinessCost, TotalCost``, then gpuscope's ``VMtype``. Its size grows as points × jobs in
  the system (quadratic in the instance size). SelectedTime: remaining time on the chosen
  configuration (empty when postponed); ExecutionTime: seconds run until the next point;
  CompletionPercent: done after it; Start/FinishTime: the interval; GPUcost: the job's GPU
  share of its node's cost over the interval; Tardiness(Cost): at the row where the job
  completes. Rows are sorted by (n_iterate, UniqueJobsID). The reference's GPU-sharing
  columns (``assigned_GPU_f``, ``GPU_ID``) are left out: neither seed shares a GPU.

Files are written to a temporary name and renamed, so a crash never leaves half a file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from gpuscope.schedulers.simulate import SimResult

SCHEDULE_COLUMNS: tuple[str, ...] = (
    "n_iterate", "sim_time", "UniqueJobsID", "SubmissionTime", "Deadline", "TardinessWeight",
    "MinExecTime", "MaxExecTime", "SelectedTime", "ExecutionTime", "CompletionPercent",
    "StartTime", "FinishTime", "node_ID", "GPUtype", "n_assigned_GPUs", "Tardiness", "GPUcost",
    "TardinessCost", "TotalCost", "VMtype",
)


def _atomic(path: Path, write: Callable[[Path], object]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def write_results(res: SimResult, out: str | Path, extra: dict | None = None) -> Path:
    """Write ``res`` into folder ``out`` (created); returns the folder."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _atomic(out / "segments.parquet", lambda f: res.segments.to_parquet(f, index=False))
    _atomic(out / "slots.parquet", lambda f: res.slots.to_parquet(f, index=False))
    _atomic(out / "jobs.csv", lambda f: res.jobs.to_csv(f, index=False, lineterminator="\n"))
    if res.full_log is not None:
        log = res.full_log.loc[:, list(SCHEDULE_COLUMNS)].sort_values(["n_iterate", "UniqueJobsID"],
                                                                       kind="stable")
        _atomic(out / "schedule.csv", lambda f: log.to_csv(f, index=False, lineterminator="\n",
                                                             float_format="%.6f"))
    summary = {**res.summary, "result": "simulated", **(extra or {})}
    _atomic(out / "summary.json", lambda f: f.write_text(json.dumps(summary, indent=1) + "\n"))
    return out
