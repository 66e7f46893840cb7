"""gpuscope's cluster engine: plans and profiling campaigns run on a real Slurm.

Base-level room: imports only ``gpuscope.core.errors``, ``jobs``, ``devices``, ``clusters`` and
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

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "ClusterState": ".daemons", "up": ".daemons", "down": ".daemons",
    "prereq_problem": ".daemons", "running_state": ".daemons",
    "SlurmError": "gpuscope.core.errors",
    "submit": ".submit", "submit_plan": ".submit", "collect": ".collect",
    "gpu_overcommit": ".collect",
})
