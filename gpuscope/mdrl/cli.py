"""``gpuscope mdrl train|eval|fig3|export`` (seed 003 multi-agent DRL allocation)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from gpuscope.cluster.cli import add_catalog_option
from gpuscope.core.errors import InputError
from gpuscope.core.io import (
    check_output,
    check_output_folder,
    output_folder,
    write_table,
    write_text,
)
from gpuscope.core.limits import check_count, check_memory, pos_float, pos_int, unit_float

#: Most jobs in one episode (the state, the queue and the simulator are per job; no size may exhaust memory).
MAX_EPISODE_JOBS: int = 10_000

POLICIES = ("first-fit", "best-fit", "random-fit", "random-pinned")


def _env_flags(p: argparse.ArgumentParser) -> None:
    add_catalog_option(p)
    p.add_argument("--cluster", default="gist-aix",
                   help="cluster TOML file or bundled name (default gist-aix, seed 003 Table 2)")
    p.add_argument("--partitions", default="",
                   help="comma-separated partitions (default: all with flavors)")
    p.add_argument("--jobs", default="5", metavar="N|QUEUE",
                   help="jobs per episode, the last is f (default 5), or a job queue file "
                        "(.csv/.json): its jobs and arrival times make each episode")
    p.add_argument("--iat", type=float, default=6.0,
                   help="mean exponential inter-arrival time in hours; 0 = burst (default 6)")
    p.add_argument("--durations", default="limits", choices=("limits", "fig3", "tjng"),
                   help="job run times: Table 2 limits (default), Fig. 3's 3/7/10/14 d, or "
                        "t_jng from --tjng (gpuscope's extension)")
    p.add_argument("--tjng", default=None, help="t_jng table (gpuscope tjng) for --durations tjng")
    p.add_argument("--arrivals", default="poisson", choices=("poisson", "gavel"),
                   help="poisson (exponential gaps of --iat, default) or the Gavel MSR trace "
                        "(measured arrivals and GPU counts; gpuscope's extension)")
    p.add_argument("--gavel-trace", default=None,
                   help="Gavel MSR trace for --arrivals gavel (default: gavel/msr-traces-seed0/"
                        "6c71a0.trace under $GPUSCOPE_DATA, else ../shared/data)")
    p.add_argument("--state", default="flavor", choices=("paper", "flavor", "full"),
                   help="observation: free GPUs only (paper), + job flavor and queue (flavor, "
                        "default), + release times (full)")
    p.add_argument("--terminal-bonus", type=float, default=0.0,
                   help="extra reward w*U_term on the terminal transition (ours; default 0)")
    p.add_argument("--reward", default="paper", choices=("paper", "terminal"),
                   help="the four rules of seed 003 §5.2 (paper, default) or U_term paid on "
                        "the terminal transition only (terminal; ours)")
    p.add_argument("--f-start", default="ljf", choices=("ljf", "last"),
                   help="the f job starts when the partition is free: ahead of queued jobs "
                        "(ljf, default) or after all earlier jobs started (last, Fig. 3's order)")
    p.add_argument("--mask", default="paper", choices=("paper", "fit"),
                   help="queue action always allowed (paper, default) or only when no server "
                        "has room (fit: the agent picks servers, cannot defer a job)")


def _queue_file(args: argparse.Namespace) -> str | None:
    """The queue file ``--jobs`` names (None for a count)."""
    text = str(args.jobs).strip()
    return None if text.lstrip("+-").isdigit() else text


def _check_jobs(args: argparse.Namespace) -> None:
    """``--jobs``: a count, or a queue file whose jobs make the episodes (``args.queue``)."""
    text = str(args.jobs).strip()
    args.queue = None
    try:
        n = int(text)
    except ValueError:
        from gpuscope.jobs.queue import read_queue

        if args.arrivals != "poisson":
            raise InputError("--jobs QUEUE gives the arrivals: it goes with --arrivals "
                             "poisson (the default), not gavel") from None
        args.queue = tuple(read_queue(text))
        n = len(args.queue)
    if n < 2:
        raise InputError(f"--jobs must be >= 2 (the last job is f), got {n}")
    check_count("--jobs", n, MAX_EPISODE_JOBS)
    args.jobs = n


def _partitions(args: argparse.Namespace) -> tuple[Any, list[Any]]:
    from gpuscope.cluster.config import load_cluster
    from gpuscope.mdrl.simulate import partition_from_cluster

    cl = load_cluster(args.cluster)
    names = [s.strip() for s in args.partitions.split(",") if s.strip()] or \
        [p.name for p in cl.partitions if cl.flavors_in(p.name)]
    if not names:
        raise InputError(f"cluster {cl.name!r} has no partition with flavors")
    return cl, [partition_from_cluster(cl, n) for n in names]


def make_env(args: argparse.Namespace, part: Any) -> Any:
    """The partition environment the flags describe."""
    from gpuscope.mdrl.extensions import GavelEpisodes, TjngDurations, load_gavel_multi
    from gpuscope.mdrl.simulate import DURATIONS, EpisodeSampler
    from gpuscope.mdrl.train import partition_env

    dur: Any
    if args.durations == "tjng":
        if not args.tjng:
            raise InputError("--durations tjng needs --tjng TABLE (made by gpuscope tjng)")
        dur = TjngDurations.from_file(args.tjng)
        dur.calibrate(part)
    else:
        dur = DURATIONS[args.durations]
    if getattr(args, "queue", None):
        from gpuscope.mdrl.extensions import QueueEpisodes

        sampler: Any = QueueEpisodes(part, args.queue, durations=dur)
    elif args.arrivals == "gavel":
        sampler = GavelEpisodes(part, n_jobs=args.jobs, durations=dur,
                                trace=load_gavel_multi(args.gavel_trace))
    else:
        sampler = EpisodeSampler(part, n_jobs=args.jobs, iat_h=args.iat, durations=dur)
    return partition_env(part, sampler, state=args.state, terminal_bonus=args.terminal_bonus,
                         reward=args.reward, f_start=args.f_start, mask=args.mask)


def _train(args: argparse.Namespace) -> int:
    import numpy as np

    from gpuscope.mdrl.agent import DQNConfig
    from gpuscope.mdrl.train import learning_curve_png, plateau_episode, train_agent

    inputs = [args.cluster, args.tjng, _queue_file(args)]
    check_output_folder(args.out, "mdrl train", inputs)
    _check_jobs(args)
    # replay: ~2 observations of <= 1 kB each per transition; network: layers x hidden^2
    # float32 weights with Adam's moments and a target copy
    check_memory(f"--replay {args.replay}", 2048 * args.replay)
    check_memory(f"--hidden {args.hidden} x --layers {args.layers}",
                 16 * args.layers * args.hidden**2 + 16 * args.batch * args.hidden)
    cfg = DQNConfig(hidden=args.hidden, layers=args.layers, lr=args.lr, gamma=args.gamma,
                    eps_start=args.eps_start, eps_end=args.eps_end,
                    eps_episodes=args.eps_episodes, replay=args.replay, batch=args.batch,
                    target_sync=args.target_sync, val_every=args.val_every,
                    val_episodes=args.val_episodes)
    _, parts = _partitions(args)
    envs = [make_env(args, part) for part in parts]  # bad inputs fail before anything is written
    curves: dict[str, list[float]] = {}
    summary = []
    out = Path(args.out)
    with output_folder(out, "mdrl train", inputs) as tmp:
        for part, env in zip(parts, envs):
            res = train_agent(env, args.episodes, cfg, seed=args.seed, progress=not args.quiet,
                              desc=f"train {part.name}")
            res.agent.meta.update(iat_h=args.iat, jobs=args.jobs, durations=args.durations,
                                  arrivals=args.arrivals, cluster=str(args.cluster))
            res.agent.save(tmp / f"{part.name}.pt")
            curves[part.name] = res.u_term
            last = float(np.mean(res.u_term[-100:]))
            dqn, ff = held_out_u_term(env, res.agent, TEST_EPISODES, 10_000 + args.seed)
            summary.append({"partition": part.name, "episodes": args.episodes,
                            "seconds": round(res.seconds, 1), "u_term_last100": round(last, 4),
                            "plateau_episode": plateau_episode(res.u_term),
                            "kept_episode": res.best_episode, "test_u_term_dqn": round(dqn, 4),
                            "test_u_term_first_fit": round(ff, 4)})
        lines = ["partition,episode,u_term\n"] + [f"{name},{i},{u:.6f}\n" for name, c in
                                                   curves.items() for i, u in enumerate(c)]
        write_text(tmp / "train.csv", "".join(lines), what="training curve", check=False)
        learning_curve_png(curves, str(tmp / "learning_curve.png"),
                           f"mDRL DQN U_term (emulated; iat {args.iat} h, seed {args.seed})")
    print(f"{'partition':<10} {'episodes':>8} {'seconds':>8} {'U_term(last100)':>16} "
          f"{'plateau':>8} {'kept':>5} {'test U_term: DQN':>17} {'first-fit':>9}")
    for s in summary:
        print(f"{s['partition']:<10} {s['episodes']:>8} {s['seconds']:>8} "
              f"{s['u_term_last100']:>16.3f} {str(s['plateau_episode']):>8} "
              f"{s['kept_episode']:>5} {s['test_u_term_dqn']:>17.3f} "
              f"{s['test_u_term_first_fit']:>9.3f}")
    print(f"test U_term: mean over {TEST_EPISODES} episodes of seed {10_000 + args.seed} "
          "(mdrl eval's first seed), greedy DQN with the kept weights; emulated")
    print(json.dumps({"out": str(out), "partitions": summary}))
    return 0


#: Episodes of the test figure ``mdrl train`` prints.
TEST_EPISODES = 100


def held_out_u_term(env: Any, agent: Any, n: int, seed: int) -> tuple[float, float]:
    """Mean U_term of the greedy DQN and of first-fit on ``n`` episodes of ``seed`` (the
    episodes ``mdrl eval`` draws for its first seed: disjoint from training's)."""
    import numpy as np

    from gpuscope.mdrl.agent import DQNPolicy
    from gpuscope.mdrl.baselines import FirstFit, run_episode
    from gpuscope.mdrl.train import draw_episodes

    eps = draw_episodes(env, n, seed)
    dqn = DQNPolicy(agent)
    return (float(np.mean([run_episode(env, dqn, e).u_term for e in eps])),
            float(np.mean([run_episode(env, FirstFit(), e).u_term for e in eps])))
def _agent(model: Path, env: Any) -> Any:
    """The DQN agent of checkpoint ``model``, refused when its network does not fit ``env``."""
    from gpuscope.mdrl.agent import DQNAgent

    agent = DQNAgent.load(model)
    if agent.obs_dim != env.obs_dim or agent.n_actions != env.n_actions:
        raise InputError(f"{model} was trained with another --state or partition "
                         f"({agent.obs_dim} inputs, {agent.n_actions} actions; this one has "
                         f"{env.obs_dim}, {env.n_actions})")
    return agent


def _eval(args: argparse.Namespace) -> int:
    import pandas as pd

    from gpuscope.mdrl.train import (
        baseline_factories,
        dqn_factory,
        draw_episodes,
        evaluate,
        summarise,
    )

    if args.out:
        check_output(args.out, [args.cluster, args.tjng, args.model_dir, _queue_file(args)],
                     kind="dir", what="output folder")
    _check_jobs(args)
    _, parts = _partitions(args)
    pols = [p.strip() for p in args.policies.split(",") if p.strip()]
    bad = [p for p in pols if p not in POLICIES]
    if bad:
        raise InputError(f"unknown policy {bad[0]!r}; choose from {', '.join(POLICIES)}")
    frames = []
    for part in parts:
        env = make_env(args, part)
        facs = baseline_factories(pols)
        model = Path(args.model_dir) / f"{part.name}.pt" if args.model_dir else None
        if model is not None:
            facs["dqn"] = dqn_factory(_agent(model, env))
        for seed in range(args.seeds):
            eps = draw_episodes(env, args.episodes, 10_000 + seed)
            df = evaluate(env, facs, eps, seed=seed, oracle=not args.no_oracle,
                          progress=not args.quiet)
            frames.append(df.assign(partition=part.name))
    allr = pd.concat(frames, ignore_index=True)
    for name, g in allr.groupby("partition", sort=False):
        print(f"partition {name} ({args.episodes} episodes x {args.seeds} seeds, iat "
              f"{args.iat} h, emulated)")
        print(summarise(g).round(3).to_string())
    if args.out:
        write_table(allr, Path(args.out) / "eval.csv", what="evaluation")
    return 0


def _fig3(args: argparse.Namespace) -> int:
    from gpuscope.mdrl.baselines import FirstFit, Oracle, run_episode
    from gpuscope.mdrl.env import PartitionEnv
    from gpuscope.mdrl.simulate import EpisodeSampler, fig3_episode

    _, parts = _partitions(args)
    part = parts[0]
    env = PartitionEnv(part, EpisodeSampler(part))
    ep = fig3_episode(part)
    ff = run_episode(env, FirstFit(), ep)
    best, placement = Oracle("u_end").solve(env, ep)
    ff_pl = tuple(ff.placement[j.job_id][0] + 1 for j in ep.jobs[:-1])
    print(f"seed 003 Fig. 3 on partition {part.name} (s, m, m, l, f at days 0, 1, 1, 3, 3.5; "
          f"3/7/10/14 d)")
    print(f"{'policy':<10} {'placement':<14} {'makespan_d':>10} {'U_end':>7} {'U_term':>7}")
    for name, r, pl in (("first-fit", ff, ff_pl), ("oracle", best,
                                                    tuple(p + 1 for p in placement))):
        print(f"{name:<10} {str(pl):<14} {r.makespan_h / 24:>10.1f} {r.u_end:>7.3f} "
              f"{r.u_term:>7.3f}")
    print(f"first-fit makespan {ff.makespan_h / 24:g} d (paper: t1+31 = 32 d), oracle "
          f"{best.makespan_h / 24:g} d (paper: t0+27 = 27 d)")
    return 0


def _export(args: argparse.Namespace) -> int:
    import numpy as np

    from gpuscope.mdrl.agent import DQNPolicy
    from gpuscope.mdrl.baselines import Oracle, make_baseline, run_episode
    from gpuscope.mdrl.export import make_plan, write_plan_files
    from gpuscope.mdrl.simulate import fig3_episode
    from gpuscope.slurm.cli import time_scale

    inputs = [args.cluster, args.tjng, args.model_dir, _queue_file(args)]
    check_output_folder(args.out, "mdrl export", inputs)
    _check_jobs(args)
    time_scale(args.time_scale)
    cl, parts = _partitions(args)
    plans = []
    times: dict[str, tuple[float, float]] = {}  # job_id -> (arrival_h, duration_h), for --submit
    for part in parts:
        env = make_env(args, part)
        ep = fig3_episode(part) if args.episode == "fig3" else \
            env.sampler(np.random.default_rng(args.seed))
        if args.policy == "oracle":
            res, _ = Oracle("u_term").solve(env, ep)
        else:
            if args.policy == "dqn":
                if not args.model_dir:
                    raise InputError("--policy dqn needs --model-dir (from gpuscope mdrl train)")
                pol: Any = DQNPolicy(_agent(Path(args.model_dir) / f"{part.name}.pt", env))
            elif args.policy in POLICIES:
                pol = make_baseline(args.policy, args.seed)
            else:
                raise InputError(f"unknown --policy {args.policy!r}")
            res = run_episode(env, pol, ep)
        plans.append(make_plan(part, ep, res, args.policy))
        times.update({f"{part.name.lower()}-j{j.job_id}": (j.arrival_h, j.duration_h)
                      for j in ep.jobs})
    import pandas as pd

    plan = pd.concat(plans).sort_values(["start_h", "job_id"]).reset_index(drop=True)
    plan["start_order"] = range(1, len(plan) + 1)
    with output_folder(args.out, "mdrl export", inputs) as tmp:
        files = write_plan_files(plan, tmp, args.format, cl, kueue=args.kueue,
                                 image=args.image, command=args.command)
    print(plan[["start_order", "job_id", "partition", "servers", "flavor", "gpus", "cpus",
                "mem_gb", "time_limit_s", "start_h"]].to_string(index=False))
    print(f"wrote {len(files)} files under {args.out}")
    if args.submit == "slurm":
        _submit(args, plan, times)
    return 0


def _submit(args: argparse.Namespace, plan: Any, times: dict[str, tuple[float, float]]) -> None:
    """Run the plan on Slurm (gpuscope.slurm, imported lazily): its servers as --nodelist."""
    from gpuscope.slurm.cli import submitted_line, time_scale
    from gpuscope.slurm.submit import submit

    h = 3600.0
    arrival = plan["job_id"].map(lambda j: times[j][0] * h)
    duration = plan["job_id"].map(lambda j: times[j][1] * h)
    sp = plan.assign(node=plan["servers"], arrival_s=arrival, start_s=plan["start_h"] * h,
                     duration_s=duration, finish_s=plan["start_h"] * h + duration)
    sub, meta = submit(sp, args.out, cluster=args.cluster, state_dir=args.slurm_state_dir,
                       dry_workload=args.dry_workload, time_scale=time_scale(args.time_scale),
                       command=None if args.dry_workload else args.command,
                       plan_name="mdrl_plan")
    print(submitted_line(sub, meta, args.out))


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("mdrl", help="multi-agent DRL allocation on partitions (seed 003)")
    sub = p.add_subparsers(dest="mdrl_command", metavar="ACTION", required=True)

    t = sub.add_parser("train", help="train one DQN agent per partition (Algorithm 1)")
    _env_flags(t)
    t.add_argument("--episodes", type=pos_int, default=1000, help="training episodes (default 1000)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--hidden", type=pos_int, default=64, help="hidden units per layer (default 64)")
    t.add_argument("--layers", type=pos_int, default=2, help="hidden layers (default 2)")
    t.add_argument("--lr", type=pos_float, default=1e-3, help="Adam learning rate (default 1e-3)")
    t.add_argument("--gamma", type=unit_float, default=0.95, help="discount (default 0.95)")
    t.add_argument("--eps-start", type=unit_float, default=1.0, help="initial epsilon (default 1)")
    t.add_argument("--eps-end", type=unit_float, default=0.05, help="final epsilon (default 0.05)")
    t.add_argument("--eps-episodes", type=int, default=300,
                   help="episodes of linear epsilon decay (default 300)")
    t.add_argument("--replay", type=pos_int, default=10_000, help="replay size (default 10000)")
    t.add_argument("--batch", type=pos_int, default=64, help="batch size (default 64)")
    t.add_argument("--target-sync", type=pos_int, default=100,
                   help="gradient steps between target-network syncs (default 100)")
    t.add_argument("--val-every", type=int, default=25,
                   help="episodes between greedy validations; the best weights are kept "
                        "(0: keep the last; default 25)")
    t.add_argument("--val-episodes", type=pos_int, default=50,
                   help="validation episodes (own seed, disjoint from eval's; default 50)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.add_argument("-o", "--out", required=True, help="output folder (checkpoints, curve)")
    t.set_defaults(func=_train)

    e = sub.add_parser("eval", help="compare DQN, baselines and the oracle on test episodes")
    _env_flags(e)
    e.add_argument("--model-dir", default=None, help="folder with <partition>.pt checkpoints")
    e.add_argument("--policies", default=",".join(POLICIES),
                   help=f"baselines (default {','.join(POLICIES)})")
    e.add_argument("--episodes", type=pos_int, default=100, help="test episodes per seed (100)")
    e.add_argument("--seeds", type=pos_int, default=1, help="seeds (default 1)")
    e.add_argument("--no-oracle", action="store_true", help="skip the brute-force oracle")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    e.add_argument("-o", "--out", default=None, help="folder for eval.csv (per episode)")
    e.set_defaults(func=_eval)

    f = sub.add_parser("fig3", help="seed 003 Fig. 3: first-fit vs the best placement")
    f.add_argument("--cluster", default="gist-aix", help="cluster file or bundled name")
    f.add_argument("--partitions", default="A100", help="partition (default A100)")
    add_catalog_option(f)
    f.set_defaults(func=_fig3)

    x = sub.add_parser("export", help="a placement plan as sbatch scripts or Kubernetes Jobs")
    _env_flags(x)
    x.add_argument("--format", choices=("slurm", "k8s"), default="slurm")
    x.add_argument("--kueue", action="store_true",
                   help="also write Kueue ResourceFlavor/ClusterQueue/LocalQueue (k8s)")
    x.add_argument("--policy", default="oracle",
                   help=f"dqn, oracle (default) or one of {', '.join(POLICIES)}")
    x.add_argument("--model-dir", default=None, help="checkpoints for --policy dqn")
    x.add_argument("--episode", default="fig3", choices=("fig3", "random"),
                   help="the Fig. 3 jobs (default) or a random episode drawn with --seed")
    x.add_argument("--seed", type=int, default=0)
    x.add_argument("--image", default=None, help="container image (Singularity .sif for slurm)")
    x.add_argument("--command", default="python train.py", help="the job's command")
    x.add_argument("-o", "--out", required=True, help="output folder")
    x.add_argument("--submit", choices=("slurm",), default=None,
                   help="also run the plan on Slurm (see gpuscope slurm; --command is the job)")
    x.add_argument("--dry-workload", action="store_true",
                   help="--submit: each job sleeps its duration x --time-scale")
    x.add_argument("--time-scale", default="auto",
                   help="--submit --dry-workload: wall s per planned s (auto: makespan -> 60 s)")
    x.add_argument("--slurm-state-dir", default=None,
                   help="--submit: state folder of a `gpuscope slurm up` cluster")
    x.set_defaults(func=_export)
