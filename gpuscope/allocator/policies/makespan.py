"""``makespan``: finish the whole queue as early as possible, and a lower bound to judge it.

* The policy is a longest-processing-time list schedule for unrelated machines: jobs taken
  longest first (by their shortest predicted time over the types they fit), each to the GPU
  where it would finish first. Several longest-first keys are tried (shortest, mean and
  longest time over the fitting types) and the plan with the smallest predicted makespan is
  kept. When all jobs are queued at once, a second plan puts each job on the type where the
  LP below puts most of it (queues up to :data:`LP_MAX_CELLS` jobs × types), and a local
  search moves or swaps jobs between pairs of GPUs of either plan while that lowers the
  later finish of the pair (:func:`improve`); the plan that ends first is kept. Each GPU
  type runs its jobs in the planned order (``--order plan``).
* :func:`makespan_lower_bound` is the LP relaxation of R||Cmax solved with HiGHS
  (``scipy.optimize.linprog``): x_jd is the fraction of job j run on type d, the load of a
  type is at most count_d · T, a job occupies at most T in total (Lawler & Labetoulle 1978:
  the optimum with preemption), and, since a job runs whole on one GPU without preemption,
  x_jd = 0 wherever t_jd > T (Lenstra, Shmoys & Tardos 1990); the smallest feasible T is
  found by bisection. No schedule, however planned, ends earlier than this bound.
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


def _finite(t: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(t), t, np.nan)


def lpt_plan(t: np.ndarray, arrivals: np.ndarray,
             cluster: ClusterSpec) -> tuple[np.ndarray, np.ndarray]:
    """``(device, planned start)`` of the longest-first list schedule with the smallest
    predicted makespan over the keys of the module docstring."""
    n = len(t)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    ok = np.isfinite(t).any(axis=1)
    if not ok.any():
        return np.full(n, -1, dtype=np.int64), np.full(n, np.nan)
    with np.errstate(all="ignore"):
        f = _finite(t[ok])
        keys = (np.nanmin(f, axis=1), np.nanmean(f, axis=1), np.nanmax(f, axis=1))
    idx = np.flatnonzero(ok)
    for key in keys:
        seq = np.concatenate([idx[np.lexsort((idx, -key))], np.flatnonzero(~ok)])
        dev, start = list_schedule(t, arrivals, cluster, seq)
        rows = np.flatnonzero(dev >= 0)
        mk = float(np.max(start[rows] + t[rows, dev[rows]])) if len(rows) else 0.0
        if best is None or mk < best[0]:
            best = (mk, dev, start)
    assert best is not None
    return best[1], best[2]


def improve(t: np.ndarray, inst_dev: np.ndarray, on: np.ndarray,
            max_passes: int = 50) -> np.ndarray:
    """Local search on a static plan: ``on[j]`` is job j's GPU instance (-1: unplaced).

    For every pair of GPUs, the move of one job or the swap of two that lowers the later
    finish of the pair the most is applied, until a pass over all pairs changes nothing (or
    ``max_passes``). A step never raises the later finish of its pair, so the makespan never
    grows, and the sum of squared loads falls, which moves the plan off plateaus where the
    last GPU alone cannot improve. Returns the new instance per job."""
    on = on.copy()
    g_n = len(inst_dev)
    ti = t[:, inst_dev]  # (n, G) time of each job on each instance
    jobs = [np.flatnonzero(on == g) for g in range(g_n)]
    load = np.array([ti[js, g].sum() for g, js in enumerate(jobs)], dtype=float)
    for _ in range(max_passes):
        changed = False
        for g in np.argsort(-load).tolist():
            for h in range(g_n):
                if h == g or (jobs[g].size == 0 and jobs[h].size == 0):
                    continue
                a, b = jobs[g], jobs[h]
                top = max(load[g], load[h])
                best, pick = top - 1e-9 * max(top, 1.0), None
                # move one job of g to h, or of h to g
                for src, dst, js in ((g, h, a), (h, g, b)):
                    if js.size:
                        m = np.maximum(load[src] - ti[js, src], load[dst] + ti[js, dst])
                        k = int(np.argmin(m))
                        if m[k] < best:
                            best, pick = float(m[k]), (src, dst, int(js[k]), -1)
                if a.size and b.size:
                    ng = load[g] - ti[a, g][:, None] + ti[b, g][None, :]
                    nh = load[h] - ti[b, h][None, :] + ti[a, h][:, None]
                    m = np.maximum(ng, nh)
                    k = int(np.argmin(m))
                    if m.flat[k] < best:
                        x, y = divmod(k, b.size)
                        best, pick = float(m.flat[k]), (g, h, int(a[x]), int(b[y]))
                if pick is None:
                    continue
                src, dst, j, i = pick
                on[j] = dst
                load[src] -= ti[j, src]
                load[dst] += ti[j, dst]
                if i >= 0:
                    on[i] = src
                    load[dst] -= ti[i, dst]
                    load[src] += ti[i, src]
                jobs[src] = np.flatnonzero(on == src)
                jobs[dst] = np.flatnonzero(on == dst)
                changed = True
        if not changed:
            break
    return on


def _lp(t: np.ndarray, m_d: np.ndarray, cap: float | None) -> tuple[float, np.ndarray] | None:
    """The LP of the module docstring: ``cap`` None minimises T (preemptive optimum);
    else feasibility at T = ``cap`` with pairs longer than ``cap`` removed. Returns
    ``(T, x)`` with ``x`` the ``(n, m)`` fractions, or None when infeasible."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, hstack, vstack

    n, m = t.shape
    jj, dd = np.nonzero(np.isfinite(t) & ((t <= cap * (1 + 1e-12)) if cap is not None else True))
    if np.bincount(jj, minlength=n).min() == 0:
        return None
    p = t[jj, dd]
    k = len(p)
    cols = np.arange(k)
    a_eq = coo_matrix((np.ones(k), (jj, cols)), shape=(n, k))
    load = coo_matrix((p, (dd, cols)), shape=(m, k))
    span = coo_matrix((p, (jj, cols)), shape=(n, k))
    if cap is None:  # variables x, then T
        extra = coo_matrix(np.concatenate([-m_d, -np.ones(n)])[:, None])
        a_ub = hstack([vstack([load, span]), extra]).tocsr()
        a_eq = hstack([a_eq, coo_matrix((n, 1))]).tocsr()
        c = np.zeros(k + 1)
        c[k] = 1.0
        b_ub = np.zeros(m + n)
    else:
        a_ub = vstack([load, span]).tocsr()
        c = np.zeros(k)
        b_ub = np.concatenate([m_d * cap, np.full(n, cap)])
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq.tocsr(), b_eq=np.ones(n),
                  bounds=(0, None), method="highs")
    if res.status != 0:
        return None
    x = np.zeros((n, m))
    x[jj, dd] = res.x[:k]
    return (float(res.x[k]) if cap is None else float(cap)), x


