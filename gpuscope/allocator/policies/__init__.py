"""Placement policies: which GPU type each job of a queue goes to, one module per policy.

:data:`POLICIES` is the registry (name -> :class:`Policy`); :func:`place` runs one. A new
policy is a module that builds a :class:`Policy` and one line here.

* ``exec-time`` / ``oracle`` (:mod:`.exec_time`) — the lowest predicted / true time (Alg. 1).
* ``comp-eff`` / ``driple`` (:mod:`.comp_eff`) — the highest Eq. 2 efficiency (Alg. 2).
* ``random`` / ``round-robin`` (:mod:`.baselines`).
* ``ect`` / ``oracle-ect`` (:mod:`.ect`) — the least predicted average JCT (the default).
* ``makespan`` (:mod:`.makespan`) — longest-first list schedule; LP lower bound.
* ``mix`` (:mod:`.mix`) — a weighted mix of average JCT and makespan.
* ``ect-online`` (:mod:`.online`) — ``ect`` re-planned at every arrival and completion;
  runs in the event simulator (:mod:`gpuscope.allocator.online`), not by :func:`place`.
"""

from __future__ import annotations

import numpy as np

from gpuscope.allocator.names import DEFAULT_POLICY, POLICY_NAMES
from gpuscope.allocator.policies.base import (
    Placement,
    Policy,
    PolicyInputs,
    list_schedule,
    select_device,
    times,
)
from gpuscope.allocator.policies.baselines import RANDOM, ROUND_ROBIN
from gpuscope.allocator.policies.comp_eff import COMP_EFF, DRIPLE
from gpuscope.allocator.policies.ect import ECT, ORACLE_ECT, min_sum_assignment
from gpuscope.allocator.policies.exec_time import EXEC_TIME, ORACLE
from gpuscope.allocator.policies.makespan import MAKESPAN, makespan_lower_bound
from gpuscope.allocator.policies.mix import MIX
from gpuscope.allocator.policies.online import ECT_ONLINE
from gpuscope.allocator.table import JobDeviceTable
from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.errors import InputError

_BY_NAME: dict[str, Policy] = {p.name: p for p in (
    ORACLE, EXEC_TIME, COMP_EFF, DRIPLE, RANDOM, ROUND_ROBIN, ECT, ORACLE_ECT, MAKESPAN, MIX,
    ECT_ONLINE,
)}
#: The registry, under the names and in the order of :data:`~gpuscope.allocator.names.POLICY_NAMES`.
POLICIES: dict[str, Policy] = {name: _BY_NAME[name] for name in POLICY_NAMES}
#: What a policy needs, in words, for error messages.
_NEEDS = {"pred": "predictions", "driple": "Driple-target predictions", "truth": "ground truth"}

__all__ = [
    "DEFAULT_POLICY", "POLICIES", "Placement", "Policy", "PolicyInputs", "list_schedule",
    "makespan_lower_bound", "min_sum_assignment", "place", "select_device", "table_for",
    "times",
]


def table_for(policy: Policy, inp: PolicyInputs) -> JobDeviceTable:
    """The table ``policy`` ranks by, or one-line ``InputError`` naming what is missing."""
    need = {"pred": inp.pred, "driple": inp.driple, "truth": inp.truth}.get(policy.reads)
    if policy.reads == "any":
        need = inp.pred or inp.truth or inp.driple
        if need is None:
            raise InputError(f"policy {policy.name} needs at least a queue table "
                             "(predictions or truth)")
    if need is None:
        raise InputError(f"policy {policy.name} needs {_NEEDS[policy.reads]}")
    if tuple(need.devices) != tuple(inp.cluster.devices):
        raise InputError(f"table devices {need.devices} differ from cluster "
                         f"{inp.cluster.devices}")
    return need


def place(policy: str, cluster: ClusterSpec, *, pred: JobDeviceTable | None = None,
          driple: JobDeviceTable | None = None, truth: JobDeviceTable | None = None,
          arrivals: np.ndarray | None = None, order: str = "fifo", seed: int = 0,
          **kw: object) -> Placement:
    """Place every job of the queue with ``policy`` (see the module docstring); ``kw`` are
    the other :class:`PolicyInputs` fields (``resources``, ``mem_total_mb``, ``weights``)."""
    if policy not in POLICIES:
        raise InputError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
    inp = PolicyInputs(cluster, pred, driple, truth, arrivals=arrivals, order=order,
                       seed=seed, **kw)  # type: ignore[arg-type]
    pol = POLICIES[policy]
    return pol.place(inp, table_for(pol, inp))
