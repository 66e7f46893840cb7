"""Seed 001 checks on the emulated paper machines (GTX 1080, RTX 2070, Titan X).

1. Table 1: average GPU utilisation and memory of VGG on ImageNet per machine (measured in the
   paper: ~99 % on GTX 1080 and Titan X, 27 % / 16 % on the RTX 2070 machine, a CPU bottleneck).
2. §4.2: which Table 3 jobs at batch 64 do not surely fit the 8 GB cards (out of memory or at
   risk) but fit the 12 GB Titan X, per optimizer (the paper: Adam at batch 64 fails on the
   8 GB cards, under TensorFlow 2.5).
3. §4.2 / Fig. 7: mean execution time per machine over the Table 3 runs (100 steps per epoch,
   as campaigns/emulated-table3.toml) that fit on all three machines; the paper: the GTX 1080
   has the highest average execution time, the Titan X the lowest (``fig7_means``).
Usage: python benchmarks/emulator_seed001.py [--figures] (graphs from the graph cache;
emulated figures; --figures also writes results/figures/emulator_trace_{gtx1080,rtx2070}.png).
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpuscope.cluster.devices import get_device
from gpuscope.emulator import EmulatorParams, GraphCost, default_params, estimate
from gpuscope.graphs import GraphCache
from gpuscope.jobs.spec import TABLE3_CNNS, JobSpec, table_jobs

PAPER_TABLE1 = {"vgg11": (98.84, 26.59, 98.27), "vgg16": (99.18, 16.16, 98.74),
                "vgg19": (89.95, None, 98.88)}
MACHINES = ("gtx1080", "rtx2070", "titanx")


def trace_figures(out_dir: Path) -> None:
    """Example emulated traces (vgg11, ImageNet, b32, 2 epochs) on the GTX 1080 and on the
    slow-host RTX 2070 machine, plotted by the profiling stage's seed 001 Fig. 2 plot."""
    from gpuscope.emulator.runs import run_meta
    from gpuscope.emulator.traces import synth_trace
    from gpuscope.profiling import plot_trace

    p, cache = default_params(), GraphCache()
    job = JobSpec("vgg11", "imagenet", "sgd", 32, 2, steps_per_epoch=100)
    cost = GraphCost.from_graph(cache.get_or_export(job), 32)
    for name in ("gtx1080", "rtx2070"):
        dev = get_device(name)
        e = estimate(job, cost, dev, p)
        df, t = synth_trace(e, job, dev, p, seed=0)
        path = plot_trace(df, run_meta(job, dev, e, t, 0, 1 / 6), out_dir / f"emulator_trace_{name}.png")
        print("wrote", path)


def fig7_means(cache: GraphCache, params: EmulatorParams | None = None,
               jobs: list[JobSpec] | None = None) -> tuple[dict[str, float], int]:
    """Mean emulated execution time (s) per seed 001 machine over ``jobs`` (default: all of
    Table 3 at 100 steps per epoch) that fit on all three machines, and how many fit."""
    p = params or default_params()
    devs = [get_device(d) for d in MACHINES]
    sums, n = dict.fromkeys(MACHINES, 0.0), 0
    for job in jobs if jobs is not None else table_jobs(3, steps_per_epoch=100):
        cost = GraphCost.from_graph(cache.get_or_export(job), job.batch_size)
        est = [estimate(job, cost, d, p) for d in devs]
        if any(e.status != "ok" for e in est):
            continue
        n += 1
        for d, e in zip(MACHINES, est):
            sums[d] += e.exec_time_s
    return {d: sums[d] / max(n, 1) for d in MACHINES}, n


def fig7_order_holds(means: dict[str, float]) -> bool:
    """Seed 001 §4.2 / Fig. 7: GTX 1080 highest mean execution time, Titan X lowest."""
    return means["gtx1080"] > means["rtx2070"] > means["titanx"]


def main() -> None:
    if "--figures" in sys.argv:
        trace_figures(Path("results/figures"))
    p, cache = default_params(), GraphCache()
    devs = [get_device(d) for d in MACHINES]
    print("Table 1 (VGG, ImageNet, batch 32, SGD): GPU util %, memory MB -- emulated [paper]")
    for m, paper in PAPER_TABLE1.items():
        job = JobSpec(m, "imagenet", "sgd", 32, 10, steps_per_epoch=100)
        cost = GraphCost.from_graph(cache.get_or_export(job), 32)
        cells = []
        for d, ref in zip(devs, paper):
            e = estimate(job, cost, d, p)
            cells.append(f"{d.name} {100 * e.gpu_util:5.1f}% {e.mem_mb:6.0f} MB "
                         f"[{'-' if ref is None else f'{ref:.1f}%'}] ({e.bottleneck}-bound)")
        print(f"  {m:6s} " + " | ".join(cells))
    print("\nSec. 4.2: batch 64 jobs that do not surely fit 8 GB (OOM or at risk) but fit the "
          "12 GB Titan X (the paper, TensorFlow 2.5: OOM on 8 GB)")
    for opt in ("sgd", "adam"):
        only_titan, everywhere, none = [], [], []
        for m in TABLE3_CNNS:
            for ds in ("imagenet", "cifar10"):
                job = JobSpec(m, ds, opt, 64, 10, steps_per_epoch=100)
                cost = GraphCost.from_graph(cache.get_or_export(job), 64)
                fit = [estimate(job, cost, d, p).fit_status for d in devs]
                tag = f"{m}/{ds} ({'/'.join(fit[:2])})"
                if fit[0] != "fits" and fit[1] != "fits" and fit[2] == "fits":
                    only_titan.append(tag)
                elif all(s != "fits" for s in fit):
                    everywhere.append(tag)
                elif all(s == "fits" for s in fit):
                    none.append(tag)
        print(f"  {opt}: not fitting 8 GB only: {only_titan}; on none of the three: {everywhere}; "
              f"fits all: {len(none)} jobs")
    means, n = fig7_means(cache, p)
    print(f"\nSec. 4.2 / Fig. 7: mean exec time over the {n} Table 3 runs (100 steps/epoch) that "
          "fit on all three: " + ", ".join(f"{d} {v:.1f} s" for d, v in means.items())
          + f"; paper order GTX 1080 > RTX 2070 > Titan X "
          f"{'holds' if fig7_order_holds(means) else 'does NOT hold'}")


if __name__ == "__main__":
    main()
