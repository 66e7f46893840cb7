"""Build the bundled emulated datasets: seed 001 Table 3 (split train) and
Table 4 (split unseen) on each device, into ``datasets/emulated/<device>/``.

Per device: ``gpuscope emulate`` (campaigns/emulated-table3.toml + emulated-table4.toml, 100
steps per epoch, seed 0) into ``runs/emulated/<device>/``, then the profiling stage's
``build_dataset`` unchanged (labels, encoded graphs through the graph cache, vocabulary fitted
on the dataset's graphs -- the same 272 graphs, hence the same vocabulary, on every device;
no raw traces). Each manifest records the emulator version and the sha256 of every graph
(``gpuscope.emulator.calibration.bundle``; tests/test_emulator_bundle.py fails when they no longer match
the code). Graphs are exported afresh into ``--cache`` (default: a new folder under
runs/emulated) so a stale graph cache can never leak into the bundle.
Usage: python benchmarks/emulator_bundle.py [DEVICES] [--cache DIR]
"""

from __future__ import annotations

import time
from pathlib import Path

from gpuscope.cluster.devices import parse_device_list
from gpuscope.emulator import CostCache, default_params, emulate_campaign
from gpuscope.emulator.calibration.bundle import graph_fingerprint, stamp_manifest
from gpuscope.emulator.params import EMULATOR_VERSION
from gpuscope.graphs import GraphCache
from gpuscope.profiling import build_dataset, load_campaign

DEVICES = "gtx1080,rtx2070,titanx,v100,t4,a100,h100"  # new SKUs: pass them explicitly


def main() -> None:
    import argparse
    import shutil

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("devices", nargs="?", default=DEVICES)
    ap.add_argument("--cache", default="runs/emulated/graph-cache")
    args = ap.parse_args()
    devices = parse_device_list(args.devices)
    jobs = [j for c in ("table3", "table4")
            for j in load_campaign(f"campaigns/emulated-{c}.toml").jobs]
    cache = GraphCache(args.cache)
    costs = CostCache(source=cache.get_or_export)
    fps = {j.graph_key: graph_fingerprint(cache.get_or_export(j)) for j in jobs}
    print(f"{len(fps)} graphs, emulator {EMULATOR_VERSION}", flush=True)
    t0 = time.perf_counter()
    for dev in devices:
        runs = Path("runs/emulated") / dev.name
        shutil.rmtree(runs, ignore_errors=True)  # a bundle is never resumed from older runs
        summary = emulate_campaign(jobs, [dev], "runs/emulated", seed=0, params=default_params(),
                                   costs=costs)
        print(dev.name, summary, f"{time.perf_counter() - t0:.0f}s", flush=True)
        out = Path("datasets/emulated") / dev.name
        build_dataset([runs], out, traces="none", cache_dir=args.cache,
                      notes=[f"emulated by gpuscope.emulator {EMULATOR_VERSION} (docs/emulator.md, "
                             "benchmarks/emulator_bundle.py), seed 0, 100 steps per epoch "
                             "(campaigns/emulated-table3/4.toml)"])
        stamp_manifest(out, fps)
        print(dev.name, "dataset built", f"{time.perf_counter() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
