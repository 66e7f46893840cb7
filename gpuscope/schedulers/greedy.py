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
from gpuscope.schedulers.proxies import proxy_by_position
from gpuscope.schedulers.step import (
    EPS_COST,
    OUT_OF_DSTAR,
    Decision,
    StepState,
    config_keys,
    masked_times,
    pressure,
)

#: Positions whose random draws are made together (the loop usually stops long before k).
CHUNK = 64


@dataclass
class Batch:
    """Candidate solutions of one construction, by *position*: iteration i placed job
    ``orders[i, q]`` with ``conf_pos[q, i]`` on ``node_pos[q, i]`` (-1: postponed; positions
    past ``len(conf_pos)`` are postponed in every iteration). ``obj`` is f_OBJ (P1a,
    minimise), ``eq1`` seed 002 Eq. 1 (maximise). ``decision(i)`` gives iteration i in job
    (local index) order; ``conf``/``node`` all of them, ``[iterations, k]``."""

    orders: np.ndarray
    conf_pos: np.ndarray
    node_pos: np.ndarray
    obj: np.ndarray
    eq1: np.ndarray

    def decision(self, i: int) -> Decision:
        k, n = self.orders.shape[1], len(self.conf_pos)
        conf = np.full(k, -1, dtype=np.int64)
        node = np.full(k, -1, dtype=np.int64)
        conf[self.orders[i, :n]] = self.conf_pos[:, i]
        node[self.orders[i, :n]] = self.node_pos[:, i]
        return Decision(node=node, conf=conf)

    def _by_job(self, a: np.ndarray) -> np.ndarray:
        n_it, k = self.orders.shape
        out = np.full((n_it, k), -1, dtype=np.int64)
        out[np.arange(n_it)[:, None], self.orders[:, : len(a)]] = a.T
        return out

    @property
    def conf(self) -> np.ndarray:
        return self._by_job(self.conf_pos)

    @property
    def node(self) -> np.ndarray:
        return self._by_job(self.node_pos)


