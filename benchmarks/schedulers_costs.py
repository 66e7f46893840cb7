"""Total cost and percentage cost reduction (seed 002 Eq. 3) of RG and PR against FIFO, EDF
and PS, on generated AlexNet instances (seed 002 §4.1), against the seeds' figures:
PR vs EDF 23–97 % on average (seed 002 §4.3), RG vs first-principle methods 30–62 %
(seed 000 §V-B).

Full grid (N = 10, 20, 50, 100; three instance seeds; exponential, high, low):

    .venv/bin/python benchmarks/schedulers_costs.py --nodes 10 20 50 100 --seeds 0 1 2 \\
        --arrivals exponential high low --out results/schedulers_costs_full.csv

The committed tables (results/schedulers_costs.csv, results/schedulers_costs_andreas.csv) are the
grid stated in docs/schedulers.md; print their tables without rerunning:

    .venv/bin/python benchmarks/schedulers_costs.py --table results/schedulers_costs.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from gpuscope.schedulers.names import METHODS
from gpuscope.schedulers.reproduce import PR_EQ1, reductions, run_grid


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[10, 20])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--arrivals", nargs="+", default=["exponential", "high", "low"])
    ap.add_argument("--source", default="alexnet")
    ap.add_argument("--methods", nargs="+", default=[*METHODS, PR_EQ1],
                    help=f"default: all of {', '.join(METHODS)} and {PR_EQ1} (paper-literal PR)")
    ap.add_argument("--out", default="results/schedulers_costs.csv")
    ap.add_argument("--table", nargs="+", default=None,
                    help="only print the tables of these CSVs (concatenated), run nothing")
    args = ap.parse_args()
    if args.table:
        runs = pd.concat([pd.read_csv(f) for f in args.table], ignore_index=True)
    else:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        runs = run_grid(args.nodes, args.seeds, args.arrivals, methods=args.methods,
                        source=args.source, out=args.out)
    pd.set_option("display.width", 160)
    mean_cost = runs.pivot_table(index=["N", "arrivals"], columns="method", values="total_cost")
    print("mean total cost over instance seeds ($, emulated: simulation over measured t_jng):")
    print(mean_cost.round(1).to_string())
    for ref, target in (("pr", "PR vs EDF: seed 002 reports 23-97 % on average"),
                        ("pr-eq1", "paper-literal PR (Eq. 1) vs EDF: seed 002 reports 23-97 %"),
                        ("rg", "RG vs FIFO/EDF/PS: seed 000 reports 30-62 % on average")):
        if ref not in set(runs.method):
            continue
        red = reductions(runs, ref)
        red = red[red.vs.isin(["fifo", "edf", "ps"])].dropna(subset=["mean"])
        print(f"\n% cost reduction of {ref.upper()} (Eq. 3), mean [min, max] over seeds -- {target}")
        red["cell"] = red.apply(lambda r: f"{r['mean']:.1f} [{r['min']:.1f}, {r['max']:.1f}]", axis=1)
        print(red.pivot_table(index=["N", "arrivals"], columns="vs", values="cell", aggfunc="first").to_string())
    print(f"\nCPU seconds per simulation (median by method): "
          f"{runs.groupby('method').cpu_s.median().round(2).to_dict()}")
    if "pr-eq1" in set(runs.method):
        wide = runs.pivot_table(index=["N", "arrivals", "seed"], columns="method", values="total_cost")
        d = (100 * (wide["pr-eq1"] - wide["pr"]) / wide["pr-eq1"]).groupby(level=[0, 1]).mean()
        print("\n% cost reduction of PR (P1a selection, default) vs paper-literal PR (Eq. 1), mean:")
        print(d.dropna().round(1).to_string())
    for ref in ("pr", "pr-eq1"):
        if ref in set(runs.method) and "rg" in set(runs.method):
            wide = runs.pivot_table(index=["N", "arrivals", "seed"], columns="method", values="total_cost")
            d = (100 * (wide["rg"] - wide[ref]) / wide["rg"]).groupby(level=[0, 1]).agg(["mean", "min", "max"])
            print(f"\n% cost reduction of {ref} vs RG, mean [min, max] over seeds:")
            print(d.dropna().round(1).to_string())
    if not args.table:
        print(f"runs written to {args.out}")


if __name__ == "__main__":
    main()
