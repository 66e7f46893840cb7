"""The analytic labels' run counter walks every cut at once and gives
what the per-cut loop it replaced gave; its P(some run) factor and the noisy 2-means gap
match the labeler on sampled series."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.predictor.physics.analytic import noisy_kmeans, weighted_kmeans
from gpuscope.predictor.physics.run_stats import Seg, grid_counts, run_lengths
from gpuscope.profiling.labeling import kmeans_threshold
from gpuscope.profiling.labeling import run_lengths as trace_runs


class _RefCounter:
    """The per-cut counter that ``analytic_runs`` replaced (gpuscope 2.3, one cut per call),
    kept verbatim as the reference."""

    def __init__(self) -> None:
        self.tot, self.cnt, self.last = np.zeros(2), np.zeros(2), np.zeros(2)

    def add(self, pi: float, d: float, n: float) -> None:
        if d <= 0:
            return
        q, ne = min(1.0, n), max(n, 1.0)
        within = (ne - 1.0) * pi * (1.0 - pi)
        self.cnt[1] += q * (pi * (1.0 - self.last[1]) + within)
        self.cnt[0] += q * ((1.0 - pi) * (1.0 - self.last[0]) + within)
        self.last = q * np.array([1.0 - pi, pi]) + (1.0 - q) * self.last
        self.tot += d * np.array([1.0 - pi, pi])

    def add_samples(self, pi: np.ndarray, period_s: float) -> None:
        if pi.size == 0:
            return
        prev1 = np.concatenate([[self.last[1]], pi[:-1]])
        prev0 = np.concatenate([[self.last[0]], 1.0 - pi[:-1]])
        self.cnt[1] += float(np.sum(pi * (1.0 - prev1)))
        self.cnt[0] += float(np.sum((1.0 - pi) * (1.0 - prev0)))
        self.last = np.array([1.0 - pi[-1], pi[-1]])
        self.tot += period_s * np.array([float(np.sum(1.0 - pi)), float(np.sum(pi))])

    def means(self) -> tuple[float, float]:
        b = self.tot[1] / self.cnt[1] if self.cnt[1] > 1e-9 else 0.0
        i = self.tot[0] / self.cnt[0] if self.cnt[0] > 1e-9 else 0.0
        return float(b), float(i)


def _ref_stalls(rc: _RefCounter, p_tr: float, stall_pi: float, per_epoch: float,
                stall_s: float) -> None:
    if per_epoch > 0:
        rc.cnt += per_epoch * (p_tr * (1 - stall_pi) + (1 - p_tr) * stall_pi)
        rc.tot += per_epoch * stall_s * np.array([1 - stall_pi, stall_pi])


def _ref_epoch(rc: _RefCounter, epoch: list[Seg], pis: list[np.ndarray], mid: float,
               split: bool, period_s: float, stall_pi: float, per_epoch: float,
               stall_s: float) -> None:
    for idx, (s, pi) in enumerate(zip(epoch, pis, strict=True)):
        dur = float(s.w.sum())
        if s.step <= 0:
            rc.add(float(pi[0]), dur, dur / period_s)
            if idx == 0:
                _ref_stalls(rc, float(pi[0]), stall_pi, per_epoch, stall_s)
            continue
        hard = s.v > mid
        if split and hard.any() and not hard.all():
            T = s.step
            share = float(s.w[hard].sum() / dur)
            lb, li = share * T, (1.0 - share) * T
            n = (dur / T) * min(1.0, lb / period_s, li / period_s)
            rc.tot += np.array([dur * (1.0 - share), dur * share])
            rc.cnt += n
            rc.last = np.zeros(2)
            continue
        p_tr = float(np.dot(pi, s.w) / dur)
        edge = split and s.step > 0 and dur >= 2 * period_s
        rc.add(p_tr, dur - (period_s if edge else 0.0), dur / period_s - float(edge))
        _ref_stalls(rc, p_tr, stall_pi, per_epoch, stall_s)
        if edge:
            g = float(np.dot(s.v, s.w) / dur)
            rc.add(max(0.0, 1.0 - mid / g) if g > 0 else 0.0, period_s, 1.0)


def _ref_run_lengths(st_pi: np.ndarray, epoch: list[Seg], pis: list[np.ndarray], mid: float,
                     split: bool, epochs: int, period_s: float, stall_pi: float,
                     per_epoch: float, stall_s: float) -> tuple[float, float]:
    rc = _RefCounter()
    rc.add_samples(st_pi, period_s)
    seen: list[np.ndarray] = []
    args = (mid, split, period_s, stall_pi, per_epoch, stall_s)
    for k in range(max(int(epochs), 0)):
        if k >= 2 and bool(np.all(np.abs(seen[-1] - seen[-2]) <= 1e-12 + 1e-5 * np.abs(seen[-2]))):
            cnt0, tot0 = rc.cnt.copy(), rc.tot.copy()
            _ref_epoch(rc, epoch, pis, *args)
            rem = int(epochs) - k - 1
            rc.cnt += rem * (rc.cnt - cnt0)
            rc.tot += rem * (rc.tot - tot0)
            break
        _ref_epoch(rc, epoch, pis, *args)
        seen.append(rc.last.copy())
    return rc.means()


def _probs(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Burst probabilities as the labels produce them: 0/1 (noise-free) or fractional."""
    p = rng.uniform(0, 1, shape)
    hard = rng.uniform(0, 1, shape) < 0.5
    return np.where(hard, np.round(p), p)


