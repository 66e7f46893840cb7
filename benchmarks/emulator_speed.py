"""Emulation speed: seed 001 Table 3 (432 runs) on one device, target <= 30 s on 2 cores.

Graphs come from the graph cache (export them once beforehand, e.g. with
benchmarks/emulator_bundle.py); the timed part is what `gpuscope emulate` does per run:
estimate, 6 Hz trace synthesis, parquet write, ledger commit. Prints seconds and the ratio to
the target (< 1 meets it). Usage: python benchmarks/emulator_speed.py [DEVICE]
"""

from __future__ import annotations

import sys
import tempfile
import time

from gpuscope.cluster.devices import get_device
from gpuscope.emulator import CostCache, default_params, emulate_device
from gpuscope.graphs import GraphCache
from gpuscope.profiling import load_campaign

TARGET_S = 30.0


def main() -> None:
    dev = get_device(sys.argv[1] if len(sys.argv) > 1 else "gtx1080")
    jobs = load_campaign("campaigns/emulated-table3.toml").jobs
    costs = CostCache(source=GraphCache().get_or_export)
    t0 = time.perf_counter()
    for j in jobs:  # untimed: graph loading (cache) and reduction to GraphCost
        costs.get(j)
    t_graphs = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        t1 = time.perf_counter()
        counts = emulate_device(jobs, dev, tmp, costs, seed=0, params=default_params(),
                                progress=False)
        dt = time.perf_counter() - t1
    print(f"emulated {sum(counts.values())} runs on {dev.name} ({dict(counts)}) in {dt:.1f} s "
          f"(graph loading {t_graphs:.1f} s, untimed); target {TARGET_S:.0f} s; "
          f"ratio {dt / TARGET_S:.2f}")


if __name__ == "__main__":
    main()
