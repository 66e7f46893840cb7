"""Turn a plan into ``sbatch`` jobs that keep its placement and its order.

A plan is a CSV with one row per job: ``job_id`` and where it runs, either ``node`` (a server
of the cluster file) or ``device`` + ``gpu`` (the allocator's GPU instance ``device#gpu``,
mapped to servers in file order, ``ClusterConfig.instance_node``); optional
``gpus`` (default 1), ``partition`` (default: the node's), ``arrival_s``, ``start_s``,
``finish_s`` or ``duration_s`` (planned seconds), ``status`` (``rejected`` rows are skipped).

Each job is one ``sbatch`` with ``--partition``, ``--nodelist`` (the planned node),
``--gres=gpu:TYPE:N`` and ``--dependency=afterany:…`` on the jobs the plan finishes on the same
node before it starts (transitively reduced: a predecessor already implied by another is
dropped), so a node runs its jobs in the plan's order whatever the real durations are; arrival
times become ``--begin``. The command is the real workload (``python -m gpuscope.workloads.run
--job JOB.json``), a user template, or, with ``dry_workload``, ``sleep`` of the planned duration
× ``time_scale``. Every script records its real start, node, GPU indices (``SLURM_JOB_GPUS``)
and end in its log for :mod:`gpuscope.slurm.collect`.

The submission is written next to the plan's outputs, never over the plan:
``slurm_<plan>.csv`` (the plan + node, partition, dependencies, ``slurm_job_id``) and
``slurm_submission.json`` (time origin, scale, Slurm config, cluster file).
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from gpuscope.cluster.config import ClusterConfig
from gpuscope.core.errors import InputError, SlurmError
from gpuscope.core.io import make_dirs, write_json, write_table, write_text
from gpuscope.jobs.spec import JobSpec

SUBMISSION = "slurm_submission.json"
#: Planned makespan that ``time_scale="auto"`` maps a dry run onto (seconds of wall time).
AUTO_MAKESPAN_S = 60.0
#: Shortest dry-run sleep: Slurm's clock has 1 s resolution, shorter jobs only add noise.
MIN_SLEEP_S = 1.0
LOG_TAG = "gpuscope-slurm"


@dataclass(frozen=True)
class Workload:
    """What each job runs: ``dry`` sleeps, else ``command`` (a template) or the real job."""

    dry: bool = False
    command: str | None = None
    jobs: Mapping[str, JobSpec] | None = None


def read_plan(path: str | Path) -> pd.DataFrame:
    from gpuscope.core.io import read_csv

    p = Path(path)
    df = read_csv(p, "plan file", dtype={"job_id": str})
    if "job_id" not in df.columns:
        raise InputError(f"plan {p} has no job_id column")
    if "node" not in df.columns and not {"device", "gpu"} <= set(df.columns):
        raise InputError(f"plan {p} needs a node column or device and gpu columns")
    if df["job_id"].duplicated().any():
        raise InputError(f"plan {p}: job_id {df['job_id'][df['job_id'].duplicated()].iloc[0]!r} "
                         "appears twice")
    return df


#: Job ids a plan may submit: they name script and log files and appear in shell scripts.
SAFE_ID = r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}"


def place(plan: pd.DataFrame, cfg: ClusterConfig) -> pd.DataFrame:
    """Plan rows to run, with ``node``, ``partition``, ``gpu_type``, ``gpus``, planned times."""
    df = plan.copy()
    if "status" in df.columns:
        df = df[df["status"].astype(str) != "rejected"]
    if df.empty:
        raise InputError("the plan has no job to run (all rejected or empty)")
    df["job_id"] = df["job_id"].astype(str)
    bad = ~df["job_id"].str.fullmatch(SAFE_ID)
    if bad.any():  # ids name files and go into shell scripts: no path or shell syntax
        raise InputError(f"job_id {df['job_id'][bad].iloc[0][:40]!r} cannot be submitted to "
                         "Slurm: use letters, digits, '.', '_' and '-' (not first)")
    if "node" not in df.columns or df["node"].isna().any():
        nodes = [n if isinstance(n, str) and n else cfg.instance_node(str(d), int(g)).name
                 for n, d, g in zip(df.get("node", [None] * len(df)), df["device"], df["gpu"])]
        df["node"] = nodes
    srvs = [[cfg.server(n) for n in node_list(x)] for x in df["node"]]
    srv = [ss[0] for ss in srvs]
    for j, ss in zip(df["job_id"], srvs):
        if len({(x.gpu_type, x.partition) for x in ss}) > 1:
            raise InputError(f"job {j}: its nodes {';'.join(x.name for x in ss)} differ in GPU "
                             "type or partition")
    df["gpu_type"] = [s.gpu_type for s in srv]
    if "device" in df.columns:
        bad = [(j, d, s.name) for j, d, s in zip(df["job_id"], df["device"], srv)
               if str(d) != s.gpu_type]
        if bad:
            raise InputError(f"job {bad[0][0]}: planned on {bad[0][1]} but node {bad[0][2]} has "
                             f"{cfg.server(bad[0][2]).gpu_type} GPUs")
    if "partition" not in df.columns or df["partition"].isna().any():
        df["partition"] = [s.partition for s in srv]
    df["gpus"] = df["gpus"].fillna(1).astype(int) if "gpus" in df.columns else 1
    for j, g, ss in zip(df["job_id"], df["gpus"], srvs):
        # a job over several nodes takes the same number of GPUs on each (one --gres per node)
        if g % len(ss) or not 1 <= g // len(ss) <= min(x.gpus for x in ss):
            raise InputError(f"job {j} asks for {g} GPU(s) on {len(ss)} node(s) "
                             f"({', '.join(f'{x.name}: {x.gpus}' for x in ss)})")
    df["arrival_s"] = df["arrival_s"].astype(float) if "arrival_s" in df.columns else 0.0
    if "duration_s" not in df.columns:
        if not {"start_s", "finish_s"} <= set(df.columns):
            df["duration_s"] = float("nan")
        else:
            df["duration_s"] = df["finish_s"].astype(float) - df["start_s"].astype(float)
    if "start_s" not in df.columns:
        df["start_s"] = df["arrival_s"]
    if "finish_s" not in df.columns:
        df["finish_s"] = df["start_s"] + df["duration_s"]
    return df.sort_values(["start_s", "finish_s"], kind="stable").reset_index(drop=True)


def node_list(node: str) -> list[str]:
    """The nodes of a plan's ``node`` cell: one name, or several joined by ``;``."""
    return [n.strip() for n in str(node).split(";") if n.strip()]


