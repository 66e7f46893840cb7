"""The scheduling methods: FIFO, EDF, PS (first-principle), Greedy, Randomized Greedy, Path
Relinking. Each is an object with hyperparameters set in ``__init__`` and
``step(problem, state) -> Decision``, called at every rescheduling point.

First-principle methods (seed 000 §V-B, seed 002 §4.2, §4.5): non-preemptive, one job per
node; running jobs keep their node and configuration; queued jobs are taken in FIFO
(submission time), EDF (due date) or PS (tardiness weight, highest first) order and each gets
a free node with its best configuration (cheapest in D*_j, else fastest).
"""

from __future__ import annotations

import numpy as np

from gpuscope.core.errors import InputError
from gpuscope.schedulers.fastgreedy import greedy_decision, postprocess_fast
from gpuscope.schedulers.greedy import construct
from gpuscope.schedulers.model import Problem
from gpuscope.schedulers.names import METHODS, PR_OBJECTIVES, PROXIES
from gpuscope.schedulers.proxies import decision_proxy
from gpuscope.schedulers.relinking import elite, relink
from gpuscope.schedulers.repack import repack
from gpuscope.schedulers.step import (
    Decision,
    StepState,
    config_keys,
    eq1_terms,
    f_eq1,
    masked_times,
)


class FirstPrinciple:
    """FIFO / EDF / PS: non-preemptive, one job per node."""

    def __init__(self, order: str = "fifo") -> None:
        self.order = order

    def step(self, p: Problem, st: StepState) -> Decision:
        node, conf = st.cur_node.copy(), st.cur_conf.copy()
        busy = np.zeros(p.n_nodes, dtype=bool)
        busy[node[conf >= 0]] = True
        queued = np.flatnonzero(conf < 0)
        j = st.jobs[queued]
        sort_key = {"fifo": p.submit[j], "edf": p.due[j], "ps": -p.weight[j]}[self.order]
        queued = queued[np.lexsort((j, sort_key))]
        key = config_keys(p, st, masked_times(p, st))
        for i in queued:
            if busy.all():
                break
            free_nodes = np.flatnonzero(~busy)
            if p.fixed:
                allowed = np.isin(p.conf_vm, p.fixed_vm[free_nodes])
            else:
                allowed = np.ones(len(p.conf_vm), dtype=bool)
            row = np.where(allowed, key[i], np.inf)
            c = int(np.argmin(row))
            if not np.isfinite(row[c]):
                continue
            if p.fixed:
                n = int(free_nodes[np.argmax(p.fixed_vm[free_nodes] == p.conf_vm[c])])
            else:
                n = int(free_nodes[0])
            node[i], conf[i] = n, c
            busy[n] = True
        return Decision(node=node, conf=conf)


class RandomizedGreedy:
    """Greedy (``randomized=False``: one deterministic construction) or Randomized Greedy
    (seed 000 Alg. 1, seed 002 Alg. 1: best of MaxIt_RG constructions by the selection
    proxy), followed by the post-processing of seed 002 §3.3.

    Randomized Greedy's defaults (measured on the reference's AlexNet instances):
    ``n_candidates=1`` (every job takes its best configuration; the randomness is in the job
    order and the best-fit node class) and ``repack=True`` (:func:`.repack.repack`: the
    chosen solution's part-filled nodes are split into exactly-filled smaller VMs, kept when
    the proxy says so). Randomising the configuration among the 3 best made RG 0.5–1.5 %
    dearer, with or without repacking; repacking is what beats the reference's RG
    (docs/schedulers.md). ``n_candidates=3, repack=False`` is the earlier behaviour (CLI
    ``--candidates 3 --no-repack``). Greedy is never repacked (it is the reference's Greedy)."""

    def __init__(self, randomized: bool = True, max_it: int | None = None, seed: int = 0,
                 postprocess: bool = True, proxy: str = "cost", n_candidates: int = 1,
                 repack: bool = True) -> None:
        self.randomized = randomized
        self.max_it = max_it
        self.seed = seed
        self.postprocess = postprocess
        self.proxy = _check_proxy(proxy)
        self.n_candidates = _check_candidates(n_candidates)
        self.repack = repack
        self.rng_ = np.random.default_rng(seed)

    def step(self, p: Problem, st: StepState) -> Decision:
        if self.randomized:
            b = construct(p, st, self.max_it or p.params.max_it_rg, self.rng_, n_candidates=self.n_candidates, proxy=self.proxy)
            d = b.decision(int(np.argmin(b.obj)))
            if self.postprocess:
                return finish(p, st, d, self.proxy, self.repack)[0]
            return d
        # the scalar construction: same decision as construct()'s iteration 0
        d = greedy_decision(p, st)
        return postprocess_fast(p, st, d) if self.postprocess else d


def finish(p: Problem, st: StepState, d: Decision, proxy: str, with_repack: bool,
           Ra: np.ndarray | None = None) -> tuple[Decision, float]:
    """``d`` post-processed, or (``with_repack``) the better by ``proxy`` of ``d`` and
    ``repack(d)``, each post-processed; returns the decision and its proxy value."""
    Ra = masked_times(p, st) if Ra is None else Ra
    a = postprocess_fast(p, st, d)
    va = decision_proxy(p, st, a, proxy, Ra)
    if not with_repack:
        return a, va
    r = repack(p, st, d)
    if r is d:
        return a, va
    b = postprocess_fast(p, st, r)
    vb = decision_proxy(p, st, b, proxy, Ra)
    return (b, vb) if vb < va - 1e-9 * max(1.0, abs(va)) else (a, va)


