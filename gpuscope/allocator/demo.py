"""The allocator demo: seed 001's Table 4 experiment on the bundled datasets and checkpoints.

``run_demo()`` predicts the 128-job Table 4 workload on one gtx1080, one rtx2070 and one
titanx with the bundled checkpoints (full and Driple targets), simulates every policy with FIFO
and SJF on the emulated ground truth, and prints the comparison table (seed 001 Tables 10/12/15
layout). The lead wires it into ``gpuscope demo`` / ``make demo``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from gpuscope.core.data import bundled
from gpuscope.core.errors import InputError


def run_demo(
    model_dir: str | Path = bundled("checkpoints"),
    truth_dir: str | Path = bundled("emulated"),
) -> int:
    """Print the Table 4 policy comparison; 0 on success, 2 when bundled data is missing."""
    from gpuscope.allocator.experiments import (
        SEED_CLUSTER,
        available_policies,
        compare_policies,
        metrics_rows,
        seed_workload,
    )
    from gpuscope.allocator.metrics import comparison_table, distribution_table, to_markdown
    from gpuscope.allocator.pipeline import prepare
    from gpuscope.allocator.reproduce import policies_for
    from gpuscope.allocator.truth import truth_steps
    from gpuscope.cluster.counts import ClusterSpec

    t0 = time.perf_counter()
    cluster = ClusterSpec.parse(SEED_CLUSTER)
    jobs = seed_workload(128, steps_per_epoch=truth_steps(truth_dir, cluster.devices))
    policies = policies_for(Path(model_dir), cluster)
    try:
        inp = prepare(jobs, cluster, model_dir, truth_dir, policies)
    except InputError as e:
        print(f"allocator demo: {e}", file=sys.stderr)
        return 2
    rows = metrics_rows(compare_policies(inp, available_policies(inp)))
    note = (f"{len(jobs)} jobs (seed 001 Table 4, gan counted twice), {cluster}; "
            f"ground truth: {inp.truth.source if inp.truth else 'none'}")
    print(to_markdown(comparison_table(rows), "Seed 001 Table 4 workload: average JCT per GPU, "
                      "average JCT, makespan (s)", note))
    print(to_markdown(distribution_table(rows), "Job distribution"))
    print(f"allocator demo finished in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run_demo())
