"""Workload catalog (PyTorch): models of seed 001 Tables 3–4, synthetic data, training steps.

Public API (docs/design.md "Workloads"): ``build_workload(job, device) -> Workload`` with
``.modules``, ``.optimizers``, ``.sample_batch(batch_size, device)``, ``.train_step(batch)``;
``build_model(model, dataset)``; ``param_count``; the ``CATALOG``.
The run entry point is ``python -m gpuscope.workloads.run``.

Names are imported lazily (:mod:`gpuscope.core.lazy`) so that ``gpuscope --help``, which imports
``gpuscope.workloads.cli``, does not import torch.
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "CATALOG": ".catalog", "KINDS": ".catalog", "CatalogEntry": ".catalog",
    "build_model": ".catalog", "Workload": ".workload", "build_workload": ".workload",
    "make_optimizer": ".workload", "param_count": ".workload",
})
