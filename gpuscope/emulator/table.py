"""``gpuscope estimate``: where will my job run best, and how long will it take?

    gpuscope estimate --module examples/my_model.py:build --dataset tokens:seq=512,vocab=30522 \
        --batch-size 8 --optimizer adamw --precision amp-bf16 --devices all
    gpuscope estimate --hf gpt2:n_layer=36,n_embd=1280,n_head=20 --dataset tokens:seq=1024 \
        --batch-size 4 --optimizer adamw --devices v100,a100,h100
    gpuscope estimate --jobs queue.csv --devices all --format csv -o est.csv

For each job x device: the emulator's ``estimate(job, graph, device)`` (seed 001 §4 device
model, ``gpuscope.emulator``) on the job's training-step graph (exported once, through the
content-keyed ``GraphCache``): step time, throughput, memory footprint against the device's
memory, the bottleneck, and the execution time of the job's epochs. Every number is emulated,
not measured, and the output says so.

Memory columns (``gpuscope.emulator.memory``): ``mem_gb`` the central footprint (what
``nvidia-smi`` would show), ``mem_gb_lo``..``mem_gb_hi`` its uncertainty band (GiB),
``fit`` one of ``fits`` (the band's upper end fits the device), ``at_risk`` (the device's
memory lies inside the band: the run proceeds and may fail) and ``oom`` (even the band's
lower end exceeds it); ``at_risk`` is ``fit == "at_risk"``; ``fits`` is True unless the job
is certainly out of memory (``status`` ``oom``), as before the band existed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from gpuscope.cluster.cli import add_catalog_option
from gpuscope.core.errors import InputError
from gpuscope.core.progress import phase
from gpuscope.workloads.args import add_job_arguments, job_from_args

COLUMNS: tuple[str, ...] = (
    "job_id", "model", "device", "status", "step_s", "samples_per_s", "mem_gb", "device_mem_gb",
    "fits", "bottleneck", "gpu_util", "epochs", "steps", "exec_time_s", "provenance",
    "mem_gb_lo", "mem_gb_hi", "fit", "at_risk", "error",
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "estimate", help="emulate a job (or a queue) on catalog GPUs: step time, memory, OOM, "
                         "execution time",
        description="Emulate a job or a job queue on catalog GPUs (datasets/devices.toml). "
                    "All figures are emulated (gpuscope.emulator), in seconds.")
    add_job_arguments(p)
    p.add_argument("--jobs", help="job queue (.csv/.json) instead of one job's options")
    p.add_argument("--devices", default="all", help="all (default) or a comma list, e.g. v100,a100")
    p.add_argument("--format", default="table", choices=("table", "csv", "json"))
    p.add_argument("-o", "--output", help="write CSV/JSON here (by its extension) besides stdout")
    p.add_argument("--graph-cache", help="graph cache folder (default ~/.cache/gpuscope/graphs)")
    add_catalog_option(p)
    p.add_argument("--params", help="emulator parameters JSON (default: calibrated)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)


def estimate_rows(jobs: list[Any], devices: list[Any], graph_cache: str | None = None,
                  params: Any = None, progress: bool = False) -> tuple[list[dict[str, Any]],
                                                                       dict[str, Any]]:
    """One row per job x device (``COLUMNS``) and per-job graph facts (nodes, GFLOPs, export s).

    In a queue of several jobs, a job whose graph cannot be made (a missing file, a user
    factory that exits or crashes) gets rows of status ``error`` naming the reason, one
    warning line on stderr, and the other jobs are still estimated; a single job raises."""
    from gpuscope.core.progress import bar
    from gpuscope.emulator import estimate
    from gpuscope.graphs import GraphCache, export_graph

    cache = GraphCache(graph_cache)
    rows: list[dict[str, Any]] = []
    facts: dict[str, Any] = {}
    for job in bar(jobs, desc="estimate", unit="job", quiet=not progress):
        t0 = time.perf_counter()
        try:
            graph = export_graph(job) if job.graph else cache.get_or_export(job)
        except InputError as err:
            if len(jobs) == 1:
                raise
            why = " ".join(str(err).split())
            sys.stderr.write(f"gpuscope: warning: job {job.job_id or job.key} not estimated: "
                             f"{why}\n")
            facts[job.key] = None
            rows += [dict(_failed_row(job, dev), error=why) for dev in devices]
            continue
        facts[job.key] = {"nodes": graph.num_nodes, "gflops": graph.total_flops() / 1e9,
                          "params": int(graph.meta.get("param_count", 0)),
                          "graph_s": time.perf_counter() - t0}
        for dev in devices:
            e = estimate(job, graph, dev, params)
            ok = e.status == "ok"
            rows.append({
                "job_id": job.job_id or job.key, "model": job.model, "device": dev.name,
                "status": e.status, "step_s": e.iter_s if ok else math.nan,
                "samples_per_s": job.samples_per_step / e.iter_s if ok else 0.0,
                "mem_gb": e.mem_mb / 1024, "device_mem_gb": dev.mem_mb / 1024,
                "fits": ok, "bottleneck": e.bottleneck if ok else "memory (OOM)",
                "gpu_util": e.gpu_util if ok else math.nan, "epochs": job.epochs,
                "steps": job.total_steps, "exec_time_s": e.exec_time_s if ok else math.nan,
                "provenance": "emulated", "mem_gb_lo": e.memory.lo_mb / 1024,
                "mem_gb_hi": e.memory.hi_mb / 1024, "fit": e.fit_status,
                "at_risk": e.memory.at_risk, "error": "",
            })
    return rows, facts


def precision_warnings(jobs: list[Any], devices: list[Any]) -> list[str]:
    """One line per job precision some devices lack tensor cores for
    (``cluster.precision.effective_precision``), naming those devices."""
    from gpuscope.cluster.precision import effective_precision

    lacking: dict[tuple[str, str], list[str]] = {}
    for prec in sorted({str(getattr(j, "precision", "fp32")) for j in jobs}):
        for d in devices:
            _, why = effective_precision(d.arch, prec)
            if why:
                lacking.setdefault((prec, why), []).append(d.name)
    return [f"warning: {prec} on {', '.join(names)}: {why}"
            for (prec, why), names in lacking.items()]


def _failed_row(job: Any, dev: Any) -> dict[str, Any]:
    return {"job_id": job.job_id or job.key, "model": job.model, "device": dev.name,
            "status": "error", "step_s": math.nan, "samples_per_s": 0.0, "mem_gb": math.nan,
            "device_mem_gb": dev.mem_mb / 1024, "fits": False, "bottleneck": "-",
            "gpu_util": math.nan, "epochs": job.epochs, "steps": job.total_steps,
            "exec_time_s": math.nan, "provenance": "emulated", "mem_gb_lo": math.nan,
            "mem_gb_hi": math.nan, "fit": "error", "at_risk": False}


def _human(s: float) -> str:
    if not math.isfinite(s):
        return "-"
    for unit, div in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if s >= div:
            return f"{s / div:.1f} {unit}"
    return f"{s:.1f} s"


def format_table(rows: list[dict[str, Any]]) -> str:
    """A fixed-width table, one line per row (seconds; execution time also humanised)."""
    head = ("device", "status", "step (s)", "samples/s", "mem (GB)", "band (GB)", "of (GB)",
            "bottleneck", "exec time (s)", "")
    lines = [head]
    for r in rows:
        ok = r["status"] == "ok"
        lines.append((
            r["device"], {"fits": "ok", "at_risk": "at risk", "oom": "OOM"}[r["fit"]],
            f"{r['step_s']:.4f}" if ok else "-",
            f"{r['samples_per_s']:.1f}" if ok else "-", f"{r['mem_gb']:.2f}",
            f"{r['mem_gb_lo']:.1f}-{r['mem_gb_hi']:.1f}",
            f"{r['device_mem_gb']:.0f}", str(r["bottleneck"]),
            f"{r['exec_time_s']:.0f}" if ok else "-", _human(r["exec_time_s"]) if ok else "",
        ))
    widths = [max(len(str(x[i])) for x in lines) for i in range(len(head))]
    left = {0, 1, 7, 9}
    return "\n".join("  ".join(str(c).ljust(w) if i in left else str(c).rjust(w)
                               for i, (c, w) in enumerate(zip(x, widths, strict=True))).rstrip()
                     for x in lines)


def _write(rows: list[dict[str, Any]], path: Path, fmt: str) -> None:
    import pandas as pd

    from gpuscope.core.io import write_json, write_table

    if fmt == "json":
        write_json(path, _json_rows(rows), what="estimates")
    else:
        write_table(pd.DataFrame(rows, columns=list(COLUMNS)), path, what="estimates")


def _json_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
             for k, v in r.items()} for r in rows]


def _run(a: argparse.Namespace) -> int:
    from gpuscope.cluster.devices import parse_device_list
    from gpuscope.jobs.queue import check_sources, read_queue

    devices = parse_device_list(a.devices)  # an unknown device fails before any work
    if a.jobs:
        if any(getattr(a, k) for k in ("job", "model", "module", "hf", "hf_config", "graph")):
            raise InputError("give --jobs QUEUE or one job's options, not both")
        jobs = read_queue(a.jobs)
        check_sources(jobs, a.jobs)  # before torch loads
    else:
        if a.graph:  # the job the graph was exported for, unless the options say otherwise
            from gpuscope.graphs.files import recorded_job
            from gpuscope.workloads.args import fill_from_graph

            taken = fill_from_graph(a, recorded_job(a.graph))
            if taken:
                sys.stderr.write(f"{a.graph}: {', '.join(taken)} (as recorded by graph "
                                 "export; give the option to override)\n")
        jobs = [job_from_args(a, "estimate")]
    if a.output:
        from gpuscope.core.io import check_output

        check_output(a.output, [a.jobs, a.job, a.graph, a.params, a.catalog, a.hf_config],
                     what="estimates")
    params = None
    if a.params:
        from gpuscope.emulator.params import EmulatorParams

        params = EmulatorParams.load(a.params)
    if len(jobs) == 1:
        phase(f"exporting the training-step graph of {jobs[0].model}", quiet=a.quiet)
    rows, facts = estimate_rows(jobs, devices, a.graph_cache, params,
                                progress=not a.quiet and len(jobs) > 1)
    for line in precision_warnings(jobs, devices):
        sys.stderr.write(line + "\n")
    if a.format == "table":
        for job in jobs:
            f = facts[job.key]
            if f is None:
                print(f"{job.job_id}: {job.model} ({job.source}): not estimated: "
                      f"{next(r['error'] for r in rows if r['job_id'] == job.job_id)}\n")
                continue
            print(f"{job.job_id + ': ' if job.job_id else ''}{job.model} ({job.source}), {job.dataset}, "
                  f"{job.optimizer}, batch {job.batch_size}"
                  + (f" x {job.grad_accum} accum" if job.grad_accum > 1 else "")
                  + f", {job.precision}, {job.epochs} epoch(s) = {job.total_steps:,} steps; "
                  f"graph {f['nodes']:,} nodes, {f['params'] / 1e6:.1f} M params, "
                  f"{f['gflops']:,.1f} GFLOPs/step")
            print(format_table([r for r in rows if r["job_id"] == (job.job_id or job.key)]))
            print()
        print("band: the footprint's uncertainty; at risk: the device's memory lies inside it "
              "(the job may fail); OOM: even its lower end does not fit")
        print("emulated (gpuscope.emulator, catalog specs), not measured; times in seconds")
    elif a.format == "csv":
        import pandas as pd

        from gpuscope.core.io import csv_text

        sys.stdout.write(csv_text(pd.DataFrame(rows, columns=list(COLUMNS))))
    else:
        print(json.dumps(_json_rows(rows), indent=1))
    if a.output:
        ext = Path(a.output).suffix.lower()
        _write(rows, Path(a.output), "json" if ext == ".json" else "csv")
    return 0


__all__ = ["COLUMNS", "estimate_rows", "format_table", "register"]
