"""The deterministic Greedy construction (seed 000 Alg. 1 / seed 002 Alg. 1 without
randomisation) as a scalar loop over jobs, and a vectorised post-processing (seed 002 §3.3).

Same decisions as iteration 0 of :func:`gpuscope.schedulers.greedy.construct` (a test checks
it), but without ``[iterations × nodes]`` arrays: the open nodes are kept in heaps per
(node type, free GPUs) class, so one job costs a few dictionary look-ups instead of a few
dozen numpy calls. This is what makes Greedy's rescheduling step O(jobs · classes).
"""

from __future__ import annotations

import heapq

import numpy as np

from gpuscope.schedulers.greedy import _suboptimal_tables
from gpuscope.schedulers.model import Problem
from gpuscope.schedulers.step import Decision, StepState, config_keys, masked_times, pressure


def greedy_decision(p: Problem, st: StepState) -> Decision:
    """Greedy: jobs by descending pressure; per job its best configuration c = (v, g); (1)
    the tightest open node of v's placement group with g free GPUs (lowest-numbered first),
    run as (that node's type, g); (2) else a new node (VM model: the largest VM of the group
    offering g; fixed types: the lowest-numbered closed node of type v); (3) else the best
    suboptimal configuration on any node with free GPUs (best key, then tightest node);
    (4) else postpone. Stops when every node is open and full."""
    k, N = st.k, p.n_nodes
    node = np.full(k, -1, dtype=np.int64)
    conf = np.full(k, -1, dtype=np.int64)
    if k == 0:
        return Decision(node=node, conf=conf)
    Ra = masked_times(p, st)
    key = config_keys(p, st, Ra)
    best = np.argmin(key, axis=1).tolist()
    order = np.argsort(-pressure(p, st, Ra), kind="stable").tolist()
    finite = np.isfinite(Ra).tolist()
    big = p.big_conf.tolist()
    conf_vm, conf_g = p.conf_vm.tolist(), p.conf_g.tolist()
    conf_index = p.conf_index.tolist()
    vm_G, grp = p.vm_G.tolist(), p.vm_group.tolist()
    V, G1 = p.conf_index.shape
    fixed = p.fixed
    vm = p.fixed_vm.tolist()
    free = [vm_G[v] if v >= 0 else 0 for v in vm]
    # open nodes with free GPUs per class q * G1 + f (group q, f free GPUs), as min-heaps of
    # node ids: the choice rules always take a class's lowest-numbered node, its heap top
    heaps: list[list[int]] = [[] for _ in range((max(grp) + 1) * G1)]
    closed: dict[int, list[int]] = {}  # fixed types: closed node ids per type
    if fixed:
        for n, v in enumerate(vm):
            closed.setdefault(v, []).append(n)
    spare = sum(free) if fixed else 0
    n_open = 0
    sub = sc = None
    heappop, heappush = heapq.heappop, heapq.heappush

    for j in order:
        if spare == 0 and (fixed or n_open == N):
            break  # saturated: the rest are postponed
        c = best[j]
        g = conf_g[c]
        q = grp[conf_vm[c]] * G1
        fin = finite[j]
        for f in range(g, G1):  # (1) tightest fit in the group
            h = heaps[q + f]
            if h:
                n = h[0]
                c1 = conf_index[vm[n]][g]
                if c1 >= 0 and fin[c1]:
                    heappop(h)
                    free[n] = f - g
                    spare -= g
                    if f > g:
                        heappush(heaps[q + f - g], n)
                    node[j], conf[j] = n, c1
                    c = -1
                break
        if c < 0:
            continue
        if fixed:  # (2) a closed node of type v
            v = conf_vm[c]
            if closed.get(v):
                n = heappop(closed[v])
                free[n] -= g
                spare -= g
                if free[n]:
                    heappush(heaps[q + free[n]], n)
                node[j], conf[j] = n, c
                continue
        elif n_open < N:  # (2) a new node: the largest VM of the group offering g
            c2 = big[c] if fin[big[c]] else c
            v2 = conf_vm[c2]
            n = n_open
            n_open += 1
            vm[n], free[n] = v2, vm_G[v2] - g
            spare += vm_G[v2] - g
            if free[n]:
                heappush(heaps[grp[v2] * G1 + free[n]], n)
            node[j], conf[j] = n, c2
            continue
        if spare == 0:
            continue
        # (3) best suboptimal configuration on any node with free GPUs (rare: the cluster
        # is full); candidates (key, free, node): best key, then tightest, lowest-numbered
        if sub is None:
            sk_all, sc = _suboptimal_tables(p, key)
            sub = sk_all.tolist()
        sk = sub[j]
        cands = [(sk[vm[n]][free[n]], free[n], n) for h in heaps for n in h]
        if fixed:  # closed nodes of fixed types are candidates too (free = all GPUs)
            cands += [(sk[w][vm_G[w]], vm_G[w], h[0]) for w, h in closed.items() if h]
        if not cands:
            continue
        bk, f, bn = min(cands)
        if not np.isfinite(bk):
            continue
        w = vm[bn]
        c3 = int(sc[j, w, f])  # type: ignore[index]
        g3 = conf_g[c3]
        qb = grp[w] * G1
        if fixed and f == vm_G[w] and closed.get(w) and closed[w][0] == bn:
            heappop(closed[w])
        else:
            h = heaps[qb + f]
            h.remove(bn)
            heapq.heapify(h)
        free[bn] = f - g3
        spare -= g3
        if f > g3:
            heappush(heaps[qb + f - g3], bn)
        node[j], conf[j] = bn, c3
    return Decision(node=node, conf=conf)


