"""``gpuscope profile run|label|plot|build-dataset|steps|kernels`` (seed 001 §3.1, Fig. 2–3)."""

from __future__ import annotations

import argparse
import json
import re
import shlex
from pathlib import Path
from typing import Any

from gpuscope.cluster.cli import add_catalog_option
from gpuscope.core.errors import InputError
from gpuscope.core.io import check_output, write_table
from gpuscope.core.limits import nonneg_int, pos_float, pos_int

_DEVICE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("profile", help="profile real training jobs, label traces, build datasets")
    sub = p.add_subparsers(dest="profile_command", metavar="ACTION", required=True,
                           parser_class=type(p))

    r = sub.add_parser("run", help="run a campaign (TOML matrix of jobs) into a runs folder")
    r.add_argument("campaign", help="campaign TOML file, or a bundled campaign by name: "
                   "table3, cpu-small, ... (gpuscope/profiling/campaign.py)")
    r.add_argument("--device-name", required=True,
                   help="name of the profiled device, e.g. h100 (checked against what NVML "
                        "reports: docs/devices.md)")
    r.add_argument("--device-name-override", action="store_true",
                   help="keep --device-name although NVML contradicts it (recorded in every "
                        "run)")
    r.add_argument("--out", help="runs folder (default runs/<device-name>)")
    r.add_argument("--max-runs", type=pos_int, help="run at most this many pending jobs")
    r.add_argument("--backend", choices=("local", "ray", "slurm"), default="local")
    r.add_argument("--timeout-s", type=pos_float, help="per-run wall-clock limit (overrides campaign)")
    r.add_argument("--period-s", type=pos_float, help="sampling period (overrides campaign; 1/6 s)")
    r.add_argument("--memory-limit-mb", type=pos_int, help="RLIMIT_AS of each job (CPU OOM)")
    r.add_argument("--job-device", help="--device passed to the job (cpu, cuda)")
    r.add_argument("--no-nvml", action="store_true", help="do not sample GPUs")
    r.add_argument("--ray-address", help="Ray cluster address (default: start a local one)")
    r.add_argument("--gpus", type=int, default=None,
                   help="Ray: GPUs of this type (default: NVML's count); 0 = CPU tasks")
    r.add_argument("--cpus-per-task", type=pos_float, default=1.0, help="Ray: CPUs per task")
    r.add_argument("--slurm-partition", help="Slurm: partition of the runs (default: any)")
    r.add_argument("--slurm-state-dir", help="Slurm: state folder of a `gpuscope slurm up` "
                   "cluster (default: that of slurm up if one is up, else $SLURM_CONF's)")
    r.add_argument("--command", help="replace the workloads entry point with this command line "
                   "({job} = job JSON file, {loss_log} = loss log path); custom harnesses, tests")
    r.add_argument("--retry-errors", action="store_true",
                   help="run again the runs recorded as error (default: every recorded run "
                        "is done)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    add_catalog_option(r)
    r.set_defaults(func=_run)

    lab = sub.add_parser("label", help="label every run of a runs folder (burst/idle/peak/exec)")
    lab.add_argument("runs_dir")
    lab.add_argument("-o", "--out", required=True, help="labels .parquet or .csv")
    lab.add_argument("--method", choices=("peakband", "kmeans", "median"), default="peakband")
    lab.set_defaults(func=_label)

    pl = sub.add_parser("plot", help="plot a run like seed 001 Fig. 2")
    pl.add_argument("run", help="a trace .parquet path, or a run id within --runs")
    pl.add_argument("--runs", help="runs folder holding the run id")
    pl.add_argument("-o", "--out", required=True, help="output PNG")
    pl.add_argument("--method", choices=("peakband", "kmeans", "median"), default="peakband")
    pl.set_defaults(func=_plot)

    b = sub.add_parser("build-dataset", help="labels + encoded graphs → datasets/<provenance>/<device>/")
    b.add_argument("--runs", action="append", required=True, help="runs folder (repeatable)")
    b.add_argument("-o", "--out", required=True, help="dataset folder")
    b.add_argument("--method", choices=("peakband", "kmeans", "median"), default="peakband")
    b.add_argument("--traces", choices=("none", "all", "auto"), default="auto",
                   help="copy raw traces into the dataset (auto: if under 5 MB, else a sample)")
    b.add_argument("--note", action="append", default=[], help="line added to the manifest")
    b.add_argument("--quiet", action="store_true")
    b.set_defaults(func=_build)

    st = sub.add_parser("steps", help="time the training steps and GPU memory of a campaign's "
                                      "jobs in one process (appends to a resumable CSV)")
    st.add_argument("campaign", help="campaign TOML naming the jobs, or a bundled one by name "
                    "(gpu-steps)")
    st.add_argument("-o", "--out", required=True,
                    help="CSV, one row per job, appended as each finishes; a rerun skips the "
                         "jobs already in it")
    st.add_argument("--device", default="cuda", help="torch device (default: %(default)s)")
    st.add_argument("--budget-s", type=pos_float, help="start no job after this many seconds")
    st.add_argument("--target-s", type=pos_float, default=2.0,
                    help="timed seconds per job (default: %(default)s)")
    st.add_argument("--quiet", action="store_true", help="no progress bar")
    st.set_defaults(func=_steps)

    k = sub.add_parser("kernels", help="time a sweep of single kernels (GEMM, conv, element-wise, "
                                       "softmax, layer norm, optimizer) on this device",
                       description="Time single launches of GEMMs, convolutions, element-wise "
                       "ops, softmax, layer norm and the optimizer's multi-tensor ops on the "
                       "local torch device, in every precision it supports, into a kernel "
                       "table (NeuSight's schema plus precision and provenance; "
                       "docs/profiling.md). Resumable: a rerun skips the rows already in "
                       "the table; Ctrl-C keeps them. Then `gpuscope emulator fit`.")
    k.add_argument("--device-name", required=True,
                   help="name of the profiled GPU type, e.g. h100 or my-gpu (checked against "
                        "what NVML reports)")
    k.add_argument("--device-name-override", action="store_true",
                   help="keep --device-name although NVML contradicts it")
    k.add_argument("-o", "--out", required=True, help="kernel table (.parquet or .csv)")
    k.add_argument("--device", default=None,
                   help="torch device: cuda when available, else cpu (default)")
    k.add_argument("--budget-min", type=pos_float, default=10.0,
                   help="minutes the sweep may take: sets its size and stops it (default: "
                        "%(default)s)")
    k.add_argument("--rows", type=pos_int, help="sweep size in rows (default: from the budget)")
    k.add_argument("--seed", type=nonneg_int, default=0, help="shape seed (default: %(default)s)")
    k.add_argument("--quiet", action="store_true", help="no progress bar")
    add_catalog_option(k)
    k.set_defaults(func=_kernels)


def _sigterm_as_interrupt() -> None:
    """SIGTERM of the campaign unwinds like Ctrl-C, so the running job's process group is
    killed on the way out (SIGKILL is covered by the job's parent-death signal)."""
    import signal
    import threading

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def _busy_summary(out: Path) -> dict[str, Any]:
    """Runs of the folder recorded on a busy host, for the campaign summary."""
    from gpuscope.profiling.ledger import Ledger

    with Ledger(out / "ledger.sqlite") as ledger:
        metas = [json.loads(m) for m in ledger.runs()["meta_json"]]
    busy = [m for m in metas if m.get("host_busy")]
    fracs = [float(m["host_busy_frac"]) for m in busy if m.get("host_busy_frac") is not None]
    return {"host_busy": len(busy), "host_busy_max_frac": max(fracs) if fracs else None,
            "recorded": len(metas)}


def _run(args: argparse.Namespace) -> int:
    import sys

    from gpuscope.profiling.campaign import load_campaign, pending_jobs, run_campaign, run_options
    from gpuscope.profiling.ledger import Ledger, campaign_lock

    if not _DEVICE_NAME.match(args.device_name or ""):
        raise InputError(f"--device-name must be a name like h100 or rtx2070 (letters, digits, "
                         f"'.', '-', '_'), got {args.device_name!r}")
    check_output(args.out or Path("runs") / args.device_name, [args.campaign], kind="dir",
                 what="runs folder")
    if args.backend == "ray" and args.ray_address:
        from gpuscope.profiling.backends.ray import check_ray_address

        check_ray_address(args.ray_address)  # one line within seconds, not a minutes-long hang
    campaign = load_campaign(args.campaign)
    out = Path(args.out or Path("runs") / args.device_name)
    override, notes = _check_device_name(args)
    opts = run_options(
        campaign, args.device_name, timeout_s=args.timeout_s, period_s=args.period_s,
        memory_limit_mb=args.memory_limit_mb, job_device=args.job_device,
        use_nvml=False if args.no_nvml else None,
        command=tuple(shlex.split(args.command)) if args.command else None,
        name_override=override,
    )
    _sigterm_as_interrupt()
    if args.backend == "local":
        counts = run_campaign(campaign, out, opts, args.max_runs, progress=not args.quiet,
                              retry_errors=args.retry_errors)
    else:
        from gpuscope.profiling.backends.ray import run_campaign_ray

        gpus = args.gpus
        if gpus is None:
            gpus = (1 if args.backend == "slurm" else _nvml_count()) if opts.use_nvml else 0
        if args.backend == "ray":  # connect before the runs folder is created
            from gpuscope.profiling.backends.ray import connect_ray

            connect_ray(args.ray_address, gpus, opts.device_name)
        with campaign_lock(out):
            with Ledger(out / "ledger.sqlite", device=opts.device_name,
                        provenance="measured") as ledger:
                todo = pending_jobs(campaign, ledger, args.max_runs, args.retry_errors)
            if args.backend == "slurm":  # one sbatch per run on a node of this GPU type
                from gpuscope.profiling.backends.slurm import run_campaign_slurm

                counts = run_campaign_slurm(
                    todo, out, opts, gpus=gpus, partition=args.slurm_partition,
                    cpus_per_task=max(1, round(args.cpus_per_task)),
                    state_dir=args.slurm_state_dir, progress=not args.quiet)
            else:
                counts = run_campaign_ray(todo, out, opts, address=args.ray_address,
                                          num_gpus=gpus, cpus_per_task=args.cpus_per_task,
                                          progress=not args.quiet)
    busy = _busy_summary(out)
    if busy["host_busy"]:
        frac = busy["host_busy_max_frac"]
        sys.stderr.write(
            f"warning: {busy['host_busy']} of {busy['recorded']} recorded runs ran on a busy "
            f"host (other processes used up to {100 * float(frac or 0):.0f} % of the CPU); "
            "their times and CPU labels are not clean measurements (host_busy in the run "
            "metadata)\n")
    for line in notes:
        sys.stderr.write(line + "\n")
    print(json.dumps({"runs_dir": str(out), "ran": dict(counts), "recorded": busy["recorded"],
                      "campaign_jobs": len(campaign.jobs), "host_busy": busy["host_busy"]}))
    return 0


def _check_device_name(args: argparse.Namespace) -> tuple[str, list[str]]:
    """Refuse a ``--device-name`` that NVML contradicts (a bundled GPU's name on a host with
    no GPU or another GPU; ``cluster.nvml.name_conflict``) unless ``--device-name-override``;
    returns the overridden contradiction ("" for none) and the lines to print after the
    runs (the override, a CPU-only campaign). Ray and Slurm runs land on other nodes: each
    run records its own NVML identity there."""
    if getattr(args, "backend", "local") != "local":  # profile kernels runs here
        return "", []
    from gpuscope.cluster.devices import DEFAULT_CATALOG, load_catalog
    from gpuscope.cluster.nvml import gpu_identity, name_conflict

    ident = gpu_identity()
    why = name_conflict(args.device_name.lower(), ident, load_catalog(DEFAULT_CATALOG),
                        load_catalog())
    if why and not args.device_name_override:
        raise InputError(f"{why}; run on that GPU, choose another name, or pass "
                         "--device-name-override to record it anyway")
    notes = [f"warning: {why}; kept (--device-name-override, recorded in every run)"] \
        if why else []
    if ident.get("kind") != "gpu":
        notes.append(f"note: NVML sees no GPU ({ident.get('reason', '')}): this campaign is "
                     "CPU-only; its runs, dataset, checkpoint and predictions say so (device "
                     "kind cpu-only)")
    return why or "", notes


def _nvml_count() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return 0


def _label(args: argparse.Namespace) -> int:
    from gpuscope.profiling.labeling import label_runs

    out = check_output(args.out, [args.runs_dir], what="labels")
    if out.suffix.lower() not in (".csv", ".parquet"):
        raise InputError(f"{out}: unsupported extension {out.suffix!r} (use .parquet or .csv)")
    df = label_runs(args.runs_dir, args.method)
    write_table(df, out, [args.runs_dir], what="labels")
    print(json.dumps({"labels": str(out), "rows": len(df),
                      "status": df["status"].value_counts().to_dict()}))
    return 0


def _plot(args: argparse.Namespace) -> int:
    from gpuscope.profiling.plot import plot_trace
    from gpuscope.profiling.trace import read_trace

    path = Path(args.run)
    if not path.exists() and not path.is_symlink():  # a special file is refused by the reader
        if not args.runs:
            raise InputError(f"{args.run}: no such trace file (give --runs DIR for a run id)")
        path = Path(args.runs) / "traces" / f"{args.run}.parquet"
        if not path.is_file():
            raise InputError(f"run {args.run!r} not found in {args.runs}/traces")
    check_output(args.out, [path], what="figure")
    df, meta = read_trace(path)
    out = plot_trace(df, meta, args.out, args.method)
    print(json.dumps({"figure": str(out), "run_id": meta.run_id, "provenance": meta.provenance}))
    return 0


def _build(args: argparse.Namespace) -> int:
    from gpuscope.profiling.dataset import build_dataset

    manifest = build_dataset(args.runs, args.out, method=args.method, traces=args.traces,
                             notes=args.note, progress=not args.quiet)
    import sys

    if manifest.get("device_kind") == "cpu-only":
        from gpuscope.core.provenance import cpu_only_note

        sys.stderr.write(cpu_only_note([manifest["device"]], f"dataset {args.out}") + "\n")
    if manifest.get("host_busy_runs"):
        sys.stderr.write(f"warning: {manifest['host_busy_runs']} of {manifest['rows']} runs "
                         "were taken on a busy host (host_busy in their metadata; "
                         "host_busy_runs in the manifest)\n")
    print(json.dumps({"dataset": str(args.out), "rows": manifest["rows"],
                      "graphs": manifest["graphs"], "status": manifest["counts_by_status"],
                      "host_busy_runs": manifest.get("host_busy_runs", 0),
                      "device_kind": manifest.get("device_kind")}))
    return 0


def _steps(args: argparse.Namespace) -> int:
    from gpuscope.profiling.campaign import load_campaign

    if Path(args.out).suffix.lower() != ".csv":
        raise InputError(f"{args.out}: the step table is a .csv file")
    check_output(args.out, [args.campaign], what="step table")
    jobs = load_campaign(args.campaign).jobs  # a bad campaign fails before torch loads
    import torch

    try:
        cuda = torch.device(args.device).type == "cuda"
    except RuntimeError:
        raise InputError(f"--device {args.device!r} is not a torch device (cpu, cuda, "
                         "cuda:1, ...)") from None
    if cuda and not torch.cuda.is_available():
        raise InputError(f"--device {args.device}: CUDA is not available on this host")
    from gpuscope.profiling.steps import measure_jobs

    n = measure_jobs(jobs, args.out, args.device, args.budget_s, progress=not args.quiet,
                     target_s=args.target_s)
    print(json.dumps({"steps": str(args.out), "measured": n, "campaign_jobs": len(jobs)}))
    return 0


def _kernels(args: argparse.Namespace) -> int:
    import sys

    if not _DEVICE_NAME.match(args.device_name or ""):
        raise InputError(f"--device-name must be a name like h100 or my-gpu (letters, digits, "
                         f"'.', '-', '_'), got {args.device_name!r}")
    check_output(args.out, what="kernel table")  # a link, FIFO or device first
    if Path(args.out).suffix.lower() not in (".parquet", ".csv"):
        raise InputError(f"{args.out}: the kernel table is a .parquet or .csv file")
    override, notes = _check_device_name(args)
    import torch

    from gpuscope.profiling.kernels import sweep_kernels

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    _sigterm_as_interrupt()
    res = sweep_kernels(args.out, args.device_name.lower(), device, args.budget_min * 60.0,
                        rows=args.rows, seed=args.seed, progress=not args.quiet,
                        name_override=override)
    for line in notes:
        if line.startswith("note: NVML sees no GPU"):
            line = ("note: NVML sees no GPU: this kernel table is CPU-only (device_kind "
                    "cpu-only); its times are CPU times")
        sys.stderr.write(line + "\n")
    if res["left"]:
        sys.stderr.write(f"kernels: budget reached with {res['left']} planned row(s) left; "
                         "the same command resumes\n")
    print(json.dumps(res))
    return 0
