"""Workload catalog (PyTorch): models of seed 001 Tables 3–4, synthetic data, training steps.

Public API (docs/design.md "Workloads"): ``build_workload(job, device) -> Workload`` with
``.modules``, ``.optimizers``, ``.sample_batch(batch_size, device)``, ``.train_step(batch)``;
``build_model(model, dataset)``; ``param_count``; the ``CATALOG``.
The run entry point is ``python -m gpuscope.workloads.run``.

Names are imported lazily (PEP 562) so that ``gpuscope --help``, which imports
``gpuscope.workloads.cli``, does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuscope.workloads.catalog import CATALOG, KINDS, CatalogEntry, build_model
    from gpuscope.workloads.workload import (
        Workload,
        build_workload,
        make_optimizer,
        param_count,
    )

_EXPORTS: dict[str, str] = {
    "CATALOG": "catalog", "KINDS": "catalog", "CatalogEntry": "catalog",
    "build_model": "catalog", "Workload": "workload", "build_workload": "workload",
    "make_optimizer": "workload", "param_count": "workload",
}

__all__ = [
    "CATALOG",
    "KINDS",
    "CatalogEntry",
    "Workload",
    "build_model",
    "build_workload",
    "make_optimizer",
    "param_count",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"gpuscope.workloads.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'gpuscope.workloads' has no attribute {name!r}")