def dependencies(df: pd.DataFrame) -> list[list[int]]:
    """For each row: rows sharing a node with it that the plan finishes before it starts, minus
    those implied by another (K is implied when some other predecessor K' starts after K
    finishes, since K' waits for K). Rows are in planned start order."""
    eps = 1e-6
    out: list[list[int]] = []
    start = df["start_s"].to_numpy(float)
    finish = df["finish_s"].to_numpy(float)
    nodes = [set(node_list(n)) for n in df["node"]]
    for j in range(len(df)):
        pred = [k for k in range(j) if nodes[k] & nodes[j] and finish[k] <= start[j] + eps]
        keep = [k for k in pred if not any(start[q] >= finish[k] - eps and q != k
                                           and nodes[q] & nodes[k] for q in pred)]
        out.append(keep)
    return out


def auto_scale(df: pd.DataFrame, target_s: float = AUTO_MAKESPAN_S) -> float:
    """Scale that maps the planned makespan onto ``target_s`` of wall time (≤ 1)."""
    span = float(df["finish_s"].max()) if df["finish_s"].notna().all() else float("nan")
    if not math.isfinite(span) or span <= 0:
        raise InputError("--time-scale auto needs planned start_s/finish_s (or duration_s)")
    return min(1.0, target_s / span)


