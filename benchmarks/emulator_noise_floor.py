"""Label noise floor of the emulator (issue 11, item 6): the same campaign emulated with two
noise seeds, labelled with the profiling stage's labeler, and the nMSE between the two label
sets per target (MSE of min-max normalised labels, the predictor's metric, seed 001 §3.1; the
min and max of the seed-0 labels). A predictor cannot beat this floor on emulated data.
Target: <= 0.003 per target. Usage:

    python benchmarks/emulator_noise_floor.py [DEVICE] [--campaign campaigns/emulated-table3.toml]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from tqdm import tqdm

from gpuscope.devices import get_device
from gpuscope.emulator import CostCache, default_params, estimate, synth_trace
from gpuscope.emulator.traces import PERIOD_S, effective_period
from gpuscope.graphs import GraphCache
from gpuscope.profiling import TraceMeta, label_trace, load_campaign
from gpuscope.profiling.labeling import labels_frame
from gpuscope.resources import TARGETS

TARGET = 0.003


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("device", nargs="?", default="titanx")
    ap.add_argument("--campaign", default="campaigns/emulated-table3.toml")
    ap.add_argument("--cache", default=None, help="graph cache folder")
    args = ap.parse_args()
    dev = get_device(args.device)
    jobs = load_campaign(args.campaign).jobs
    costs = CostCache(source=GraphCache(args.cache).get_or_export)
    t0 = time.perf_counter()
    p = default_params()
    labs: list[list[dict]] = [[], []]
    for job in tqdm(jobs, desc=f"noise floor {dev.name}", unit="run"):
        est = estimate(job, costs.get(job), dev, p)
        for seed in (0, 1):  # the runs' traces exactly as emulate_campaign writes them
            df, exec_s = synth_trace(est, job, dev, p, seed=seed)
            meta = TraceMeta(run_id=job.key, job=job.to_dict(), device=dev.name,
                             status=est.status, exec_time_s=exec_s, provenance="emulated",
                             mem_total_mb=dev.mem_mb,
                             sample_period_s=effective_period(est, PERIOD_S, int(p.max_trace_samples)))
            labs[seed].append(label_trace(df, meta))
    a, b = (labels_frame(rows).set_index("run_id").sort_index() for rows in labs)
    ok = (a.status == "ok") & (b.status == "ok")
    print(f"provenance: emulated; {dev.name}, {len(jobs)} runs ({int(ok.sum())} ok), seeds 0 vs 1, "
          f"{time.perf_counter() - t0:.0f} s")
    worst = 0.0
    for t in TARGETS:
        x, y = a.loc[ok, t].to_numpy(float), b.loc[ok, t].to_numpy(float)
        m = ~(np.isnan(x) | np.isnan(y))
        if not m.any():
            continue
        span = float(np.nanmax(x[m]) - np.nanmin(x[m])) or 1.0
        nmse = float(np.mean(((x[m] - y[m]) / span) ** 2))
        worst = max(worst, nmse)
        print(f"{t:<22} nMSE {nmse:.5f}  {'ok' if nmse <= TARGET else 'MISS'}")
    print(f"noise floor: worst target nMSE = {worst:.5f} (target {TARGET})")


if __name__ == "__main__":
    main()
