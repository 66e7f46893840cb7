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
from operator import add

import numpy as np

from gpuscope.allocator.policies.base import Placement, Policy, PolicyInputs
from gpuscope.allocator.table import JobDeviceTable
from gpuscope.core.errors import InputError

#: How deep (× the cluster's GPUs) one planning pass reads the queue.
SCAN_PER_GPU: int = 8
#: Jobs scored together by one numpy pass (:class:`Planner`).
BLOCK: int = 32
_INF = float("inf")


Heap = list[tuple[float, int, int]]
#: One planned job of a pass: (job, type, instance tuple it replaced, tuple it pushed, the
#: type's earliest free time after it).
Step = tuple[int, int, tuple[float, int, int], tuple[float, int, int], float]


class Planner:
    """The planning passes of one online run (:meth:`plan`), fast and with the result of the
    plain rule: every waiting job in turn to the type of least ``front + time`` (``front``:
    the type's earliest predicted free time; ties to the lowest type index).

    Two things make a pass cheap without changing it:

    * Replaying the previous pass. A job's best type cannot change while its type's front is
      what it was then and no other front is earlier than then (fronts that got later only
      score worse), so its step holds when the same GPU tuple heads its type and none of the
      types now earlier than then beats it; the step is then re-applied as it was. Jobs that
      arrived since, jobs whose step does not hold and jobs whose times changed (stopped
      ones) are scored afresh in Python; the steps of jobs no longer waiting are skipped.
      Fronts are tracked on both sides, step by step, so later steps are checked against
      what the previous pass saw at that point.
    * Scoring the jobs past the replay in blocks of :data:`BLOCK`: one numpy pass scores and
      sorts a block's types against the fronts at its start. A front only rises during a
      pass, so a block-start score is a lower bound of the score now (exact for a type
      nothing was planned on since); a job walks its sorted types, re-scoring the moved
      ones, until the next bound cannot beat its best.

    On 10,000 jobs over 16 types × 4 GPUs about two steps in three are replayed.

    Args:
        plan_time: ``(n_jobs, n_types)`` predicted time of each job's remaining work on each
            type, restart cost included (+inf where it does not fit). Kept by reference:
            call :meth:`update` after changing a row.
    """

    def __init__(self, plan_time: np.ndarray) -> None:
        self.plan_time = plan_time
        self.rows: list[list[float]] = plan_time.tolist()
        self._steps: list[Step] = []
        self._front0: list[float] = []
        self._changed: set[int] = set()  # jobs whose row changed since the pass replayed

    def update(self, j: int) -> None:
        """Job ``j``'s row of ``plan_time`` changed (it was stopped): no replay of a step
        that planned it with the old row."""
        self.rows[j] = self.plan_time[j].tolist()
        self._changed.add(j)

    def plan(self, t: float, waiting: list[tuple[float, float, int]],
             avail: list[Heap]) -> list[tuple[int, int]]:
        """One planning pass at time ``t``.

        Args:
            waiting: ``(key, arrival, job)`` sorted (shortest predicted time first).
            avail: per type, a heap of ``(predicted free time, busy flag, instance)``, none
                earlier than ``t``; free GPUs have ``(t, 0, g)``. Modified in place.

        Returns ``(job, instance)`` for the jobs to start now.
        """
        n_free = sum(1 for h in avail for a in h if a[1] == 0)
        if n_free == 0:
            return []
        front = [h[0][0] for h in avail]
        depth = SCAN_PER_GPU * sum(len(h) for h in avail)
        jobs = [w[2] for w in waiting[:depth]]
        front0 = list(front)
        steps: list[Step] = []
        starts: list[tuple[int, int]] = []
        pos = 0
        if self._steps:
            pos = self._replay(jobs, avail, front, steps, n_free, starts)
            n_free -= len(starts)
        if pos >= 0 and n_free > 0:
            self._score(jobs, pos, avail, front, n_free, steps, starts)
        self._steps, self._front0, self._changed = steps, front0, set()
        return starts

    def _replay(self, jobs: list[int], avail: list[Heap], front: list[float],
                steps: list[Step], n_free: int, starts: list[tuple[int, int]]) -> int:
        """Walk the previous pass's steps (class docstring): replay each that holds, score
        afresh each job it does not cover. Returns how many jobs of ``jobs`` were planned
        (-1: every free GPU got a job); ``avail``, ``front``, ``steps`` and ``starts`` as
        after them."""
        old = list(self._front0)  # the previous pass's fronts, step by step
        early = {x for x in range(len(front)) if front[x] < old[x]}  # earlier now than then
        rows = self.rows
        pos, n = 0, len(jobs)
        waiting = set(jobs) - self._changed
        for j, d, popped, pushed, after in self._steps:
            if popped[1] != 0 and j in waiting:  # a job planned then and waiting still
                while pos < n and jobs[pos] != j:  # a job it did not plan (one that arrived)
                    jj = jobs[pos]
                    if self._one(jj, rows[jj], avail, front, steps, starts, old, early):
                        n_free -= 1
                        if n_free == 0:
                            return -1
                    pos += 1
                if pos == n:
                    return pos
                row, bf = rows[j], pushed[0]
                holds = avail[d][0] == popped
                if holds:
                    for x in early:  # a type earlier now than then may beat it
                        f = front[x] + row[x]
                        if f < bf or (f == bf and x < d):
                            holds = False
                            break
                if holds:
                    h = avail[d]
                    heapq.heapreplace(h, pushed)
                    front[d] = h[0][0]
                    steps.append((j, d, popped, pushed, front[d]))
                elif self._one(j, row, avail, front, steps, starts, old, early):
                    n_free -= 1
                    if n_free == 0:
                        return -1
                pos += 1
            old[d] = after  # (a job started since: its GPU is busy with it in ``avail``)
            if front[d] < after:
                early.add(d)
            else:
                early.discard(d)
        return pos

    @staticmethod
    def _one(j: int, row: list[float], avail: list[Heap], front: list[float],
             steps: list[Step], starts: list[tuple[int, int]], old: list[float],
             early: set[int]) -> bool:
        """Plan job ``j`` on the type of least ``front + time`` (``early``: the types whose
        front is now earlier than ``old``, kept up to date). True when it starts now."""
        score = list(map(add, front, row))
        bf = min(score)  # the first least score: ties to the lowest type index
        if not bf < _INF:
            return False
        best = score.index(bf)
        h = avail[best]
        top = h[0]
        pushed = (bf, 1, top[2])
        heapq.heapreplace(h, pushed)
        front[best] = h[0][0]
        if front[best] < old[best]:
            early.add(best)
        else:
            early.discard(best)
        steps.append((j, best, top, pushed, front[best]))
        if top[1] == 0:
            starts.append((j, top[2]))
            return True
        return False

    def _score(self, jobs: list[int], pos: int, avail: list[Heap], front: list[float],
               n_free: int, steps: list[Step], starts: list[tuple[int, int]]) -> None:
        """Plan ``jobs[pos:]`` afresh (class docstring), recording each planned job."""
        inf = float("inf")
        rows = self.rows
        heapreplace = heapq.heapreplace
        for b0 in range(pos, len(jobs), BLOCK):
            blk = jobs[b0:b0 + BLOCK]
            score = self.plan_time[blk] + np.asarray(front)
            ranked = np.argsort(score, axis=1, kind="stable").tolist()
            score_l = score.tolist()
            for r, j in enumerate(blk):
                sc, row = score_l[r], rows[j]
                best, bf = -1, inf
                for d in ranked[r]:
                    s0 = sc[d]  # a lower bound of d's score now: fronts only rise
                    if s0 > bf or (s0 == bf and d > best):
                        break  # d and every type ranked after it score no better
                    f = front[d] + row[d]
                    if f < bf or (f == bf and d < best):
                        best, bf = d, f
                if not bf < inf:
                    continue
                h = avail[best]
                top = h[0]
                pushed = (bf, 1, top[2])
                heapreplace(h, pushed)
                front[best] = h[0][0]
                steps.append((j, best, top, pushed, front[best]))
                if top[1] == 0:
                    starts.append((j, top[2]))
                    n_free -= 1
                    if n_free == 0:
                        return


def _static(inp: PolicyInputs, table: JobDeviceTable) -> Placement:
    raise InputError("policy ect-online re-plans while the cluster runs: it runs in the "
                     "online simulator (gpuscope.allocator.online), not as a fixed placement")


ECT_ONLINE = Policy("ect-online", "pred", _static,
                    "ect re-planned at every arrival and completion (--preempt: may stop jobs)",
                    online=True)
