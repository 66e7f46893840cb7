"""Graph export and encoding speed per catalog model.

    .venv/bin/python benchmarks/graph_export.py [--models resnet50,vgg16] [--batch-size 32]
        [--optimizer adam] [--table 3] [--grouping fluid|coarsen] [--framework pytorch|tensorflow]

Per model (seed 001 Table 3 catalog by default, first dataset of each model, batch 32, Adam):
export time (build the workload on the meta device + trace the training step), encode time
(largest component + asynchronous fluid communities K=100 + features), nodes, edges.
Prints ResNet-50 (ImageNet) export + encode against the 10 s target as a ratio. Times are
wall-clock on this machine (say how many cores and how loaded it was when you quote them).
"""

from __future__ import annotations

import argparse
import os
import time

from gpuscope.graphs import OpVocabulary, encode, export_graph
from gpuscope.jobs.spec import (
    MODEL_DATASETS,
    TABLE3_CNNS,
    TABLE3_GENERATIVE,
    TABLE4_CNNS,
    TABLE4_GENERATIVE,
    JobSpec,
)

TARGET_S = 10.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated models (default: the table's models)")
    ap.add_argument("--table", type=int, default=3, choices=(3, 4))
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--optimizer", default="adam")
    ap.add_argument("--grouping", default="fluid", choices=("fluid", "coarsen"))
    ap.add_argument("--framework", default="pytorch", choices=("pytorch", "tensorflow"),
                    help="tensorflow: the Keras versions (gpuscope.graphs.frontends.keras_models)")
    a = ap.parse_args()
    if a.models:
        models = [m.strip() for m in a.models.split(",") if m.strip()]
    else:
        models = list(TABLE3_CNNS + TABLE3_GENERATIVE if a.table == 3 else TABLE4_CNNS + TABLE4_GENERATIVE)
    if "resnet50" not in models:
        models.append("resnet50")
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")
    print(f"{'model':18s} {'dataset':9s} {'nodes':>7s} {'edges':>7s} {'export_s':>9s} "
          f"{'encode_s':>9s} {'total_s':>8s}")
    rows = {}
    for m in models:
        ds = MODEL_DATASETS[m][0]
        job = JobSpec(m, ds, a.optimizer, a.batch_size, 1, framework=a.framework)
        t0 = time.perf_counter()
        g = export_graph(job)
        t1 = time.perf_counter()
        vocab = OpVocabulary().fit([g])
        encode(g, vocab, k=100, grouping=a.grouping)
        t2 = time.perf_counter()
        rows[m] = (t1 - t0, t2 - t1)
        print(f"{m:18s} {ds:9s} {g.num_nodes:7d} {g.num_edges:7d} {t1 - t0:9.2f} {t2 - t1:9.2f} "
              f"{t2 - t0:8.2f}")
    ex, en = rows["resnet50"]
    total = ex + en
    print(f"\nresnet50 imagenet b{a.batch_size} {a.optimizer} ({a.framework}): export {ex:.2f} s + encode {en:.2f} s "
          f"= {total:.2f} s; target <= {TARGET_S:.0f} s on 2 cores: "
          f"{total / TARGET_S:.2f} of the target ({'met' if total <= TARGET_S else 'MISSED'})")


if __name__ == "__main__":
    main()
