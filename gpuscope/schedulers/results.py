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

The folder is written as a whole (``gpuscope.core.io.output_folder``): a rerun into it
replaces every file, and a crash never leaves half a file.
"""

from __future__ import annotations

from pathlib import Path

from gpuscope.core.io import write_json, write_table
from gpuscope.schedulers.simulate import SimResult

SCHEDULE_COLUMNS: tuple[str, ...] = (
    "n_iterate", "sim_time", "UniqueJobsID", "SubmissionTime", "Deadline", "TardinessWeight",
    "MinExecTime", "MaxExecTime", "SelectedTime", "ExecutionTime", "CompletionPercent",
    "StartTime", "FinishTime", "node_ID", "GPUtype", "n_assigned_GPUs", "Tardiness", "GPUcost",
    "TardinessCost", "TotalCost", "VMtype",
)


def write_results(res: SimResult, out: str | Path, extra: dict | None = None) -> Path:
    """Write ``res`` into folder ``out`` (one the command made: ``gpuscope.core.io.
    output_folder``); returns the folder."""
    out = Path(out)
    write_table(res.segments, out / "segments.parquet", what="schedule output", check=False)
    write_table(res.slots, out / "slots.parquet", what="schedule output", check=False)
    write_table(res.jobs, out / "jobs.csv", what="schedule output", check=False)
    if res.full_log is not None:
        log = res.full_log.loc[:, list(SCHEDULE_COLUMNS)].sort_values(["n_iterate", "UniqueJobsID"],
                                                                       kind="stable")
        write_table(log, out / "schedule.csv", what="schedule output", check=False,
                    float_format="%.6f")
    summary = {**res.summary, "result": "simulated", **(extra or {})}
    write_json(out / "summary.json", summary, what="schedule output", check=False)
    return out
