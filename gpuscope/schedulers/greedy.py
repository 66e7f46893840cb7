"""Greedy and Randomized Greedy construction (seed 000 Alg. 1, seed 002 Alg. 1).

All MaxIt_RG iterations are built *at once*, vectorised over iterations with numpy: the jobs
are visited in (perturbed) pressure order, and at each position every iteration places its own
job with array operations on ``[iterations, nodes]`` state. Iteration 0 is the deterministic
Greedy, so Randomized Greedy is never worse than Greedy on the proxy.

Order: descending pressure, then (randomised) adjacent jobs swapped with probability
``swap_prob · ω_min / ω_j`` of the front job, in two passes over disjoint pairs.
Per job (seed 002 §3.3.1): best configuration (cheapest in D*_j, else fastest; randomised:
one of the ``n_candidates`` best, probability ∝ 1/cost); (1) best fit on an open node of that
VM type (randomised: probability ∝ 1/(idle GPUs left + 1)); (2) else open a new node with that
VM type (fixed-type nodes: take a closed node of that type); (3) else the best suboptimal
configuration that fits any node's free GPUs; (4) else postpone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscope.schedulers.model import Problem
from gpuscope.schedulers.step import (
    EPS_COST,
    OUT_OF_DSTAR,
    StepState,
    config_keys,
    masked_times,
    pressure,
)


@dataclass
class Batch:
    """Candidate solutions of one construction: ``conf``/``node`` are [iterations, k] (job
    local index order); ``obj`` is f_OBJ (P1a, minimise), ``eq1`` seed 002 Eq. 1 (maximise)."""

    conf: np.ndarray
    node: np.ndarray
    obj: np.ndarray
    eq1: np.ndarray


def _suboptimal_tables(p: Problem, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """best key / config over g <= f for every (job, VM type v, free GPUs f)."""
    k = key.shape[0]
    V, G1 = p.conf_index.shape
    sub_key = np.full((k, V, G1), np.inf)
    sub_conf = np.full((k, V, G1), -1, dtype=np.int64)
    for g in range(1, G1):
        sub_key[:, :, g] = sub_key[:, :, g - 1]
        sub_conf[:, :, g] = sub_conf[:, :, g - 1]
        c = p.conf_index[:, g]
        ok = c >= 0
        kg = np.full((k, V), np.inf)
        kg[:, ok] = key[:, c[ok]]
        better = kg < sub_key[:, :, g]
        sub_key[:, :, g] = np.where(better, kg, sub_key[:, :, g])
        sub_conf[:, :, g] = np.where(better, c[None, :], sub_conf[:, :, g])
    return sub_key, sub_conf


def construct(
    p: Problem,
    st: StepState,
    n_iter: int,
    rng: np.random.Generator | None,
    n_candidates: int = 3,
    swap_prob: float = 0.3,
) -> Batch:
    """Build ``n_iter`` solutions (iteration 0 deterministic; the others need ``rng``)."""
    k, N = st.k, p.n_nodes
    n_it = n_iter if rng is not None else 1
    Ra = masked_times(p, st)
    key = config_keys(p, st, Ra)
    due, w = p.due[st.jobs], p.weight[st.jobs]
    m_slow = np.where(np.isfinite(Ra), Ra, -np.inf).max(axis=1)
    kc = min(n_candidates, key.shape[1])
    order_c = np.argsort(key, axis=1, kind="stable")[:, :kc]
    kv = np.take_along_axis(key, order_c, axis=1)
    in_d = kv < OUT_OF_DSTAR
    same = np.isfinite(kv) & (in_d == in_d[:, :1])
    val = np.where(in_d, kv, kv - OUT_OF_DSTAR)
    prob = np.where(same, 1.0 / np.maximum(val, EPS_COST), 0.0)
    cdf = np.cumsum(prob / prob.sum(axis=1, keepdims=True), axis=1)
    best = order_c[:, 0]
    sub_key, sub_conf = _suboptimal_tables(p, key)
    sub_flat = sub_key.reshape(-1)
    G1 = sub_key.shape[2]

    base = np.argsort(-pressure(p, st, Ra), kind="stable")
    orders = np.tile(base, (n_it, 1))
    if n_it > 1 and k > 1:  # randomized swaps, probability inversely proportional to ω_j
        p_swap = swap_prob * np.min(w[w > 0], initial=1.0) / np.maximum(w, 1e-12)
        sub = orders[1:]
        for first in (0, 1):  # adjacent pairs (0,1),(2,3),… then (1,2),(3,4),…
            a = np.arange(first, k - 1, 2)
            s = rng.random((n_it - 1, len(a))) < p_swap[sub[:, a]]
            left, right = sub[:, a].copy(), sub[:, a + 1].copy()
            sub[:, a] = np.where(s, right, left)
            sub[:, a + 1] = np.where(s, left, right)

    fixed = p.fixed
    V = len(p.vm_G)
    vm = np.tile(p.fixed_vm, (n_it, 1)).astype(np.int16)
    free = np.where(vm >= 0, p.vm_G[np.maximum(vm, 0)], 0).astype(np.int16)
    is_open = np.zeros((n_it, N), dtype=bool)
    n_open = np.zeros(n_it, dtype=np.int64)
    min_r = np.full((n_it, N), np.inf)
    pi = np.zeros((n_it, N))
    tard = np.zeros(n_it)
    eq1 = np.zeros(n_it)
    conf_pos = np.full((n_it, k), -1, dtype=np.int64)  # by position in each order
    node_pos = np.full((n_it, k), -1, dtype=np.int64)
    rows = np.arange(n_it)
    free_f, open_f, minr_f, pi_f = free.reshape(-1), is_open.reshape(-1), min_r.reshape(-1), pi.reshape(-1)
    # per (job, config) quantities, gathered by flat index j * C + c
    C = Ra.shape[1]
    ra_jc = Ra.reshape(-1)
    tau = w[:, None] * np.maximum(0.0, st.t + Ra - due[:, None])
    tard_jc = np.where(np.isfinite(Ra), tau, 0.0).reshape(-1)
    cost_jc = (Ra * p.conf_rate[None, :] / 3600.0).reshape(-1)
    eq1_jc = (m_slow[:, None] / (Ra * p.conf_share[None, :] / 3600.0 + tau + EPS_COST)).reshape(-1)
    spare = free.sum(axis=1).astype(np.int64) if fixed else np.zeros(n_it, dtype=np.int64)
    # most free GPUs on an *open* node of each type: lets step (1) skip iterations cheaply
    max_free = np.full((n_it, V), -1, dtype=np.int64)
    # closed nodes of each type (fixed types) / unopened nodes (VM model)
    n_closed = np.stack([(p.fixed_vm == v).sum() for v in range(V)]) if fixed else None
    closed = np.tile(n_closed, (n_it, 1)) if fixed else None

    # configuration choices do not depend on the node state: draw them all at once
    if n_it > 1:
        uc = rng.random((n_it, k))
        idx = np.zeros((n_it, k), dtype=np.int64)
        for q in range(kc - 1):  # inverse CDF over the few candidates
            idx += uc > cdf[orders, q]
        c_all = order_c[orders, idx]
        c_all[0] = best[orders[0]]
        u_fit = rng.random((n_it, k))
    else:
        c_all = best[orders]
    width = N if fixed else 0  # VM model: open nodes are 0 .. n_open - 1

    for pos in range(k):
        jj = orders[:, pos]
        c = c_all[:, pos].copy()
        v, g = p.conf_vm[c], p.conf_g[c]
        node = np.full(n_it, -1, dtype=np.int64)
        hm = max_free[rows, v] >= g
        h = rows[hm]
        if len(h):  # (1) best fit on an open node of type v with g free GPUs
            sl = slice(None) if len(h) == n_it else h
            f = free[sl, :width]
            gh = g[sl][:, None]
            cand = is_open[sl, :width] & (vm[sl, :width] == v[sl][:, None]) & (f >= gh)
            left = np.where(cand, f - gh, 0) + 1.0
            if n_it > 1:
                cum = np.cumsum(cand / left, axis=1)
                un = u_fit[sl, pos] * cum[:, -1]
                pick = np.minimum((cum < un[:, None]).sum(axis=1), width - 1)
            else:
                pick = np.zeros(len(h), dtype=np.int64)
            if h[0] == 0:
                pick[0] = np.argmin(np.where(cand[0], left[0], np.inf))
            node[h] = pick
        todo = node < 0
        if todo.any():  # (2) a new node with VM type v
            if fixed:
                r = rows[todo & (closed[rows, v] > 0)]
                nn = np.argmax(~is_open[r] & (vm[r] == v[r][:, None]), axis=1)
            else:
                r = rows[todo & (n_open < N)]
                nn = n_open[r]
                vm[r, nn] = v[r]
                free[r, nn] = p.vm_G[v[r]]
                spare[r] += p.vm_G[v[r]]
                n_open[r] += 1
                width = max(width, int(n_open.max()))
            node[r] = nn
        todo = (node < 0) & (spare > 0)
        if todo.any():  # (3) best suboptimal configuration on any node with free GPUs
            r = rows[todo]
            fr, vmr = free[r], vm[r]
            usable = (vmr >= 0) & (fr > 0) & (is_open[r] | fixed)
            flat = (jj[r] * (V * G1))[:, None] + np.maximum(vmr, 0) * G1 + fr
            sk = np.where(usable, sub_flat[flat], np.inf)
            nb = np.argmin(sk, axis=1)
            okk = np.isfinite(sk[np.arange(len(r)), nb])
            r, nb = r[okk], nb[okk]
            c[r] = sub_conf[jj[r], vm[r, nb], free[r, nb]]
            node[r] = nb
            v, g = p.conf_vm[c], p.conf_g[c]
        ok = node >= 0
        if not ok.any():
            continue
        conf_pos[:, pos] = np.where(ok, c, -1)
        node_pos[:, pos] = node
        fi = jj * C + c
        tard += np.where(ok, tard_jc[fi], 0.0)
        eq1 += np.where(ok, eq1_jc[fi], 0.0)
        spare -= np.where(ok, g, 0)
        r = rows if ok.all() else rows[ok]
        flat = r * N + node[r]
        gr = g[r]
        before = free_f[flat].astype(np.int64)
        was_open = open_f[flat]
        free_f[flat] = before - gr
        open_f[flat] = True
        vr = v[r]
        if fixed:  # steps (2) and (3) may have opened a closed node
            np.subtract.at(closed, (r[~was_open], vr[~was_open]), 1)
        mf = max_free[r, vr]
        # the most-free open node of type v only changes if it was the node just used
        max_free[r, vr] = np.where(was_open, mf, np.maximum(mf, before - gr))
        again = was_open & (before == mf)
        if again.any():
            ra, va = r[again], vr[again]
            max_free[ra, va] = np.where(is_open[ra] & (vm[ra] == va[:, None]), free[ra], -1).max(axis=1)
        rs = ra_jc[fi[r]]
        first = rs < minr_f[flat]
        minr_f[flat[first]] = rs[first]
        pi_f[flat[first]] = cost_jc[fi[r][first]]
        if pos % 8 == 7 and np.all(spare == 0) and (fixed or np.all(n_open == N)):
            break  # every iteration's cluster is saturated: the rest are postponed

    sel_conf = np.full((n_it, k), -1, dtype=np.int64)
    sel_node = np.full((n_it, k), -1, dtype=np.int64)
    sel_conf[rows[:, None], orders] = conf_pos
    sel_node[rows[:, None], orders] = node_pos
    post = sel_conf < 0
    worst = w * np.maximum(0.0, st.t + p.params.H + m_slow - due)
    idle = (free * is_open).sum(axis=1)
    obj = tard + p.params.rho * (post * worst[None, :]).sum(axis=1) + p.params.mu * idle
    obj += (pi * is_open).sum(axis=1)
    return Batch(conf=sel_conf, node=sel_node, obj=obj, eq1=eq1)
