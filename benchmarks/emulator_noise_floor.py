"""Label noise floor of the emulator (issue 11, item 6): the same campaign emulated with two
noise seeds, labelled with the profiling stage's labeler, and the nMSE between the two label
sets per target (MSE of min-max normalised labels, the predictor's metric, seed 001 §3.1; the
min and max of the seed-0 labels). A predictor cannot beat this floor on emulated data.
Target: <= 0.003 per target. Usage:

    python benchmarks/emulator_noise_floor.py [DEVICE] [--campaign campaigns/emulated-table3.toml]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from gpuscope.devices import get_device
from gpuscope.emulator import CostCache, default_params, emulate_campaign
from gpuscope.graphs import GraphCache
from gpuscope.profiling import label_runs, load_campaign
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
    with tempfile.TemporaryDirectory() as tmp:
        labs = []
        for seed in (0, 1):
            emulate_campaign(jobs, [dev], Path(tmp) / f"s{seed}", seed=seed,
                             params=default_params(), costs=costs, progress=False)
            labs.append(label_runs(Path(tmp) / f"s{seed}" / dev.name).set_index("run_id").sort_index())
    a, b = labs
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
