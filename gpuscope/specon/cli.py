"""``gpuscope specon``: seed 004's SpeCon in the co-location simulator, and its Kubernetes output.

    gpuscope specon simulate --workload fixed-vae20|random-vae20|random20|random30|random50 \\
        [--workers N] [--alpha 0.01] [--interval 30] [--sharing ps|power|measured-pairs] \\
        [--growth relative-init|relative-prev|absolute] [--smoothing interval-mean|last|ema] \\
        [--request-scope worker|cluster] [--request-min 1] [--seed 0] [-o OUT]
    gpuscope specon export-k8s --workload ... -o K8S_DIR      (or --from OUT of simulate)
    gpuscope specon fit LOSS.csv                              (Optimus-form fit of a loss log)
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscope.core.errors import InputError
from gpuscope.core.io import check_output_folder, output_folder
from gpuscope.core.limits import check_count, pos_float, pos_int

if TYPE_CHECKING:  # the simulator loads only when a subcommand runs
    from gpuscope.specon.simulate import SimConfig
    from gpuscope.specon.traces import JobSpecS

#: Most simulated workers (GPUs); the paper runs 4 or 8 (no size may exhaust memory).
MAX_WORKERS: int = 100_000
_K8S_CPU = re.compile(r"^(\d+(\.\d+)?|\d+m)$")
_K8S_MEM = re.compile(r"^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$")


def add_sim_args(p: argparse.ArgumentParser) -> None:
    from gpuscope.specon.monitor import GROWTHS, SCOPES, SMOOTHINGS
    from gpuscope.specon.sharing import SHARINGS
    from gpuscope.specon.traces import WORKLOADS

    p.add_argument("--workload", choices=tuple(WORKLOADS), default="fixed-vae20")
    p.add_argument("--workers", type=pos_int, default=None, help="default: the paper's (4, or 8 for random50)")
    p.add_argument("--alpha", type=float, default=0.01, help="Algorithm 1 threshold α (paper 0.01)")
    p.add_argument("--interval", type=pos_float, default=30.0, help="monitor interval s (paper 30)")
    p.add_argument("--sharing", choices=SHARINGS, default="ps", help="co-location model (reported)")
    p.add_argument("--beta", type=float, default=1.3, help="power sharing: speed n^-beta")
    p.add_argument("--gavel-gpu", default="v100", help="measured-pairs: Gavel GPU (k80, p100, v100)")
    p.add_argument("--growth", choices=GROWTHS, default="relative-init",
                   help="G normalisation (paper-literal: absolute)")
    p.add_argument("--smoothing", choices=SMOOTHINGS, default="interval-mean",
                   help="which loss E is read (paper-literal: last)")
    p.add_argument("--request-scope", choices=SCOPES, default="worker")
    p.add_argument("--request-min", type=int, default=1,
                   help="request when |PC|+|WC| > this (Algorithm 1 line 15: 1)")
    p.add_argument("--exclude-self", action="store_true", help="Algorithm 2 scores without c_j")
    p.add_argument("--no-rebalance", action="store_true", help="skip Algorithm 3")
    p.add_argument("--pause", type=float, default=4.0, help="migration pause mean s (Fig. 2)")
    p.add_argument("--pause-sd", type=float, default=1.43, help="migration pause sd s (Fig. 2)")
    p.add_argument("--pred-error", type=float, default=0.2,
                   help="specon-srpt: lognormal sigma of the execution-time prediction")
    p.add_argument("--placement", choices=("rr", "least"), default="rr", help="DS placement rule")
    p.add_argument("--seed", type=int, default=0)


def config_from(args: argparse.Namespace) -> tuple[list[JobSpecS], SimConfig]:
    from gpuscope.specon.sharing import SharingModel
    from gpuscope.specon.simulate import SimConfig
    from gpuscope.specon.traces import make_trace

    jobs, workers = make_trace(args.workload, args.seed)
    n = args.workers if args.workers is not None else workers
    check_count("--workers", n, MAX_WORKERS)
    if n < 1:
        raise InputError(f"--workers must be >= 1, got {n}")
    if args.request_min < 0:
        raise InputError(f"--request-min must be >= 0, got {args.request_min}")
    if args.pred_error < 0:
        raise InputError(f"--pred-error must be >= 0, got {args.pred_error}")
    cfg = SimConfig(
        n_workers=n, alpha=args.alpha, interval_s=args.interval, growth=args.growth,
        smoothing=args.smoothing, request_scope=args.request_scope, request_min=args.request_min,
        exclude_self=args.exclude_self, rebalance=not args.no_rebalance,
        sharing=SharingModel(args.sharing, beta=args.beta, gpu=args.gavel_gpu),
        pause_mean_s=args.pause, pause_sd_s=args.pause_sd, pred_error=args.pred_error,
        placement_rule=args.placement, seed=args.seed)
    return jobs, cfg


def _title(args: argparse.Namespace, cfg: SimConfig) -> str:
    return (f"{args.workload} on {cfg.n_workers} workers, sharing={cfg.sharing.label()}, "
            f"alpha={args.alpha:g}, interval={args.interval:g} s, growth={args.growth}, "
            f"smoothing={args.smoothing}, seed={args.seed} [emulated]")


def _simulate(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from gpuscope.specon.report import compare, format_table, plot_timeline, write_outputs
    from gpuscope.specon.simulate import run_policies

    if args.output:
        check_output_folder(args.output, "specon simulate")
    jobs, cfg = config_from(args)
    res = run_policies(jobs, cfg)
    comps = [compare(res["ds"], res[p]) for p in ("specon", "specon-srpt")]
    title = _title(args, cfg)
    print(format_table(res["ds"], comps, title))
    print("specon = the paper's Algorithms 1-3; specon-srpt = gpuscope's variant (ours)")
    if args.output:
        out = Path(args.output)
        summary = {"title": title, "provenance": "emulated",
                   "ds": {"avg_jct_s": res["ds"].avg_jct_s, "makespan_s": res["ds"].makespan_s},
                   **{c.policy: {**asdict(c), "jct_change_pct": c.jct_change_pct,
                                 "makespan_change_pct": c.makespan_change_pct} for c in comps}}
        with output_folder(out, "specon simulate") as tmp:
            files = write_outputs(tmp, res, summary)
            files.append(plot_timeline(tmp / "timeline.png", res, cfg.n_workers, title))
        print(f"wrote {', '.join(f.name for f in files)} -> {out}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from gpuscope.specon.k8s import export, load_sim_dir

    if not _K8S_CPU.match(args.cpu):
        raise InputError(f"--cpu must be a Kubernetes CPU quantity (2, 0.5, 500m), got {args.cpu!r}")
    if not _K8S_MEM.match(args.memory):
        raise InputError(f"--memory must be a Kubernetes memory quantity (4Gi, 512Mi), "
                         f"got {args.memory!r}")
    check_output_folder(args.output, "specon export-k8s", [args.source])
    if args.source:
        jobs_rows, decisions = load_sim_dir(Path(args.source), args.policy)
    else:
        from gpuscope.specon.report import decisions_csv, jobs_csv
        from gpuscope.specon.simulate import run_policies

        jobs, cfg = config_from(args)
        res = run_policies(jobs, cfg, (args.policy,))[args.policy]
        import csv
        import io

        jobs_rows = list(csv.DictReader(io.StringIO(jobs_csv(res))))
        decisions = list(csv.DictReader(io.StringIO(decisions_csv(res))))
    with output_folder(args.output, "specon export-k8s", [args.source]) as tmp:
        files = export(tmp, jobs_rows, decisions, image=args.image,
                       nfs_server=args.nfs_server, cpu=args.cpu, memory=args.memory)
    print(f"{len(jobs_rows)} pods, {sum(1 for d in decisions if d['to_node'])} migrations "
          f"-> {', '.join(f.name for f in files)} in {args.output}")
    return 0


def _fit(args: argparse.Namespace) -> int:
    from gpuscope.specon.losscurve import fit, read_loss_log

    p, loss = read_loss_log(args.log)
    c = fit(p, loss, source=str(args.log))
    print(f"{args.log}: l(p) = {c.c:.4g} + 1/({c.a:.4g}·p + {c.b:.4g}); r = a/b = {c.r:.3g}; "
          f"f(0.2) = {c.f(0.2):.3f}; tail noise {100 * c.sigma:.1f} % ({len(p)} points)")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    sp = subparsers.add_parser("specon", help="SpeCon (seed 004): convergence-aware container migration")
    sub = sp.add_subparsers(dest="specon_command", metavar="SUBCOMMAND")
    sim = sub.add_parser("simulate", help="DS vs SpeCon vs specon-srpt in the co-location simulator")
    add_sim_args(sim)
    sim.add_argument("-o", "--output", help="folder for jobs/decisions CSVs, summary.json, timeline.png")
    sim.set_defaults(func=_simulate)
    k8s = sub.add_parser("export-k8s", help="PV/PVC, RBAC, pods with nodeName, migration plan")
    add_sim_args(k8s)
    k8s.add_argument("--from", dest="source", help="a 'specon simulate -o' folder to replay")
    k8s.add_argument("--policy", choices=("specon", "specon-srpt"), default="specon")
    k8s.add_argument("--image", default="wzheng33/birnn", help="container image of the jobs")
    k8s.add_argument("--nfs-server", default="10.10.1.1", help="NFS server of the log volume")
    k8s.add_argument("--cpu", default="2", help="CPU request per pod")
    k8s.add_argument("--memory", default="4Gi", help="memory request per pod")
    k8s.add_argument("-o", "--output", required=True, help="folder for the YAML files")
    k8s.set_defaults(func=_export)
    ft = sub.add_parser("fit", help="fit Optimus' l(p) = c + 1/(a p + b) to a loss log")
    ft.add_argument("log", help="CSV with step, loss columns (workloads.run --loss-log)")
    ft.set_defaults(func=_fit)
    sp.set_defaults(func=lambda _a: (sp.print_help(), 0)[1])
