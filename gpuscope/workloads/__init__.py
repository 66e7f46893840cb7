"""Workload catalog (PyTorch): models of seed 001 Tables 3–4, synthetic data, training steps.

Public API (docs/design.md "Workloads"): ``build_workload(job, device) -> Workload`` with
``.modules``, ``.optimizers``, ``.sample_batch(batch_size, device)``, ``.train_step(batch)``;
``build_model(model, dataset)``; ``param_count``; the ``CATALOG``.
The run entry point is ``python -m gpuscope.workloads.run``.
"""

from gpuscope.workloads.catalog import CATALOG, KINDS, CatalogEntry, build_model
from gpuscope.workloads.workload import Workload, build_workload, make_optimizer, param_count

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
