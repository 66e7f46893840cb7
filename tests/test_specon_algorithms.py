"""Seed 004 Algorithms 1–3 on hand-made inputs whose answers are worked out by hand."""

from __future__ import annotations

import math

import pytest

from gpuscope.specon.monitor import Category, Container, growth, monitor_tick, transition
from gpuscope.specon.scheduler import (
    WEIGHTS,
    reallocate,
    reallocate_srpt,
    rebalance,
    scores,
    srpt_cost,
)

PC, WC, CC = Category.PC, Category.WC, Category.CC


def feed(c: Container, others: list[Container], losses: list[float], alpha: float = 0.01,
         scope: str = "worker", rmin: int = 1, mode: str = "absolute") -> list[bool]:
    """Feed a loss sequence to c (others keep their categories); returns request per tick."""
    out = []
    for k, e in enumerate(losses):
        req = monitor_tick([c, *others], {c.job: e}, float(k), alpha, mode, scope, rmin)
        out.append(c in req)
    return out


def test_transition_table() -> None:
    assert transition(PC, 0.005, math.inf, 0.01) == (WC, False)
    assert transition(WC, 0.004, 0.005, 0.01) == (CC, False)  # the text, not lines 10-12
    assert transition(CC, 0.003, 0.004, 0.01) == (CC, True)
    assert transition(WC, 0.006, 0.005, 0.01) == (WC, False)  # bouncing: unchanged
    assert transition(CC, 0.02, 0.001, 0.01) == (PC, False)   # above alpha: reset


def test_three_decreasing_sub_alpha_gains_then_request() -> None:
    c = Container(1, 0)
    growing = [Container(2, 0), Container(3, 0)]  # two PC co-runners: |PC|+|WC| = 2 > 1
    # G (absolute): -, 0.008, 0.006, 0.004, 0.002 (the first tick only records E)
    req = feed(c, growing, [1.0, 0.992, 0.986, 0.982, 0.980])
    assert [h[2] for h in c.history] == ["WC", "CC", "CC", "CC"]
    assert req == [False, False, False, True, True]


def test_non_decreasing_gain_keeps_category_and_big_gain_resets() -> None:
    c = Container(1, 0)
    feed(c, [], [1.0, 0.992, 0.986])          # G 0.008, 0.006 -> WC, CC
    assert c.category is CC
    feed(c, [], [0.979])                      # G 0.007 >= 0.006, < alpha: stays CC
    assert c.category is CC and c.history[-1][2] == "CC"
    feed(c, [], [0.95])                       # G 0.029 > alpha: back to PC
    assert c.category is PC


def test_migrated_containers_are_skipped() -> None:
    c = Container(1, 0, category=CC, migrated=True)
    assert feed(c, [Container(2, 0), Container(3, 0)], [1.0, 0.99, 0.985, 0.982]) == [False] * 4
    assert c.history == [] and c.e0 is None


def test_request_scope_and_threshold() -> None:
    losses = [1.0, 0.992, 0.986, 0.982]
    # one growing co-runner on the same worker: 1 > 1 fails, > 0 passes
    assert feed(Container(1, 0), [Container(2, 0)], losses)[-1] is False
    assert feed(Container(1, 0), [Container(2, 0)], losses, rmin=0)[-1] is True
    # co-runners elsewhere: only the cluster scope counts them
    far = [Container(2, 1), Container(3, 2)]
    assert feed(Container(1, 0), far, losses)[-1] is False
    assert feed(Container(1, 0), far, losses, scope="cluster")[-1] is True


def test_growth_normalisations() -> None:
    assert growth(90.0, 100.0, 200.0, "absolute") == pytest.approx(10.0)
    assert growth(90.0, 100.0, 200.0, "relative-prev") == pytest.approx(0.1)
    assert growth(90.0, 100.0, 200.0, "relative-init") == pytest.approx(0.05)


def _cs(spec: list[tuple[int, int, Category]]) -> list[Container]:
    return [Container(j, w, category=cat) for j, w, cat in spec]


def test_alg2_scores_and_unique_argmin() -> None:
    cs = _cs([(1, 0, CC), (2, 0, PC), (3, 1, PC), (4, 1, WC), (5, 2, CC), (6, 2, WC)])
    assert WEIGHTS == {PC: 2.0, WC: 1.5, CC: 1.0}
    assert scores(cs, 4) == [3.0, 3.5, 2.5, 0.0]
    assert scores(cs, 4, job=1, exclude_self=True) == [2.0, 3.5, 2.5, 0.0]
    d = reallocate(cs[0], cs, 4, [0.0] * 4, t=10.0)
    assert (d.src, d.to, d.kind) == (0, 3, "M") and cs[0].migrated and cs[0].t_migrated == 10.0