def script_text(row: Mapping[str, Any], command: str, log: Path) -> str:
    """The batch script: Slurm options, a start record, the command, an end record. ``--gres``
    is per node; plan ``cpus`` / ``mem_gb`` (whole job, if given) are split over the nodes."""
    nodes = node_list(row["node"])
    n = len(nodes)
    opts = [f"--job-name=gs-{row['job_id']}", f"--partition={row['partition']}",
            f"--nodelist={','.join(nodes)}", f"--nodes={n}", "--ntasks-per-node=1",
            f"--gres=gpu:{row['gpu_type']}:{int(row['gpus']) // n}", f"--output={log}"]
    if _given(row.get("cpus")):
        opts.append(f"--cpus-per-task={max(1, int(row['cpus']) // n)}")
    if _given(row.get("mem_gb")):
        opts.append(f"--mem={max(1, int(float(row['mem_gb']) * 1024 / n))}M")
    return "\n".join([
        "#!/bin/bash",
        *[f"#SBATCH {o}" for o in opts],
        f'echo "{LOG_TAG} start=$(date +%s.%N) node=$SLURMD_NODENAME '
        f'nodes=$SLURM_JOB_NODELIST gpus=${{SLURM_JOB_GPUS:-}} slurm_job_id=$SLURM_JOB_ID '
        f'job_id={row["job_id"]}"',
        command,
        "rc=$?",
        f'echo "{LOG_TAG} end=$(date +%s.%N) rc=$rc"',
        "exit $rc",
        "",
    ])


def _given(v: Any) -> bool:
    try:
        return v is not None and math.isfinite(float(v)) and float(v) > 0
    except (TypeError, ValueError):
        return False


def _command(row: Mapping[str, Any], wl: Workload, scale: float, job_dir: Path) -> str:
    jid = str(row["job_id"])
    if wl.dry:
        d = float(row["duration_s"])
        if not math.isfinite(d) or d < 0:
            raise InputError(f"job {jid}: no planned duration for --dry-workload")
        return f"sleep {max(MIN_SLEEP_S, d * scale):.3f}"
    job_json = job_dir / f"{jid}.json"
    if wl.jobs is not None:
        if jid not in wl.jobs:
            raise InputError(f"job {jid} of the plan is not in the queue")
        write_json(job_json, wl.jobs[jid].to_dict(), what="job file")
    if wl.command:
        try:
            return wl.command.format(job_id=jid, job=shlex.quote(str(job_json)),
                                     device=row["gpu_type"], node=row["node"],
                                     gpus=int(row["gpus"]))
        except (KeyError, IndexError) as e:
            raise InputError(f"--command: unknown placeholder {e}; use {{job_id}}, {{job}}, "
                             "{device}, {node}, {gpus}") from None
    if wl.jobs is None:
        raise InputError("give --dry-workload, --command or --jobs QUEUE (what each job runs)")
    return (f"{shlex.quote(sys.executable)} -m gpuscope.workloads.run "
            f"--job {shlex.quote(str(job_json))}")


