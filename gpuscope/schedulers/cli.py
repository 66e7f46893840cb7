"""``gpuscope schedule``: run a scheduling method on an instance folder, or generate one.

    gpuscope schedule --instance DIR --method fifo|edf|ps|greedy|rg|pr --seed 1 -o out/
    gpuscope schedule generate --source alexnet|andreas|gavel|TJNG.csv --nodes N --seed S \\
        --arrivals exponential|high|low|mixed -o DIR
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from gpuscope.core.errors import InputError
from gpuscope.core.io import check_output_folder, output_folder
from gpuscope.core.limits import pos_float_or_inf, pos_int


def _run(args: argparse.Namespace) -> int:
    from gpuscope.schedulers.methods import make_method
    from gpuscope.schedulers.model import load_problem
    from gpuscope.schedulers.results import write_results
    from gpuscope.schedulers.simulate import simulate

    if args.instance is None:
        raise InputError("give --instance DIR (or use 'gpuscope schedule generate')")
    if args.output is None:
        raise InputError("give -o/--output OUT")
    if args.max_it is not None and args.max_it < 1:
        raise InputError(f"--max-it must be >= 1, got {args.max_it}")
    check_output_folder(args.output, "schedule", [args.instance], what="results folder")
    p = load_problem(args.instance)
    over = {k: v for k, v in (("placement", args.placement), ("interval", args.interval),
                              ("H", args.horizon)) if v is not None}
    if over:  # the folder's parameters, with the command line's overrides
        p = load_problem(args.instance, replace(p.params, **over))
    kw = {"max_it_rg": args.max_it} if args.max_it else {}
    kw["pr_objective"] = args.pr_objective
    kw["proxy"] = args.proxy
    kw["candidates"] = args.candidates
    kw["repack"] = args.repack
    res = simulate(p, make_method(args.method, seed=args.seed, **kw), progress=not args.quiet,
                   full_log=args.full_log)
    with output_folder(args.output, "schedule", [args.instance], what="results folder") as tmp:
        write_results(res, tmp, {"instance": str(args.instance), "seed": args.seed,
                                 "tjng_source": p.params.tjng_source,
                                 "method_name": args.method, "pr_objective": args.pr_objective,
                                 "proxy": args.proxy, "candidates": args.candidates or 1,
                                 "repack": args.repack is not False,
                                 "placement": p.params.placement,
                                 "interval_s": str(p.params.interval), "horizon_s": p.params.H})
    s = res.summary
    print(f"{args.method}: total cost {s['total_cost']:.4f} (execution {s['exec_cost']:.4f}, "
          f"tardiness {s['tardiness_cost']:.4f}), {s['late_jobs']} late jobs, "
          f"{s['rescheduling_points']} rescheduling points, median solve {float(s['solve_s_median']) * 1e3:.2f} ms "
          f"-> {args.output}")
    return 0


def _generate(args: argparse.Namespace) -> int:
    from gpuscope.schedulers.instances import generate
    from gpuscope.schedulers.model import save_problem

    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs must be >= 1, got {args.jobs}")
    check_output_folder(args.output, "schedule generate", [args.source], what="instance folder")
    p = generate(args.source, args.nodes, seed=args.seed, arrivals=args.arrivals, n_jobs=args.jobs)
    with output_folder(args.output, "schedule generate", [args.source],
                       what="instance folder") as tmp:
        save_problem(p, tmp)
    print(f"{p.n_jobs} jobs, {p.n_nodes} nodes, {len(p.vm_names)} node types "
          f"({p.params.cost_model} costs) -> {args.output}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    from gpuscope.schedulers.names import METHODS, PR_OBJECTIVES, PROXIES

    sp = subparsers.add_parser("schedule", help="cost-based online scheduling over t_jng tables (seeds 000, 002)")
    sp.add_argument("--instance", help="reference-format instance folder")
    sp.add_argument("--method", choices=METHODS, default="pr")
    sp.add_argument("--seed", type=int, default=1)
    sp.add_argument("--max-it", type=pos_int, default=None, help="MaxIt_RG (default 1000)")
    sp.add_argument("--pr-objective", choices=PR_OBJECTIVES, default="p1a",
                    help="PR: keep the relinked or the RG solution by the P1a proxy (default), "
                         "or return the relinked one as seed 002's Eq. 1 (eq1)")
    sp.add_argument("--proxy", choices=PROXIES, default="cost",
                    help="RG/PR selection proxy: 'cost' (default: what a solution will cost), "
                         "'reference' (the reference C++'s objective), 'p1a' (seed 002's P1a)")
    sp.add_argument("--candidates", type=pos_int, default=None,
                    help="RG/PR: configurations a randomized construction draws each job's from "
                         "(its N best; default 1, the best only; 3 was the earlier default)")
    sp.add_argument("--repack", action=argparse.BooleanOptionalAction, default=None,
                    help="RG/PR: split part-filled nodes into exactly-filled smaller VMs when the "
                         "proxy prefers it (default on; --no-repack: the earlier behaviour)")
    sp.add_argument("--placement", choices=("largest", "per-job"), default=None,
                    help="node placement: 'largest' (default; the reference's: a new node is the "
                         "largest VM of the job's GPU type, later jobs best-fit into open nodes of "
                         "that GPU type) or 'per-job' (a node of the job's own VM type)")
    sp.add_argument("--interval", type=pos_float_or_inf, default=None,
                    help="periodic rescheduling interval in s (default inf: event-driven, "
                         "arrivals and completions only, as the reference)")
    sp.add_argument("--horizon", type=float, default=None,
                    help="proxy postponement horizon H in s (P1a's T_c + H + M_j - d_j; default 3600)")
    sp.add_argument("--full-log", action="store_true",
                    help="also write schedule.csv, one row per rescheduling point x job "
                         "(the reference's format; grows quadratically with the instance)")
    sp.add_argument("-o", "--output", help="results folder")
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
    sp.set_defaults(func=_run)
    sub = sp.add_subparsers(dest="schedule_command", metavar="generate")
    g = sub.add_parser("generate", help="random instance as in seed 002 §4.1")
    g.add_argument("--source", default="alexnet", help="alexnet, andreas, gavel, or a t_jng .csv/.parquet")
    g.add_argument("--nodes", type=pos_int, required=True)
    g.add_argument("--jobs", type=pos_int, default=None, help="default 10 x nodes")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--arrivals", choices=("exponential", "high", "low", "mixed"), default="exponential")
    g.add_argument("-o", "--output", required=True)
    g.set_defaults(func=_generate)
