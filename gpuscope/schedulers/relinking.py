"""Path Relinking (seed 002 Alg. 2) and the post-processing step (seed 002 §3.3).

Moves (GET_MOVES): for every job whose configuration (VM type, GPUs) differs between the
source S_s and target S_t, a pair (j, n): n is a node of S_s with the target's VM type and
enough free GPUs (best fit; a closed node, opened with that type, if no open one fits), or
"none" when the target postpones j. The proxy f_P is seed 002 Eq. 1, a sum of per-job terms,
so the value of a move is the change of one term; EXPLORE_STEP's recursive look-ahead is
evaluated for all moves at once as a [moves × moves] matrix (second moves that stay feasible
after the first). Second moves that only *become* feasible after the first are not counted.
"""

from __future__ import annotations

import numpy as np

from gpuscope.schedulers.greedy import Batch
from gpuscope.schedulers.model import Problem
from gpuscope.schedulers.step import Decision, StepState, node_types


def _node_state(p: Problem, d: Decision) -> tuple[np.ndarray, np.ndarray]:
    vm = node_types(p, d.node, d.conf)
    i = np.flatnonzero(d.conf >= 0)
    used = np.bincount(d.node[i], weights=p.conf_g[d.conf[i]], minlength=p.n_nodes).astype(np.int64)
    cap = np.where(vm >= 0, p.vm_G[np.maximum(vm, 0)], 0)
    return vm, cap - used


def get_moves(p: Problem, s: Decision, t: Decision, terms: np.ndarray) -> dict[str, np.ndarray]:
    """Candidate moves from ``s`` towards ``t`` (arrays: job, node, conf, vm, g, avail, src
    node, src g, gain)."""
    vm, free = _node_state(p, s)
    diff = np.flatnonzero(s.conf != t.conf)
    ct = t.conf[diff]
    cs = s.conf[diff]
    gs = np.where(cs >= 0, p.conf_g[np.maximum(cs, 0)], 0)
    vt = np.where(ct >= 0, p.conf_vm[np.maximum(ct, 0)], -1)
    gt = np.where(ct >= 0, p.conf_g[np.maximum(ct, 0)], 0)
    own = (s.node[diff][:, None] == np.arange(p.n_nodes)[None, :]) & (cs >= 0)[:, None]
    avail = free[None, :] + own * gs[:, None]
    ok = (vm[None, :] == vt[:, None]) & (avail >= gt[:, None])
    left = np.where(ok, avail - gt[:, None], 1 << 30)
    node = np.where(ok.any(axis=1), np.argmin(left, axis=1), -1)
    av = np.where(node >= 0, avail[np.arange(len(diff)), np.maximum(node, 0)], 0)
    closed = np.flatnonzero((vm < 0) & (p.fixed_vm < 0))
    need = (node < 0) & (ct >= 0)
    if len(closed) and need.any():  # open a closed node with the target's VM type
        node = np.where(need, closed[0], node)
        av = np.where(need, p.vm_G[np.maximum(vt, 0)], av)
    keep = (node >= 0) | (ct < 0)
    node = np.where(ct < 0, -1, node)
    j = diff[keep]
    gain = terms[j, np.maximum(ct[keep], 0)] * (ct[keep] >= 0)
    gain = gain - terms[j, np.maximum(cs[keep], 0)] * (cs[keep] >= 0)
    return {"job": j, "node": node[keep], "conf": ct[keep], "vm": vt[keep], "g": gt[keep],
            "avail": av[keep], "src": np.where(cs[keep] >= 0, s.node[j], -1), "gs": gs[keep],
            "gain": gain}


def best_move(m: dict[str, np.ndarray]) -> int:
    """EXPLORE_STEP over all moves: value = gain(m) + max(0, best gain of a second move still
    feasible after m); returns the index of the best improving move, or -1."""
    K = len(m["job"])
    if K == 0:
        return -1
    same_node = (m["node"][:, None] == m["node"][None, :]) & (m["node"][None, :] >= 0)
    from_src = (m["src"][:, None] == m["node"][None, :]) & (m["src"][:, None] >= 0)
    after = m["avail"][None, :] - same_node * m["g"][:, None] + from_src * m["gs"][:, None]
    vm_ok = ~same_node | (m["vm"][:, None] == m["vm"][None, :])
    feas = ((after >= m["g"][None, :]) & vm_ok) | (m["conf"][None, :] < 0)
    feas &= m["job"][:, None] != m["job"][None, :]
    second = np.where(feas, m["gain"][None, :], -np.inf).max(axis=1)
    value = m["gain"] + np.maximum(second, 0.0)
    b = int(np.argmax(value))
    return b if value[b] > 1e-12 else -1


