"""``gpuscope demo``: the main job on bundled defaults (what ``make demo`` runs).

Seed 001's Table 4 experiment: the bundled predictor checkpoints predict the scheduler
workload on one gtx1080, one rtx2070 and one titanx; every placement policy is simulated with
FIFO and SJF on the bundled ground truth, and the policy comparison table is printed.
``--graphs`` prints the catalog's graph summary instead (the foundation's demo).
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the main job on bundled defaults (what `make demo` runs)")
    p.add_argument("--graphs", action="store_true",
                   help="print the graph summary of the default catalog instead")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.graphs:
        from gpuscope.graphs import catalog_summary
        from gpuscope.jobs.spec import MODEL_DATASETS, JobSpec

        jobs = [JobSpec(m, ds[0], "adam", 32, 10) for m, ds in MODEL_DATASETS.items()]
        print(catalog_summary(jobs).to_string(index=False))
        return 0
    from gpuscope.allocator.reproduce import run_demo

    return run_demo()
