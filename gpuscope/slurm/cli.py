"""``gpuscope slurm up|down|status|submit|collect``."""

from __future__ import annotations

import argparse
import math
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscope.cluster.cli import add_catalog_option
from gpuscope.core.errors import InputError
from gpuscope.core.limits import pos_float

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.slurm.daemons import ClusterState


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "slurm", help="run plans on Slurm: a throwaway local cluster, submit, collect",
        description="Start a throwaway one-machine Slurm from a cluster file, submit a plan "
                    "as sbatch jobs that keep its placement and order, and compare what Slurm "
                    "did with the plan.")
    sp = p.add_subparsers(dest="slurm_cmd", required=True)
    state = argparse.ArgumentParser(add_help=False)
    state.add_argument("--state-dir", default=None,
                       help="folder of the local cluster's state "
                            "(default $GPUSCOPE_SLURM_STATE_DIR or ~/.gpuscope/slurm)")

    u = sp.add_parser("up", parents=[state], help="start a local Slurm from a cluster file")
    u.add_argument("--cluster", required=True, help="cluster TOML file (or bundled name)")
    u.add_argument("--timeout-s", type=pos_float, default=60.0,
                   help="longest wait for idle nodes, s (> 0; default 60)")
    add_catalog_option(u)
    u.set_defaults(func=_up)
    d = sp.add_parser("down", parents=[state], help="stop the local Slurm (every daemon)")
    d.set_defaults(func=_down)
    s = sp.add_parser("status", parents=[state], help="nodes of the local Slurm (sinfo)")
    s.set_defaults(func=_status)

    sub = sp.add_parser("submit", parents=[state], help="submit a plan CSV as sbatch jobs")
    sub.add_argument("plan", help="plan CSV (job_id and node, or device + gpu; see docs)")
    add_submit_args(sub, cluster=True)
    sub.add_argument("--jobs", default=None,
                     help="queue file (.csv/.json) with the plan's jobs, to run them for real")
    sub.add_argument("-o", "--out", required=True, help="folder for the submission record")
    add_catalog_option(sub)
    sub.set_defaults(func=_submit)

    c = sp.add_parser("collect", help="read a submission back: actual vs plan")
    c.add_argument("-o", "--out", required=True, help="folder holding slurm_submission.json")
    c.add_argument("--no-wait", action="store_true", help="do not wait for unfinished jobs")
    c.add_argument("--timeout-s", type=float, default=600.0, help="longest wait for the jobs")
    c.set_defaults(func=_collect)


def add_submit_args(p: argparse.ArgumentParser, cluster: bool = False) -> None:
    """Flags shared by ``slurm submit`` and ``allocate --submit slurm``."""
    if cluster:
        p.add_argument("--cluster", default=None,
                       help="cluster file naming the nodes (default: the local cluster's)")
    p.add_argument("--dry-workload", action="store_true",
                   help="each job sleeps its planned time x --time-scale instead of running")
    p.add_argument("--time-scale", default="auto",
                   help="wall seconds per planned second for --dry-workload; auto (default): "
                        "the planned makespan becomes 60 s, auto:S: S seconds")
    p.add_argument("--command", default=None,
                   help="command template per job: {job_id} {job} {device} {node} {gpus}")
    if not cluster:
        p.add_argument("--slurm-state-dir", default=None,
                       help="state folder of the local Slurm (default: that of gpuscope slurm up)")


def time_scale(text: str) -> float | str:
    """``auto`` (planned makespan -> 60 s of wall time), ``auto:S`` (-> S s) or a number."""
    if isinstance(text, float):  # already parsed
        return text
    if text == "auto" or text.startswith("auto:"):
        try:
            if text != "auto" and not 0 < float(text[5:]) < math.inf:
                raise ValueError
        except ValueError:
            raise InputError(f"--time-scale auto:S needs S > 0 seconds, got {text!r}") from None
        return text
    try:
        v = float(text)
    except ValueError:
        raise InputError(f"--time-scale must be 'auto' or a number, got {text!r}") from None
    if not 0 < v < math.inf:
        raise InputError(f"--time-scale must be a finite number > 0, got {text}")
    return v


def _up(args: argparse.Namespace) -> int:
    from gpuscope.cluster.config import load_cluster
    from gpuscope.slurm.daemons import up

    load_cluster(args.cluster)  # a bad cluster file is named before the Slurm packages are
    st = up(args.cluster, args.state_dir, timeout_s=args.timeout_s)
    print(f"Slurm cluster {st.cluster_name!r} up: {len(st.node_ports)} node(s) "
          f"({', '.join(st.node_ports)}), slurmctld on 127.0.0.1:{st.ctld_port}, state "
          f"{st.root}")
    print(_sinfo(st).rstrip())
    print(f"use it: export SLURM_CONF={st.conf}   (stop: gpuscope slurm down"
          f"{' --state-dir ' + args.state_dir if args.state_dir else ''})")
    return 0


def _down(args: argparse.Namespace) -> int:
    from gpuscope.slurm.daemons import down

    stopped = down(args.state_dir)
    print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return 0


def _sinfo(st: ClusterState) -> str:
    r = subprocess.run(["sinfo", "-N", "-o", "%N %P %G %t"], env=st.env(), capture_output=True,
                       text=True, timeout=20)
    return r.stdout


def _status(args: argparse.Namespace) -> int:
    from gpuscope.core.errors import SlurmError
    from gpuscope.slurm.daemons import running_state

    st = running_state(args.state_dir)
    if st is None:
        raise SlurmError("no local Slurm cluster is up in that state folder")
    print(_sinfo(st).rstrip())
    return 0


def _submit(args: argparse.Namespace) -> int:
    from gpuscope.core.io import check_output
    from gpuscope.slurm.submit import submit

    check_output(args.out, [args.plan, args.jobs, args.cluster], kind="dir",
                 what="submission folder")
    time_scale(args.time_scale)
    jobs = None
    if args.jobs:
        from gpuscope.jobs.queue import read_queue

        jobs = {str(j.job_id): j for j in read_queue(args.jobs)}
    sub, meta = submit(args.plan, args.out, cluster=args.cluster, state_dir=args.state_dir,
                       dry_workload=args.dry_workload, time_scale=time_scale(args.time_scale),
                       command=args.command, jobs=jobs)
    print(submitted_line(sub, meta, args.out))
    return 0


def submitted_line(sub: pd.DataFrame, meta: dict[str, Any], out: str) -> str:
    ids = sub["slurm_job_id"].tolist()
    scale = f", time scale {meta['time_scale']:.4g}" if meta.get("dry_workload") else ""
    return (f"submitted {len(ids)} job(s) to Slurm (ids {ids[0]}-{ids[-1]}){scale}; record "
            f"{Path(out) / meta['record']}; read back with: gpuscope slurm collect -o {out}")


def _collect(args: argparse.Namespace) -> int:
    from gpuscope.slurm.collect import collect

    sub, res = collect(args.out, wait=not args.no_wait, timeout_s=args.timeout_s)
    print(res.report(sub))
    return 0
