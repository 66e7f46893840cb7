"""Writing a simulation's results.

Output folder (``gpuscope schedule ... -o OUT``):

* ``schedule.csv``: one row per rescheduling point × job in the system, with the reference
  simulator's column names and order (GPUScheduler ``Schedule::print_names``):
  ``n_iterate, sim_time, UniqueJobsID, SubmissionTime, Deadline, TardinessWeight, MinExecTime,
  MaxExecTime, SelectedTime, ExecutionTime, CompletionPercent, StartTime, FinishTime,
  node_ID, GPUtype, n_assigned_GPUs, Tardiness, GPUcost, TardinessCost, TotalCost``, then
  gpuscope's ``VMtype``. SelectedTime: remaining time on the chosen configuration (empty when
  postponed); ExecutionTime: seconds run until the next point; CompletionPercent: done after
  it; Start/FinishTime: the interval; GPUcost: the job's GPU share of its node's cost over the
  interval; Tardiness(Cost): at the row where the job completes. Rows are sorted by
  (n_iterate, UniqueJobsID) so two runs diff line by line. The reference's GPU-sharing columns
  (``assigned_GPU_f``, ``GPU_ID``) are left out: neither seed shares a GPU between jobs.
* ``jobs.csv`` (one row per job), ``slots.csv`` (one row per interval), ``timeline.csv``
  (merged per-job segments), ``summary.json`` (totals, solver times; ``result: simulated`` — an online simulation over
  the instance's t_jng times — and ``tjng_source``, where those times come from).
"""

from __future__ import annotations

import json
from pathlib import Path

from gpuscope.schedulers.simulate import SimResult

SCHEDULE_COLUMNS: tuple[str, ...] = (
    "n_iterate", "sim_time", "UniqueJobsID", "SubmissionTime", "Deadline", "TardinessWeight",
    "MinExecTime", "MaxExecTime", "SelectedTime", "ExecutionTime", "CompletionPercent",
    "StartTime", "FinishTime", "node_ID", "GPUtype", "n_assigned_GPUs", "Tardiness", "GPUcost",
    "TardinessCost", "TotalCost", "VMtype",
)


def write_results(res: SimResult, out: str | Path, extra: dict | None = None) -> Path:
    """Write ``res`` into folder ``out`` (created); returns the folder."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    log = res.log.loc[:, list(SCHEDULE_COLUMNS)].sort_values(["n_iterate", "UniqueJobsID"], kind="stable")
    log.to_csv(out / "schedule.csv", index=False, lineterminator="\n", float_format="%.6f")
    res.jobs.to_csv(out / "jobs.csv", index=False, lineterminator="\n")
    res.slots.to_csv(out / "slots.csv", index=False, lineterminator="\n")
    res.timeline.to_csv(out / "timeline.csv", index=False, lineterminator="\n")
    summary = {**res.summary, "result": "simulated", **(extra or {})}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return out
