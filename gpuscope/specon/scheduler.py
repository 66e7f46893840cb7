"""Algorithms 2 and 3 of seed 004 (SpeCon), and gpuscope's own ``specon-srpt`` destination rule.

Algorithm 2 (on ``Request-Reallocation(w_i, c_j)``): every worker scores
``S_w = 2·|PC_w| + 1.5·|WC_w| + 1·|CC_w|`` (§VI-A weights; c_j counts on its host as CC unless
``exclude_self``); T = the workers with the minimum score. If the host is in T the
container stays; else it moves to T's sole member, or — when |T| > 1 — to the member with the
lowest resource use R(w, t), ties by fewest active containers, then lowest index (one
migration). Either way it is marked migrated: Algorithm 2 touches a container once.

Algorithm 3 (rebalance; our reading of the pseudocode): ``bf = ⌊Σ|w_i| / |W|⌋``; eligible containers are
the migrated, not yet rebalanced ones, ranked by converged duration ``d = t − t_{c_j}``
(smallest first). Idle workers with ``|w| < bf`` each take the smallest-d eligible container
(one per worker); with no idle worker, one smallest-d container from a worker outside
``T = {w : |w| < bf − 1}`` moves to the T-worker with the fewest active containers. Ours: a
container is never taken from a worker it would leave idle (a pure-cost move).

``specon-srpt`` (gpuscope's variant, not the paper's): under processor sharing, adding a job
with remaining solo time ``x`` to a worker whose jobs have remaining times ``y_k`` raises the
sum of completion times by ``x + 2·Σ_k min(x, y_k)`` (each co-runner is slowed by
``min(x, y_k)`` and the job by the same). The destination minimises that, plus the pause on a
move; remaining times are predicted execution time × (1 − progress).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gpuscope.specon.monitor import Category, Container

#: §VI-A: w_pc > w_wc > w_cc.
WEIGHTS: dict[Category, float] = {Category.PC: 2.0, Category.WC: 1.5, Category.CC: 1.0}


@dataclass(frozen=True)
class Decision:
    """A decision on one container: ``to`` is None for a stay. ``kind``: M, R or stay."""

    time: float
    job: int
    src: int
    to: int | None
    kind: str


def scores(containers: Sequence[Container], n_workers: int, job: int | None = None,
           exclude_self: bool = False) -> list[float]:
    """Algorithm 2 line 3: S_w for every worker (optionally leaving out container ``job``)."""
    s = [0.0] * n_workers
    for c in containers:
        if exclude_self and c.job == job:
            continue
        s[c.worker] += WEIGHTS[c.category]
    return s


def _counts(containers: Sequence[Container], n_workers: int) -> list[int]:
    n = [0] * n_workers
    for c in containers:
        n[c.worker] += 1
    return n


def reallocate(c: Container, containers: Sequence[Container], n_workers: int,
               usage: Sequence[float], t: float, exclude_self: bool = False) -> Decision:
    """Algorithm 2 for container ``c``; marks it migrated and returns the decision.

    ``containers`` are the active ones (c included); ``usage`` is R(w, t) per worker. The
    caller carries out a move (pause, restore) — this function only decides.
    """
    s = scores(containers, n_workers, c.job, exclude_self)
    best = min(s)
    cand = [w for w in range(n_workers) if math.isclose(s[w], best)]
    c.migrated, c.t_migrated = True, t
    if c.worker in cand:
        return Decision(t, c.job, c.worker, None, "stay")
    n = _counts(containers, n_workers)
    dest = min(cand, key=lambda w: (usage[w], n[w], w))
    return Decision(t, c.job, c.worker, dest, "M")


def srpt_cost(x: float, others: Sequence[float]) -> float:
    """Added sum of completion times when a job of remaining time ``x`` joins ``others``
    under processor sharing: its own ``x + Σ min(x, y)`` plus each co-runner's ``min(x, y)``."""
    return x + 2.0 * sum(min(x, y) for y in others)