def postprocess_fast(p: Problem, st: StepState, d: Decision) -> Decision:
    """Seed 002 §3.3 post-processing, vectorised over nodes (VM cost model only): rightsize
    each open node to the cheapest VM type of its GPU type that holds its busy GPUs and runs
    all its jobs, then give its idle GPUs to its job with the highest speed-up (the first
    such job in job order), when that job runs faster with them."""
    if p.fixed:
        return d
    node, conf = d.node.copy(), d.conf.copy()
    i = np.flatnonzero(conf >= 0)
    if not len(i):
        return Decision(node=node, conf=conf)
    N, (V, G1) = p.n_nodes, p.conf_index.shape
    n_i, g_i = node[i], p.conf_g[conf[i]]
    used = np.bincount(n_i, weights=g_i, minlength=N).astype(np.int64)
    vm = np.full(N, -1, dtype=np.int64)
    vm[n_i] = p.conf_vm[conf[i]]
    R = st.R[i]
    # jobs that cannot run on type a as (a, g): [jobs, V] → per node
    ca = p.conf_index[:, g_i].T  # [jobs, V]
    bad = (ca < 0) | ~np.isfinite(np.take_along_axis(R, np.maximum(ca, 0), axis=1))
    nbad = np.bincount((n_i[:, None] * V + np.arange(V)[None, :]).ravel(), weights=bad.ravel(),
                       minlength=N * V).reshape(N, V)
    opn = np.flatnonzero(used > 0)
    vo, uo = vm[opn], used[opn]
    rate = p.node_rate[np.arange(V)[None, :], uo[:, None]]  # [open nodes, V]
    ok = ((p.vm_gpu_type[None, :] == p.vm_gpu_type[vo][:, None]) & (p.vm_G[None, :] >= uo[:, None])
          & (p.vm_G[None, :] < p.vm_G[vo][:, None]) & (nbad[opn] == 0))
    rate = np.where(ok, rate, np.inf)
    a = np.argmin(rate, axis=1)
    better = rate[np.arange(len(opn)), a] < p.node_rate[vo, uo]
    vm[opn[better]] = a[better]
    v_i = vm[n_i]
    conf[i] = p.conf_index[v_i, g_i]
    idle = p.vm_G[vm] - used
    g2 = g_i + idle[n_i]
    c2 = p.conf_index[v_i, np.minimum(g2, G1 - 1)]
    okc = (idle[n_i] > 0) & (g2 < G1) & (c2 >= 0)
    cur = R[np.arange(len(i)), conf[i]]
    new = np.where(okc, R[np.arange(len(i)), np.maximum(c2, 0)], np.inf)
    speed = cur / new
    # per node the first job with the highest speed-up
    o = np.lexsort((np.arange(len(i)), -speed, n_i))
    first = o[np.r_[True, n_i[o][1:] != n_i[o][:-1]]]
    win = first[speed[first] > 1.0]
    conf[i[win]] = c2[win]
    return Decision(node=node, conf=conf)