def test_alg2_host_in_argmin_stays() -> None:
    cs = _cs([(1, 0, CC), (2, 1, WC)])  # S = 1, 1.5: host is the minimum
    d = reallocate(cs[0], cs, 2, [0.0, 0.0], t=5.0)
    assert d.to is None and d.kind == "stay" and cs[0].migrated


def test_alg2_ties_lowest_usage_then_fewest_then_index() -> None:
    cs = _cs([(1, 0, CC), (2, 0, PC), (3, 1, CC), (4, 2, CC), (5, 3, CC)])  # S = 3, 1, 1, 1
    assert reallocate(Container(1, 0, CC), cs, 4, [0, 0.9, 0.5, 0.7], 0.0).to == 2  # lowest R
    assert reallocate(Container(1, 0, CC), cs, 4, [0, 0.5, 0.5, 0.5], 0.0).to == 1  # index
    # S = 3, 2, 2, 3: worker 1 holds one PC, worker 2 two CCs; same R -> fewest containers
    cs = _cs([(1, 0, CC), (2, 0, PC), (3, 1, PC), (4, 2, CC), (5, 2, CC), (6, 3, PC), (7, 3, CC)])
    assert scores(cs, 4) == [3.0, 2.0, 2.0, 3.0]
    assert reallocate(Container(1, 0, CC), cs, 4, [0, 0.5, 0.5, 0.5], 0.0).to == 1
    cs = _cs([(1, 0, CC), (2, 0, PC), (3, 2, PC), (4, 1, CC), (5, 1, CC)])
    assert reallocate(Container(1, 0, CC), cs, 4, [0, 0.5, 0.5, 0.5], 0.0).to == 3  # S = 0


def test_alg3_paper_example_two_nodes_four_jobs() -> None:
    # W1 hosted c1, c2 (finished); W2 hosts c3, c4, both converged and decided (stayed).
    c3 = Container(3, 1, CC, migrated=True, t_migrated=100.0)
    c4 = Container(4, 1, CC, migrated=True, t_migrated=150.0)
    moves = rebalance([c3, c4], 2, t=200.0)  # bf = 2 // 2 = 1, W1 idle with 0 < 1
    assert len(moves) == 1 and moves[0].job == 4 and moves[0].to == 0 and moves[0].kind == "R"
    assert c4.rebalanced and not c3.rebalanced
    c4.worker = 0
    assert rebalance([c3, c4], 2, t=210.0) == []  # balanced now
    # rebalanced at most once, even when W2 goes idle later
    c3.worker = 0
    assert rebalance([c3, c4], 2, t=220.0)[0].job == 3  # c4 is spent, c3 moves


def test_alg3_no_idle_worker_moves_one_min_d_container() -> None:
    # counts 5, 1, 2: sum 8, bf 2, T = {w : n < 1} is empty -> nothing; make it 6, 0... use 4 workers
    cs = [Container(i, 0, CC, migrated=True, t_migrated=float(i)) for i in range(1, 7)]
    cs += [Container(10, 1, PC), Container(11, 2, PC), Container(12, 3, PC), Container(13, 3, PC)]
    cs += [Container(14, 2, PC), Container(15, 1, PC)]
    # counts 6, 2, 2, 2: sum 12, bf 3, T = {n < 2} empty
    assert rebalance(cs, 4, t=10.0) == []
    cs = [c for c in cs if c.job not in (10, 15)]  # counts 6, 0, 2, 2 -> idle worker 1, bf 2
    moves = rebalance(cs, 4, t=10.0)
    assert [(m.job, m.to) for m in moves] == [(6, 1)]  # smallest d = 10 - 6
    cs = [Container(i, 0, CC, migrated=True, t_migrated=float(i)) for i in range(1, 9)]
    cs += [Container(20 + k, w, PC) for k, w in enumerate([1, 1, 1, 2, 2, 2, 3, 3])]
    # counts 8, 3, 3, 2: sum 16, bf 4, T = {n < 3} = {3}; one move, min d (job 8) to worker 3
    moves = rebalance(cs, 4, t=10.0)
    assert [(m.job, m.src, m.to) for m in moves] == [(8, 0, 3)]


def test_srpt_cost_and_choice() -> None:
    assert srpt_cost(10.0, [5.0, 20.0]) == pytest.approx(10 + 2 * (5 + 10))
    cs = _cs([(1, 0, CC), (2, 0, PC), (3, 0, PC), (4, 1, PC)])
    rem = {1: 10.0, 2: 100.0, 3: 100.0, 4: 3.0}
    d = reallocate_srpt(cs[0], cs, 2, rem, pause_s=4.0, t=0.0)
    # stay: 10 + 2*(10+10) = 50; move: 10 + 2*3 + 4 = 20
    assert d.to == 1 and cs[0].migrated
    cs = _cs([(1, 0, CC), (2, 1, PC)])
    assert reallocate_srpt(cs[0], cs, 2, {1: 10.0, 2: 1.0}, pause_s=4.0, t=0.0).to is None
