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

import importlib
from typing import Any

__version__ = "0.1.0"

_API: dict[str, str] = {
    "job": "gpuscope.api", "trace": "gpuscope.api", "export_graph": "gpuscope.api",
    "estimate": "gpuscope.api", "predict": "gpuscope.api", "allocate": "gpuscope.api",
    "JobSpec": "gpuscope.jobs", "read_queue": "gpuscope.jobs", "write_queue": "gpuscope.jobs",
}

__all__ = ["JobSpec", "__version__", "allocate", "estimate", "export_graph", "job", "predict",
           "read_queue", "trace", "write_queue"]


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'gpuscope' has no attribute {name!r}")
