"""``gpuscope workloads list``: the model catalog with parameter counts per dataset."""

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

    from gpuscope.jobs import MODEL_DATASETS, MODEL_FAMILY
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


def register(subparsers: Any) -> None:
    """Add ``gpuscope workloads list``."""
    p = subparsers.add_parser("workloads", help="the PyTorch workload catalog")
    sub = p.add_subparsers(dest="workloads_command", metavar="ACTION",
                           parser_class=type(p))
    ls = sub.add_parser("list", help="list catalog models, datasets and parameter counts")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(func=_list)
    p.set_defaults(func=lambda a: (p.print_help(), 0)[1])
