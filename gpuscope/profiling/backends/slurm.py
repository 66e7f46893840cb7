"""Slurm backend: one profiling run per ``sbatch``, results through the driver's one ledger.

Each pending job becomes a batch job that asks for one GPU of the profiled type
(``--gres=gpu:<device-name>:1``, so it lands on a node of that type; ``gpus=0`` asks for CPUs
only) and runs this module as a worker on the node: ``python -m
gpuscope.profiling.backends.slurm --job J.json --opts O.json --out R.parquet``, which runs the job
with :func:`gpuscope.profiling.runner.run_job` (sampling the GPU Slurm gave it:
``SLURM_JOB_GPUS``) and writes its trace atomically into the runs folder's spool
(``slurm/results/<run_id>.parquet``; the runs folder must be visible from the nodes, as on any
cluster with a shared file system).

The driver (the campaign) alone writes the ledger: as each result appears it moves the trace
into ``traces/`` (``os.replace``) and commits the ledger row — the same order as the local and
Ray backends. Nothing is lost when something dies:

* the campaign: the batch jobs go on; ``slurm/inflight.json`` (run id → Slurm job id, written
  atomically after every submission) lets the next ``profile run`` adopt jobs still queued or
  running and ingest results that arrived meanwhile, instead of submitting them again;
* a job (cancelled, node failure, killed worker): no result appears, the run is counted
  ``lost`` and stays pending for the next ``profile run``. A run that fails or times out inside
  the worker is a recorded result (``error``/``timeout``), as with the other backends;
* the environment: when the first results all failed alike at start-up
  (``gpuscope.profiling.campaign.StartupCheck``, the same rule as the other backends), the
  campaign cancels its other Slurm jobs, records nothing and stops with one line.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling.campaign import StartupCheck
from gpuscope.profiling.ledger import Ledger
from gpuscope.profiling.runner import RunOptions, run_job
from gpuscope.profiling.trace import TraceMeta, read_trace

#: Slurm job states after which no result will come.
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
         "DEADLINE", "OUT_OF_MEMORY"}
#: Seconds a job may be unknown to squeue (purged, or not yet visible) before it counts as lost.
UNKNOWN_GRACE_S = 30.0


def slurm_env(state_dir: str | None) -> dict[str, str]:
    """Client environment: the local cluster of ``state_dir`` if one is up, else the caller's."""
    from gpuscope.slurm.daemons import running_state

    st = running_state(state_dir)
    return st.env() if st is not None else dict(os.environ)


def _atomic_json(obj: Any, path: Path) -> None:
    from gpuscope.core.io import write_json

    write_json(path, obj, what="spool file", check=False)


def batch_script(job: JobSpec, spool: Path, opts_file: Path, gpus: int, device: str,
                 partition: str | None, cpus_per_task: int, time_limit_s: float) -> str:
    """The batch script of one run (reusable by hand: ``sbatch slurm/jobs/<run_id>.sbatch``)."""
    key = job.key
    lines = ["#!/bin/bash", f"#SBATCH --job-name=gsp-{key}"[:200],
             f"#SBATCH --output={spool / 'logs' / (key + '-%j.out')}",
             f"#SBATCH --cpus-per-task={cpus_per_task}",
             f"#SBATCH --time={max(1, int(time_limit_s // 60) + 2)}"]
    if gpus > 0:
        lines.append(f"#SBATCH --gres=gpu:{device}:{gpus}")
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    lines.append(" ".join(shlex.quote(a) for a in [
        sys.executable, "-m", "gpuscope.profiling.backends.slurm",
        "--job", str(spool / "jobs" / f"{key}.json"), "--opts", str(opts_file),
        "--out", str(spool / "results" / f"{key}.parquet")]))
    return "\n".join(lines) + "\n"


def gpu_partitions(device: str, env: Mapping[str, str]) -> list[str]:
    """Partitions with nodes whose GRES include ``gpu:<device>`` (from ``sinfo``)."""
    r = subprocess.run(["sinfo", "-h", "-o", "%R|%G"], env=dict(env), capture_output=True,
                       text=True, timeout=30)
    out: list[str] = []
    for line in r.stdout.splitlines():
        part, _, gres = line.partition("|")
        if any(g.startswith(f"gpu:{device}:") for g in gres.split(",")) and part not in out:
            out.append(part)
    return out


def _states(ids: list[str], env: Mapping[str, str]) -> dict[str, str]:
    if not ids:
        return {}
    r = subprocess.run(["squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%i|%T"],
                       env=dict(env), capture_output=True, text=True, timeout=30)
    return dict(line.split("|", 1) for line in r.stdout.splitlines() if "|" in line)