def reallocate_srpt(c: Container, containers: Sequence[Container], n_workers: int,
                    remaining: dict[int, float], pause_s: float, t: float) -> Decision:
    """gpuscope's ``specon-srpt``: the worker with the least added completion time; a move
    also pays the pause (once for the job, while nobody is slowed). Marks c migrated."""
    x = remaining[c.job]
    by_worker: list[list[float]] = [[] for _ in range(n_workers)]
    for o in containers:
        if o.job != c.job:
            by_worker[o.worker].append(remaining[o.job])
    cost = [srpt_cost(x, by_worker[w]) + (0.0 if w == c.worker else pause_s)
            for w in range(n_workers)]
    dest = min(range(n_workers), key=lambda w: (cost[w], w != c.worker, w))
    c.migrated, c.t_migrated = True, t
    if dest == c.worker:
        return Decision(t, c.job, c.worker, None, "stay")
    return Decision(t, c.job, c.worker, dest, "M")


def rebalance_srpt(containers: Sequence[Container], n_workers: int, remaining: dict[int, float],
                   pause_s: float, t: float, movable: set[int] | None = None) -> list[Decision]:
    """gpuscope's ``specon-srpt`` rebalance (ours). Moving a container of predicted remaining
    time x from co-runners Y to co-runners Z changes the sum of completion times (processor
    sharing) by ``2·Σ_Z min(x, z) − 2·Σ_Y min(x, y)`` plus the pause. Destinations are
    Algorithm 3's: every idle worker, else the least loaded worker with ``|w| < bf − 1``; into
    each, the move with the largest saving is made if the saving is positive. Any
    container not yet rebalanced may move (not only converged ones); ``movable`` limits the
    candidates (e.g. to those not paused). At most one move into each worker per invocation."""
    n = _counts(containers, n_workers)
    by_worker: list[list[Container]] = [[] for _ in range(n_workers)]
    for c in containers:
        by_worker[c.worker].append(c)

    def load(x: float, group: list[Container], skip: Container | None = None) -> float:
        return 2.0 * sum(min(x, remaining[o.job]) for o in group if o is not skip)

    moves: list[Decision] = []
    bf = sum(n) // n_workers
    idle = [w for w in range(n_workers) if n[w] == 0]
    dests = idle or [min((w for w in range(n_workers) if n[w] < bf - 1), key=lambda k: (n[k], k),
                         default=-1)]
    for w in (d for d in dests if d >= 0):
        best, gain = None, 0.0
        for c in containers:
            if (c.rebalanced or c.worker == w or n[c.worker] < 2
                    or (movable is not None and c.job not in movable)):
                continue
            x = remaining[c.job]
            g = load(x, by_worker[c.worker], c) - load(x, by_worker[w]) - pause_s
            if g > gain:
                best, gain = c, g
        if best is not None:
            by_worker[best.worker].remove(best)
            moves.append(_move(best, w, n, t))
            by_worker[w].append(best)
    return moves


def rebalance(containers: Sequence[Container], n_workers: int, t: float) -> list[Decision]:
    """Algorithm 3 over the active ``containers``; marks moved ones rebalanced and returns
    the moves (the caller carries them out)."""
    n = _counts(containers, n_workers)
    bf = sum(n) // n_workers
    eligible = sorted((c for c in containers if c.migrated and not c.rebalanced
                       and c.t_migrated is not None),
                      key=lambda c: (t - c.t_migrated, c.job))  # type: ignore[operator]
    idle = [w for w in range(n_workers) if n[w] == 0]
    moves: list[Decision] = []
    if idle:
        for w in idle:
            if not n[w] < bf:
                continue
            pick = next((c for c in eligible if n[c.worker] > 1), None)
            if pick is None:
                break
            eligible.remove(pick)
            moves.append(_move(pick, w, n, t))
        return moves
    low = [w for w in range(n_workers) if n[w] < bf - 1]
    if not low:
        return moves
    pick = next((c for c in eligible if c.worker not in low and n[c.worker] > 1), None)
    if pick is not None:
        dest = min(low, key=lambda w: (n[w], w))
        moves.append(_move(pick, dest, n, t))
    return moves


def _move(c: Container, dest: int, n: list[int], t: float) -> Decision:
    d = Decision(t, c.job, c.worker, dest, "R")
    n[c.worker] -= 1
    n[dest] += 1
    c.rebalanced = True
    return d


__all__ = ["Decision", "WEIGHTS", "rebalance", "rebalance_srpt", "reallocate", "reallocate_srpt", "scores",
           "srpt_cost"]