def lp_relaxation(t: np.ndarray, counts: tuple[int, ...] | np.ndarray,
                  rel_tol: float = 1e-4) -> tuple[float, np.ndarray]:
    """``(lower bound, x)``: the bound of the module docstring on the makespan of jobs all
    ready at 0 (seconds; jobs that fit nowhere are ignored), and the LP's fractions of each
    job on each type at the smallest feasible T found (rows of unplaceable jobs are 0)."""
    ok = np.isfinite(t).any(axis=1)
    x_all = np.zeros(t.shape)
    if not ok.any():
        return 0.0, x_all
    tt = t[ok]
    m_d = np.asarray(counts, dtype=float)
    first = _lp(tt, m_d, None)
    assert first is not None, "the preemptive LP is always feasible"
    lo = max(first[0], float(np.max(np.min(tt, axis=1))))
    at = _lp(tt, m_d, lo)
    if at is None:
        hi = lo * 2.0
        while (at := _lp(tt, m_d, hi)) is None:
            lo, hi = hi, hi * 2.0
        while hi - lo > rel_tol * hi:
            mid = 0.5 * (lo + hi)
            got = _lp(tt, m_d, mid)
            if got is None:
                lo = mid
            else:
                hi, at = mid, got
    x_all[ok] = at[1]
    return lo, x_all


