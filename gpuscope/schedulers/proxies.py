"""Selection proxies: the value by which Randomized Greedy and Path Relinking rank candidate
solutions at one rescheduling point (lower is better).

* ``cost`` (default): what the solution will cost. Every running job pays its GPU share of
  its node's hourly rate over its whole remaining time, the node *rightsized* first (the
  cheapest VM of its GPU type that holds its busy GPUs, as post-processing does, seed 002
  §3.3), plus its tardiness ω_j max(0, T_c + t_j − d_j); every postponed job pays its
  cheapest possible execution (its smallest GPU-share cost) plus ρ ω_j τ̂_j, τ̂_j = max(0,
  T_c + H + M_j − d_j) (seed 002 P1a's postponement term, M_j its slowest remaining time).
* ``reference``: the reference C++'s ``Greedy::objective_function``: execution cost and
  tardiness of the running jobs up to the first completion (node costs split by busy GPUs,
  nodes rightsized), plus 100 × ω_j max(0, T_c + M_j − d_j) per postponed job.
* ``p1a``: seed 002's P1a / seed 000's Eq. 1 (``gpuscope.schedulers.step.f_obj``), whose idle-GPU
  and first-ending-job terms do not price a shared, rightsized node (kept for comparison).
"""

from __future__ import annotations

import numpy as np

from gpuscope.schedulers.model import Problem
from gpuscope.schedulers.step import Decision, StepState, f_obj, masked_times


def proxy_by_position(p: Problem, st: StepState, Ra: np.ndarray, kind: str, o: np.ndarray,
                      cp: np.ndarray, nodes: np.ndarray, vm: np.ndarray, free: np.ndarray,
                      is_open: np.ndarray) -> np.ndarray:
    """``cost`` or ``reference`` proxy of ``n_it`` solutions given by position: solution i
    placed local job ``o[q, i]`` with config ``cp[q, i]`` (-1: postponed) on ``nodes[q, i]``;
    node state ``vm``/``free``/``is_open`` is ``[n_it, N]``. Returns ``[n_it]``."""
    n_it = vm.shape[0]
    used = np.where(is_open, p.vm_G[np.maximum(vm, 0)] - free, 0)
    rate_n = np.where(used > 0, p.rs_rate[np.maximum(vm, 0), used], 0.0)
    placed = cp >= 0
    c = np.maximum(cp, 0)
    cols = np.arange(n_it)[None, :]
    nd = np.maximum(nodes, 0)
    rate, u = rate_n[cols, nd], np.maximum(used[cols, nd], 1)
    g = p.conf_g[c]
    ra = np.where(placed, Ra[o, c], 0.0)
    due, w = p.due[st.jobs], p.weight[st.jobs]
    m_slow = np.where(np.isfinite(Ra), Ra, -np.inf).max(axis=1)
    if kind == "cost":
        run = ra * rate * g / u / 3600.0 + w[o] * np.maximum(0.0, st.t + ra - due[o])
        share = np.where(np.isfinite(Ra), Ra * p.conf_share[None, :], np.inf).min(axis=1) / 3600.0
        post_j = share + p.params.rho * w * np.maximum(0.0, st.t + p.params.H + m_slow - due)
    else:  # reference: up to the first completion
        fft = np.where(placed, ra, np.inf).min(axis=0, initial=np.inf)
        fft = np.where(np.isfinite(fft), fft, 0.0)[None, :]
        run = fft * rate * g / u / 3600.0 + w[o] * np.maximum(0.0, st.t + fft - due[o])
        post_j = 100.0 * w * np.maximum(0.0, st.t + m_slow - due)
    return (np.where(placed, run, 0.0).sum(axis=0) + post_j.sum()
            - np.where(placed, post_j[o], 0.0).sum(axis=0))


def decision_proxy(p: Problem, st: StepState, d: Decision, kind: str,
                   Ra: np.ndarray | None = None) -> float:
    """The proxy ``kind`` of one decision (nodes as placed: rightsized where post-processed)."""
    Ra = masked_times(p, st) if Ra is None else Ra
    if kind == "p1a":
        return f_obj(p, st, d, Ra)
    i = np.flatnonzero(d.conf >= 0)
    N = p.n_nodes
    used = np.bincount(d.node[i], weights=p.conf_g[d.conf[i]], minlength=N).astype(np.int64)
    vm = p.fixed_vm.copy()
    vm[d.node[i]] = p.conf_vm[d.conf[i]]
    opn = used > 0
    free = np.where(opn, p.vm_G[np.maximum(vm, 0)] - used, 0)
    return float(proxy_by_position(p, st, Ra, kind, i[:, None], d.conf[i][:, None],
                                   d.node[i][:, None], vm[None, :], free[None, :], opn[None, :])[0])
