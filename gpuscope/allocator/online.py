"""Online simulation: jobs arrive, the policy re-plans at every event, jobs run on truth.

:func:`simulate_online` runs ``ect-online`` (:mod:`gpuscope.allocator.policies.online`) over
a queue with arrival times. Events are arrivals and completions (a heap); at each one the
jobs not started yet are planned afresh from the predicted times and the GPUs' predicted free
times, and the jobs planned onto a free GPU start, running for their *actual* time. Without
``preempt`` a started job runs to completion where it started. With it, a waiting job may
stop a running one (policy docstring); the stopped job keeps the work it has done, pays its
checkpoint-restart cost when it starts again, and may resume on another GPU type (its
remaining fraction of work times that type's time).

Costs: one pass per event (none while no GPU is free and nothing may be stopped) reads the
head of the queue only, replaying what still holds of the previous pass
(:class:`~gpuscope.allocator.policies.online.Planner`); the queue is a sorted list
(``bisect``), GPUs a heap per type, completions a heap.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass

import numpy as np

from gpuscope.allocator.policies.online import Planner
from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.errors import InputError


@dataclass
class OnlineSchedule:
    """Per-job outcome, queue order. ``start`` is the last (re)start, ``first_start`` the
    first; ``device``/``gpu`` where the job finished; ``preemptions`` how often it stopped."""

    device: np.ndarray
    gpu: np.ndarray
    first_start: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    preemptions: np.ndarray


def simulate_online(
    cluster: ClusterSpec,
    arrivals: np.ndarray,
    est: np.ndarray,
    actual: np.ndarray,
    *,
    preempt: bool = False,
    restart_s: np.ndarray | None = None,
) -> OnlineSchedule:
    """Run the queue online (module docstring).

    Args:
        arrivals: ``(n,)`` arrival times (s).
        est: ``(n, k)`` predicted times the policy plans with (+inf: predicted not to fit).
        actual: ``(n, k)`` true times the jobs run for (finite where ``est`` is finite).
        restart_s: ``(n, k)`` checkpoint-restart cost of a stopped job resuming on each type
            (needed with ``preempt``).
    """
    arrivals = np.asarray(arrivals, dtype=float)
    est = np.where(np.isnan(est), np.inf, est)  # NaN: no prediction, never planned there
    n, k = est.shape
    if actual.shape != est.shape or len(arrivals) != n or k != len(cluster.devices):
        raise InputError("arrivals, estimates and actual times must be one row per job and "
                         "one column per device type")
    if preempt and restart_s is None:
        raise InputError("preemption needs a checkpoint-restart cost per job and type")
    plan_ok = np.isfinite(est).any(axis=1)
    bad = plan_ok & ~np.isfinite(np.where(np.isfinite(est), actual, 0.0)).all(axis=1)
    if bad.any():
        raise InputError(f"{int(bad.sum())} job(s) have no valid actual time where planned")
    inst_dev = cluster.instance_device
    inst_l = inst_dev.tolist()
    first_gpu = np.concatenate([[0], np.cumsum(cluster.counts)[:-1]])
    g_total = len(inst_dev)
    rs = np.zeros((n, k)) if restart_s is None else np.asarray(restart_s, dtype=float)

    frac = np.ones(n)  # remaining fraction of each job's work
    stopped = np.zeros(n, dtype=bool)  # resumes pay the restart cost
    plan_time = est.copy()
    planner = Planner(plan_time)
    keys = est.min(axis=1).tolist() if k else [0.0] * n  # shortest predicted time per job
    dev = np.full(n, -1, dtype=np.int64)
    gpu = np.full(n, -1, dtype=np.int64)
    first = np.full(n, np.nan)
    start = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    nstop = np.zeros(n, dtype=np.int64)
    running = [-1] * g_total
    run_start = [0.0] * g_total  # when the current run's useful work began
    run_end = [0.0] * g_total  # actual finish of the current run
    pred_end = [0.0] * g_total  # predicted finish of the current run
    version = [0] * n
    n_idle = g_total

    order = np.lexsort((np.arange(n), arrivals))
    arr_l = arrivals[order].tolist()
    ord_l = order.tolist()
    arrivals_l = arrivals.tolist()
    waiting: list[tuple[float, float, int]] = []
    done: list[tuple[float, int, int, int]] = []  # (finish, job, instance, version)
    i, left = 0, int(plan_ok.sum())

    def start_job(j: int, g: int, t: float) -> None:
        d = inst_l[g]
        cost = rs[j, d] if stopped[j] else 0.0
        running[g] = j
        run_start[g] = t + cost
        run_end[g] = float(t + cost + frac[j] * actual[j, d])
        pred_end[g] = float(t + cost + frac[j] * est[j, d])
        if np.isnan(first[j]):
            first[j] = t
        start[j] = t
        dev[j], gpu[j] = d, g - first_gpu[d]
        heapq.heappush(done, (run_end[g], j, g, version[j]))

    while left > 0:
        t_arr = arr_l[i] if i < n else np.inf
        t_done = done[0][0] if done else np.inf
        t = min(t_arr, t_done)
        if not np.isfinite(t):
            break
        while done and done[0][0] <= t:
            f, j, g, v = heapq.heappop(done)
            if v != version[j]:
                continue  # a run that was stopped
            finish[j] = f
            running[g] = -1
            n_idle += 1
            left -= 1
        while i < n and arr_l[i] <= t:
            j = ord_l[i]
            i += 1
            if plan_ok[j]:
                bisect.insort(waiting, (keys[j], arrivals_l[j], j))
        if not waiting or (n_idle == 0 and not preempt):
            continue
        avail: list[list[tuple[float, int, int]]] = [[] for _ in range(k)]
        for g in range(g_total):
            j = running[g]
            pe = pred_end[g]
            avail[inst_l[g]].append((t, 0, g) if j < 0 else (pe if pe > t else t, 1, g))
        for h in avail:
            heapq.heapify(h)
        starts = planner.plan(t, waiting, avail)
        if preempt:
            starts += _preemptions(t, waiting, starts, plan_time, rs, running, pred_end,
                                   inst_dev)
        for j, g in starts:
            prev = running[g]
            if prev >= 0:  # stop the running job: keep its work, re-queue it
                d = inst_l[g]
                did = max(t - run_start[g], 0.0) / actual[prev, d] if actual[prev, d] > 0 else 1
                frac[prev] = max(frac[prev] - did, 0.0)
                stopped[prev] = True
                version[prev] += 1
                nstop[prev] += 1
                plan_time[prev] = frac[prev] * est[prev] + rs[prev]
                planner.update(prev)
                keys[prev] = float(np.min(plan_time[prev]))
                bisect.insort(waiting, (keys[prev], arrivals_l[prev], prev))
            else:
                n_idle -= 1
            idx = bisect.bisect_left(waiting, (keys[j], arrivals_l[j], j))
            waiting.pop(idx)
            start_job(j, g, t)
    return OnlineSchedule(dev, gpu, first, start, finish, nstop)


def _preemptions(t: float, waiting: list[tuple[float, float, int]],
                 started: list[tuple[int, int]], plan_time: np.ndarray, rs: np.ndarray,
                 running: list[int], pred_end: list[float],
                 inst_dev: np.ndarray) -> list[tuple[int, int]]:
    """Waiting jobs (shortest first) that stop a running job when that job's predicted
    remaining time exceeds theirs plus the stopped job's restart cost: each takes the GPU of
    largest gain (the first such GPU on a tie), one job per GPU."""
    gpus = {g for _, g in started}
    jobs = {j for j, _ in started}
    busy = np.array([g for g, r in enumerate(running) if r >= 0 and g not in gpus], dtype=int)
    cand = [j for _, _, j in waiting[: len(running)] if j not in jobs]
    if not len(busy) or not cand:
        return []
    d = inst_dev[busy]
    rem = np.asarray(pred_end)[busy] - t
    pt = plan_time[np.ix_(cand, d)]
    gain = rem[None, :] - pt - rs[np.asarray(running)[busy], d][None, :]
    gain = np.where(np.isfinite(pt), gain, -np.inf)
    out: list[tuple[int, int]] = []
    if not (gain > 0).any():
        return out
    for i in np.flatnonzero((gain > 0).any(axis=1)).tolist():
        b = int(np.argmax(gain[i]))
        if gain[i, b] > 0:
            out.append((cand[i], int(busy[b])))
            gain[:, b] = -np.inf
    return out
