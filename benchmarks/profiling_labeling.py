"""Labeling speed: one 10,000-sample trace (four resources + exec time), k-means and median.

Target: <= 50 ms per trace. Also prints scikit-learn's KMeans on the same data
for comparison (the labeler's 1-D Lloyd iteration gives the same split, checked in tests).

    .venv/bin/python benchmarks/profiling_labeling.py [--samples 10000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling import TraceMeta, label_trace
from gpuscope.profiling.labeling import sklearn_burst_mask


def synthetic(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    phase = (np.arange(n) // rng.integers(20, 60)) % 2 == 0
    return pd.DataFrame({
        "t_s": np.arange(n) / 6.0,
        "gpu_util": np.where(phase, 95.0, 8.0) + rng.normal(0, 3, n),
        "gpu_mem_util": np.where(phase, 60.0, 5.0) + rng.normal(0, 3, n),
        "gpu_mem": np.where(phase, 15000.0, 9000.0) + rng.normal(0, 50, n),
        "cpu_util": rng.uniform(0, 100, n),
        "proc_cpu_util": rng.uniform(0, 50, n),
    })


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    df = synthetic(args.samples)
    job = JobSpec("resnet50", "imagenet", "sgd", 32, 10)
    meta = TraceMeta(run_id=job.key, job=job.to_dict(), device="bench", status="ok",
                     exec_time_s=args.samples / 6.0, mem_total_mb=16384.0)
    for method in ("peakband", "kmeans", "median"):
        label_trace(df, meta, method)
        t0 = time.perf_counter()
        for _ in range(args.repeat):
            label_trace(df, meta, method)
        ms = 1e3 * (time.perf_counter() - t0) / args.repeat
        print(f"{method:8s}: {ms:.2f} ms per {args.samples}-sample trace "
              f"(target <= 50 ms; ratio {ms / 50:.3f}): {'PASS' if ms <= 50 else 'FAIL'}")
    x = df["gpu_util"].to_numpy()
    t0 = time.perf_counter()
    sklearn_burst_mask(x)
    print(f"(reference: scikit-learn KMeans on one resource: {1e3 * (time.perf_counter() - t0):.1f} ms)")


if __name__ == "__main__":
    main()
