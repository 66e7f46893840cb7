"""``ect-online``: ``ect`` re-planned at every arrival and completion.

The static policies fix each job's GPU type before anything runs. ``ect-online`` keeps every
job that has not started unplaced: at each event (a job arrives, a job finishes) it plans the
waiting jobs afresh — shortest predicted time first, each to the GPU where it would finish
first given when every GPU is predicted to be free — and starts the jobs that this plan puts
on a GPU that is free now. The rest wait for the next event, when the plan is made again
with what has happened since (a job finished early or late, a shorter job arrived).

A pass stops as soon as every free GPU has a job, and reads at most :data:`SCAN_PER_GPU` ×
GPUs jobs from the head of the queue (shortest first): a job further back would start after
that many shorter ones, so it cannot win a GPU now unless every shorter job refuses it.

With preemption (``--preempt``) a waiting job may also stop a running one when the running
job's predicted remaining time exceeds the waiting job's time plus the stopped job's
checkpoint-restart cost (shortest remaining time first, paid for); the stopped job goes back
to the queue with its remaining work and is planned again, on any type.
"""

from __future__ import annotations

import heapq

import numpy as np

from gpuscope.allocator.policies.base import Placement, Policy, PolicyInputs
from gpuscope.allocator.table import JobDeviceTable
from gpuscope.core.errors import InputError

#: How deep (× the cluster's GPUs) one planning pass reads the queue.
SCAN_PER_GPU: int = 8


def dispatch(t: float, waiting: list[tuple[float, float, int]], plan_time: np.ndarray,
             avail: list[list[tuple[float, int, int]]]) -> list[tuple[int, int]]:
    """One planning pass at time ``t``.

    Args:
        waiting: ``(key, arrival, job)`` sorted (shortest predicted time first).
        plan_time: ``(n_jobs, n_types)`` predicted time of each job's remaining work on each
            type, restart cost included (+inf where it does not fit).
        avail: per type, a heap of ``(predicted free time, busy flag, instance)``; free GPUs
            have ``(t, 0, g)``. Modified in place.

    Returns ``(job, instance)`` for the jobs to start now.
    """
    n_free = sum(1 for h in avail for a in h if a[1] == 0)
    starts: list[tuple[int, int]] = []
    if n_free == 0:
        return starts
    k = len(avail)
    depth = SCAN_PER_GPU * sum(len(h) for h in avail)
    for _, _, j in waiting[:depth]:
        row = plan_time[j]
        best, bf = -1, np.inf
        for d in range(k):
            h = avail[d]
            if not h:
                continue
            f = max(h[0][0], t) + row[d]
            if f < bf:
                best, bf = d, f
        if best < 0:
            continue
        _, busy, g = avail[best][0]
        heapq.heapreplace(avail[best], (bf, 1, g))
        if busy == 0:
            starts.append((j, g))
            n_free -= 1
            if n_free == 0:
                break
    return starts


def _static(inp: PolicyInputs, table: JobDeviceTable) -> Placement:
    raise InputError("policy ect-online re-plans while the cluster runs: it runs in the "
                     "online simulator (gpuscope.allocator.online), not as a fixed placement")


ECT_ONLINE = Policy("ect-online", "pred", _static,
                    "ect re-planned at every arrival and completion (--preempt: may stop jobs)",
                    online=True)
