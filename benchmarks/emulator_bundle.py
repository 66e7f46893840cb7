"""Build the bundled emulated datasets (issue 4, item 5): seed 001 Table 3 (split train) and
Table 4 (split unseen) on each device, into ``datasets/emulated/<device>/``.

Per device: ``gpuscope emulate`` (campaigns/emulated-table3.toml + emulated-table4.toml, 100
steps per epoch, seed 0) into ``runs/emulated/<device>/``, then the profiling stage's
``build_dataset`` unchanged (labels, encoded graphs through the graph cache, vocabulary fitted
on the dataset's graphs -- the same 272 graphs, hence the same vocabulary, on every device;
no raw traces). Usage: python benchmarks/emulator_bundle.py [DEVICES]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from gpuscope.devices import parse_device_list
from gpuscope.emulator import CostCache, default_params, emulate_campaign
from gpuscope.graphs import GraphCache
from gpuscope.profiling import build_dataset, load_campaign

DEVICES = "gtx1080,rtx2070,titanx,v100,t4,a100,h100"


def main() -> None:
    devices = parse_device_list(sys.argv[1] if len(sys.argv) > 1 else DEVICES)
    jobs = [j for c in ("table3", "table4")
            for j in load_campaign(f"campaigns/emulated-{c}.toml").jobs]
    cache = GraphCache()
    costs = CostCache(source=cache.get_or_export)
    t0 = time.perf_counter()
    for dev in devices:
        summary = emulate_campaign(jobs, [dev], "runs/emulated", seed=0, params=default_params(),
                                   costs=costs)
        print(dev.name, summary, f"{time.perf_counter() - t0:.0f}s", flush=True)
        build_dataset([Path("runs/emulated") / dev.name], Path("datasets/emulated") / dev.name,
                      traces="none", notes=["emulated by gpuscope.emulator (docs/emulator.md, "
                                            "benchmarks/emulator_bundle.py), seed 0, 100 steps "
                                            "per epoch (campaigns/emulated-table3/4.toml)"])
        print(dev.name, "dataset built", f"{time.perf_counter() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
