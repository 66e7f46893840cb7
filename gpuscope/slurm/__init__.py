"""gpuscope's cluster engine: plans and profiling campaigns run on a real Slurm (issue 17).

Base-level room: imports only ``gpuscope.errors``, ``jobs``, ``devices``, ``clusters`` and
``paths``, never a stage, so the allocator, mdrl and profiling CLIs can call it lazily.

* :func:`up` / :func:`down`: a throwaway one-machine Slurm built from a cluster file
  (:mod:`gpuscope.slurm.daemons`, :mod:`gpuscope.slurm.config`, :mod:`gpuscope.slurm.procs`).
* :func:`submit`: a plan (CSV: job, GPU type, node or GPU instance, times) as ``sbatch`` jobs
  that keep the plan's placement and per-node order (:mod:`gpuscope.slurm.submit`).
* :func:`collect`: what Slurm really did (start, finish, node, GPUs) against the plan
  (:mod:`gpuscope.slurm.collect`).

Names are imported on first use so that ``gpuscope --help`` does not load them.
"""

from __future__ import annotations

import importlib
from typing import Any

_API = {"ClusterState": "daemons", "up": "daemons", "down": "daemons",
        "prereq_problem": "daemons", "running_state": "daemons", "SlurmError": "errors",
        "submit": "submit", "submit_plan": "submit", "collect": "collect",
        "gpu_overcommit": "collect"}
__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module(f"gpuscope.slurm.{_API[name]}"), name)
    raise AttributeError(f"module 'gpuscope.slurm' has no attribute {name!r}")
