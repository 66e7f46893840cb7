"""Allocator: place job queues from predicted metrics, order, simulate, export t_jng.

Seed 001 §3.2 (Alg. 1–2, Eq. 2) and §4.5–4.7: predict every job of a queue on every GPU type
in one batch, place each job with a policy of the registry (``exec-time``, ``comp-eff``,
``driple``, baselines ``oracle``, ``random``, ``round-robin``, and gpuscope's ``ect`` — the
default —, ``makespan``, ``mix``), order each GPU's queue (FIFO, SJF, Alg. 2's literal SJF by
comp-eff, or the policy's plan), simulate non-preemptively on ground truth — or re-plan at
every arrival and completion (``ect-online``, optionally preempting) — and report average
JCT, makespan, per-device totals and job distribution; export t_jng tables (seed 002 §4.1).

Public API:

* :class:`ClusterSpec` — ``ClusterSpec.parse("gtx1080:1,rtx2070:1,titanx:1")``;
* :class:`JobDeviceTable` — queue × device matrices pivoted from a predictions/truth frame;
* :func:`comp_eff`, :func:`parse_resources` — Eq. 2 and the ablation resource sets;
* :func:`place` / :data:`POLICIES` (name -> Policy), :func:`order_keys` / :data:`ORDERS`,
  :func:`simulate`, :func:`simulate_online`, :func:`makespan_lower_bound`;
* :func:`allocate` — place → order → simulate → :class:`Metrics` in one call;
* :func:`comparison_table`, :func:`distribution_table` — seed 001 Tables 9–20 layouts;
* :func:`export_tjng` — t_jng table and reference-scheduler instance folder.

Names load on first use (:mod:`gpuscope.core.lazy`).
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "AllocationResult": ".allocate", "allocate": ".allocate",
    "BURST_EPS_S": ".efficiency", "comp_eff": ".efficiency", "parse_resources": ".efficiency",
    "Metrics": ".metrics", "comparison_table": ".metrics", "distribution_table": ".metrics",
    "summarize": ".metrics",
    "ORDERS": ".ordering", "order_keys": ".ordering",
    "POLICIES": ".policies", "Placement": ".policies", "place": ".policies",
    "makespan_lower_bound": ".policies", "simulate_online": ".online",
    "Schedule": ".simulate", "schedule_frame": ".simulate", "simulate": ".simulate",
    "JobDeviceTable": ".table",
    "export_tjng": ".tjng_export",
    "ClusterSpec": "gpuscope.cluster.counts",
})
