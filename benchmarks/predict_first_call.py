"""Time the first ``predict`` of 10,000 jobs on 16 GPU types, and the analytic labels in it
(the predictor's speed goal; the cold part of ``predictor_goals.py``'s speed line).

The queue and devices are ``speed_queue()`` (seed 001 Tables 3 and 4 at 100 steps per epoch,
the first 16 catalog devices; ``predictor_goals.speed_section`` uses the same), predicted
with the bundled multi-device checkpoint; the graphs are loaded before the clock starts (cached on disk), so the time is
the features (emulator estimate, analytic labels) and the models. Usage:

    python benchmarks/predict_first_call.py [--checkpoint datasets/checkpoints/multi.pt]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def speed_queue() -> tuple[list[Any], list[Any], list[Any]]:
    """(distinct jobs, the 10,000-job queue, 16 GPU types) of the predict-speed goal: seed 001
    Tables 3 and 4 at 100 steps per epoch, repeated; the first 16 catalog devices."""
    from gpuscope.cluster.devices import load_catalog
    from gpuscope.jobs.spec import table_jobs

    jobs = table_jobs(3, steps_per_epoch=100) + table_jobs(4, steps_per_epoch=100)
    queue = [jobs[i % len(jobs)].with_(job_id=f"q{i}") for i in range(10_000)]
    return jobs, queue, list(load_catalog())[:16]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default=str(ROOT / "datasets" / "checkpoints" / "multi.pt"))
    ap.add_argument("--workers", type=int, default=1,
                    help="FeatureBuilder.workers (gpuscope predict --workers; 0 = one per core)")
    a = ap.parse_args()
    import gpuscope.predictor.physics.features as ph
    from gpuscope.predictor.physics.model import PhysicsPredictor

    jobs, queue, devices = speed_queue()
    builder = ph.FeatureBuilder(workers=a.workers)
    for j in jobs:
        builder.graph_entry(j)
    pred = PhysicsPredictor(a.checkpoint, device=devices[0], builder=builder)
    labels = ph.analytic_labels
    spent = [0.0, 0]

    def timed(*args: Any, **kw: Any) -> dict[str, float]:
        t = time.perf_counter()
        out = labels(*args, **kw)
        spent[0] += time.perf_counter() - t
        spent[1] += 1
        return out

    if a.workers == 1:  # the calls happen in this process only then
        ph.analytic_labels = timed  # type: ignore[assignment]
    t0 = time.perf_counter()
    n = len(pred.predict(queue, devices=devices))
    cold = time.perf_counter() - t0
    t1 = time.perf_counter()
    pred.predict(queue, devices=devices)
    warm = time.perf_counter() - t1
    print(f"predict 10,000 jobs x {len(devices)} GPU types ({n} rows, {len(jobs)} distinct jobs):"
          f" first call {cold:.2f} s, "
          + (f"of which analytic labels {spent[0]:.2f} s in {spent[1]} calls "
             f"({1e3 * spent[0] / max(spent[1], 1):.2f} ms each)" if a.workers == 1 else
             f"analytic labels in {builder._label_workers(10**9)} processes")
          + f"; warm {warm:.3f} s (load {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
