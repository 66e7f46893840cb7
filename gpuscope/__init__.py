"""gpuscope: profile GPUs with real training jobs, predict jobs' resource use from their
computational graphs, allocate heterogeneous clusters, and export t_jng tables.

Stages (data flows one way, see docs/design.md):
``workloads -> graphs -> profiling -> emulator -> predictor -> allocator -> schedulers``.

The Python API (docs/api.md) is importable from here and loads lazily (PEP 562), so that
``import gpuscope`` and ``gpuscope --help`` do not import torch:
``gpuscope.job``, ``JobSpec``, ``trace``, ``export_graph``, ``estimate``, ``predict``,
``allocate``, ``read_queue``, ``write_queue``.
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = attach(__name__, {
    "job": "gpuscope.api", "trace": "gpuscope.api", "export_graph": "gpuscope.api",
    "estimate": "gpuscope.api", "predict": "gpuscope.api", "allocate": "gpuscope.api",
    "JobSpec": "gpuscope.jobs.spec", "read_queue": "gpuscope.jobs.queue",
    "write_queue": "gpuscope.jobs.queue",
})