def makespan_lower_bound(t: np.ndarray, counts: tuple[int, ...] | np.ndarray,
                         rel_tol: float = 1e-4) -> float:
    """The LP lower bound (:func:`lp_relaxation`) on the makespan, seconds."""
    return lp_relaxation(t, counts, rel_tol)[0]


#: Largest jobs × types for which ``makespan`` also tries the LP-guided plan.
LP_MAX_CELLS: int = 20_000


def _from_types(dev: np.ndarray, t: np.ndarray, cluster: ClusterSpec) -> np.ndarray:
    """GPU instance per job when each type's jobs go longest first to its least-loaded GPU."""
    first = np.concatenate([[0], np.cumsum(cluster.counts)[:-1]])
    on = np.full(len(dev), -1, dtype=np.int64)
    for d, c in enumerate(cluster.counts):
        js = np.flatnonzero(dev == d)
        load = np.zeros(c)
        for j in js[np.argsort(-t[js, d], kind="stable")].tolist():
            g = int(np.argmin(load))
            load[g] += t[j, d]
            on[j] = first[d] + g
    return on


def makespan_plan(t: np.ndarray, arrivals: np.ndarray,
                  cluster: ClusterSpec) -> tuple[np.ndarray, np.ndarray]:
    """``(device, planned start)`` of the ``makespan`` policy (module docstring)."""
    dev, start = lpt_plan(t, arrivals, cluster)
    n = len(t)
    if n == 0 or not np.all(arrivals == arrivals[0]) or not (dev >= 0).any():
        return dev, start
    cands = [_instances(dev, start, t, cluster)]
    if t.size <= LP_MAX_CELLS:  # LP-guided types: each job where the LP puts most of it
        x = lp_relaxation(t, cluster.counts)[1]
        lp_dev = np.where(np.isfinite(t).any(axis=1), np.argmax(x, axis=1), -1)
        cands.append(_from_types(lp_dev, t, cluster))
    best_mk, on = np.inf, cands[0]
    for c in cands:
        c = improve(t, cluster.instance_device, c)
        ok = c >= 0
        load = np.bincount(c[ok], weights=t[np.flatnonzero(ok),
                                             cluster.instance_device[c[ok]]],
                           minlength=cluster.n_gpus)
        if load.max() < best_mk:
            best_mk, on = float(load.max()), c
    new_dev = np.where(on >= 0, cluster.instance_device[np.clip(on, 0, None)], -1)
    # each GPU runs its jobs shortest first (the same makespan, the least JCT); starts are
    # the running sums
    rows = np.arange(n)
    tj = np.where(on >= 0, t[rows, np.clip(new_dev, 0, None)], 0.0)
    new_start = np.full(n, np.nan)
    for g in np.unique(on[on >= 0]):
        js = np.flatnonzero(on == g)
        js = js[np.argsort(tj[js], kind="stable")]
        new_start[js] = arrivals[0] + np.concatenate([[0.0], np.cumsum(tj[js])[:-1]])
    return new_dev, new_start


def _instances(dev: np.ndarray, start: np.ndarray, t: np.ndarray,
               cluster: ClusterSpec) -> np.ndarray:
    """GPU instance of each job of a list schedule (the simulator's: each type's jobs in
    start order, each to its earliest-free GPU)."""
    import heapq

    first = np.concatenate([[0], np.cumsum(cluster.counts)[:-1]])
    on = np.full(len(dev), -1, dtype=np.int64)
    for d, c in enumerate(cluster.counts):
        js = np.flatnonzero(dev == d)
        js = js[np.argsort(start[js], kind="stable")]
        free = [(0.0, int(first[d]) + g) for g in range(c)]
        for j in js.tolist():
            f, g = heapq.heappop(free)
            on[j] = g
            heapq.heappush(free, (max(f, float(start[j])) + float(t[j, d]), g))
    return on


def _place(inp: PolicyInputs, table: JobDeviceTable) -> Placement:
    dev, start = makespan_plan(times(table), inp.arrival(), inp.cluster)
    return Placement("makespan", dev, table.get("exec_time_s"), False, start)


MAKESPAN = Policy("makespan", "pred", _place,
                  "the least predicted makespan: longest-first list schedule (--order plan)")