def run_campaign_slurm(
    jobs: list[JobSpec],
    out_dir: str | Path,
    opts: RunOptions,
    gpus: int = 1,
    partition: str | None = None,
    cpus_per_task: int = 1,
    state_dir: str | None = None,
    wait: bool = True,
    poll_s: float = 0.5,
    progress: bool = True,
) -> Counter[str]:
    """Run ``jobs`` (already filtered to the pending ones) as one ``sbatch`` each.

    Results already in the spool are ingested first, jobs still queued or running from an
    earlier campaign are adopted, the rest are submitted. ``wait=False`` submits and returns
    (a later call collects). Returns counts by status of the runs recorded now, plus ``lost``.
    """
    from tqdm import tqdm

    from gpuscope.core.errors import SlurmError

    if gpus < 0 or cpus_per_task < 1:
        raise InputError("--gpus must be >= 0 and --cpus-per-task >= 1 for the slurm backend")
    out = Path(out_dir).resolve()
    spool = out / "slurm"
    for d in ("jobs", "results", "logs"):
        (spool / d).mkdir(parents=True, exist_ok=True)
    (out / "traces").mkdir(parents=True, exist_ok=True)
    env = slurm_env(state_dir)
    opts_file = spool / "opts.json"
    _atomic_json(asdict(opts), opts_file)
    inflight_file = spool / "inflight.json"
    from gpuscope.core.io import read_json

    inflight: dict[str, str] = (read_json(inflight_file, "spool file", kind=dict)
                                if inflight_file.is_file() else {})
    by_key = {j.key: j for j in jobs}
    if gpus > 0 and not partition and jobs:  # any partition holding this GPU type
        parts = gpu_partitions(opts.device_name, env)
        if not parts:
            raise SlurmError(f"no Slurm partition has GPUs of type {opts.device_name!r} "
                             "(GRES gpu:TYPE); give --slurm-partition or another --device-name")
        partition = ",".join(parts)
    counts: Counter[str] = Counter()
    check = StartupCheck(len(jobs))
    waiting: dict[str, str] = {}
    with Ledger(out / "ledger.sqlite", device=opts.device_name, provenance="measured") as ledger:

        def record(done: list[tuple[TraceMeta, Path]]) -> None:
            for meta, trace in done:
                ledger.record(meta, trace)
                counts[meta.status] += 1

        def ingest(key: str) -> bool:
            res = spool / "results" / f"{key}.parquet"
            if not res.is_file():
                return False
            _, meta = read_trace(res)
            trace = out / "traces" / f"{key}.parquet"
            os.replace(res, trace)  # same folder tree: atomic, then the ledger row
            try:
                record(check.add(meta, trace))
            except InputError:  # environment failure: the other runs would fail alike
                _cancel(key, waiting, inflight, inflight_file, env)
                raise
            return True

        todo = [k for k in by_key if not ingest(k)]
        live = _states([inflight[k] for k in todo if k in inflight], env)
        for k in todo:
            sid = inflight.get(k)
            if sid is not None and live.get(sid, "FINAL") not in FINAL:
                waiting[k] = sid  # adopted: queued or running since an earlier campaign
                continue
            job = by_key[k]
            (spool / "jobs" / f"{k}.json").write_text(json.dumps(job.to_dict(), indent=1))
            script = spool / "jobs" / f"{k}.sbatch"
            script.write_text(batch_script(job, spool, opts_file, gpus, opts.device_name,
                                           partition, cpus_per_task, opts.timeout_s))
            r = subprocess.run(["sbatch", "--parsable", str(script)], env=env,
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                _atomic_json(inflight, inflight_file)
                msg = (r.stderr or r.stdout).strip().splitlines()
                raise SlurmError(f"sbatch refused run {k}: {msg[-1] if msg else r.returncode}")
            waiting[k] = inflight[k] = r.stdout.strip().split(";")[0]
            _atomic_json(inflight, inflight_file)
        if not wait:
            record(check.rest())
            return counts
        unknown_since: dict[str, float] = {}
        bar = tqdm(total=len(waiting), desc="profile (slurm)", unit="run", disable=not progress)
        while waiting:
            states = _states(list(waiting.values()), env)
            for k, sid in list(waiting.items()):
                st = states.get(sid)
                if ingest(k):
                    pass
                elif st in FINAL or (st is None and time.monotonic()
                                     - unknown_since.setdefault(k, time.monotonic())
                                     > UNKNOWN_GRACE_S):
                    if ingest(k):  # the result may land between the two looks
                        pass
                    else:
                        tqdm.write(f"{k}: Slurm job {sid} ended {st or 'unseen'} without a "
                                   "result; left pending")
                        counts["lost"] += 1
                else:
                    continue
                del waiting[k]
                inflight.pop(k, None)
                _atomic_json(inflight, inflight_file)
                bar.update(1)
                bar.set_postfix(counts, refresh=False)
            if waiting:
                time.sleep(poll_s)
        bar.close()
        record(check.rest())
    return counts


def _cancel(key: str, waiting: dict[str, str], inflight: dict[str, str], inflight_file: Path,
            env: Mapping[str, str]) -> None:
    """Cancel the campaign's other Slurm jobs (an environment failure: they would fail alike)
    and forget them, so a rerun in a fixed environment submits them afresh."""
    ids = [sid for k, sid in waiting.items() if k != key]
    if ids:
        subprocess.run(["scancel", *ids], env=dict(env), capture_output=True, timeout=60)
    waiting.clear()
    inflight.clear()
    _atomic_json(inflight, inflight_file)


def _worker(argv: list[str] | None = None) -> int:
    """On the node: run one job and write its trace where the driver looks for it."""
    p = argparse.ArgumentParser(prog="python -m gpuscope.profiling.backends.slurm")
    p.add_argument("--job", required=True)
    p.add_argument("--opts", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    from gpuscope.core.io import read_json

    d = read_json(a.opts, "run options", kind=dict)
    if d.get("command"):
        d["command"] = tuple(d["command"])
    opts = RunOptions(**d)
    gpus = os.environ.get("SLURM_JOB_GPUS", "").split(",")[0]
    if gpus.isdigit():  # NVML indexes physical GPUs; Slurm's ids are physical
        opts = replace(opts, gpu_index=int(gpus))
    run_job(JobSpec.from_json_file(a.job), a.out, opts)
    return 0


if __name__ == "__main__":
    sys.exit(_worker())
