"""``mix``: a weighted mix of average JCT and makespan.

The objective is ``w · avg JCT / avg JCT₀ + (1 − w) · makespan / makespan₀`` under the
predicted times, where ``avg JCT₀`` is that of ``ect``'s plan and ``makespan₀`` that of the
``makespan`` policy's (each objective's own best plan, so both terms are near 1); ``w`` is
``--mix-weight`` (default 0.5; 1 = ``ect``, 0 = ``makespan``). Candidates: those two plans and
shortest-first list schedules in which a job's finish time is charged ``α`` times the amount
it extends the predicted makespan so far, for α in :data:`ALPHAS`; the candidate with the
least objective is kept (planned order: ``--order plan``).
"""

from __future__ import annotations

import heapq

import numpy as np

from gpuscope.allocator.names import DEFAULT_WEIGHT
from gpuscope.allocator.policies.base import Placement, Policy, PolicyInputs, times
from gpuscope.allocator.policies.ect import ect_plan
from gpuscope.allocator.policies.makespan import makespan_plan
from gpuscope.allocator.table import JobDeviceTable
from gpuscope.cluster.counts import ClusterSpec

ALPHAS: tuple[float, ...] = (0.25, 1.0, 4.0, 16.0)


def _objective(dev: np.ndarray, start: np.ndarray, t: np.ndarray,
               arrivals: np.ndarray) -> tuple[float, float]:
    ok = dev >= 0
    if not ok.any():
        return 0.0, 0.0
    fin = start[ok] + t[np.flatnonzero(ok), dev[ok]]
    return float(np.mean(fin - arrivals[ok])), float(fin.max() - arrivals[ok].min())


def penalised_schedule(t: np.ndarray, arrivals: np.ndarray, cluster: ClusterSpec,
                       alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Shortest-first list schedule; a job goes where ``finish + α · (growth of the
    makespan)`` is least."""
    n, k = t.shape
    shortest = t.min(axis=1)
    seq = np.lexsort((np.arange(n), shortest, arrivals))
    heaps = [[0.0] * c for c in cluster.counts]
    dev = np.full(n, -1, dtype=np.int64)
    start = np.full(n, np.nan)
    span = 0.0
    for j in seq.tolist():
        best, bc, bs, bf = -1, np.inf, 0.0, 0.0
        for d in range(k):
            s = max(heaps[d][0], arrivals[j])
            f = s + t[j, d]
            c = f + alpha * max(f - span, 0.0)
            if c < bc:
                best, bc, bs, bf = d, c, s, f
        if best < 0:
            continue
        heapq.heapreplace(heaps[best], bf)
        dev[j], start[j], span = best, bs, max(span, bf)
    return dev, start


def mix_plan(t: np.ndarray, arrivals: np.ndarray, cluster: ClusterSpec, order: str,
             weight: float) -> tuple[np.ndarray, np.ndarray]:
    cands = [ect_plan(t, arrivals, cluster, "sjf" if order == "plan" else order),
             makespan_plan(t, arrivals, cluster)]
    cands += [penalised_schedule(t, arrivals, cluster, a) for a in ALPHAS]
    objs = [_objective(d, s, t, arrivals) for d, s in cands]
    jct0 = max(objs[0][0], 1e-9)
    mk0 = max(objs[1][1], 1e-9)
    score = [weight * j / jct0 + (1 - weight) * m / mk0 for j, m in objs]
    return cands[int(np.argmin(score))]


def _place(inp: PolicyInputs, table: JobDeviceTable) -> Placement:
    w = float(inp.weights.get("jct", DEFAULT_WEIGHT))
    dev, start = mix_plan(times(table), inp.arrival(), inp.cluster, inp.order, w)
    return Placement("mix", dev, table.get("exec_time_s"), False, start)


MIX = Policy("mix", "pred", _place,
             "a weighted mix of average JCT and makespan (--mix-weight, --order plan)")
