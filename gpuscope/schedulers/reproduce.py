"""The cost-reduction experiment of seed 002 §4.3 (and seed 000 §V-B): every method on
generated instances, total costs, and the percentage cost reduction of Eq. 3,
``pct = (C_algo − C_ref) / C_algo · 100`` (ref = PR or RG)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from itertools import product
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from gpuscope.schedulers.instances import generate
from gpuscope.schedulers.methods import (
    FirstPrinciple,
    PathRelinking,
    RandomizedGreedy,
    make_method,
)
from gpuscope.schedulers.names import METHODS
from gpuscope.schedulers.simulate import simulate

#: Extra experiment-only method name: Path Relinking with seed 002's Eq. 1 as written.
PR_EQ1 = "pr-eq1"


def _method(name: str, seed: int) -> FirstPrinciple | RandomizedGreedy | PathRelinking:
    if name == PR_EQ1:
        return make_method("pr", seed=seed, pr_objective="eq1")
    return make_method(name, seed=seed)


def run_grid(nodes: Iterable[int], seeds: Iterable[int], arrivals: Iterable[str],
             methods: Iterable[str] = METHODS, source: str = "alexnet", method_seed: int = 1,
             progress: bool = True, out: str | Path | None = None) -> pd.DataFrame:
    """One row per (N, arrivals, instance seed, method): costs, late jobs, CPU seconds.
    ``methods`` may include ``"pr-eq1"`` (paper-literal PR); with ``out`` the rows so far are
    written (CSV) after every instance, so an interrupted grid keeps its finished cells."""
    rows = []
    cells = list(product(nodes, arrivals, seeds))
    methods = list(methods)
    bar = tqdm(total=len(cells) * len(methods), disable=not progress, desc="grid", unit="run")
    for n, arr, seed in cells:
        p = generate(source, n, seed=seed, arrivals=arr)
        for m in methods:
            c = time.process_time()
            s = simulate(p, _method(m, method_seed)).summary
            rows.append({"source": source, "N": n, "J": p.n_jobs, "arrivals": arr, "seed": seed,
                         "method": m, "total_cost": s["total_cost"], "exec_cost": s["exec_cost"],
                         "tardiness_cost": s["tardiness_cost"], "late_jobs": s["late_jobs"],
                         "points": s["rescheduling_points"], "cpu_s": time.process_time() - c})
            bar.update(1)
        if out is not None:
            pd.DataFrame(rows).to_csv(out, index=False, float_format="%.4f")
    bar.close()
    return pd.DataFrame(rows)


def reductions(runs: pd.DataFrame, ref: str = "pr") -> pd.DataFrame:
    """Eq. 3 per instance: reduction of ``ref`` against every other method (%), then the
    mean / min / max over instance seeds per (N, arrivals, method)."""
    key = ["source", "N", "arrivals", "seed"]
    wide = runs.pivot_table(index=key, columns="method", values="total_cost")
    out = []
    for m in wide.columns:
        if m == ref:
            continue
        pct = 100.0 * (wide[m] - wide[ref]) / wide[m]
        out.append(pct.rename("pct").reset_index().assign(vs=m))
    pct = pd.concat(out, ignore_index=True)
    return pct.groupby(["source", "N", "arrivals", "vs"])["pct"].agg(["mean", "min", "max"]).reset_index()
