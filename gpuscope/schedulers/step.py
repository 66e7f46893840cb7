"""One rescheduling point: its input, a decision, the best-configuration rule and the proxies.

Seed 000 Eq. 2 / seed 002 Eq. 2 (pressure), the D*_j set and best configuration
(``argmin_{D*_j} t·c`` else ``argmin t``), proxy f_OBJ (seed 000 Eq. 1, seed 002 P1a) and the
alternative proxy f̄_OBJ (seed 002 Eq. 1). Times are *remaining* times: a preempted job resumes
from its completed fraction, so ``R[j, c] = (1 - done_j) · t_jc``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscope.schedulers.model import Problem

#: Offset that ranks every configuration outside D*_j after every configuration inside it.
OUT_OF_DSTAR = 1e15
EPS_COST = 1e-9


@dataclass
class StepState:
    """The system at a rescheduling point T_c: queued and running jobs (local index i ↔ global
    job ``jobs[i]``), their remaining times, and where they run now (-1: not running)."""

    t: float
    jobs: np.ndarray  # [k] global job indices
    R: np.ndarray  # [k, C] remaining times, inf where unavailable
    cur_node: np.ndarray  # [k]
    cur_conf: np.ndarray  # [k]

    @property
    def k(self) -> int:
        return len(self.jobs)


@dataclass
class Decision:
    """Per queued job: node and configuration (-1, -1 = postponed)."""

    node: np.ndarray
    conf: np.ndarray


def masked_times(p: Problem, st: StepState) -> np.ndarray:
    """Remaining times restricted to usable configurations."""
    return np.where(p.available_confs()[None, :], st.R, np.inf)


def config_keys(p: Problem, st: StepState, Ra: np.ndarray) -> np.ndarray:
    """Sort key of the best-configuration rule: inside D*_j the deployment cost t·c ($),
    outside ``OUT_OF_DSTAR + t`` (the fastest first); inf where unavailable."""
    due = p.due[st.jobs][:, None]
    in_d = st.t + Ra <= due
    key = np.where(in_d, Ra * p.conf_rate[None, :] / 3600.0, OUT_OF_DSTAR + Ra)
    return np.where(np.isfinite(Ra), key, np.inf)


def pressure(p: Problem, st: StepState, Ra: np.ndarray) -> np.ndarray:
    """Δ_j = T_c + min_c t_jc − d_j (seed 000 Eq. 2, seed 002 Eq. 2)."""
    return st.t + Ra.min(axis=1) - p.due[st.jobs]


def node_types(p: Problem, node: np.ndarray, conf: np.ndarray) -> np.ndarray:
    """VM type of every node implied by a decision (fixed types, else the hosted jobs')."""
    vm = p.fixed_vm.copy()
    run = conf >= 0
    vm[node[run]] = p.conf_vm[conf[run]]
    return vm


def f_obj(p: Problem, st: StepState, d: Decision, Ra: np.ndarray | None = None) -> float:
    """Proxy P1a (seed 002) / Eq. 1 (seed 000), to minimise: Σ ω τ over running jobs
    + ρ Σ ω τ̂ over postponed jobs (τ̂ = T_c + H + M_j − d_j, M_j the slowest remaining time)
    + μ · idle GPUs on open nodes + Σ over open nodes of the deployment cost of the
    first-ending job."""
    Ra = masked_times(p, st) if Ra is None else Ra
    due, w = p.due[st.jobs], p.weight[st.jobs]
    run = d.conf >= 0
    i = np.flatnonzero(run)
    r_sel = Ra[i, d.conf[i]]
    tard = float(np.sum(w[i] * np.maximum(0.0, st.t + r_sel - due[i])))
    m = np.where(np.isfinite(Ra), Ra, -np.inf).max(axis=1)
    post = ~run
    worst = float(np.sum(w[post] * np.maximum(0.0, st.t + p.params.H + m[post] - due[post])))
    N = p.n_nodes
    used = np.bincount(d.node[i], weights=p.conf_g[d.conf[i]], minlength=N)
    vm = node_types(p, d.node, d.conf)
    open_ = used > 0
    idle = float(np.sum(p.vm_G[vm[open_]] - used[open_]))
    first_r = np.full(N, np.inf)
    np.minimum.at(first_r, d.node[i], r_sel)
    pi = np.full(N, np.inf)
    is_first = r_sel <= first_r[d.node[i]]
    np.minimum.at(pi, d.node[i][is_first], r_sel[is_first] * p.conf_rate[d.conf[i][is_first]] / 3600.0)
    return tard + p.params.rho * worst + p.params.mu * idle + float(pi[open_].sum())


def eq1_terms(p: Problem, st: StepState, Ra: np.ndarray) -> np.ndarray:
    """[k, C] terms of seed 002 Eq. 1, ``M_j / (π_j + ω_j τ_j)``, for running j on config c
    (π_j = remaining time × the job's share of the node's rate; M_j = slowest remaining time, the paper's scaling factor)."""
    due, w = p.due[st.jobs][:, None], p.weight[st.jobs][:, None]
    m = np.where(np.isfinite(Ra), Ra, -np.inf).max(axis=1, keepdims=True)
    pi = Ra * p.conf_share[None, :] / 3600.0
    tau = np.maximum(0.0, st.t + Ra - due)
    terms = m / (pi + w * tau + EPS_COST)
    return np.where(np.isfinite(Ra), terms, 0.0)


def f_eq1(p: Problem, st: StepState, d: Decision, terms: np.ndarray | None = None) -> float:
    """Seed 002 Eq. 1, to maximise: Σ over running jobs of M_j / (π_j + ω_j τ_j)."""
    terms = eq1_terms(p, st, masked_times(p, st)) if terms is None else terms
    i = np.flatnonzero(d.conf >= 0)
    return float(terms[i, d.conf[i]].sum())


def check_decision(p: Problem, st: StepState, d: Decision) -> None:
    """Assert a decision is feasible: one VM type per node, no node over its GPUs."""
    i = np.flatnonzero(d.conf >= 0)
    assert np.all(d.node[i] >= 0) and np.all(np.isfinite(st.R[i, d.conf[i]]))
    vm = node_types(p, d.node, d.conf)
    assert np.all(p.conf_vm[d.conf[i]] == vm[d.node[i]]), "jobs of two VM types on one node"
    used = np.bincount(d.node[i], weights=p.conf_g[d.conf[i]], minlength=p.n_nodes)
    cap = np.where(vm >= 0, p.vm_G[np.maximum(vm, 0)], 0)
    assert np.all(used <= cap), "a node runs more GPUs than it has"