def _check_candidates(n: int) -> int:
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"configuration candidates must be an integer >= 1, got {n!r}")
    return int(n)


def _check_proxy(proxy: str) -> str:
    if proxy not in PROXIES:
        raise InputError(f"proxy must be one of {', '.join(PROXIES)}, got {proxy!r}")
    return proxy


class PathRelinking:
    """Path Relinking (seed 002 §3.3, Alg. 2) over an elite pool, then post-processing.

    ``objective="p1a"`` (default; the name is kept for the CLI): the randomized construction
    keeps the σ best distinct solutions by the selection proxy (:mod:`.proxies`, default
    ``cost``) as the elite pool; Alg. 2 walks from the best solution towards every other
    elite solution (moves chosen by seed 002's Eq. 1 look-ahead, at most MaxIt_PR moves each,
    default N); every relinked solution is post-processed and scored by the proxy, and the
    best of {relinked solutions, RG's solution} is returned, so PR is never worse than RG of
    the same constructions on the proxy, and better where a path finds a cheaper solution.
    ``n_candidates`` and ``repack`` as :class:`RandomizedGreedy` (the elite solution and
    every relinked one are repacked where the proxy prefers it); with ``objective="eq1"``
    the earlier 3 candidates and no repacking.

    ``objective="eq1"``: seed 002 as written: elite by Eq. 1, relink, return the relinked
    solution. Eq. 1 sums only over *running* jobs, so it can postpone a job until it is late
    (3-job example instance: PR 226 against 46.7 for RG)."""

    def __init__(self, seed: int = 0, max_it_rg: int | None = None, sigma: int | None = None,
                 max_it_pr: int | None = None, objective: str = "p1a", proxy: str = "cost",
                 n_candidates: int | None = None, repack: bool = True) -> None:
        self.seed = seed
        self.max_it_rg = max_it_rg
        self.sigma = sigma
        self.max_it_pr = max_it_pr
        self.objective = objective
        self.proxy = _check_proxy(proxy)
        # paper-literal PR keeps its diverse elite pool (3 candidates) and never repacks
        self.n_candidates = _check_candidates(n_candidates or (3 if objective == "eq1" else 1))
        self.repack = repack and objective != "eq1"
        if objective not in PR_OBJECTIVES:
            raise InputError(f"PR objective must be one of {', '.join(PR_OBJECTIVES)}, got {objective!r}")
        self.rng_ = np.random.default_rng(seed)
        self.relinked_ = 0  # steps where a relinked solution beat RG's (diagnostics)

    def step(self, p: Problem, st: StepState) -> Decision:
        n_rg = self.max_it_rg or p.params.max_it_rg
        sigma = self.sigma or p.params.sigma
        n_pr = self.max_it_pr or p.params.max_it_pr or p.n_nodes
        proxy = self.proxy if self.objective == "p1a" else "p1a"
        b = construct(p, st, n_rg, self.rng_, n_candidates=self.n_candidates, proxy=proxy)
        Ra = masked_times(p, st)
        terms = eq1_terms(p, st, Ra)
        if self.objective == "eq1":
            sols = elite(b, b.eq1, sigma)
            s = sols[0]
            for t in sols[1:]:
                s = relink(p, s, t, terms, n_pr)
            assert f_eq1(p, st, s, terms) >= f_eq1(p, st, sols[0], terms) - 1e-9
            return postprocess_fast(p, st, s)
        sols = elite(b, -b.obj, sigma)  # best first by the proxy; sols[0] is RG's solution
        best, best_v = finish(p, st, sols[0], proxy, self.repack, Ra)
        src = sols[0]
        for t in sols[1:]:
            r, v = finish(p, st, relink(p, src, t, terms, n_pr), proxy, self.repack, Ra)
            if v < best_v - 1e-9 * max(1.0, abs(best_v)):
                best, best_v = r, v
                self.relinked_ += 1
        return best


def _int(x: int | str | None) -> int | None:
    return None if x is None else int(x)


def make_method(name: str, seed: int = 0, **kw: int | str | bool | None
                ) -> FirstPrinciple | RandomizedGreedy | PathRelinking:
    """A method object by CLI name (:data:`METHODS`); ``pr_objective`` ∈ :data:`PR_OBJECTIVES`;
    ``candidates`` (int) and ``repack`` (bool) for RG and PR (None: the defaults)."""
    if name in ("fifo", "edf", "ps"):
        return FirstPrinciple(order=name)
    if name == "greedy":
        return RandomizedGreedy(randomized=False, seed=seed)
    proxy = str(kw.get("proxy") or "cost")
    n_c = _int(kw.get("candidates"))
    rp = True if kw.get("repack") is None else bool(kw.get("repack"))
    if name == "rg":
        return RandomizedGreedy(randomized=True, seed=seed, max_it=_int(kw.get("max_it_rg")),
                                proxy=proxy, n_candidates=n_c or 1, repack=rp)
    if name == "pr":
        return PathRelinking(seed=seed, max_it_rg=_int(kw.get("max_it_rg")),
                             objective=str(kw.get("pr_objective") or "p1a"), proxy=proxy,
                             n_candidates=n_c, repack=rp)
    raise InputError(f"unknown method {name!r}; expected one of {', '.join(METHODS)}")
