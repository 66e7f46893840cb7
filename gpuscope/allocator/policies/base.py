"""What every placement policy reads and returns, and the helpers several policies share.

A policy reads matrices pivoted from ONE batched prediction of the whole queue on every
device type (:class:`~gpuscope.allocator.table.JobDeviceTable`) and returns one device index
per job. A (job, device) pair predicted not to fit (``oom_prob > 0.5``) is masked out for every
policy; a job that fits nowhere is left unplaced (index -1) and reported as rejected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gpuscope.allocator.table import JobDeviceTable
from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.errors import InputError
from gpuscope.core.targets import RESOURCES


@dataclass
class Placement:
    """A policy's decision.

    Attributes:
        policy: policy name.
        device: ``(n_jobs,)`` int, index into ``cluster.devices``; -1 = fits nowhere.
        score: ``(n_jobs, n_devices)`` the matrix the policy ranked by (NaN for random and
            round-robin); comp-eff values for the eff policies, seconds for the time policies.
        higher_is_better: direction of ``score``.
        plan_start: planned start time per job (s; NaN where the policy plans no sequence):
            the ``plan`` order runs each GPU type's jobs in this order.
    """

    policy: str
    device: np.ndarray
    score: np.ndarray
    higher_is_better: bool
    plan_start: np.ndarray | None = None


@dataclass
class PolicyInputs:
    """Everything a policy may read (one queue on one cluster).

    ``pred`` (full targets) feeds the predictor policies and the fit mask of random and
    round-robin; ``driple`` feeds driple; ``truth`` feeds the oracles. All tables share the
    queue order and the cluster's device order.
    """

    cluster: ClusterSpec
    pred: JobDeviceTable | None = None
    driple: JobDeviceTable | None = None
    truth: JobDeviceTable | None = None
    resources: Sequence[str] = RESOURCES
    mem_total_mb: Mapping[str, float] | None = None
    arrivals: np.ndarray | None = None
    order: str = "fifo"
    seed: int = 0
    weights: Mapping[str, float] = field(default_factory=dict)

    @property
    def n_jobs(self) -> int:
        for t in (self.pred, self.truth, self.driple):
            if t is not None:
                return t.shape[0]
        raise InputError("no queue table given (predictions or truth)")

    def arrival(self) -> np.ndarray:
        n = self.n_jobs
        return np.zeros(n) if self.arrivals is None else np.asarray(self.arrivals, dtype=float)


@dataclass(frozen=True)
class Policy:
    """One placement policy of the registry.

    Attributes:
        name: the ``--policy`` name.
        reads: the table it ranks by: ``pred`` (full predictions), ``driple`` (Driple-target
            predictions), ``truth`` (ground truth: an oracle) or ``any`` (only the fit mask).
        place: ``(inputs, table it reads) -> Placement``.
        summary: one line for ``--help`` and the docs.
        online: re-plans while the cluster runs (:mod:`gpuscope.allocator.online`) instead
            of fixing a placement up front.
    """

    name: str
    reads: str
    place: Callable[[PolicyInputs, JobDeviceTable], Placement]
    summary: str
    online: bool = False


def times(table: JobDeviceTable) -> np.ndarray:
    """Execution times with unfit pairs at +inf and negative predictions at 0 (a GPU never
    runs backwards)."""
    t = np.maximum(np.nan_to_num(table.get("exec_time_s"), nan=np.inf), 0.0)
    return np.where(table.fits, t, np.inf)


def select_device(score: np.ndarray, fits: np.ndarray, maximize: bool) -> np.ndarray:
    """Per job, the device with the best score among those it fits (-1: fits none); NaN
    scores never win. Alg. 1 takes the argmin of time, Alg. 2 the argmax of Eq. 2."""
    s = np.where(np.isnan(score), -np.inf if maximize else np.inf, score)
    s = np.where(fits, s, -np.inf if maximize else np.inf)
    idx = np.argmax(s, axis=1) if maximize else np.argmin(s, axis=1)
    ok = fits.any(axis=1)
    return np.where(ok, idx, -1)


#: Jobs :func:`list_schedule` converts to Python lists at a time.
SCHEDULE_CHUNK: int = 1 << 16


def list_schedule(
    t: np.ndarray, arrivals: np.ndarray, cluster: ClusterSpec, order: np.ndarray,
    free: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Earliest-completion list scheduling: jobs in ``order``, each to the GPU instance that
    finishes it first under times ``t`` (``+inf`` = does not fit). GPUs of one type are
    interchangeable, so only each type's earliest-free GPU is a candidate: a heap per type.
    Returns ``(device type per job, planned start per job)`` (-1 / NaN: fits nowhere).
    One Python step per job, on lists and local names only (no NumPy scalar per step), the
    jobs taken :data:`SCHEDULE_CHUNK` at a time (a list of 10**6 rows is ~200 MB)."""
    import heapq
    import math

    counts = cluster.counts
    k = len(counts)
    heaps = [[0.0] * c for c in counts] if free is None else [
        sorted(free[cluster.instance_device == d].tolist()) for d in range(k)]
    n = len(t)
    dev = np.full(n, -1, dtype=np.int64)
    start = np.full(n, np.nan)
    arr = np.asarray(arrivals, dtype=float)
    order = np.asarray(order, dtype=np.int64)
    replace, inf, types = heapq.heapreplace, math.inf, range(k)
    for at in range(0, len(order), SCHEDULE_CHUNK):
        jobs = order[at:at + SCHEDULE_CHUNK]
        got_dev, got_start = [-1] * len(jobs), [math.nan] * len(jobs)
        for m, (row, a) in enumerate(zip(t[jobs].tolist(), arr[jobs].tolist())):
            best, bf, bs = -1, inf, 0.0
            for d in types:
                s = heaps[d][0]  # this type's earliest-free GPU, or the arrival if later
                if a > s:
                    s = a
                f = s + row[d]
                if f < bf:
                    best, bf, bs = d, f, s
            if best >= 0:
                replace(heaps[best], bf)
                got_dev[m], got_start[m] = best, bs
        dev[jobs] = got_dev
        start[jobs] = got_start
    return dev, start
