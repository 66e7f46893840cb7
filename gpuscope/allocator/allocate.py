"""One allocation run: place (policy) → order (FIFO/SJF) → simulate on ground truth → metrics.

This is seed 001's scheduler (Fig. 4, Alg. 1–2) end to end, on tables pivoted once from a
batched prediction: the policies and the simulator only index numpy matrices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuscope.allocator.efficiency import comp_eff
from gpuscope.allocator.metrics import Metrics, summarize
from gpuscope.allocator.ordering import order_keys
from gpuscope.allocator.policies import Placement, place
from gpuscope.allocator.simulate import schedule_frame, simulate
from gpuscope.allocator.table import JobDeviceTable
from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.errors import InputError
from gpuscope.core.targets import RESOURCES


@dataclass
class AllocationResult:
    """Everything one (policy, order) run produced.

    Attributes:
        placement: the policy's decision (device per job, the score matrix it ranked by).
        schedule: per-job ``job_id, device, gpu, arrival_s, start_s, finish_s, jct_s, status``.
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
) -> AllocationResult:
    """Place, order and simulate one queue.

    SJF sorts each device's queue by the policy's own execution-time estimate: predicted for
    the predictor policies, true for ``oracle``. Driple predicts no execution time (seed 001
    §4.5.3), so ``driple`` with ``sjf`` sorts by its computing efficiency ascending, the
    literal Alg. 2 (``sjf-eff``).
    """
    arrivals = np.asarray(arrivals, dtype=float)
    pl = place(policy, cluster, pred=pred, driple=driple, truth=truth, resources=resources,
               mem_total_mb=mem_total_mb, arrivals=arrivals, order=order, seed=seed)
    est = truth if policy in ("oracle", "oracle-ect") else pred
    pred_time = est.get("exec_time_s") if est is not None and est.has("exec_time_s") else None
    if pl.higher_is_better and not np.isnan(pl.score).all():
        eff = pl.score
    elif pred is not None and all(pred.has(f"{r}_peak") for r in resources):
        eff = comp_eff(pred, resources, mem_total_mb)
    else:
        eff = None
    eff_order = order
    if policy == "driple" and order == "sjf":
        eff_order = "sjf-eff"
    if eff_order == "sjf" and pred_time is None and truth is not None:
        pred_time = truth.get("exec_time_s")
    keys = order_keys(eff_order, pl.device, arrivals, pred_time=pred_time, eff=eff)

    rows = np.arange(len(pl.device))
    col = np.clip(pl.device, 0, None)
    if truth is not None:
        dur = truth.get("exec_time_s")[rows, col]
        ok = truth.fits[rows, col]
        status = np.where(ok, "ok", "oom").astype(object)
        dur = np.where(ok, dur, np.nan_to_num(dur, nan=0.0))  # a crash costs its time to crash
        source = truth.source
    elif pred is not None and pred.has("exec_time_s"):
        dur = np.maximum(pred.get("exec_time_s")[rows, col], 0.0)
        status, source = None, "predicted"
    else:
        raise InputError("simulation needs ground truth or predicted execution times")
    sched = simulate(cluster, pl.device, arrivals, dur, keys)
    frame = schedule_frame(_ids(pred, driple, truth), cluster, pl.device, arrivals, sched,
                           status)
    return AllocationResult(policy, order, pl, frame, summarize(frame, cluster.devices), source)


def _ids(*tables: JobDeviceTable | None) -> np.ndarray:
    for t in tables:
        if t is not None:
            return t.job_ids
    raise InputError("no table given")
