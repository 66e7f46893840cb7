"""gpuscope's cluster engine: plans and profiling campaigns run on a real Slurm (issue 17).

Base-level room: imports only ``gpuscope.errors``, ``jobs``, ``devices``, ``clusters`` and
``paths``, never a stage, so the allocator, mdrl and profiling CLIs can call it lazily.

* :func:`up` / :func:`down`: a throwaway one-machine Slurm built from a cluster file.
* :func:`submit_plan`: a plan (CSV: job, GPU type, node or GPU instance, times) as ``sbatch``
  jobs that keep the plan's placement and per-node order.
* :func:`collect`: what Slurm really did (start, finish, node, GPUs) against the plan.
"""

from gpuscope.slurm.daemons import ClusterState, down, prereq_problem, running_state, up
from gpuscope.slurm.errors import SlurmError

__all__ = ["ClusterState", "SlurmError", "down", "prereq_problem", "running_state", "up"]
