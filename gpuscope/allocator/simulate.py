"""Discrete-event, non-preemptive simulation of placed jobs on a GPU cluster (seed 001 §4.5).

Each device type has ``count`` identical GPUs and its own queue. Jobs arrive at ``arrival_s``;
whenever a GPU is free, it takes the waiting job of its device with the lowest priority key
(FIFO: arrival; SJF: predicted time), and runs it to completion for its *actual* duration
(ground truth, never the prediction). JCT = finish − arrival (seed 001 §4.5: average job
completion time), makespan = last finish − first arrival.

Device types never share jobs once placed, so each type is simulated on its own: a heap of
GPU free times and a heap of waiting jobs, O(n log n) per type.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.errors import InputError


@dataclass
class Schedule:
    """Per-job outcome of a simulation, in queue order.

    Attributes:
        start, finish: seconds (NaN for unplaced jobs).
        gpu: GPU instance index within its device type (-1 for unplaced).
    """

    start: np.ndarray
    finish: np.ndarray
    gpu: np.ndarray


def _simulate_type(
    arr: np.ndarray, dur: np.ndarray, key: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(arr)
    start = np.empty(n)
    gpu = np.empty(n, dtype=np.int64)
    by_arrival = np.lexsort((np.arange(n), arr))
    # Whether the priority order (key, index) is the arrival order (FIFO): checked on
    # consecutive arrivals, since both are total orders.
    dk = np.diff(key[by_arrival])
    in_arrival_order = bool(np.all((dk > 0) | ((dk == 0) & (np.diff(by_arrival) > 0))))
    if k == 1 and in_arrival_order:
        # finish_i = max(arrival_i, finish_{i-1}) + d_i, vectorised as cumsum + running max.
        a, d = arr[by_arrival], dur[by_arrival]
        c = np.cumsum(d)
        fin = c + np.maximum.accumulate(a - (c - d))
        start[by_arrival] = fin - d
        gpu[:] = 0
        return start, start + dur, gpu
    if in_arrival_order:
        return _simulate_in_arrival_order(arr, dur, by_arrival, k, start, gpu)
    return _simulate_heap(arr, dur, key, by_arrival, k, start, gpu)


def _simulate_heap(arr: np.ndarray, dur: np.ndarray, key: np.ndarray, by_arrival: np.ndarray,
                   k: int, start: np.ndarray, gpu: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_simulate_type` in any priority order: a heap of GPU free times and a heap of
    waiting jobs."""
    n = len(arr)
    free = [(0.0, g) for g in range(k)]
    ready: list[tuple[float, int]] = []
    i = 0
    arr_l, key_l, dur_l = arr[by_arrival].tolist(), key.tolist(), dur.tolist()
    order_l = by_arrival.tolist()
    push, pop = heapq.heappush, heapq.heappop
    started = 0
    while started < n:
        t, g = pop(free)  # event times are popped in non-decreasing order
        while i < n and arr_l[i] <= t:
            j = order_l[i]
            push(ready, (key_l[j], j))
            i += 1
        if not ready:  # nothing has arrived: this GPU idles until the next arrival
            push(free, (arr_l[i], g))
            continue
        _, j = pop(ready)
        start[j] = t
        gpu[j] = g
        push(free, (t + dur_l[j], g))
        started += 1
    return start, start + dur, gpu


def _simulate_in_arrival_order(arr: np.ndarray, dur: np.ndarray, by_arrival: np.ndarray, k: int,
                               start: np.ndarray, gpu: np.ndarray
                               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_simulate_type` when the priority order (key, index) is the arrival order
    (FIFO): the waiting jobs start in arrival order, so a pointer replaces the heap of
    waiting jobs (10**6 jobs on a busy cluster kept ~10**6 heap entries, ~150 MB). The
    same events in the same order, hence the same GPUs and times. The GPU that frees first is
    replaced in its heap by its next free time (one ``heapreplace``, not a pop and a push:
    the (time, GPU) pairs are distinct, so the same one comes first either way)."""
    n = len(arr)
    free = [(0.0, g) for g in range(k)]
    arr_l, dur_l = arr[by_arrival].tolist(), dur[by_arrival].tolist()
    first = np.empty(n)  # arrays, not lists: 10**6 float objects would hold ~30 MB more
    where = np.empty(n, dtype=np.int64)
    replace = heapq.heapreplace
    i = h = 0  # i: jobs arrived by now; h: jobs started (the next to start is the h-th)
    while h < n:
        t, g = free[0]  # event times come in non-decreasing order
        while i < n and arr_l[i] <= t:
            i += 1
        if h == i:  # nothing waits: this GPU idles until the next arrival
            replace(free, (arr_l[i], g))
            continue
        first[h] = t
        where[h] = g
        replace(free, (t + dur_l[h], g))
        h += 1
    start[by_arrival] = first
    gpu[by_arrival] = where
    return start, start + dur, gpu


def simulate(
    cluster: ClusterSpec,
    device: np.ndarray,
    arrivals: np.ndarray,
    durations: np.ndarray,
    keys: np.ndarray,
) -> Schedule:
    """Run the placed queue.

    Args:
        cluster: device types and GPU counts.
        device: placed device index per job (-1: unplaced, not run).
        arrivals: arrival time per job (s, >= 0).
        durations: actual run time of each job on its placed device (s, finite, >= 0).
        keys: priority per job from :func:`gpuscope.allocator.ordering.order_keys`.
    """
    device = np.asarray(device, dtype=np.int64)
    arrivals = np.asarray(arrivals, dtype=float)
    durations = np.asarray(durations, dtype=float)
    keys = np.asarray(keys, dtype=float)
    n = len(device)
    if not (len(arrivals) == len(durations) == len(keys) == n):
        raise InputError("device, arrivals, durations and keys must have one entry per job")
    placed = device >= 0
    bad = placed & ~(np.isfinite(durations) & (durations >= 0))
    if bad.any():
        raise InputError(f"{int(bad.sum())} placed job(s) have no valid actual duration")
    start = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    gpu = np.full(n, -1, dtype=np.int64)
    for d, k in enumerate(cluster.counts):
        idx = np.flatnonzero(device == d)
        if len(idx) == 0:
            continue
        s, f, g = _simulate_type(arrivals[idx], durations[idx], keys[idx], k)
        start[idx], finish[idx], gpu[idx] = s, f, g
    return Schedule(start, finish, gpu)


def schedule_frame(
    job_ids: np.ndarray,
    cluster: ClusterSpec,
    device: np.ndarray,
    arrivals: np.ndarray,
    sched: Schedule,
    status: np.ndarray | None = None,
) -> pd.DataFrame:
    """Per-job DataFrame: ``job_id, device, gpu, arrival_s, start_s, finish_s, jct_s, status``
    (``status`` ``ok``, ``oom`` when the job did not fit its device in reality, or
    ``rejected`` when no device fit it)."""
    names = np.array(list(cluster.devices) + [""], dtype=object)
    # one shared str per label (astype(object) made a str object per row: 60 MB for 10**6)
    st = np.array(["ok", "rejected"], dtype=object)[(device < 0).astype(np.intp)]
    if status is not None:
        st = np.where((device >= 0) & (status != "ok"), status, st)
    return pd.DataFrame({
        "job_id": job_ids,
        "device": names[device],
        "gpu": sched.gpu,
        "arrival_s": arrivals,
        "start_s": sched.start,
        "finish_s": sched.finish,
        "jct_s": sched.finish - arrivals,
        "status": st,
    })