def _suboptimal_tables(p: Problem, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """best key / config over g <= f for every (job, node type v, free GPUs f); f = 0 and the
    extra type V (unopened nodes) are inf, so a node's class code ``v * G1 + f`` indexes it
    directly. The config placed is (v, g), ranked by the best key of any config (w, g) of
    v's placement group: the reference walks D*_j's setups in key order and places setup
    (w, g) on a node of w's GPU type as (that node's VM type, g)."""
    k = key.shape[0]
    V, G1 = p.conf_index.shape
    grp = p.vm_group
    groups = [np.flatnonzero(grp == q) for q in range(int(grp.max()) + 1)]
    # one extra all-inf "type" V: the class code of unopened (VM model) nodes
    sub_key = np.full((k, V + 1, G1), np.inf)
    sub_conf = np.full((k, V + 1, G1), -1, dtype=np.int64)
    for g in range(1, G1):
        sub_key[:, :, g] = sub_key[:, :, g - 1]
        sub_conf[:, :, g] = sub_conf[:, :, g - 1]
        c = p.conf_index[:, g]
        ok = c >= 0
        kg = np.full((k, V), np.inf)
        kg[:, ok] = key[:, c[ok]]
        for m in groups:  # rank by the group's best key where (v, g) itself is usable
            if len(m) > 1:
                kg[:, m] = np.where(np.isfinite(kg[:, m]), kg[:, m].min(axis=1, keepdims=True), np.inf)
        better = kg < sub_key[:, :V, g]
        sub_key[:, :V, g] = np.where(better, kg, sub_key[:, :V, g])
        sub_conf[:, :V, g] = np.where(better, c[None, :], sub_conf[:, :V, g])
    return sub_key, sub_conf


def construct(
    p: Problem,
    st: StepState,
    n_iter: int,
    rng: np.random.Generator | None,
    n_candidates: int = 3,
    swap_prob: float = 0.3,
    proxy: str = "p1a",
) -> Batch:
    """Build ``n_iter`` solutions (iteration 0 deterministic; the others need ``rng``);
    ``obj`` is the selection proxy ``proxy`` (:data:`gpuscope.schedulers.names.PROXIES`)."""
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
    VG = sub_key.shape[1] * sub_key.shape[2]

    base = np.argsort(-pressure(p, st, Ra), kind="stable")
    orders = np.tile(base, (n_it, 1))
    if n_it > 1 and k > 1:  # randomized swaps, probability inversely proportional to ω_j
        assert rng is not None  # n_it > 1 only with an rng
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
    grp = p.vm_group  # placement group of every node type (GPU type under ``largest``)
    NG = int(grp.max()) + 1
    vm = np.tile(p.fixed_vm, (n_it, 1)).astype(np.int16)
    free = np.where(vm >= 0, p.vm_G[np.maximum(vm, 0)], 0).astype(np.int16)
    is_open = np.zeros((n_it, N), dtype=bool)
    n_open = np.zeros(n_it, dtype=np.int64)
    min_r = np.full((n_it, N), np.inf)
    pi = np.zeros((n_it, N))
    rows = np.arange(n_it)
    vm_f, free_f, open_f = vm.reshape(-1), free.reshape(-1), is_open.reshape(-1)
    minr_f, pi_f = min_r.reshape(-1), pi.reshape(-1)
    # class codes of every node, kept in step with ``vm``/``free``: ``cls`` = v * G1 + free
    # GPUs (unopened VM-model nodes: V * G1), so that step (3) is one gather into the
    # suboptimal table; ``gcl`` = group * G1 + free (unopened: NG * G1) for step (1)
    G1 = sub_key.shape[2]
    cls = np.where(vm >= 0, vm.astype(np.int32) * G1 + free, V * G1).astype(np.int32)
    gcl = np.where(vm >= 0, grp[np.maximum(vm, 0)] * G1 + free, NG * G1).astype(np.int32)
    cls_f, gcl_f = cls.reshape(-1), gcl.reshape(-1)
    # per (job, config) quantities, gathered by flat index j * C + c
    C = Ra.shape[1]
    ra_jc = Ra.reshape(-1)
    tau = w[:, None] * np.maximum(0.0, st.t + Ra - due[:, None])
    tard_jc = np.where(np.isfinite(Ra), tau, 0.0).reshape(-1)
    cost_jc = (Ra * p.conf_rate[None, :] / 3600.0).reshape(-1)
    eq1_jc = (m_slow[:, None] / (Ra * p.conf_share[None, :] / 3600.0 + tau + EPS_COST)).reshape(-1)
    # config a new node gets: the largest VM of the group offering g, if the job can use it
    big_jc = np.where(np.isfinite(Ra[:, p.big_conf]), p.big_conf[None, :], np.arange(C)[None, :]).reshape(-1)
    spare = free.sum(axis=1).astype(np.int64) if fixed else np.zeros(n_it, dtype=np.int64)
    # most free GPUs on an *open* node of each group: lets step (1) skip iterations cheaply
    max_free = np.full((n_it, NG), -1, dtype=np.int64)
    # closed nodes of each type (fixed types) / unopened nodes (VM model)
    # (all zero, and never read, under the VM model)
    n_closed = np.array([(p.fixed_vm == v).sum() for v in range(V)] if fixed else [0] * V,
                        dtype=np.int64)
    closed = np.tile(n_closed, (n_it, 1))

    width = N if fixed else 0  # VM model: open nodes are 0 .. n_open - 1
    # per-position rows contiguous ([k, iterations]): one column gather per position is slow
    ordT = np.ascontiguousarray(orders.T)
    conf_pos = np.full((k, n_it), -1, dtype=np.int64)
    node_pos = np.full((k, n_it), -1, dtype=np.int64)
    mf_f = max_free.reshape(-1)
    # open nodes per (iteration, group, free GPUs f): keeps max_free and step (1) off [.. × N]
    GG1 = NG * G1
    cnt = np.zeros((n_it, NG, G1), dtype=np.int32)
    cnt_f = cnt.reshape(-1)
    fs = np.arange(G1)
    rowsG = rows * NG
    vm_G = p.vm_G

    n_pos = k
    for pos in range(k):
        if not spare.any() and (fixed or n_open.min() == N):
            n_pos = pos
            break  # every iteration's cluster is saturated: the rest are postponed
        if pos % CHUNK == 0:  # configuration choices and fit draws for the next positions
            lo, hi = pos, min(k, pos + CHUNK)
            o = ordT[lo:hi]
            if n_it > 1:
                assert rng is not None
                uc = rng.random((hi - lo, n_it))
                idx = np.zeros(o.shape, dtype=np.int64)
                for q in range(kc - 1):  # inverse CDF over the few candidates
                    idx += uc > cdf[o, q]
                cT = order_c[o, idx]
                cT[:, 0] = best[o[:, 0]]  # iteration 0: deterministic Greedy
                ufT = rng.random((hi - lo, n_it))
            else:
                cT = best[o]
        jj = ordT[pos]
        c = cT[pos - lo].copy()
        v, g = p.conf_vm[c], p.conf_g[c]
        gv = grp[v]
        node = node_pos[pos]  # filled in place (-1: not placed)
        h = np.flatnonzero(mf_f[rowsG + gv] >= g)
        if len(h):  # (1) best fit on an open node of the group with g free GPUs
            # over the classes (group, f) with open nodes and f >= g free GPUs, each
            # weighted count × 1 / (f − g + 1); then the lowest-numbered node of that class
            gh, ggh = g[h], gv[h]
            base_h = h * GG1 + ggh * G1
            cc = cnt_f[base_h[:, None] + fs[None, :]]
            okc = (cc > 0) & (fs[None, :] >= gh[:, None])
            left = fs[None, :] - gh[:, None] + 1.0
            if n_it > 1:
                cum = np.cumsum(np.where(okc, cc / np.maximum(left, 1.0), 0.0), axis=1)
                fp = np.argmax(cum > (ufT[pos - lo][h] * cum[:, -1])[:, None], axis=1)
            else:
                fp = np.zeros(len(h), dtype=np.int64)
            if h[0] == 0:  # deterministic Greedy: the tightest fit
                fp[0] = np.argmax(okc[0])
            nh = np.argmax(gcl[h, :width] == (ggh * G1 + fp)[:, None], axis=1)
            # the job runs as (that node's VM type, g), if it has a time there
            ch = p.conf_index[vm[h, nh], gh]
            okh = (ch >= 0) & np.isfinite(ra_jc[jj[h] * C + np.maximum(ch, 0)])
            h, nh, ch = h[okh], nh[okh], ch[okh]
            node[h], c[h], v[h] = nh, ch, p.conf_vm[ch]
        todo = node < 0
        if todo.any():  # (2) a new node
            if fixed:  # a closed node of type v
                r = rows[todo & (closed[rows, v] > 0)]
                nn = np.argmax(~is_open[r] & (vm[r] == v[r][:, None]), axis=1)
            else:  # the largest VM of the group offering g GPUs
                r = np.flatnonzero(todo & (n_open < N))
                c[r] = big_jc[jj[r] * C + c[r]]
                v[r] = p.conf_vm[c[r]]
                nn = n_open[r]
                fl, vr = r * N + nn, v[r]
                Gr = vm_G[vr]
                vm_f[fl] = vr
                free_f[fl] = Gr
                cls_f[fl] = vr * G1 + Gr
                gcl_f[fl] = grp[vr] * G1 + Gr
                spare[r] += Gr
                n_open[r] += 1
                width = max(width, int(n_open.max()))
            node[r] = nn
        todo = (node < 0) & (spare > 0)
        if todo.any():  # (3) best suboptimal configuration on any node with free GPUs
            r = np.flatnonzero(todo)
            # full nodes (f = 0) and unopened ones index inf entries of the table
            sk = sub_flat[(jj[r] * VG).astype(np.int32)[:, None] + cls[r]]
            # the best key, then the tightest node holding it (the reference's best fit)
            best_k = sk.min(axis=1)
            nb = np.argmin(np.where(sk == best_k[:, None], free[r], 1 << 14), axis=1)
            okk = np.isfinite(best_k)
            r, nb = r[okk], nb[okk]
            c[r] = sub_conf[jj[r], vm[r, nb], free[r, nb]]
            v[r] = p.conf_vm[c[r]]
            node[r] = nb
        ok = node >= 0
        if not ok.any():
            continue
        g = p.conf_g[c]
        conf_pos[pos] = np.where(ok, c, -1)
        fi = jj * C + c
        spare -= np.where(ok, g, 0)
        r = rows if ok.all() else np.flatnonzero(ok)
        flat = r * N + node[r]
        gr = g[r]
        before = free_f[flat].astype(np.int64)
        was_open = open_f[flat]
        free_f[flat] = before - gr
        open_f[flat] = True
        vr = v[r]
        qr = grp[vr]
        cls_f[flat] = vr * G1 + before - gr
        gcl_f[flat] = qr * G1 + before - gr
        if fixed:  # steps (2) and (3) may have opened a closed node
            np.subtract.at(closed, (r[~was_open], vr[~was_open]), 1)
        mfi = r * NG + qr
        mf = mf_f[mfi]
        # the most-free open node of the group only changes if it was the node just used
        mf_f[mfi] = np.where(was_open, mf, np.maximum(mf, before - gr))
        cb = r * GG1 + qr * G1
        cnt_f[cb + before] -= was_open
        cnt_f[cb + before - gr] += 1
        again = was_open & (before == mf)
        if again.any():  # the node used was the most free of its group: next lower class
            cc = cnt_f[cb[again][:, None] + fs[None, :]] > 0
            mf_f[mfi[again]] = np.where(cc.any(axis=1), G1 - 1 - np.argmax(cc[:, ::-1], axis=1), -1)
        rs = ra_jc[fi[r]]
        first = rs < minr_f[flat]
        minr_f[flat[first]] = rs[first]
        pi_f[flat[first]] = cost_jc[fi[r][first]]

    cp, o = conf_pos[:n_pos], ordT[:n_pos]
    placed = cp >= 0
    # running jobs' tardiness and Eq. 1 terms, gathered once (not per position)
    fi_all = o * C + np.maximum(cp, 0)
    tard = np.where(placed, tard_jc[fi_all], 0.0).sum(axis=0)
    eq1 = np.where(placed, eq1_jc[fi_all], 0.0).sum(axis=0)
    worst = w * np.maximum(0.0, st.t + p.params.H + m_slow - due)
    post_worst = worst.sum() - np.where(placed, worst[o], 0.0).sum(axis=0)
    idle = (free * is_open).sum(axis=1)
    obj = tard + p.params.rho * post_worst + p.params.mu * idle
    obj += (pi * is_open).sum(axis=1)
    if proxy != "p1a":  # gpuscope.schedulers.proxies
        obj = proxy_by_position(p, st, Ra, proxy, o, cp, node_pos[:n_pos], vm.astype(np.int64),
                                free.astype(np.int64), is_open)
    return Batch(orders=orders, conf_pos=cp, node_pos=node_pos[:n_pos], obj=obj, eq1=eq1)
