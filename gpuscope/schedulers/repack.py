"""Repacking: split a node whose busy GPUs no VM of its GPU type holds exactly into several
exactly-filled nodes (an improvement step of Randomized Greedy and Path Relinking).

Under the ``largest`` placement rule (the reference's, seed 002 §3.3.1 as the authors' code
does it) every new node is the largest VM of its GPU type, and later jobs best-fit into it, so
the last node of each GPU type is usually part-filled: 5 busy GPUs on an 8-GPU VM. Seed 002's
post-processing (§3.3) can only rightsize it to the smallest VM that holds 5 GPUs (still the
8-GPU one) and give the 3 idle GPUs to one job, which runs sublinearly faster with them. When
VM prices are (about) proportional to GPUs, as in seed 002's catalog (Table 2: $0.56 per K80
GPU-hour on NC6, NC12, NC24 and NC24r alike), the same 5 jobs on a 4-GPU and a 1-GPU VM cost
5/8 as much per hour. No construction of seed 002's Alg. 1 with the ``largest`` rule can
produce such a split, so no number of randomized iterations finds it.

:func:`repack` does it: for every open node, the busy GPUs ``u`` are decomposed into VM sizes
of the node's GPU type (largest first, at most one more node than there are closed nodes left;
the last part rounded up to the smallest VM holding it), the node's jobs are first-fit (most
GPUs first) into the parts, and the split is kept when every job fits, runs as (the part's VM
type, its GPUs) and the parts' hourly rate is below the node's rightsized rate. Jobs keep
their GPU counts; post-processing then runs as usual. The caller decides, by its selection
proxy, whether the repacked solution replaces the original.
"""

from __future__ import annotations

import numpy as np

from gpuscope.schedulers.model import Problem
from gpuscope.schedulers.step import Decision, StepState


def _parts(u: int, sizes: list[int], max_parts: int) -> list[int]:
    """``u`` as VM sizes, largest first, in at most ``max_parts`` parts (the last one the
    smallest size holding what is left); [] if impossible."""
    parts: list[int] = []
    left = u
    for s in sizes:  # descending
        while left >= s and len(parts) < max_parts - 1:
            parts.append(s)
            left -= s
    if left > 0:
        up = [s for s in sizes if s >= left]
        if not up:
            return []
        parts.append(min(up))
    return parts


def repack(p: Problem, st: StepState, d: Decision) -> Decision:
    """Split part-filled nodes into exactly-filled smaller VMs where that is cheaper per hour
    (VM cost model only; fixed node types and ``per-job`` placement are returned unchanged).
    Returns ``d`` itself when no node is split."""
    if p.fixed or p.params.placement != "largest":
        return d
    node, conf = d.node.copy(), d.conf.copy()
    i = np.flatnonzero(conf >= 0)
    if not len(i):
        return d
    N = p.n_nodes
    g_i = p.conf_g[conf[i]]
    used = np.bincount(node[i], weights=g_i, minlength=N).astype(np.int64)
    vm = np.full(N, -1, dtype=np.int64)
    vm[node[i]] = p.conf_vm[conf[i]]
    closed = np.flatnonzero(used == 0).tolist()[::-1]  # pop() gives the lowest-numbered
    if not closed:
        return d
    changed = False
    gtype = p.vm_gpu_type
    V, G1 = p.conf_index.shape
    exact = np.zeros((V, G1), dtype=bool)  # u is the size of a VM of v's GPU type
    for v in range(V):
        exact[v, p.vm_G[gtype == gtype[v]]] = True
    opn = np.flatnonzero(used > 0)
    for n in opn[~exact[vm[opn], used[opn]]].tolist():  # part-filled nodes only
        if not closed:
            break
        v, u = int(vm[n]), int(used[n])
        same = np.flatnonzero(gtype == gtype[v])
        sizes = sorted({int(s) for s in p.vm_G[same]}, reverse=True)
        parts = _parts(u, sizes, len(closed) + 1)
        if len(parts) < 2:
            continue
        # cheapest VM type of the GPU type per part size, and the rates
        w_of = {}
        for s in set(parts):
            cand = same[p.vm_G[same] == s]
            w_of[s] = int(cand[np.argmin(p.node_rate[cand, s])])
        new_rate = sum(p.node_rate[w_of[s], s] for s in parts)
        old_rate = p.rs_rate[v, u]
        if not new_rate < old_rate - 1e-12:
            continue
        on = i[node[i] == n]
        on = on[np.argsort(-p.conf_g[conf[on]], kind="stable")]
        cap = list(parts)
        where = []
        for j in on.tolist():
            g = int(p.conf_g[conf[j]])
            b = next((b for b, c in enumerate(cap) if c >= g), -1)
            if b < 0:
                break
            c2 = p.conf_index[w_of[parts[b]], g]
            if c2 < 0 or not np.isfinite(st.R[j, c2]):
                break
            cap[b] -= g
            where.append((j, b, int(c2)))
        if len(where) < len(on):
            continue
        nodes_b = [n] + [closed.pop() for _ in parts[1:]]
        for j, b, c2 in where:
            node[j], conf[j] = nodes_b[b], c2
        changed = True
    return Decision(node=node, conf=conf) if changed else d
