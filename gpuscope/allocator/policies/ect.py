"""``ect`` and ``oracle-ect``: minimise the predicted average JCT of the whole queue.

Eq. 2 and Alg. 1 score each job alone and ignore the load already placed, so they pile jobs
on whichever device looks best. ``ect`` minimises the predicted average JCT instead:

* FIFO: list scheduling, jobs in arrival order, each to the GPU instance where
  ``max(GPU free time, arrival) + predicted time`` is smallest (earliest completion).
* SJF, all jobs queued together: the exact minimum of Σ completion times on unrelated
  machines under the predicted times (Horn 1973; Bruno, Coffman & Sethi 1974): the job in the
  k-th last position of a GPU delays k jobs, so assigning jobs to (GPU, k) slots at cost
  ``k · t_jd`` is a min-cost bipartite matching, and each GPU then runs its jobs
  shortest-first, which is exactly what SJF ordering does.
* SJF with staggered arrivals, or queues too large to match (> 4·10⁶ cells): list scheduling
  with jobs taken shortest-predicted-first.

``oracle-ect`` is ``ect`` on the true times: how much of ``ect``'s gap is prediction error.
"""

from __future__ import annotations

import numpy as np

from gpuscope.allocator.policies.base import (
    Placement,
    Policy,
    PolicyInputs,
    list_schedule,
    times,
)
from gpuscope.allocator.table import JobDeviceTable
from gpuscope.cluster.counts import ClusterSpec

#: Largest jobs × slots cost matrix the exact matching builds before falling back.
MATCHING_MAX_CELLS: int = 4_000_000


def min_sum_assignment(
    t: np.ndarray, cluster: ClusterSpec, free: np.ndarray | None = None
) -> np.ndarray | None:
    """Device type per job minimising Σ completion times when every job is ready now and GPU
    instance g is free after ``free[g]`` s (default 0); None when the matching would exceed
    :data:`MATCHING_MAX_CELLS`. ``t`` is ``(n_jobs, n_types)`` with ``+inf`` where a job does
    not fit. Slot (g, k) — k-th last on GPU g — costs ``free[g] + k · t[j, type(g)]``."""
    from scipy.optimize import linear_sum_assignment

    inst = cluster.instance_device
    ok = np.isfinite(t).any(axis=1)
    jobs = np.flatnonzero(ok)
    n, g = len(jobs), len(inst)
    dev = np.full(len(t), -1, dtype=np.int64)
    if n == 0:
        return dev
    if n * n * g > MATCHING_MAX_CELLS:
        return None
    ti = t[jobs][:, inst]
    big = (np.max(np.where(np.isinf(ti), 0.0, ti)) + 1.0) * n * n * 10.0
    ti = np.where(np.isinf(ti), big, ti)
    k = np.arange(1, n + 1, dtype=float)
    rel = np.zeros(g) if free is None else np.asarray(free, dtype=float)
    # columns: slot (gpu, k) -> free[gpu] + k * t[j, gpu]
    cost = (ti[:, :, None] * k[None, None, :] + rel[None, :, None]).reshape(n, g * n)
    rows, cols = linear_sum_assignment(cost)
    dev[jobs[rows]] = inst[cols // n]
    return dev


def planned_starts(device: np.ndarray, t: np.ndarray, arrivals: np.ndarray,
                   cluster: ClusterSpec, key: np.ndarray) -> np.ndarray:
    """Start times of a placement when each type runs its jobs in ``key`` order on its
    earliest-free GPU (what the simulator does with those keys and times ``t``)."""
    rows = np.arange(len(device))
    only = np.full_like(t, np.inf)
    ok = device >= 0
    only[rows[ok], device[ok]] = t[rows[ok], device[ok]]
    seq = np.lexsort((rows, key, arrivals))
    return list_schedule(only, arrivals, cluster, seq)[1]


def ect_plan(t: np.ndarray, arrivals: np.ndarray, cluster: ClusterSpec,
             order: str) -> tuple[np.ndarray, np.ndarray]:
    """``(device, planned start)`` of ``ect`` under times ``t`` (module docstring)."""
    n = len(t)
    shortest = t.min(axis=1) if t.shape[1] else np.zeros(n)
    if order != "fifo" and n and np.all(arrivals == arrivals[0]):
        best = min_sum_assignment(t, cluster)
        if best is not None:
            rows = np.arange(n)
            key = np.where(best >= 0, t[rows, np.clip(best, 0, None)], np.inf)
            return best, planned_starts(best, t, arrivals, cluster, key)
    if order == "fifo":
        seq = np.lexsort((np.arange(n), arrivals))
    else:
        seq = np.lexsort((np.arange(n), shortest, arrivals))
    return list_schedule(t, arrivals, cluster, seq)


def _ect(name: str):  # type: ignore[no-untyped-def]
    def place(inp: PolicyInputs, table: JobDeviceTable) -> Placement:
        dev, start = ect_plan(times(table), inp.arrival(), inp.cluster, inp.order)
        return Placement(name, dev, table.get("exec_time_s"), False, start)

    return place


ECT = Policy("ect", "pred", _ect("ect"),
             "gpuscope's: the least predicted average JCT of the whole queue (default)")
ORACLE_ECT = Policy("oracle-ect", "truth", _ect("oracle-ect"),
                    "ect on the true execution times (ground truth)")
