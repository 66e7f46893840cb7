"""Per-step training time and GPU memory of jobs, measured in one process.

A profiling campaign (``gpuscope profile run``) runs every job as its own process with the
CPU input pipeline and samples the GPU at 6 Hz: it is what seed 001 §3.1 labels, but each run
pays ~10 s of start-up. This module measures what the emulator's kernel and memory models
predict, for many jobs in minutes: for each job it builds the workload on the device, makes one
synthetic batch already on the device (``Workload.sample_batch``: no input pipeline), runs
``warmup`` training steps, then times steps (host-synchronised, as a training loop that logs
its loss) for about ``target_s`` seconds and reads

* ``step_s``: median wall time of one optimizer step (forward, backward, update);
* ``mem_alloc_mb`` / ``mem_reserved_mb``: ``torch.cuda.max_memory_allocated`` /
  ``max_memory_reserved`` over the steps (the caching allocator's view; the process also holds
  the CUDA context, ~500 MB, which neither counts);
* ``gpu_util_mean``: mean NVML ``utilization.gpu`` (the profiler's ``Sampler`` at 20 ms)
  during the timed steps.

Rows are appended to a CSV as each job finishes (a killed run keeps every finished row; a
rerun skips the jobs already there). ``gpuscope profile steps CAMPAIGN -o steps.csv``.
"""

from __future__ import annotations

import csv
import gc
import io
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from gpuscope.jobs.spec import JobSpec

COLUMNS: tuple[str, ...] = (
    "job", "model", "dataset", "optimizer", "batch_size", "precision", "status", "step_s",
    "step_s_p10", "step_s_p90", "steps_timed", "mem_alloc_mb", "mem_reserved_mb",
    "gpu_util_mean", "params", "build_s", "device_name", "torch", "provenance", "error",
)


def measure_job(job: JobSpec, device: str = "cuda", warmup: int = 3, target_s: float = 2.0,
                max_steps: int = 50, seed: int = 0) -> dict[str, Any]:
    """Measure one job (see the module docstring); never raises for the job's own failures."""
    import torch

    from gpuscope.profiling.samplers import Sampler
    from gpuscope.workloads.run import configure_backends, is_oom
    from gpuscope.workloads.workload import build_workload, param_count

    dev = torch.device(device)
    cuda = dev.type == "cuda"
    row: dict[str, Any] = {
        "job": job.graph_key, "model": job.model, "dataset": job.dataset,
        "optimizer": job.optimizer, "batch_size": job.batch_size, "precision": job.precision,
        "status": "error", "device_name": torch.cuda.get_device_name(dev) if cuda else "cpu",
        "torch": torch.__version__, "provenance": "measured", "error": "",
    }

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(dev)

    wl: Any = None
    batch: Any = None
    try:
        configure_backends(job, dev)
        if cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(dev)
        t0 = time.perf_counter()
        wl = build_workload(job, dev, seed=seed)
        batch = wl.sample_batch(device=dev, seed=seed)
        row["params"] = param_count(wl)
        for _ in range(warmup):
            float(wl.train_step(batch))
        sync()
        row["build_s"] = round(time.perf_counter() - t0, 3)
        t1 = time.perf_counter()
        float(wl.train_step(batch))
        first = time.perf_counter() - t1
        n = max(3, min(max_steps, math.ceil(target_s / max(first, 1e-6))))
        times: list[float] = []
        sampler = Sampler(period_s=0.02, use_nvml=cuda).start()
        try:
            for _ in range(n):
                t = time.perf_counter()
                float(wl.train_step(batch))  # the loss read syncs, as a logging loop does
                times.append(time.perf_counter() - t)
        finally:
            samples = sampler.stop()
        util = samples["gpu_util"].mean() / 100.0 if "gpu_util" in samples else None
        times.sort()
        row.update(
            status="ok", step_s=statistics.median(times), steps_timed=n,
            step_s_p10=times[int(0.1 * (n - 1))], step_s_p90=times[int(0.9 * (n - 1))],
            gpu_util_mean=util,
        )
    except Exception as e:  # noqa: BLE001 - a failing job is a row, not the end of the sweep
        row["status"] = "oom" if is_oom(e) else "error"
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
    finally:
        if cuda:
            row["mem_alloc_mb"] = round(torch.cuda.max_memory_allocated(dev) / 2**20, 1)
            row["mem_reserved_mb"] = round(torch.cuda.max_memory_reserved(dev) / 2**20, 1)
        del wl, batch
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()
    return row


def measure_jobs(jobs: list[JobSpec], out: str | Path, device: str = "cuda",
                 budget_s: float | None = None, progress: bool = True,
                 **kw: Any) -> int:
    """Measure ``jobs`` in order, appending one row per job to the CSV ``out``; jobs already
    in ``out`` are skipped. Stops starting jobs after ``budget_s`` seconds. Returns the number
    of rows written."""
    from tqdm import tqdm

    from gpuscope.core.io import check_output, read_text

    out = check_output(out, what="step-time table")  # appended to: never a link or FIFO
    done: set[tuple[str, str]] = set()
    if out.exists():
        rows = csv.DictReader(io.StringIO(read_text(out, "step-time table")))
        done = {(r.get("job", ""), r.get("precision", "")) for r in rows}
    todo = [j for j in jobs if (j.graph_key, j.precision) not in done]
    new = not out.exists()
    t_start = time.perf_counter()
    written = 0
    with out.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        if new:
            w.writeheader()
        for job in tqdm(todo, desc="steps", unit="job", disable=not progress, file=sys.stderr):
            if budget_s is not None and time.perf_counter() - t_start > budget_s:
                print(f"steps: budget of {budget_s:.0f} s reached, "
                      f"{len(todo) - written} job(s) left", file=sys.stderr)
                break
            row = measure_job(job, device, **kw)
            w.writerow({k: row.get(k, "") for k in COLUMNS})
            fh.flush()
            written += 1
    return written
