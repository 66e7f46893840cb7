"""``gpuscope allocate`` and ``gpuscope tjng`` (seed 001 §3.2, seed 002 §4.1)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscope.cluster.cli import add_catalog_option
from gpuscope.core.errors import InputError
from gpuscope.core.io import check_output_folder, output_folder, write_text
from gpuscope.core.limits import check_memory
from gpuscope.core.progress import phase

if TYPE_CHECKING:
    from gpuscope.allocator.inputs import AllocationInputs
    from gpuscope.allocator.predict import ModelSet
    from gpuscope.cluster.counts import ClusterSpec

def register(subparsers: argparse._SubParsersAction) -> None:
    from gpuscope.allocator.names import (
        DEFAULT_POLICY,
        DEFAULT_WEIGHT,
        NAMED_QUEUES,
        ORDERS,
        POLICY_NAMES,
        RESTART_BASE_S,
    )

    queues = ", ".join(NAMED_QUEUES)
    p = subparsers.add_parser(
        "allocate", help="place a job queue on a GPU cluster, simulate JCT and makespan",
        description="Predict every job on every GPU type in one batch, place jobs with a "
                    "policy (seed 001 Alg. 1-2), order each GPU's queue, simulate on ground "
                    "truth, write plan, metrics and plots.")
    p.add_argument("--jobs", required=True,
                   help=f"queue file (.csv/.json), a job trace with arrival times (Gavel's "
                        f"7- or 10-field .trace), or one of: {queues}")
    p.add_argument("--max-jobs", type=int, default=None,
                   help="of a trace, keep the first N single-GPU jobs (default: all)")
    p.add_argument("--cluster", required=True,
                   help="TYPE:COUNT,... e.g. gtx1080:1,rtx2070:1, or a cluster TOML file")
    p.add_argument("--policy", default=DEFAULT_POLICY,
                   help=f"one or a comma list of {', '.join(POLICY_NAMES)}, or 'all' "
                        f"(default: %(default)s)")
    p.add_argument("--order", default="fifo",
                   help=f"one or a comma list of {', '.join(ORDERS)} (default: %(default)s)")
    p.add_argument("--preempt", action="store_true",
                   help="online policy: a waiting job may stop a running one, which pays a "
                        "checkpoint-restart cost when it starts again (default: never)")
    p.add_argument("--restart-s", type=float, default=None,
                   help="checkpoint-restart cost in seconds, every job and GPU type "
                        "(default: from model size and the device's bandwidths)")
    p.add_argument("--restart-base-s", type=float, default=RESTART_BASE_S,
                   help="the part of the restart cost that does not scale with the model "
                        "(default: %(default)s s)")
    p.add_argument("--mix-weight", type=float, default=DEFAULT_WEIGHT,
                   help="mix policy: weight of average JCT against makespan, 0-1 "
                        "(default: %(default)s)")
    p.add_argument("--resources", default="all",
                   help="Eq. 2 resource set: all, a comma list, or -RES to drop one")
    _model_args(p)
    p.add_argument("--truth", default=None,
                   help="ground truth: a datasets folder (e.g. datasets/emulated), a table "
                        "(.csv/.parquet: job_id or job_type, device, exec_time_s or "
                        "steps_per_s) or Gavel's simulation_throughputs.json; without it the "
                        "simulation replays the predicted times")
    p.add_argument("--estimates", default=None,
                   help="for a trace: a table of the same format the policies plan with "
                        "(default: the truth itself)")
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
    add_catalog_option(p)
    p.set_defaults(func=_allocate)

    t = subparsers.add_parser(
        "tjng", help="export t_jng tables and a reference-scheduler instance",
        description="Execution time of every job on every node type with g = 1..G GPUs "
                    "(predicted one-GPU time scaled by the emulator's multi-GPU model, "
                    "measured where available) and price, as gpuscope's t_jng table and the "
                    "reference scheduler's instance folder (seed 002 Sec. 4.1).")
    t.add_argument("--jobs", required=True, help=f"queue file (.csv/.json) or one of: {queues}")
    t.add_argument("--cluster", required=True, help="TYPE:G,... e.g. v100:8,a100:8")
    _model_args(t)
    t.add_argument("--truth", default=None, help="datasets folder with measured labels")
    t.add_argument("--nodes", type=int, default=None, help="nodes in tNodes.csv (default: types)")
    t.add_argument("--seed", type=int, default=0, help="seed of generated due dates/weights")
    t.add_argument("--steps-per-epoch", type=int, default=None,
                   help="epoch length of the named queues (default: full epochs)")
    t.add_argument("-o", "--out", required=True, help="output folder")
    add_catalog_option(t)
    t.set_defaults(func=_tjng)


def _model_args(p: argparse.ArgumentParser) -> None:
    from gpuscope.allocator.names import DEFAULT_MODEL_DIR

    p.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR),
                   help="checkpoint folder: <device>.pt per GPU type (default: the bundled "
                        "checkpoints)")
    p.add_argument("--model", action="append", default=[], metavar="DEVICE=PATH",
                   help="this GPU type's checkpoint instead of <model-dir>/<device>.pt "
                        "(repeatable), e.g. my-gpu=models/my-gpu.pt")
    p.add_argument("--model-multi", metavar="PATH",
                   help="multi-device checkpoint for GPU types without their own (default: "
                        "<model-dir>/multi.pt, else the bundled multi.pt)")


def _models(args: argparse.Namespace) -> ModelSet:
    """The checkpoints of ``--model-dir``, ``--model DEVICE=PATH`` and ``--model-multi``."""
    from gpuscope.allocator.predict import ModelSet
    from gpuscope.predictor.checkpoint import resolve_checkpoint

    over = []
    for item in args.model:
        dev, sep, path = item.partition("=")
        if not sep or not dev.strip() or not path.strip():
            raise InputError(f"--model {item!r}: expected DEVICE=PATH, e.g. my-gpu=models/my-gpu.pt")
        over.append((dev.strip().lower(), resolve_checkpoint(path.strip())))
    multi = resolve_checkpoint(args.model_multi) if args.model_multi else None
    return ModelSet(Path(args.model_dir), tuple(over), multi)


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
    from gpuscope.allocator.names import ORDERS
    from gpuscope.allocator.policies import POLICIES
    from gpuscope.allocator.trace import is_trace_file
    from gpuscope.cluster.counts import ClusterSpec
    from gpuscope.core.data import external_file

    for name in ("jobs", "truth", "estimates"):  # Gavel's files by name, from any folder
        if getattr(args, name) is not None:
            setattr(args, name, str(external_file(getattr(args, name))))
    cluster = ClusterSpec.from_arg(args.cluster)
    inputs = [args.jobs, args.cluster, args.truth, args.model_dir, args.estimates]
    check_output_folder(args.out, "allocate", inputs)
    _check_truth(args.truth)
    _check_numbers(args)
    trace = is_trace_file(args.jobs)
    if trace and args.truth is None:
        raise InputError(f"--jobs {args.jobs} is a job trace: give its truth with --truth "
                         "(a table or Gavel's simulation_throughputs.json)")
    if args.estimates is not None and not trace:
        raise InputError("--estimates goes with a job trace (a queue is planned on the "
                         "checkpoints' predictions)")
    if args.submit:
        from gpuscope.slurm.cli import time_scale

        time_scale(args.time_scale)
    policies = _split(args.policy, tuple(POLICIES), "policy")
    orders = _split(args.order, ORDERS, "order")
    if args.order == "all":
        orders = [o for o in orders if o != "plan"]
    if args.submit and (len(policies) > 1 or len(orders) > 1 or args.policy == "all"):
        raise InputError("--submit runs one plan: give one --policy and one --order")
    if not args.submit and (getattr(args, "dry_workload", False) or getattr(args, "command", None)):
        raise InputError("--dry-workload and --command go with --submit slurm")
    if args.preempt and not any(POLICIES[p].online for p in policies):
        raise InputError("--preempt needs the online policy: --policy ect-online")
    resources = parse_resources(args.resources)
    oracles = [p for p in policies if p.startswith("oracle")]
    if args.truth is None and oracles:
        if args.policy != "all":
            raise InputError(f"policy {oracles[0]} needs ground truth: give --truth")
        policies = [p for p in policies if p not in oracles]
    if trace:
        policies = [p for p in policies if POLICIES[p].reads in ("pred", "truth", "any")]
        if args.policy == "all":  # a trace has no utilisation predictions
            policies = [p for p in policies if p != "comp-eff"]
        elif "comp-eff" in policies:
            raise InputError("policy comp-eff needs predicted utilisations, which a trace "
                             "lacks: use ect, exec-time, makespan, mix or ect-online")
    elif args.policy == "all":
        policies = [p for p in policies if p != "driple" or _has_driple(args, cluster)]

    from gpuscope.allocator.inputs import check_devices, load_job_columns, prepare, prepare_trace
    from gpuscope.allocator.report import write_allocation
    from gpuscope.jobs.queue import check_sources

    cols = None
    if trace:
        from gpuscope.allocator.trace import read_trace

        inp = prepare_trace(read_trace(args.jobs, max_jobs=args.max_jobs), cluster,
                            args.truth, args.estimates)
    else:
        check_devices(cluster)
        cols = load_job_columns(args.jobs, _steps(args, cluster))  # distinct jobs + row arrays
        check_sources(cols, args.jobs)  # model files and factories, before torch loads
        phase(f"predicting {len(cols):,} jobs ({len(cols.distinct):,} distinct) on "
              f"{len(cluster.devices)} GPU types")
        inp = prepare(cols, cluster, _models(args), args.truth, policies)
    _restart(args, inp)
    phase(f"placing and simulating {inp.n_jobs:,} jobs: {len(policies)} policies x "
          f"{len(orders)} orders")
    with output_folder(args.out, "allocate", inputs) as tmp:
        summary = write_allocation(inp, policies, orders, resources, tmp, seed=args.seed,
                                   weights={"jct": args.mix_weight}, preempt=args.preempt)
    print(summary)
    for note in inp.notes:
        sys.stderr.write(note + "\n")
    if args.submit == "slurm":
        from gpuscope.cluster.counts import is_cluster_file
        from gpuscope.slurm.cli import submitted_line, time_scale
        from gpuscope.slurm.submit import submit

        is_file = is_cluster_file(args.cluster)
        sub, meta = submit(Path(args.out) / f"plan_{policies[0]}_{orders[0]}.csv", args.out,
                           cluster=args.cluster if is_file else None,
                           state_dir=args.slurm_state_dir, dry_workload=args.dry_workload,
                           time_scale=time_scale(args.time_scale), command=args.command,
                           jobs={} if cols is None else {str(j.job_id): j for j in cols.rows()})
        print(submitted_line(sub, meta, args.out))
    return 0


def _check_truth(truth: str | None) -> None:
    """A given ``--truth`` must be an existing folder or truth table (a typo is never
    ignored)."""
    from gpuscope.allocator.truth_table import TABLE_SUFFIXES, is_truth_table

    if truth is None:
        return
    p = Path(truth)
    if not p.exists():
        raise InputError(f"--truth {truth}: no such folder or file")
    if not p.is_dir() and not is_truth_table(p):
        raise InputError(f"--truth {truth}: not a datasets folder nor a truth table "
                         f"({', '.join(TABLE_SUFFIXES)})")


def _check_numbers(args: argparse.Namespace) -> None:
    if args.max_jobs is not None and args.max_jobs < 1:
        raise InputError(f"--max-jobs must be >= 1, got {args.max_jobs}")
    if not 0.0 <= args.mix_weight <= 1.0:
        raise InputError(f"--mix-weight must lie in [0, 1], got {args.mix_weight}")
    for name in ("restart_s", "restart_base_s"):
        v = getattr(args, name)
        if v is not None and not (v >= 0 and v < float("inf")):
            raise InputError(f"--{name.replace('_', '-')} must be a number >= 0, got {v}")


def _restart(args: argparse.Namespace, inp: AllocationInputs) -> None:
    """The checkpoint-restart costs of ``--preempt``: the flag's number, else the model-size
    formula (:mod:`gpuscope.allocator.restart`) with ``--restart-base-s``."""
    import numpy as np

    from gpuscope.allocator.names import RESTART_BASE_S
    from gpuscope.allocator.restart import restart_seconds

    shape = (inp.n_jobs, len(inp.cluster.devices))
    if args.restart_s is not None:
        inp.restart_s = np.full(shape, float(args.restart_s))
    elif inp.restart_s is None:  # a queue: model sizes unknown here, the base cost only
        inp.restart_s = restart_seconds(np.zeros(shape[0]), inp.cluster, args.restart_base_s)
    elif args.restart_base_s != RESTART_BASE_S:
        inp.restart_s = inp.restart_s + (args.restart_base_s - RESTART_BASE_S)


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
    from gpuscope.allocator.inputs import check_devices, graph_source, load_jobs
    from gpuscope.allocator.predict import check_checkpoints, domain_warning, predict_queue
    from gpuscope.allocator.tjng_export import export_tjng, one_gpu_times
    from gpuscope.allocator.truth import labels_path, load_truth
    from gpuscope.cluster.counts import ClusterSpec
    from gpuscope.jobs.queue import check_sources

    cluster = ClusterSpec.from_arg(args.cluster)
    if args.nodes is not None and args.nodes < 1:
        raise InputError(f"--nodes must be >= 1, got {args.nodes}")
    inputs = [args.jobs, args.cluster, args.truth, args.model_dir]
    check_output_folder(args.out, "tjng", inputs)
    _check_truth(args.truth)
    check_devices(cluster)
    models = _models(args)
    check_checkpoints(models, cluster.devices)
    jobs = load_jobs(args.jobs, _steps(args, cluster))
    check_sources(jobs, args.jobs)  # model files and factories, before torch loads
    # the instance offers every g' <= g on a VM type of g GPUs (seed 002's t_jvg):
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
    phase(f"predicting {len(jobs):,} jobs on {len(cluster.devices)} GPU types")
    pred = predict_queue(jobs, cluster.devices, models, datasets=graph_source(args.truth))
    notes = [models.fallback_note(cluster.devices), domain_warning(pred)]
    phase(f"exporting t_jng for g = 1..{max(cluster.counts)} GPUs per node type")
    one = one_gpu_times(jobs, cluster, pred, truth, pred_source=f"predicted:{args.model_dir}")
    with output_folder(args.out, "tjng", inputs) as tmp:
        tj, inst, dropped = export_tjng(jobs, cluster, one, tmp, n_nodes=args.nodes,
                                        seed=args.seed)
        write_text(tmp / "tjng_meta.json", json.dumps({
            "cluster": str(cluster), "jobs": len(jobs), "rows": len(tj),
            "dropped_fit_nowhere": dropped, "seed": args.seed,
            "sources": sorted(set(tj["source"])),
        }, indent=1) + "\n", check=False)
    out = Path(args.out)
    print(f"t_jng: {len(tj)} rows for {tj['job_id'].nunique()} jobs on {str(cluster)} "
          f"-> {out / 'tjng.csv'}, instance -> {out / 'instance'}"
          + (f"; {len(dropped)} job(s) fit no node type" if dropped else ""))
    for note in notes:
        if note:
            sys.stderr.write(note + "\n")
    return 0