def _random_case(rng: np.random.Generator) -> dict:
    P = float(rng.choice([1 / 6, 0.5, 2.0]))
    step = float(rng.uniform(0.01, 3.0))
    gpu_like = bool(rng.uniform() < 0.6)
    k = 48 if gpu_like else 1
    tr = Seg(rng.uniform(0, 100, k), np.full(k, float(rng.uniform(0.1, 60.0)) / k),
             step if gpu_like else 0.0)
    epoch = [tr, Seg(np.array([rng.uniform(0, 100)]), np.array([rng.uniform(0, 3)])),
             Seg(np.array([rng.uniform(0, 100)]), np.array([rng.choice([0.0, 0.05, 2.0])]))]
    c = int(rng.integers(1, 10))
    mid = rng.uniform(0, 100, c)
    split = rng.uniform(0, 1, c) < 0.8
    return {"st_pi": _probs(rng, (c, int(rng.integers(0, 40)))), "epoch": epoch,
            "pis": [_probs(rng, (c, s.v.size)) for s in epoch], "mid": mid, "split": split,
            "epochs": int(rng.integers(0, 25)), "period_s": P,
            "stall_pi": _probs(rng, (c,)), "per_epoch": float(rng.choice([0.0, 0.7, 3.0])),
            "stall_s": float(rng.choice([0.5, 1.0]))}


def test_all_cuts_at_once_equal_the_per_cut_loop() -> None:
    rng = np.random.default_rng(13)
    for _ in range(300):
        a = _random_case(rng)
        b, i = run_lengths(a["st_pi"], a["epoch"], a["pis"], a["mid"], a["split"], a["epochs"],
                           a["period_s"], a["stall_pi"], a["per_epoch"], a["stall_s"],
                           p_some=False)
        for c in range(a["mid"].size):
            rb, ri = _ref_run_lengths(a["st_pi"][c], a["epoch"], [p[c] for p in a["pis"]],
                                      float(a["mid"][c]), bool(a["split"][c]), a["epochs"],
                                      a["period_s"], float(a["stall_pi"][c]), a["per_epoch"],
                                      a["stall_s"])
            assert b[c] == np.float64(rb) or abs(b[c] - rb) <= 1e-9 * abs(rb), (c, b[c], rb)
            assert i[c] == np.float64(ri) or abs(i[c] - ri) <= 1e-9 * abs(ri), (c, i[c], ri)