def _independent(m: dict[str, np.ndarray], b: int) -> np.ndarray:
    """Moves to apply together with the best move ``b``: ``b`` plus every other improving
    move touching none of the nodes already touched (greedily by gain). Eq. 1 is a sum of
    per-job terms, so such moves keep their gains and feasibility whatever their order."""
    if m["gain"][b] <= 0:
        return np.array([b])
    order = np.flatnonzero(m["gain"] > 1e-12)
    order = order[np.argsort(-m["gain"][order], kind="stable")]
    used: set[int] = set()
    take = []
    for i in [b, *order.tolist()]:
        touched = {int(m["node"][i]), int(m["src"][i])} - {-1}
        if touched & used or (i != b and i in take):
            continue
        used |= touched
        take.append(i)
    return np.array(take)


def relink(p: Problem, s: Decision, t: Decision, terms: np.ndarray, max_it: int) -> Decision:
    """Alg. 2 lines 4–19 for one target: apply the best explored move until S_s reaches S_t,
    no move improves, or ``max_it`` moves have been applied. Improving moves on disjoint
    nodes are applied in the same pass (each counts as one move of the ``max_it`` budget)."""
    s = Decision(node=s.node.copy(), conf=s.conf.copy())
    done = 0
    while done < max_it:
        m = get_moves(p, s, t, terms)
        b = best_move(m)
        if b < 0:
            break
        take = _independent(m, b)[: max_it - done]
        j = m["job"][take]
        s.conf[j] = m["conf"][take]
        s.node[j] = m["node"][take]
        done += len(take)
    return s


def postprocess(p: Problem, st: StepState, d: Decision) -> Decision:
    """Seed 002 §3.3 post-processing (VM cost model only): rightsize each open node to the
    cheapest VM type of the same GPU type that still holds its jobs, then give its idle GPUs to
    the job with the highest speed-up, when that job runs faster with them."""
    if p.fixed:
        return d
    d = Decision(node=d.node.copy(), conf=d.conf.copy())
    vm, free = _node_state(p, d)
    run = np.flatnonzero(d.conf >= 0)
    run = run[np.argsort(d.node[run], kind="stable")]  # jobs grouped by node, job order kept
    nodes, starts = np.unique(d.node[run], return_index=True)
    for n, on in zip(nodes.tolist(), np.split(run, starts[1:])):
        v = vm[n]
        g = p.conf_g[d.conf[on]]
        used = int(g.sum())
        if used < p.vm_G[v]:
            alt = np.flatnonzero((p.vm_gpu_type == p.vm_gpu_type[v]) & (p.vm_G >= used)
                                 & (p.vm_G < p.vm_G[v]))
            best_v, best_rate = -1, p.node_rate[v, used]
            for a in alt:
                c = p.conf_index[a, g]
                if np.all(c >= 0) and np.all(np.isfinite(st.R[on, np.maximum(c, 0)])) \
                        and p.node_rate[a, used] < best_rate:
                    best_v, best_rate = int(a), p.node_rate[a, used]
            if best_v >= 0:
                v = best_v
                d.conf[on] = p.conf_index[v, g]
        idle = int(p.vm_G[v] - used)
        if idle > 0:
            cur = st.R[on, d.conf[on]]
            bigger = p.conf_index[v, np.minimum(g + idle, p.conf_index.shape[1] - 1)]
            ok = (g + idle < p.conf_index.shape[1]) & (bigger >= 0)
            new = np.where(ok, st.R[on, np.maximum(bigger, 0)], np.inf)
            speed = cur / new
            b = int(np.argmax(speed))
            if speed[b] > 1.0:
                d.conf[on[b]] = bigger[b]
    return d


def elite(batch: Batch, value: np.ndarray, sigma: int) -> list[Decision]:
    """The σ best distinct solutions of a construction by ``value`` (larger is better), best
    first."""
    order = np.argsort(-value, kind="stable")
    out: list[Decision] = []
    seen: set[bytes] = set()
    for i in order:
        d = batch.decision(int(i))
        key = d.conf.tobytes()
        if key in seen:
            continue
        seen.add(key)
        out.append(d)
        if len(out) == sigma:
            break
    return out
