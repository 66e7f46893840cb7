"""Seed 003 (mDRL) targets: DQN vs the Naïve readings vs a clairvoyant oracle.

    .venv/bin/python benchmarks/mdrl.py [--quick] [--episodes 1000] [--test-episodes 100]
        [--seeds 5] [--iats 0,6,24] [--no-extensions] [--figure results/figures/mdrl_learning_curve.png]

Everything is emulated (a simulation of the GIST AI-X partitions, Table 2 limits as
durations) except the Gavel extension's arrivals (measured trace). For each mean
inter-arrival time: one DQN per seed trained on the A100 partition (the V100 partition has the
same Table 2 structure, so its numbers are identical under limit durations; both partitions are
trained once for the timing target), then 100 test episodes per seed (seeds 10000+s, disjoint
from training) for every policy and the oracle. The DQN configuration is printed; gpuscope's
choices (state ``full``, reward ``terminal``) are labelled as ours. Ends with the line
``mdrl: DQN U_term X vs first-fit Y vs oracle Z (iat 6 h)``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuscope.cluster.config import default_cluster  # noqa: E402
from gpuscope.mdrl.agent import DQNConfig  # noqa: E402
from gpuscope.mdrl.extensions import GavelEpisodes, TjngDurations  # noqa: E402
from gpuscope.mdrl.simulate import (  # noqa: E402
    EpisodeSampler,
    energy_reduction,
    inefficient_energy_mwh,
    partition_from_cluster,
)
from gpuscope.mdrl.train import (  # noqa: E402
    baseline_factories,
    dqn_factory,
    draw_episodes,
    evaluate,
    learning_curve_png,
    partition_env,
    plateau_episode,
    summarise,
    train_agent,
)

NAIVE = ("first-fit", "random-fit", "random-pinned")
BASE = ("first-fit", "best-fit", "random-fit", "random-pinned")
ENV_KW: dict[str, Any] = {"state": "full", "reward": "terminal", "mask": "paper", "f_start": "ljf"}


def _load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _verdict(ok: bool) -> str:
    return "MET" if ok else "MISSED"


def run_iat(part, iat: float, args: argparse.Namespace, cfg: DQNConfig,
            env_kw: dict) -> tuple[pd.DataFrame, dict[int, list[float]]]:
    env = partition_env(part, EpisodeSampler(part, iat_h=iat), **env_kw)
    frames, curves = [], {}
    for seed in range(args.seeds):
        res = train_agent(env, args.episodes, cfg, seed=seed, progress=True,
                          desc=f"iat {iat:g} h seed {seed}")
        curves[seed] = res.u_term
        print(f"iat {iat:g} h seed {seed}: {res.seconds:.0f} s, kept the weights of episode "
              f"{res.best_episode} (validation U_term {max(v for _, v in res.val):.3f})"
              if res.val else f"iat {iat:g} h seed {seed}: {res.seconds:.0f} s")
        eps = draw_episodes(env, args.test_episodes, 10_000 + seed)
        pols = {**baseline_factories(BASE), "dqn": dqn_factory(res.agent)}
        frames.append(evaluate(env, pols, eps, seed=seed))
    return pd.concat(frames, ignore_index=True), curves


def report_iat(iat: float, df: pd.DataFrame, curves: dict[int, list[float]]) -> dict:
    per_seed = df.groupby(["policy", "seed"])["u_term"].mean().unstack()
    s = summarise(df)
    s.insert(1, "u_term_sd_seeds", per_seed.std(axis=1, ddof=0).reindex(s.index))
    print(f"\n== iat {iat:g} h: {df['episode'].nunique()} test episodes x "
          f"{df['seed'].nunique()} seeds (emulated) ==")
    print(s.round(3).to_string())
    u = s["u_term"]
    dqn, ff, rp, orc = u["dqn"], u["first-fit"], u["random-pinned"], u["oracle"]
    plateaus = [plateau_episode(c) for c in curves.values()]
    print(f"targets: DQN >= first-fit - 0.005: {dqn:.3f} vs {ff:.3f} {_verdict(dqn >= ff - 0.005)}"
          f"; DQN >= random-pinned + 0.04: {dqn:.3f} vs {rp + 0.04:.3f} "
          f"{_verdict(dqn >= rp + 0.04)}; within 0.03 of oracle: gap {orc - dqn:+.3f} "
          f"{_verdict(orc - dqn <= 0.03)} (moonshot 0.01: {_verdict(orc - dqn <= 0.01)})")
    print(f"learning-curve plateau episode per seed (100-episode means within 0.02 of the "
          f"final level): {plateaus} -> by 400: "
          f"{_verdict(all(p is not None and p <= 400 for p in plateaus))}")
    return {"s": s, "plateaus": plateaus}


def paper_comparison(s: pd.DataFrame, cl) -> None:
    u = s["u_term"]
    print("\n== paper (seed 003) vs ours, iat 6 h ==")
    print(f"U proposed: paper > 0.75 (Fig. 6), ours DQN {u['dqn']:.3f} -> "
          f"{_verdict(u['dqn'] > 0.75)}; oracle {u['oracle']:.3f} (an upper bound for pinned "
          f"placement: > 0.75 is reachable only with near-burst arrivals)")
    print(f"U Naive: paper ~0.62, ours first-fit {u['first-fit']:.3f}, random-fit "
          f"{u['random-fit']:.3f}, random-pinned {u['random-pinned']:.3f}")
    for name in NAIVE:
        mk = 1 - s.loc["dqn", "makespan_h"] / s.loc[name, "makespan_h"]
        tt = 1 - s.loc["dqn", "t_term_h"] / s.loc[name, "t_term_h"]
        er = energy_reduction(u[name], u["dqn"])
        print(f"reduction vs {name:<13}: makespan {mk:+.1%}, time to terminal {tt:+.1%} (paper ~20 %: "
              f"{_verdict(max(mk, tt) >= 0.15)}); inefficient energy {er:+.1%} (paper ~40 %: "
              f"{_verdict(er >= 0.3)}); A100 {inefficient_energy_mwh(u[name], 13):.2f} -> "
              f"{inefficient_energy_mwh(u['dqn'], 13):.2f} MWh, V100 "
              f"{inefficient_energy_mwh(u[name], cl.partition_power_kw('V100')):.2f} -> "
              f"{inefficient_energy_mwh(u['dqn'], cl.partition_power_kw('V100')):.2f} MWh")
    d = s["deferred"]
    print(f"jobs deferred behind the terminal f job per episode: DQN {d['dqn']:.2f}, oracle "
          f"{d['oracle']:.2f}, first-fit {d['first-fit']:.2f}: the DQN's U_term gain over "
          f"first-fit comes with U_end {s.loc['dqn', 'u_end']:.3f} vs "
          f"{s.loc['first-fit', 'u_end']:.3f} (U_term counts only jobs started before f)")
    print("why: the paper's 0.75 vs 0.62 gap (0.13) exceeds the oracle-vs-random-pinned gap in "
          "every arrival setting here; on a 2-server partition the DQN gains over first-fit "
          "mainly by deferring jobs behind f (see 'deferred'), not by packing, so makespan "
          "and U_end do not improve; the paper's run-time and energy figures follow from its "
          "larger U gap.")


def timing(cl, args: argparse.Namespace, cfg: DQNConfig) -> None:
    t0 = time.perf_counter()
    for name in ("A100", "V100"):
        part = partition_from_cluster(cl, name)
        env = partition_env(part, EpisodeSampler(part, iat_h=6.0), **ENV_KW)
        train_agent(env, args.episodes, cfg, seed=0, progress=True, desc=f"timing {name}")
    dt = time.perf_counter() - t0
    print(f"\ntraining {args.episodes} episodes x 5 jobs on A100 + V100: {dt:.0f} s "
          f"({_load()}; target <= 600 s on 2 cores: {_verdict(dt <= 600)})")


def extensions(cl, args: argparse.Namespace, cfg: DQNConfig) -> None:
    print("\n== gpuscope extensions (ours) ==")
    part = partition_from_cluster(cl, "A100")
    env = partition_env(part, GavelEpisodes(part), **ENV_KW)
    agent = train_agent(env, args.episodes, cfg, seed=0, progress=True, desc="gavel").agent
    eps = draw_episodes(env, args.test_episodes, 10_000)
    s = summarise(evaluate(env, {**baseline_factories(["first-fit"]),
                                 "dqn": dqn_factory(agent)}, eps))
    print(f"Gavel MSR arrivals (measured) + Table 2 limits: U_term DQN {s.loc['dqn', 'u_term']:.3f}"
          f" vs first-fit {s.loc['first-fit', 'u_term']:.3f} vs oracle "
          f"{s.loc['oracle', 'u_term']:.3f}")
    from gpuscope.cli import main as gpuscope_main

    with tempfile.TemporaryDirectory() as tmp:
        rc = gpuscope_main(["tjng", "--jobs", "table4", "--cluster", "a100:16,v100:16",
                            "-o", tmp])
        if rc != 0:
            print("t_jng extension skipped: gpuscope tjng failed")
            return
        table = pd.read_csv(Path(tmp) / "tjng.csv")
    for name in ("A100", "V100"):
        part = partition_from_cluster(cl, name)
        dur = TjngDurations(table)
        dur.calibrate(partition_from_cluster(cl, "A100"))  # one scale: A100 is the reference
        env = partition_env(part, EpisodeSampler(part, iat_h=6.0, durations=dur), **ENV_KW)
        agent = train_agent(env, args.episodes, cfg, seed=0, progress=True,
                            desc=f"tjng {name}").agent
        eps = draw_episodes(env, args.test_episodes, 10_000)
        mean_d = np.mean([j.duration_h for e in eps for j in e.jobs])
        s = summarise(evaluate(env, {**baseline_factories(["first-fit"]),
                                     "dqn": dqn_factory(agent)}, eps))
        print(f"t_jng durations (emulated/predicted, table4 jobs) on {name}: mean job "
              f"{mean_d:.0f} h; U_term DQN {s.loc['dqn', 'u_term']:.3f} vs first-fit "
              f"{s.loc['first-fit', 'u_term']:.3f} vs oracle {s.loc['oracle', 'u_term']:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="300 episodes, 2 seeds, 30 test episodes, iat 6 h only")
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--test-episodes", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--iats", default="0,6,24")
    ap.add_argument("--no-extensions", action="store_true")
    ap.add_argument("--figure", default=str(ROOT / "results" / "figures" / "mdrl_learning_curve.png"))
    args = ap.parse_args()
    if args.quick:
        args.episodes, args.seeds, args.test_episodes, args.iats = 300, 2, 30, "6"
    import torch

    torch.set_num_threads(1)
    cfg = DQNConfig(gamma=1.0)
    print(f"DQN: {cfg} ; env {ENV_KW} (state full and reward terminal are gpuscope's; "
          f"mask paper = the queue action is always allowed, as in the paper)")
    cl = default_cluster()
    part = partition_from_cluster(cl, "A100")
    iats = [float(x) for x in args.iats.split(",")]
    results = {}
    for iat in iats:
        df, curves = run_iat(part, iat, args, cfg, ENV_KW)
        results[iat] = report_iat(iat, df, curves)
        if iat == 6.0 and not args.quick:
            learning_curve_png({f"seed {k}": v for k, v in curves.items()}, args.figure,
                               f"mDRL DQN on A100, iat 6 h (emulated), {len(curves)} seeds",
                               {k: float(results[iat]["s"].loc[k, "u_term"])
                                for k in ("first-fit", "random-pinned", "oracle")})
            print(f"learning curve -> {args.figure}")
    head = results.get(6.0) or results[iats[0]]
    paper_comparison(head["s"], cl)
    if not args.quick:
        timing(cl, args, cfg)
    if not args.no_extensions and not args.quick:
        extensions(cl, args, cfg)
    u = head["s"]["u_term"]
    iat_h = 6.0 if 6.0 in results else iats[0]
    print(f"mdrl: DQN U_term {u['dqn']:.3f} vs first-fit {u['first-fit']:.3f} vs oracle "
          f"{u['oracle']:.3f} (iat {iat_h:g} h)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
