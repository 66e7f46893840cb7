"""Queue ordering on each device after placement (seed 001 §3.2, Alg. 1–2, Fig. 9).

Placement fixes each job's device; ordering only decides which waiting job a free GPU of that
device takes next, so it never moves a job between devices (seed 001 Tab. 13: the job
distribution is the same under FIFO and SJF).

* ``fifo`` — arrival order (ties: queue order).
* ``sjf`` — shortest predicted execution time on the job's device first (Alg. 1, and Fig. 9's
  pseudocode for the comp-eff policy too).
* ``sjf-eff`` — seed 001 Alg. 2 *literally*: sort each device's queue by computing efficiency
  ascending. Kept as an option: it is what the pseudocode says, though it orders by a score
  that says nothing about job length.
* ``plan`` — the order the policy planned (its planned start times): what the ``makespan``
  and ``mix`` policies' plans assume; for ``ect`` it is its own FIFO or SJF sequence.
"""

from __future__ import annotations

import numpy as np

from gpuscope.allocator.names import ORDERS
from gpuscope.core.errors import InputError


def order_keys(
    order: str,
    device: np.ndarray,
    arrivals: np.ndarray,
    pred_time: np.ndarray | None = None,
    eff: np.ndarray | None = None,
    plan_start: np.ndarray | None = None,
) -> np.ndarray:
    """Priority key per job (lower runs first among jobs waiting on the same device).

    Args:
        order: one of ``ORDERS``.
        device: placed device index per job (-1 = unplaced; its key is irrelevant).
        arrivals: arrival time per job (s).
        pred_time: ``(n_jobs, n_devices)`` predicted execution times (``sjf``).
        eff: ``(n_jobs, n_devices)`` computing efficiency, Eq. 2 (``sjf-eff``).
        plan_start: planned start time per job (``plan``).
    """
    if order not in ORDERS:
        raise InputError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
    arrivals = np.asarray(arrivals, dtype=float)
    if order == "fifo":
        return arrivals.copy()
    if order == "plan":
        if plan_start is None or np.isnan(plan_start).all():
            raise InputError("order plan needs a policy that plans a sequence "
                             "(ect, makespan, mix)")
        return np.where(np.isnan(plan_start), np.inf, plan_start)
    mat = pred_time if order == "sjf" else eff
    if mat is None:
        what = "predicted execution times" if order == "sjf" else "computing efficiency"
        raise InputError(f"order {order} needs {what}")
    rows = np.arange(len(device))
    key = mat[rows, np.clip(device, 0, None)].astype(float)
    return np.where(np.isnan(key), np.inf, key)
