"""Total cost and percentage cost reduction (seed 002 Eq. 3) of RG and PR against FIFO, EDF
and PS, on generated AlexNet instances (seed 002 §4.1), against the seeds' figures:
PR vs EDF 23–97 % on average (seed 002 §4.3), RG vs first-principle methods 30–62 %
(seed 000 §V-B).

Full grid of issue 7 (N = 10, 20, 50, 100; three instance seeds; exponential, high, low):

    .venv/bin/python benchmarks/schedulers_costs.py --nodes 10 20 50 100 --seeds 0 1 2 \\
        --arrivals exponential high low --out docs/schedulers_costs_full.csv

The committed table (docs/schedulers_costs.csv, docs/schedulers.md) is a reduced grid; the
exact command is in docs/schedulers.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from gpuscope.schedulers.experiments import reductions, run_grid


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[10, 20])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--arrivals", nargs="+", default=["exponential", "high", "low"])
    ap.add_argument("--source", default="alexnet")
    ap.add_argument("--out", default="docs/schedulers_costs.csv")
    args = ap.parse_args()
    runs = run_grid(args.nodes, args.seeds, args.arrivals, source=args.source)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    runs.to_csv(args.out, index=False, float_format="%.4f")
    pd.set_option("display.width", 160)
    mean_cost = runs.pivot_table(index=["N", "arrivals"], columns="method", values="total_cost")
    print("mean total cost over instance seeds ($, emulated: simulation over measured t_jng):")
    print(mean_cost.round(1).to_string())
    for ref, target in (("pr", "PR vs EDF: seed 002 reports 23-97 % on average"),
                        ("rg", "RG vs FIFO/EDF/PS: seed 000 reports 30-62 % on average")):
        red = reductions(runs, ref)
        red = red[red.vs.isin(["fifo", "edf", "ps"])]
        print(f"\n% cost reduction of {ref.upper()} (Eq. 3), mean [min, max] over seeds -- {target}")
        red["cell"] = red.apply(lambda r: f"{r['mean']:.1f} [{r['min']:.1f}, {r['max']:.1f}]", axis=1)
        print(red.pivot_table(index=["N", "arrivals"], columns="vs", values="cell", aggfunc="first").to_string())
    print(f"\nCPU seconds per simulation (median by method): "
          f"{runs.groupby('method').cpu_s.median().round(2).to_dict()}")
    print(f"runs written to {args.out}")


if __name__ == "__main__":
    main()
