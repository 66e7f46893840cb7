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

from gpuscope.errors import InputError
from gpuscope.schedulers.fastgreedy import greedy_decision, postprocess_fast
from gpuscope.schedulers.greedy import construct
from gpuscope.schedulers.model import Problem
from gpuscope.schedulers.relinking import elite, relink
from gpuscope.schedulers.step import (
    Decision,
    StepState,
    config_keys,
    eq1_terms,
    f_eq1,
    f_obj,
    masked_times,
)

METHODS: tuple[str, ...] = ("fifo", "edf", "ps", "greedy", "rg", "pr")


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
    (seed 000 Alg. 1, seed 002 Alg. 1: best of MaxIt_RG constructions by f_OBJ), followed by
    the post-processing of seed 002 §3.3."""

    def __init__(self, randomized: bool = True, max_it: int | None = None, seed: int = 0,
                 postprocess: bool = True) -> None:
        self.randomized = randomized
        self.max_it = max_it
        self.seed = seed
        self.postprocess = postprocess
        self.rng_ = np.random.default_rng(seed)

    def step(self, p: Problem, st: StepState) -> Decision:
        if self.randomized:
            b = construct(p, st, self.max_it or p.params.max_it_rg, self.rng_)
            d = b.decision(int(np.argmin(b.obj)))
        else:  # the scalar construction: same decision as construct()'s iteration 0
            d = greedy_decision(p, st)
        return postprocess_fast(p, st, d) if self.postprocess else d


#: PathRelinking objectives: ``p1a`` (default, improved) or ``eq1`` (seed 002 as written).
PR_OBJECTIVES: tuple[str, ...] = ("p1a", "eq1")


class PathRelinking:
    """Path Relinking (seed 002 §3.3): randomized construction keeping the σ elite solutions
    by Eq. 1, Alg. 2 from the best towards each other elite (MaxIt_PR moves each, default N),
    then post-processing.

    ``objective="eq1"`` returns the relinked solution as seed 002 does. Eq. 1 sums only over
    *running* jobs, so it can postpone a job until it is late (3-job example instance: PR 226
    against 46.7 for RG). ``objective="p1a"`` (default) runs the same search, then keeps
    whichever of {relinked solution, the best construction by P1a (the RG
    solution)}, both post-processed, has the lower P1a proxy f_OBJ, which includes the
    postponed jobs' worst-case tardiness. At every rescheduling point PR is then never worse on
    f_OBJ than the RG solution of the same constructions."""

    def __init__(self, seed: int = 0, max_it_rg: int | None = None, sigma: int | None = None,
                 max_it_pr: int | None = None, objective: str = "p1a") -> None:
        self.seed = seed
        self.max_it_rg = max_it_rg
        self.sigma = sigma
        self.max_it_pr = max_it_pr
        self.objective = objective
        if objective not in PR_OBJECTIVES:
            raise InputError(f"PR objective must be one of {', '.join(PR_OBJECTIVES)}, got {objective!r}")
        self.rng_ = np.random.default_rng(seed)

    def step(self, p: Problem, st: StepState) -> Decision:
        n_rg = self.max_it_rg or p.params.max_it_rg
        sigma = self.sigma or p.params.sigma
        n_pr = self.max_it_pr or p.params.max_it_pr or p.n_nodes
        b = construct(p, st, n_rg, self.rng_)
        sols = elite(b, b.eq1, sigma)
        Ra = masked_times(p, st)
        terms = eq1_terms(p, st, Ra)
        s = sols[0]
        for t in sols[1:]:
            s = relink(p, s, t, terms, n_pr)
        assert f_eq1(p, st, s, terms) >= f_eq1(p, st, sols[0], terms) - 1e-9
        s = postprocess_fast(p, st, s)
        if self.objective == "eq1":
            return s
        i = int(np.argmin(b.obj))  # the RG solution (best construction by P1a)
        rg = postprocess_fast(p, st, b.decision(i))
        # (the other elites are not candidates: post-processing each costs ~1 ms a step)
        return s if f_obj(p, st, s, Ra) <= f_obj(p, st, rg, Ra) else rg


def make_method(name: str, seed: int = 0, **kw: int | str | None
                ) -> FirstPrinciple | RandomizedGreedy | PathRelinking:
    """A method object by CLI name (:data:`METHODS`); ``pr_objective`` ∈ :data:`PR_OBJECTIVES`."""
    if name in ("fifo", "edf", "ps"):
        return FirstPrinciple(order=name)
    if name == "greedy":
        return RandomizedGreedy(randomized=False, seed=seed)
    if name == "rg":
        return RandomizedGreedy(randomized=True, seed=seed, max_it=kw.get("max_it_rg"))
    if name == "pr":
        return PathRelinking(seed=seed, max_it_rg=kw.get("max_it_rg"),
                             objective=kw.get("pr_objective") or "p1a")
    raise InputError(f"unknown method {name!r}; expected one of {', '.join(METHODS)}")
