"""Allocator: place job queues from predicted metrics, order, simulate, export t_jng.

Seed 001 §3.2 (Alg. 1–2, Eq. 2) and §4.5–4.7: predict every job of a queue on every GPU type
in one batch, place each job (``exec-time``, ``comp-eff``, ``driple``, baselines ``oracle``,
``random``, ``round-robin``, and gpuscope's ``ect``), order each GPU's queue (FIFO, SJF, or
Alg. 2's literal SJF by comp-eff), simulate non-preemptively on ground truth, report average
JCT, makespan, per-device totals and job distribution; export t_jng tables (seed 002 §4.1).

Public API:

* :class:`ClusterSpec` — ``ClusterSpec.parse("gtx1080:1,rtx2070:1,titanx:1")``;
* :class:`JobDeviceTable` — queue × device matrices pivoted from a predictions/truth frame;
* :func:`comp_eff`, :func:`parse_resources` — Eq. 2 and the ablation resource sets;
* :func:`place` / :data:`POLICIES`, :func:`order_keys` / :data:`ORDERS`, :func:`simulate`;
* :func:`allocate` — place → order → simulate → :class:`Metrics` in one call;
* :func:`comparison_table`, :func:`distribution_table` — seed 001 Tables 9–20 layouts;
* :func:`export_tjng` — t_jng table and reference-scheduler instance folder.
"""

from gpuscope.allocator.allocate import AllocationResult, allocate
from gpuscope.allocator.efficiency import BURST_EPS_S, comp_eff, parse_resources
from gpuscope.allocator.metrics import Metrics, comparison_table, distribution_table, summarize
from gpuscope.allocator.ordering import ORDERS, order_keys
from gpuscope.allocator.policies import POLICIES, Placement, place
from gpuscope.allocator.simulate import Schedule, schedule_frame, simulate
from gpuscope.allocator.table import JobDeviceTable
from gpuscope.allocator.tjng_export import export_tjng
from gpuscope.cluster.counts import ClusterSpec

__all__ = [
    "BURST_EPS_S",
    "ORDERS",
    "POLICIES",
    "AllocationResult",
    "ClusterSpec",
    "JobDeviceTable",
    "Metrics",
    "Placement",
    "Schedule",
    "allocate",
    "comp_eff",
    "comparison_table",
    "distribution_table",
    "export_tjng",
    "order_keys",
    "parse_resources",
    "place",
    "schedule_frame",
    "simulate",
    "summarize",
]
