"""Placement policies: which GPU type each job of a queue goes to (seed 001 §3.2, Alg. 1–2).

Every policy reads matrices pivoted from ONE batched prediction of the whole queue on every
device type (:class:`~gpuscope.allocator.table.JobDeviceTable`) and returns one device index per
job. A (job, device) pair that is predicted not to fit (``oom_prob > 0.5``) is masked out for
every policy; a job that fits nowhere is left unplaced (index -1) and reported as rejected.

* ``exec-time`` — Alg. 1: the lowest predicted execution time.
* ``comp-eff`` — Alg. 2, Eq. 2: the highest Σ_r peak_r / burst_r over a resource set.
* ``driple`` — comp-eff over GPU util and GPU memory util from the Driple-target predictor
  (seed 001 §4.5.2's baseline).
* ``oracle`` — the lowest *true* execution time (ground truth; fits = ran without OOM).
* ``random`` — a seeded uniform choice among the GPUs the job fits (types weighted by count).
* ``round-robin`` — GPU instances in turn, skipping those the job does not fit.
* ``ect`` — gpuscope's own. Eq. 2 and Alg. 1 score each job alone and ignore the load
  already placed, so they pile jobs on whichever device looks best. ``ect`` minimises the
  predicted average JCT of the whole queue instead:

  - FIFO: list scheduling, jobs in arrival order, each to the GPU instance where
    ``max(GPU free time, arrival) + predicted time`` is smallest (earliest completion).
  - SJF, all jobs queued together: the exact minimum of Σ completion times on unrelated
    machines under the predicted times (Horn 1973; Bruno, Coffman & Sethi 1974): the job in
    the k-th last position of a GPU delays k jobs, so assigning jobs to (GPU, k) slots at cost
    ``k · t_jd`` is a min-cost bipartite matching, and each GPU then runs its jobs
    shortest-first — which is exactly what SJF ordering does.
  - SJF with staggered arrivals, or queues too large to match (> 4·10⁶ cells): list
    scheduling with jobs taken shortest-predicted-first.
* ``oracle-ect`` — ``ect`` on the true execution times: how much of ``ect``'s gap to the best
  achievable is prediction error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gpuscope.allocator.efficiency import DRIPLE_RESOURCES, comp_eff
from gpuscope.allocator.table import JobDeviceTable
from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.errors import InputError
from gpuscope.core.targets import RESOURCES

POLICIES: tuple[str, ...] = (
    "oracle", "exec-time", "comp-eff", "driple", "random", "round-robin", "ect", "oracle-ect",
)


@dataclass
class Placement:
    """A policy's decision.

    Attributes:
        policy: policy name.
        device: ``(n_jobs,)`` int, index into ``cluster.devices``; -1 = fits nowhere.
        score: ``(n_jobs, n_devices)`` the matrix the policy ranked by (NaN for random and
            round-robin); comp-eff values for the eff policies, seconds for the time policies.
        higher_is_better: direction of ``score``.
    """

    policy: str
    device: np.ndarray
    score: np.ndarray
    higher_is_better: bool


def select_device(score: np.ndarray, fits: np.ndarray, maximize: bool) -> np.ndarray:
    """Per job, the device with the best score among those it fits (-1: fits none); NaN
    scores never win. Alg. 1 takes the argmin of time, Alg. 2 the argmax of Eq. 2."""
    s = np.where(np.isnan(score), -np.inf if maximize else np.inf, score)
    s = np.where(fits, s, -np.inf if maximize else np.inf)
    idx = np.argmax(s, axis=1) if maximize else np.argmin(s, axis=1)
    ok = fits.any(axis=1)
    return np.where(ok, idx, -1)


def list_schedule(
    pred_time: np.ndarray,
    fits: np.ndarray,
    arrivals: np.ndarray,
    cluster: ClusterSpec,
    order: np.ndarray,
) -> np.ndarray:
    """Earliest-completion list scheduling: jobs in ``order``, each to the GPU instance that
    finishes it first by the predicted times. Returns the device-type index per job."""
    inst = cluster.instance_device
    free = np.zeros(len(inst))
    dev = np.full(len(pred_time), -1, dtype=np.int64)
    t_inst = np.where(fits, np.nan_to_num(pred_time, nan=np.inf), np.inf)[:, inst]
    t_inst = np.maximum(t_inst, 0.0)  # a negative predicted time would let a GPU run backwards
    for j in order:
        fin = np.maximum(free, arrivals[j]) + t_inst[j]
        g = int(np.argmin(fin))
        if np.isinf(fin[g]):
            continue
        free[g] = fin[g]
        dev[j] = inst[g]
    return dev


#: Largest jobs × slots cost matrix the exact matching builds before falling back.
MATCHING_MAX_CELLS: int = 4_000_000


def min_sum_assignment(
    pred_time: np.ndarray, fits: np.ndarray, cluster: ClusterSpec
) -> np.ndarray | None:
    """Predicted-optimal assignment for Σ completion times (all jobs at t = 0), or None when
    the matching would exceed :data:`MATCHING_MAX_CELLS`."""
    from scipy.optimize import linear_sum_assignment

    inst = cluster.instance_device
    ok = fits.any(axis=1)
    jobs = np.flatnonzero(ok)
    n, g = len(jobs), len(inst)
    dev = np.full(len(pred_time), -1, dtype=np.int64)
    if n == 0:
        return dev
    if n * n * g > MATCHING_MAX_CELLS:
        return None
    t = np.maximum(np.nan_to_num(pred_time[jobs][:, inst], nan=np.inf), 0.0)
    t = np.where(fits[jobs][:, inst], t, np.inf)
    big = (np.nanmax(np.where(np.isinf(t), 0.0, t)) + 1.0) * n * n * 10.0
    t = np.where(np.isinf(t), big, t)
    k = np.arange(1, n + 1, dtype=float)
    # columns: slot (gpu, k) -> k * t[j, gpu]
    cost = (t[:, :, None] * k[None, None, :]).reshape(n, g * n)
    rows, cols = linear_sum_assignment(cost)
    dev[jobs[rows]] = inst[cols // n]
    return dev


def place(
    policy: str,
    cluster: ClusterSpec,
    *,
    pred: JobDeviceTable | None = None,
    driple: JobDeviceTable | None = None,
    truth: JobDeviceTable | None = None,
    resources: Sequence[str] = RESOURCES,
    mem_total_mb: Mapping[str, float] | None = None,
    arrivals: np.ndarray | None = None,
    order: str = "fifo",
    seed: int = 0,
) -> Placement:
    """Place every job of the queue with ``policy`` (see the module docstring).

    ``pred`` (full targets) feeds exec-time, comp-eff, ect and the fit mask of random and
    round-robin; ``driple`` feeds driple; ``truth`` feeds oracle. All tables share the queue
    order and the cluster's device order.
    """
    if policy not in POLICIES:
        raise InputError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
    need = {"driple": driple, "oracle": truth, "oracle-ect": truth}.get(policy, pred)
    if need is None and policy not in ("random", "round-robin"):
        what = {"driple": "Driple-target predictions", "oracle": "ground truth",
                "oracle-ect": "ground truth"}.get(policy, "predictions")
        raise InputError(f"policy {policy} needs {what}")
    base = need if need is not None else (pred or truth or driple)
    if base is None:
        raise InputError(f"policy {policy} needs at least a queue table (predictions or truth)")
    if tuple(base.devices) != tuple(cluster.devices):
        raise InputError(f"table devices {base.devices} differ from cluster {cluster.devices}")
    n, m = base.shape
    fits = base.fits
    nan = np.full((n, m), np.nan)
    arr = np.zeros(n) if arrivals is None else np.asarray(arrivals, dtype=float)

    if policy == "exec-time":
        s = base.get("exec_time_s")
        return Placement(policy, select_device(s, fits, False), s, False)
    if policy == "oracle":
        s = base.get("exec_time_s")
        return Placement(policy, select_device(s, fits, False), s, False)
    if policy in ("comp-eff", "driple"):
        res = DRIPLE_RESOURCES if policy == "driple" else tuple(resources)
        s = comp_eff(base, res, mem_total_mb)
        return Placement(policy, select_device(s, fits, True), s, True)
    if policy == "random":
        rng = np.random.default_rng(seed)
        counts = np.asarray(cluster.counts, dtype=float)
        # Gumbel-max over types weighted by GPU count = a uniform pick of a fitting GPU.
        keys = np.log(counts)[None, :] - np.log(-np.log(rng.random((n, m))))
        return Placement(policy, select_device(keys, fits, True), nan, True)
    if policy == "round-robin":
        inst = cluster.instance_device
        dev = np.full(n, -1, dtype=np.int64)
        ptr = 0
        for j in range(n):
            for k in range(len(inst)):
                g = (ptr + k) % len(inst)
                if fits[j, inst[g]]:
                    dev[j], ptr = inst[g], g + 1
                    break
        return Placement(policy, dev, nan, True)
    # ect: gpuscope's predicted-JCT-minimising placement (module docstring).
    s = base.get("exec_time_s")
    if order != "fifo" and n and np.all(arr == arr[0]):
        best = min_sum_assignment(s, fits, cluster)
        if best is not None:
            return Placement(policy, best, s, False)
    if order == "fifo":
        seq = np.lexsort((np.arange(n), arr))
    else:
        shortest = np.where(fits, np.nan_to_num(s, nan=np.inf), np.inf).min(axis=1)
        seq = np.lexsort((np.arange(n), shortest, arr))
    return Placement(policy, list_schedule(s, fits, arr, cluster, seq), s, False)
