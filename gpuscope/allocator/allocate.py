"""One allocation run: place (policy) → order (FIFO/SJF/plan) → simulate on ground truth → metrics.

This is seed 001's scheduler (Fig. 4, Alg. 1–2) end to end, on tables pivoted once from a
batched prediction: the policies and the simulator only index numpy matrices. An online
policy (``ect-online``) instead re-plans at every arrival and completion inside the online
simulator (:mod:`gpuscope.allocator.online`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuscope.allocator.efficiency import comp_eff
from gpuscope.allocator.metrics import Metrics, summarize
from gpuscope.allocator.online import simulate_online
from gpuscope.allocator.ordering import order_keys
from gpuscope.allocator.policies import POLICIES, Placement, place, times
from gpuscope.allocator.simulate import Schedule, schedule_frame, simulate
from gpuscope.allocator.table import JobDeviceTable
from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.errors import InputError
from gpuscope.core.targets import RESOURCES


@dataclass
class AllocationResult:
    """Everything one (policy, order) run produced.

    Attributes:
        placement: the policy's decision (device per job, the score matrix it ranked by); for
            an online policy, where each job ran in the end.
        schedule: per-job ``job_id, device, gpu, arrival_s, start_s, finish_s, jct_s, status``
            (online runs add ``first_start_s`` and ``preemptions``).
        metrics: averages, makespan, per-device totals.
        truth_source: where actual durations came from: ``measured``, ``emulated`` or
            ``predicted`` (no ground truth given: the simulation replays the predictions).
    """

    policy: str
    order: str
    placement: Placement
    schedule: pd.DataFrame
    metrics: Metrics
    truth_source: str


def _durations(truth: JobDeviceTable | None, pred: JobDeviceTable | None
               ) -> tuple[np.ndarray, np.ndarray | None, str]:
    """``(actual time matrix, fits-in-reality matrix or None, source)``."""
    if truth is not None:
        t = truth.get("exec_time_s")
        return np.where(truth.fits, t, np.nan_to_num(t, nan=0.0)), truth.fits, truth.source
    if pred is not None and pred.has("exec_time_s"):
        return np.maximum(pred.get("exec_time_s"), 0.0), None, "predicted"
    raise InputError("simulation needs ground truth or predicted execution times")


def allocate(
    policy: str,
    order: str,
    cluster: ClusterSpec,
    arrivals: np.ndarray,
    *,
    pred: JobDeviceTable | None = None,
    driple: JobDeviceTable | None = None,
    truth: JobDeviceTable | None = None,
    resources: Sequence[str] = RESOURCES,
    mem_total_mb: Mapping[str, float] | None = None,
    seed: int = 0,
    weights: Mapping[str, float] | None = None,
    preempt: bool = False,
    restart_s: np.ndarray | None = None,
) -> AllocationResult:
    """Place, order and simulate one queue.

    SJF sorts each device's queue by the policy's own execution-time estimate: predicted for
    the predictor policies, true for the oracles. Driple predicts no execution time (seed 001
    §4.5.3), so ``driple`` with ``sjf`` sorts by its computing efficiency ascending, the
    literal Alg. 2 (``sjf-eff``). ``preempt`` and ``restart_s`` (seconds per job and type)
    apply to the online policy only.
    """
    arrivals = np.asarray(arrivals, dtype=float)
    if policy in POLICIES and POLICIES[policy].online:
        return _online(policy, cluster, arrivals, pred, truth, preempt, restart_s)
    if preempt:
        raise InputError(f"--preempt needs an online policy (ect-online), not {policy}")
    pl = place(policy, cluster, pred=pred, driple=driple, truth=truth, resources=resources,
               mem_total_mb=mem_total_mb, arrivals=arrivals, order=order, seed=seed,
               weights=dict(weights or {}))
    est = truth if POLICIES[policy].reads == "truth" else pred
    pred_time = est.get("exec_time_s") if est is not None and est.has("exec_time_s") else None
    eff_order = order
    if policy == "driple" and order == "sjf":
        eff_order = "sjf-eff"
    eff = None  # the efficiency matrix only the sjf-eff order reads
    if eff_order == "sjf-eff" and pl.higher_is_better and not np.isnan(pl.score).all():
        eff = pl.score
    elif eff_order == "sjf-eff" and pred is not None and all(pred.has(f"{r}_peak")
                                                             for r in resources):
        eff = comp_eff(pred, resources, mem_total_mb)
    if eff_order == "sjf" and pred_time is None and truth is not None:
        pred_time = truth.get("exec_time_s")
    keys = order_keys(eff_order, pl.device, arrivals, pred_time=pred_time, eff=eff,
                      plan_start=pl.plan_start)

    rows = np.arange(len(pl.device))
    col = np.clip(pl.device, 0, None)
    actual, fits, source = _durations(truth, pred)
    dur = actual[rows, col]
    status = (None if fits is None else
              np.array(["oom", "ok"], dtype=object)[fits[rows, col].astype(np.intp)])
    sched = simulate(cluster, pl.device, arrivals, dur, keys)
    frame = schedule_frame(_ids(pred, driple, truth), cluster, pl.device, arrivals, sched,
                           status)
    return AllocationResult(policy, order, pl, frame, summarize(frame, cluster.devices), source)


def _online(policy: str, cluster: ClusterSpec, arrivals: np.ndarray,
            pred: JobDeviceTable | None, truth: JobDeviceTable | None, preempt: bool,
            restart_s: np.ndarray | None) -> AllocationResult:
    if pred is None:
        raise InputError(f"policy {policy} needs predictions")
    est = times(pred)
    actual, fits, source = _durations(truth, pred)
    actual = np.where(np.isfinite(est), actual, np.inf)
    if preempt and restart_s is None:
        restart_s = np.zeros_like(est)
    on = simulate_online(cluster, arrivals, est, actual, preempt=preempt, restart_s=restart_s)
    rows = np.arange(len(on.device))
    col = np.clip(on.device, 0, None)
    status = (None if fits is None else
              np.array(["oom", "ok"], dtype=object)[fits[rows, col].astype(np.intp)])
    sched = Schedule(on.start, on.finish, on.gpu)
    frame = schedule_frame(_ids(pred, truth), cluster, on.device, arrivals, sched, status)
    frame.insert(4, "first_start_s", on.first_start)
    frame["preemptions"] = on.preemptions
    pl = Placement(policy, on.device, pred.get("exec_time_s"), False, on.first_start)
    order = "online+preempt" if preempt else "online"
    return AllocationResult(policy, order, pl, frame, summarize(frame, cluster.devices), source)


def _ids(*tables: JobDeviceTable | None) -> np.ndarray:
    for t in tables:
        if t is not None:
            return t.job_ids
    raise InputError("no table given")
