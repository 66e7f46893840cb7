"""``gpuscope allocate`` and ``gpuscope tjng`` (issue 6; seed 001 §3.2, seed 002 §4.1)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscope.core.data import bundled
from gpuscope.core.errors import InputError
from gpuscope.core.io import check_output, write_text
from gpuscope.core.limits import check_memory

if TYPE_CHECKING:
    from gpuscope.cluster.counts import ClusterSpec

DEFAULT_TRUTH = bundled("emulated")


def register(subparsers: argparse._SubParsersAction) -> None:
    from gpuscope.allocator.ordering import ORDERS
    from gpuscope.allocator.pipeline import NAMED_QUEUES
    from gpuscope.allocator.policies import POLICIES
    from gpuscope.allocator.predict import DEFAULT_MODEL_DIR

    queues = ", ".join(NAMED_QUEUES)
    p = subparsers.add_parser(
        "allocate", help="place a job queue on a GPU cluster, simulate JCT and makespan",
        description="Predict every job on every GPU type in one batch, place jobs with a "
                    "policy (seed 001 Alg. 1-2), order each GPU's queue, simulate on ground "
                    "truth, write plan, metrics and plots.")
    p.add_argument("--jobs", required=True, help=f"queue file (.csv/.json) or one of: {queues}")
    p.add_argument("--cluster", required=True,
                   help="TYPE:COUNT,... e.g. gtx1080:1,rtx2070:1, or a cluster TOML file")
    p.add_argument("--policy", default="comp-eff",
                   help=f"one or a comma list of {', '.join(POLICIES)}, or 'all'")
    p.add_argument("--order", default="fifo", help=f"one or a comma list of {', '.join(ORDERS)}")
    p.add_argument("--resources", default="all",
                   help="Eq. 2 resource set: all, a comma list, or -RES to drop one")
    p.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR), help="checkpoint folder")
    p.add_argument("--truth", default=None,
                   help="ground-truth datasets folder (e.g. datasets/emulated); without it the "
                        "simulation replays the predicted times")
    p.add_argument("--seed", type=int, default=0, help="seed of the random policy")
    p.add_argument("--steps-per-epoch", type=int, default=None,
                   help="epoch length of the named queues (default: that of the --truth runs)")
    p.add_argument("-o", "--out", required=True, help="output folder")
    p.add_argument("--submit", choices=("slurm",), default=None,
                   help="run the plan (one policy, one order) on Slurm: see gpuscope slurm")
    try:
        from gpuscope.slurm.cli import add_submit_args
    except ModuleNotFoundError:  # pragma: no cover - the slurm room is optional
        pass
    else:
        add_submit_args(p)
    p.set_defaults(func=_allocate)

    t = subparsers.add_parser(
        "tjng", help="export t_jng tables and a reference-scheduler instance",
        description="Execution time of every job on every node type with g = 1..G GPUs "
                    "(predicted one-GPU time scaled by the emulator's multi-GPU model, "
                    "measured where available) and price, as gpuscope's t_jng table and the "
                    "reference scheduler's instance folder (seed 002 Sec. 4.1).")
    t.add_argument("--jobs", required=True, help=f"queue file (.csv/.json) or one of: {queues}")
    t.add_argument("--cluster", required=True, help="TYPE:G,... e.g. v100:8,a100:8")
    t.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR), help="checkpoint folder")
    t.add_argument("--truth", default=None, help="datasets folder with measured labels")
    t.add_argument("--nodes", type=int, default=None, help="nodes in tNodes.csv (default: types)")
    t.add_argument("--seed", type=int, default=0, help="seed of generated due dates/weights")
    t.add_argument("--steps-per-epoch", type=int, default=None,
                   help="epoch length of the named queues (default: full epochs)")
    t.add_argument("-o", "--out", required=True, help="output folder")
    t.set_defaults(func=_tjng)


def _split(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    items = [s.strip() for s in text.split(",") if s.strip()]
    if items == ["all"]:
        return list(allowed)
    for s in items:
        if s not in allowed:
            raise InputError(f"unknown {what} {s!r}; expected one of {', '.join(allowed)}")
    if not items:
        raise InputError(f"no {what} given")
    return items


def _allocate(args: argparse.Namespace) -> int:
    from gpuscope.allocator.efficiency import parse_resources
    from gpuscope.allocator.ordering import ORDERS
    from gpuscope.allocator.policies import POLICIES

    cluster = _cluster(args.cluster)
    check_output(args.out, [args.jobs, args.cluster, args.truth, args.model_dir], kind="dir",
                 what="output folder")
    _check_truth(args.truth)
    if args.submit:
        from gpuscope.slurm.cli import time_scale

        time_scale(args.time_scale)
    policies = _split(args.policy, POLICIES, "policy")
    orders = _split(args.order, ORDERS, "order")
    if args.submit and (len(policies) > 1 or len(orders) > 1 or args.policy == "all"):
        raise InputError("--submit runs one plan: give one --policy and one --order")
    if not args.submit and (getattr(args, "dry_workload", False) or getattr(args, "command", None)):
        raise InputError("--dry-workload and --command go with --submit slurm")
    resources = parse_resources(args.resources)
    oracles = [p for p in policies if p.startswith("oracle")]
    if args.truth is None and oracles:
        if args.policy != "all":
            raise InputError(f"policy {oracles[0]} needs ground truth: give --truth DIR")
        policies = [p for p in policies if p not in oracles]
    if args.policy == "all":
        policies = [p for p in policies if p != "driple" or _has_driple(args, cluster)]

    from gpuscope.allocator.pipeline import check_devices, load_jobs, prepare
    from gpuscope.allocator.report import write_allocation

    check_devices(cluster)
    jobs = load_jobs(args.jobs, _steps(args, cluster))
    inp = prepare(jobs, cluster, args.model_dir, args.truth, policies)
    summary = write_allocation(inp, policies, orders, resources, Path(args.out), seed=args.seed)
    print(summary)
    for note in inp.notes:
        sys.stderr.write(note + "\n")
    if args.submit == "slurm":
        from gpuscope.slurm.cli import submitted_line, time_scale
        from gpuscope.slurm.submit import submit

        is_file = _is_cluster_file(args.cluster)
        sub, meta = submit(Path(args.out) / f"plan_{policies[0]}_{orders[0]}.csv", args.out,
                           cluster=args.cluster if is_file else None,
                           state_dir=args.slurm_state_dir, dry_workload=args.dry_workload,
                           time_scale=time_scale(args.time_scale), command=args.command,
                           jobs={str(j.job_id): j for j in jobs})
        print(submitted_line(sub, meta, args.out))
    return 0


def _check_truth(truth: str | None) -> None:
    """A given ``--truth`` must be an existing folder (issue 18: a typo was ignored)."""
    if truth is None:
        return
    p = Path(truth)
    if not p.exists():
        raise InputError(f"--truth {truth}: no such folder")
    if not p.is_dir():
        raise InputError(f"--truth {truth}: not a folder (a datasets folder, e.g. datasets/emulated)")


def _is_cluster_file(text: str) -> bool:
    return text.endswith(".toml") or Path(text).is_file()


def _cluster(text: str) -> ClusterSpec:
    """``TYPE:COUNT,...``, or a cluster file: each GPU type with its GPUs over all servers."""
    from gpuscope.cluster.counts import ClusterSpec

    if not _is_cluster_file(text):
        return ClusterSpec.parse(text)
    from gpuscope.cluster.config import load_cluster

    counts: dict[str, int] = {}
    for s in load_cluster(text).servers:
        counts[s.gpu_type] = counts.get(s.gpu_type, 0) + s.gpus
    return ClusterSpec(tuple(counts), tuple(counts.values()))


def _steps(args: argparse.Namespace, cluster: ClusterSpec) -> int | None:
    """Epoch length for named queues: the flag, else that of the ground-truth runs."""
    if args.steps_per_epoch is not None:
        if args.steps_per_epoch < 1:
            raise InputError(f"--steps-per-epoch must be >= 1, got {args.steps_per_epoch}")
        return args.steps_per_epoch
    if getattr(args, "truth", None) is None:
        return None
    from gpuscope.allocator.truth import truth_steps

    return truth_steps(args.truth, cluster.devices)


def _has_driple(args: argparse.Namespace, cluster: ClusterSpec) -> bool:
    from gpuscope.allocator.predict import checkpoint_path

    return all(checkpoint_path(args.model_dir, d, True).is_file() for d in cluster.devices)


def _tjng(args: argparse.Namespace) -> int:
    from gpuscope.allocator.pipeline import check_devices, graph_source, load_jobs
    from gpuscope.allocator.predict import check_checkpoints, domain_warning, predict_queue
    from gpuscope.allocator.tjng_export import export_tjng, one_gpu_times
    from gpuscope.allocator.truth import labels_path, load_truth

    cluster = _cluster(args.cluster)
    if args.nodes is not None and args.nodes < 1:
        raise InputError(f"--nodes must be >= 1, got {args.nodes}")
    check_output(args.out, [args.jobs, args.cluster, args.truth, args.model_dir], kind="dir",
                 what="output folder")
    _check_truth(args.truth)
    check_devices(cluster)
    check_checkpoints(args.model_dir, cluster.devices)
    jobs = load_jobs(args.jobs, _steps(args, cluster))
    # issue 18: the instance offers every g' <= g on a VM type of g GPUs (seed 002's t_jvg):
    # sum_G G (G + 1) / 2 rows per job, ~256 B each in memory; ~128 B per node in tNodes
    rows = len(jobs) * sum(g * (g + 1) // 2 for g in cluster.counts)
    check_memory(f"the t_jng instance of {len(jobs)} jobs on {cluster} ({rows} rows)",
                 256 * rows + 128 * (args.nodes or 0))
    truth = None
    if args.truth is not None:
        have = [d for d in cluster.devices if labels_path(args.truth, d) is not None]
        if not have:
            raise InputError(f"--truth {args.truth} holds labels for none of "
                             f"{', '.join(cluster.devices)}")
        truth = load_truth(jobs, have, args.truth, strict=False)
    pred = predict_queue(jobs, cluster.devices, args.model_dir, datasets=graph_source(args.truth))
    note = domain_warning(pred)
    one = one_gpu_times(jobs, cluster, pred, truth, pred_source=f"predicted:{args.model_dir}")
    tj, inst, dropped = export_tjng(jobs, cluster, one, args.out, n_nodes=args.nodes,
                                    seed=args.seed)
    out = Path(args.out)
    write_text(out / "tjng_meta.json", json.dumps({
        "cluster": str(cluster), "jobs": len(jobs), "rows": len(tj),
        "dropped_fit_nowhere": dropped, "seed": args.seed,
        "sources": sorted(set(tj["source"])),
    }, indent=1) + "\n")
    print(f"t_jng: {len(tj)} rows for {tj['job_id'].nunique()} jobs on {str(cluster)} "
          f"-> {out / 'tjng.csv'}, instance -> {out / 'instance'}"
          + (f"; {len(dropped)} job(s) fit no node type" if dropped else ""))
    if note:
        sys.stderr.write(note + "\n")
    return 0