def test_mean_run_weighs_in_the_chance_of_no_run() -> None:
    """A level that the sensor noise takes below the cut a few times per run: the labeler's
    mean idle run is one sample when there is one and 0 (no idle run) otherwise."""
    P, n_st, n_tr, epochs = 1 / 6, 30, 60, 3
    p_idle = 0.004
    st = np.full((1, n_st), 1.0 - p_idle)
    epoch = [Seg(np.array([50.0]), np.array([n_tr * P])), Seg(np.array([50.0]), np.array([0.0])),
             Seg(np.array([50.0]), np.array([0.0]))]
    pis = [np.full((1, 1), 1.0 - p_idle)] * 3
    args = (st, epoch, pis, np.array([10.0]), np.array([True]), epochs, P, np.ones(1), 0.0, 1.0)
    b, i = run_lengths(*args)
    b0, i0 = run_lengths(*args, p_some=False)
    rng = np.random.default_rng(0)
    n = n_st + epochs * n_tr
    d = np.full(n, P)
    idle = []
    for _ in range(4000):
        _, ir = trace_runs(rng.uniform(size=n) >= p_idle, d)
        idle.append(ir.mean() if ir.size else 0.0)
    mc = float(np.mean(idle))  # ~ P x (1 - (1 - p)^n) = 0.087 s
    assert abs(i[0] - mc) <= 0.1 * P
    assert abs(i0[0] - mc) > 0.3 * P  # without the factor: one sample, always
    assert b[0] == b0[0] or abs(b[0] - b0[0]) < 1e-9 * b0[0]  # a burst run is certain


def _sample(levels: list[tuple[float, int]], sd: float, cap: float, rng: np.random.Generator
            ) -> np.ndarray:
    x = np.concatenate([np.full(c, v) for v, c in levels])
    return np.clip(x + rng.normal(0.0, sd, x.size), 0.0, cap)


def test_noisy_gap_is_the_labelers_split_of_the_noisy_samples() -> None:
    """A level near the first Lloyd midpoint of the noise-free levels goes to the side the
    noisy extremes put it on (a small job's memory on a GTX 1080: start-up at 0, context
    400 MB, workspace trials 471 MB, training 799 MB), and a CPU series."""
    rng = np.random.default_rng(1)
    for levels, sd, cap in (
            ([(0.0, 15), (400.0, 7), (470.9, 7), (799.0, 530)], 2.0, 8192.0),
            ([(12.5, 40), (25.8, 320), (15.5, 5), (12.5, 10)], 1.0, 100.0)):
        v = np.array([x for x, _ in levels])
        w = np.array([float(c) for _, c in levels])
        gaps = []
        for _ in range(20):
            x = _sample(levels, sd, cap, rng)
            m = x > kmeans_threshold(x)
            gaps.append(x[m].mean() - x[~m].mean())
        thr, gap = noisy_kmeans(v, w, sd, cap, True, w.sum())
        assert abs(gap - np.mean(gaps)) <= 0.01 * np.mean(gaps), (gap, np.mean(gaps))
    # the noise-free Lloyd steps split the memory levels elsewhere (0 vs the rest)
    assert weighted_kmeans(np.array([0.0, 400.0, 470.9, 799.0]),
                           np.array([15.0, 7.0, 7.0, 530.0]))[0] == 0.0


def test_grid_counts_are_the_samples_the_trace_takes() -> None:
    """Without stalls the grid is where the layout puts it: each epoch's one-level phases
    hold exactly the samples t = kP that fall in them, and the last training sample's
    window share is what is left of training after it."""
    P, S, epochs = 1 / 6, 6.18, 7
    tr, ev, ck = 4.2183, 0.402, 0.2127
    epoch = [Seg(np.full(4, 50.0), np.full(4, tr / 4), 0.04),
             Seg(np.array([30.0]), np.array([ev])), Seg(np.array([5.0]), np.array([ck]))]
    out = grid_counts(epoch, S, epochs, 0.0, P)
    t = np.arange(0.0, S + epochs * (tr + ev + ck), P)
    starts = S + np.arange(epochs) * (tr + ev + ck)
    for k, (x, d) in enumerate(((tr, ev), (tr + ev, ck))):
        n = np.array([np.count_nonzero((t >= a + x) & (t < a + x + d)) for a in starts])
        assert out[k + 1].counts == pytest.approx(
            (n.mean(), (n >= 1).mean(), np.maximum(n - 1, 0).mean()))
    last = np.array([t[t < a + tr].max() for a in starts])
    assert out[0].edge is not None
    assert out[0].edge[0] == pytest.approx((starts + tr - last) / P)
    # a stall moves the grid: d / P on average
    moved = grid_counts(epoch, S, epochs, 50.0, P)
    assert moved[2].counts == pytest.approx((ck / P, 1.0, ck / P - 1.0), abs=1e-9)
