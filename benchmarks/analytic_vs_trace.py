"""Analytic labels against the labels of the emulated traces (noise-floor targets).

For each run of the bundled campaigns (seed 001 Tables 3 and 4) on each device: the labels
the profiling stage's labeler computes from the synthesised trace (noise seeds 0 and 1) and
the closed-form labels of ``gpuscope.predictor.physics.analytic`` (with the trace's sensor
noise and expected stalls, as the predictor's physics features use them) and the analytic
execution time (``physics.compose_exec`` with no correction), on the ``ok`` runs (the rows
the predictor is scored on, ``v2data.PhysicsData.Y``). Per target: nMSE(analytic, seed
0) next to the label noise floor nMSE(seed 0, seed 1) (min-max space of the seed-0 labels).
An exact closed form gets about half the floor (the floor counts two seeds' noise, the
analytic label none). ``--worst N`` lists the N runs that contribute most per target. Usage:

    python benchmarks/analytic_vs_trace.py [--devices titanx,gtx1080,h100] [--limit N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from gpuscope.cluster.devices import get_device
from gpuscope.core.targets import TARGETS
from gpuscope.emulator import default_params, estimate, synth_trace
from gpuscope.emulator.runs import run_meta
from gpuscope.emulator.traces import PERIOD_S, effective_period
from gpuscope.predictor.physics.features import FeatureBuilder, analytic_features, label_features
from gpuscope.profiling import label_trace, load_campaign

CAMPAIGNS = ("campaigns/emulated-table3.toml", "campaigns/emulated-table4.toml")


def rows_for(device: str, jobs: list, builder: FeatureBuilder) -> pd.DataFrame:
    dev = get_device(device)
    p = default_params()
    out = []
    for j in jobs:
        est = estimate(j, builder.graph_entry(j)[1], dev, p)
        period = effective_period(est, PERIOD_S, int(p.max_trace_samples))
        an = label_features(est, j, dev)
        af = analytic_features(est, j)
        r: dict = {"device": device, "run": j.key, "status": est.status}
        for seed in (0, 1):
            df, exec_s = synth_trace(est, j, dev, p, seed=seed)
            lab = label_trace(df, run_meta(j, dev, est, exec_s, seed, period))
            for t in TARGETS:
                r[f"s{seed}_{t}"] = lab[t]
        for t in TARGETS:
            r[f"an_{t}"] = (af["an_overhead_s"] + j.total_steps * af["an_iter_s"]
                            if t == "exec_time_s" else an[f"an_{t}"])
        out.append(r)
    return pd.DataFrame(out)


def nmse(x: np.ndarray, y: np.ndarray, span: float) -> float:
    return float(np.mean(((x - y) / span) ** 2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="titanx,gtx1080,h100")
    ap.add_argument("--limit", type=int, default=0, help="first N jobs only (0: all)")
    ap.add_argument("--worst", type=int, default=0)
    args = ap.parse_args()
    jobs = [j for c in CAMPAIGNS for j in load_campaign(c).jobs]
    if args.limit:
        jobs = jobs[:: max(1, len(jobs) // args.limit)][: args.limit]
    builder = FeatureBuilder()
    t0 = time.perf_counter()
    frames = [rows_for(d, jobs, builder) for d in args.devices.split(",")]
    print(f"{len(jobs)} jobs x {len(frames)} devices, {time.perf_counter() - t0:.0f} s")
    print(f"{'target':<22} " + " ".join(f"{d:>20}" for d in args.devices.split(",")))
    print(f"{'':<22} " + " ".join(f"{'analytic / floor':>20}" for _ in frames))
    for t in TARGETS:
        cells = []
        for f in frames:
            a, b, c = (f[f"{k}_{t}"].to_numpy(np.float64) for k in ("s0", "s1", "an"))
            m = np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & (f.status == "ok").to_numpy()
            span = float(a[m].max() - a[m].min()) or 1.0
            cells.append(f"{nmse(c[m], a[m], span):9.2e} / {nmse(b[m], a[m], span):8.2e}")
            if args.worst:
                err = ((c - a) / span) ** 2
                err[~m] = 0.0
                for i in np.argsort(-err)[: args.worst]:
                    print(f"   {t} {f.device.iloc[i]} {f.run.iloc[i]} {f.status.iloc[i]}: "
                          f"trace {a[i]:.4g} / {b[i]:.4g}, analytic {c[i]:.4g}")
        print(f"{t:<22} " + " ".join(f"{x:>20}" for x in cells))


if __name__ == "__main__":
    main()
