"""``gpuscope workloads list`` (the catalog with parameter counts per dataset) and
``gpuscope workloads pipeline`` (single-core cost of the CPU input pipeline per sample)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def catalog_rows() -> list[dict[str, Any]]:
    """One row per (model, dataset): kind, reference and trainable parameter count.

    Counts are taken from models built on the ``meta`` device (shapes only, no weights), so
    listing even the 140 M-parameter VGGs is fast.
    """
    import torch

    from gpuscope.jobs.spec import MODEL_DATASETS, MODEL_FAMILY
    from gpuscope.workloads.catalog import CATALOG, build_model

    rows = []
    for model, datasets in MODEL_DATASETS.items():
        for ds in datasets:
            with torch.device("meta"):
                net = build_model(model, ds)
            rows.append({
                "model": model, "dataset": ds, "family": MODEL_FAMILY[model],
                "kind": CATALOG[model].kind,
                "params": sum(p.numel() for p in net.parameters() if p.requires_grad),
                "reference": CATALOG[model].reference,
            })
    return rows


def _list(args: argparse.Namespace) -> int:
    rows = catalog_rows()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'model':<16} {'dataset':<9} {'kind':<16} {'params':>13}  reference")
    for r in rows:
        print(f"{r['model']:<16} {r['dataset']:<9} {r['kind']:<16} {r['params']:>13,}  "
              f"{r['reference']}")
    return 0


#: Most samples timed per dataset (a few ms each: at most about a minute).
MAX_SAMPLES: int = 10_000


def pipeline_ms_per_sample(dataset: str, target: str, samples: int, seed: int = 0) -> float:
    """Single-core cost of the CPU input pipeline (decode, augment, normalise) per sample."""
    import time

    import torch

    from gpuscope.workloads.data import PipelineSpec, SyntheticImageDataset

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one worker's worth of work, as in the DataLoader
    try:
        ds = SyntheticImageDataset(PipelineSpec(dataset, target), seed=seed)
        ds[0]  # warm-up
        t0 = time.perf_counter()
        for i in range(1, samples + 1):
            ds[i]
        return (time.perf_counter() - t0) / samples * 1000.0
    finally:
        torch.set_num_threads(threads)


def _pipeline(args: argparse.Namespace) -> int:
    from gpuscope.core.errors import InputError
    from gpuscope.jobs.spec import DATASETS
    from gpuscope.workloads.data import STORED_SIDE

    if args.samples <= 0:
        raise InputError(f"--samples must be > 0, got {args.samples}")
    if args.samples > MAX_SAMPLES:  # no parameter value may hang the command
        raise InputError(f"--samples is {args.samples}, over the limit of {MAX_SAMPLES}")
    names = ([n for n, d in DATASETS.items() if n in STORED_SIDE]
             if args.dataset == "all" else [args.dataset])
    print(f"{'dataset':<9} {'ms/sample (1 core)':>19} {'samples/s/core':>15}")
    for name in names:
        target = "gan" if name == "mnist" else "classifier"
        ms = pipeline_ms_per_sample(name, target, args.samples)
        print(f"{name:<9} {ms:>19.2f} {1000.0 / ms:>15.0f}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``gpuscope workloads list`` and ``gpuscope workloads pipeline``."""
    p = subparsers.add_parser("workloads", help="the PyTorch workload catalog")
    sub = p.add_subparsers(dest="workloads_command", metavar="ACTION",
                           parser_class=type(p))
    ls = sub.add_parser("list", help="list catalog models, datasets and parameter counts")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(func=_list)
    pl = sub.add_parser("pipeline", help="time the CPU input pipeline per sample (one core)")
    pl.add_argument("--dataset", choices=("all", "imagenet", "cifar10", "mnist"), default="all")
    pl.add_argument("--samples", type=int, default=50, help="samples to time per dataset")
    pl.set_defaults(func=_pipeline)
    p.set_defaults(func=lambda a: (p.print_help(), 0)[1])