def submit_plan(plan: pd.DataFrame, cfg: ClusterConfig, out: str | Path, workload: Workload,
                env: Mapping[str, str] | None = None, time_scale: float | str = "auto",
                plan_name: str = "plan", cluster_file: str = "",
                state_dir: str | None = None, jobcomp: str | None = None) -> pd.DataFrame:
    """Submit every planned job with ``sbatch``; return (and write) the submission table."""
    df = place(plan, cfg)
    scale = 1.0
    if workload.dry:
        if isinstance(time_scale, str) and time_scale.startswith("auto"):
            target = float(time_scale[5:]) if time_scale.startswith("auto:") else AUTO_MAKESPAN_S
            scale = auto_scale(df, target)
        else:
            scale = float(time_scale)
        if not scale > 0:
            raise InputError(f"--time-scale must be > 0, got {time_scale}")
    out = Path(out)
    sdir = out / "slurm"
    for d in (sdir / "scripts", sdir / "logs", sdir / "jobs"):
        make_dirs(d)
    deps = dependencies(df)
    cmds = [_command(r, workload, scale, sdir / "jobs") for r in df.to_dict("records")]
    ids: list[str] = []
    begins: list[float] = []
    t0 = time.time()  # time origin: arrivals count from here (--begin below)
    record = out / f"slurm_{plan_name}.csv"
    try:
        for i, row in enumerate(df.to_dict("records")):
            log = (sdir / "logs" / f"{row['job_id']}-%j.out").resolve()
            script = sdir / "scripts" / f"{row['job_id']}.sbatch"
            write_text(script, script_text(row, cmds[i], log), what="sbatch script")
            argv = ["sbatch", "--parsable", "--kill-on-invalid-dep=no"]
            if deps[i]:
                argv.append("--dependency=afterany:" + ":".join(ids[k] for k in deps[i]))
            begin = t0 + float(row["arrival_s"]) * scale
            if float(row["arrival_s"]) * scale >= 1.0:
                argv.append("--begin=" + time.strftime("%Y-%m-%dT%H:%M:%S",
                                                       time.localtime(math.ceil(begin))))
            argv.append(str(script))
            r = subprocess.run(argv, env=dict(env) if env else None, capture_output=True,
                               text=True, timeout=60)
            if r.returncode != 0:
                raise SlurmError(f"sbatch refused job {row['job_id']}: "
                                 f"{(r.stderr or r.stdout).strip().splitlines()[-1:]}")
            ids.append(r.stdout.strip().split(";")[0])
            begins.append(begin)
    finally:
        sub = df.iloc[:len(ids)].copy()
        sub["slurm_job_id"] = ids
        sub["depends_on"] = [" ".join(str(df["job_id"].iloc[k]) for k in deps[i])
                             for i in range(len(ids))]
        sub["sleep_s"] = [float(c.split()[1]) if workload.dry else float("nan")
                          for c in cmds[:len(ids)]]
        sub["command"] = cmds[:len(ids)]
        write_table(sub, record, what="submission table")
        meta = {"plan": plan_name, "record": record.name, "t0_epoch": t0, "time_scale": scale,
                "dry_workload": workload.dry, "submitted": len(ids), "planned": len(df),
                "slurm_conf": (env or os.environ).get("SLURM_CONF"), "cluster": cfg.name,
                "cluster_file": cluster_file, "state_dir": state_dir, "jobcomp": jobcomp,
                "submitted_at": time.time()}
        write_json(out / SUBMISSION, meta, what="submission record")
    return sub


def submit(plan: pd.DataFrame | str | Path, out: str | Path, *, cluster: str | None = None,
           state_dir: str | None = None, dry_workload: bool = False,
           time_scale: float | str = "auto", command: str | None = None,
           jobs: Mapping[str, JobSpec] | None = None, plan_name: str | None = None
           ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Submit a plan (a DataFrame or a CSV path) to the local cluster of ``state_dir`` if one
    is up there, else to the Slurm of the environment (``cluster`` then names the cluster file
    whose servers are its nodes). Returns the submission table and its metadata."""
    from gpuscope.slurm._cluster import load
    from gpuscope.slurm.daemons import running_state

    if isinstance(plan, (str, Path)):
        plan_name = plan_name or Path(plan).stem
        plan = read_plan(plan)
    st = running_state(state_dir)
    if st is None and cluster is None:
        raise SlurmError("no local Slurm cluster is up (gpuscope slurm up --cluster FILE) and "
                         "no --cluster FILE names the nodes of the environment's Slurm")
    cfile = cluster or (st.cluster_file if st else "")
    cfg = load(cfile)
    env = st.env() if st else dict(os.environ)
    sub = submit_plan(plan, cfg, out, Workload(dry_workload, command, jobs), env=env,
                      time_scale=time_scale, plan_name=plan_name or "plan",
                      cluster_file=str(Path(cfile).resolve()) if Path(cfile).exists() else cfile,
                      state_dir=st.root if st else None,
                      jobcomp=str(st.layout.jobcomp) if st else None)
    from gpuscope.core.io import read_json

    meta = read_json(Path(out) / SUBMISSION, "submission record", kind=dict)
    return sub, meta
