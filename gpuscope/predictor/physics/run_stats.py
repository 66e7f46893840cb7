"""Expected burst/idle run lengths of the analytic labels, all cuts at once.

``analytic_labels`` reduces a run's phase structure to burst/idle labels at one or several
*cuts* (``peakband``: the ``N_BAND`` thresholds ``f x peak`` plus the one-level labels it
blends in; ``kmeans``: the k-means threshold). Every cut walks the same tokens in the same
order, so the run counter carries one row per cut and each token updates all rows with one
numpy operation: a ``peakband`` resource costs what one cut cost before (speed goal:
the first ``predict`` of 10,000 jobs x 16 GPU types went from 16.5 to 42 s with the 8 cuts
looped in Python).

The counter (per cut; classes 0 = idle, 1 = burst): a token is ``n`` samples of ``d`` seconds
with per-sample burst probability ``pi``; a token of under one sample is seen w.p. ``n``; a
run starts where a seen sample's class differs from the last seen one's; samples are
independent given their levels. ``tot`` / ``cnt`` are the expected seconds and runs of each
class, ``lnone`` the log-probability that the run has no sample of the class at all.

The labeler's mean run length of a class is 0 when the trace has none of its runs
(``labeling._mean_runs``), so the expected label is ``tot / cnt x P(at least one run)``, not
``tot / cnt``: a cut that sensor noise crosses a few times per run (a level 1.5 s.d. above
it) has mean runs of one sample *when* it is crossed, and most traces never cross it. The
samples are independent, so ``P(no sample of the class) = prod(1 - p)`` over the samples
(``lnone``); the deterministic structure (a phase at a level, a straddling step pattern) makes
it 0 and leaves ``tot / cnt``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Two consecutive epochs' end states this close are the periodic state (``run_lengths``).
_PERIODIC_RTOL, _PERIODIC_ATOL = 1e-5, 1e-12


@dataclass
class Seg:
    """Values in time order and the seconds each lasts; ``step`` > 0 marks a training phase
    (period of its on/off pattern)."""

    v: np.ndarray
    w: np.ndarray
    step: float = 0.0
    #: a one-level phase's expected samples per epoch on the trace's sample grid: (E[N],
    #: P(N >= 1), E[max(N - 1, 0)]) (``analytic_labels.grid_counts``); None: d / P samples
    counts: tuple[float, float, float] | None = None
    #: a training phase's last sample on the grid, per epoch: (the share of its window
    #: inside training, P(the grid not moved yet), epochs past these, moved)
    edge: tuple[np.ndarray, np.ndarray, int] | None = None


def _log_none(p: np.ndarray) -> np.ndarray:
    """log(1 - p) of probabilities, -inf at p = 1 (``run_lengths`` silences the warning)."""
    return np.log1p(-np.minimum(p, 1.0))  # p may exceed 1 by rounding (a weighted mean)


class RunCounter:
    """Expected run counts and times of a sequence of tokens, one row per cut (module
    docstring); per class (0 idle, 1 burst): ``t`` seconds, ``c`` runs, ``l`` P(the last
    seen sample is of the class), ``z`` log P(no sample of the class)."""

    def __init__(self, rows: int) -> None:
        self.t0, self.t1, self.c0, self.c1, self.l0, self.l1, self.z0, self.z1 = (
            np.zeros(rows) for _ in range(8))

    _STATE = ("t0", "t1", "c0", "c1", "l0", "l1", "z0", "z1")

    def _masked(self, on: np.ndarray | None, old: tuple[np.ndarray, ...]) -> None:
        if on is not None:
            for k, o in zip(self._STATE, old, strict=True):
                setattr(self, k, np.where(on, getattr(self, k), o))

    def _state(self) -> tuple[np.ndarray, ...]:
        return tuple(getattr(self, k) for k in self._STATE)

    def add(self, pi: np.ndarray, d: float, n: float | np.ndarray,
            on: np.ndarray | None = None) -> None:
        """One token per row (``pi`` per row; ``n`` per row or shared); rows where ``on`` is
        False are left as they are, and all rows when ``d`` <= 0."""
        if d <= 0:
            return
        old = self._state() if on is not None else ()
        q, ne = np.minimum(1.0, n), np.maximum(n, 1.0)
        pj = 1.0 - pi
        within = (ne - 1.0) * pi * pj
        self.c1 = self.c1 + q * (pi * (1.0 - self.l1) + within)
        self.c0 = self.c0 + q * (pj * (1.0 - self.l0) + within)
        self.t0, self.t1 = self.t0 + d * pj, self.t1 + d * pi
        # no sample of the class: each of n >= 1 samples misses it; a token under one sample
        # shows it only when seen (q)
        if np.all(n >= 1.0):
            self.z0, self.z1 = self.z0 + ne * _log_none(pj), self.z1 + ne * _log_none(pi)
        else:
            self.z0, self.z1 = self.z0 + _log_none(q * pj), self.z1 + _log_none(q * pi)
        self.l0, self.l1 = q * pj + (1.0 - q) * self.l0, q * pi + (1.0 - q) * self.l1
        self._masked(on, old)

    def add_counted(self, pi: np.ndarray, period_s: float,
                    counts: tuple[float, float, float]) -> None:
        """A one-level token of N samples (``counts``: E[N], P(N >= 1), E[max(N - 1, 0)]):
        ``add`` with the sample count's distribution instead of d / P."""
        n, q, m = counts
        if n <= 0:
            return
        pj = 1.0 - pi
        self.c1 = self.c1 + q * pi * (1.0 - self.l1) + m * pi * pj
        self.c0 = self.c0 + q * pj * (1.0 - self.l0) + m * pi * pj
        self.t0, self.t1 = self.t0 + n * period_s * pj, self.t1 + n * period_s * pi
        if n >= 1.0:
            self.z0, self.z1 = self.z0 + n * _log_none(pj), self.z1 + n * _log_none(pi)
        else:
            self.z0, self.z1 = self.z0 + _log_none(q * pj), self.z1 + _log_none(q * pi)
        self.l0, self.l1 = q * pj + (1.0 - q) * self.l0, q * pi + (1.0 - q) * self.l1

    def add_samples(self, pi: np.ndarray, period_s: float) -> None:
        """Consecutive whole samples (the start-up): ``pi`` is [rows x samples]."""
        if pi.shape[1] == 0:
            return
        pj = 1.0 - pi
        prev1 = np.concatenate([self.l1[:, None], pi[:, :-1]], axis=1)
        prev0 = np.concatenate([self.l0[:, None], pj[:, :-1]], axis=1)
        self.c1 = self.c1 + np.sum(pi * (1.0 - prev1), axis=1)
        self.c0 = self.c0 + np.sum(pj * (1.0 - prev0), axis=1)
        self.l0, self.l1 = pj[:, -1].copy(), pi[:, -1].copy()
        self.t0 = self.t0 + period_s * np.sum(pj, axis=1)
        self.t1 = self.t1 + period_s * np.sum(pi, axis=1)
        self.z0 = self.z0 + _log_none(pj).sum(axis=1)
        self.z1 = self.z1 + _log_none(pi).sum(axis=1)

    def stalls(self, p_tr: np.ndarray, stall_pi: np.ndarray, per_epoch: float, stall_s: float,
               period_s: float, on: np.ndarray | None = None) -> None:
        """Expected stalls inside one epoch's training: each splits it, one run of each class
        more when the stall's class differs from training's. A stall lasts Exp(``stall_s``)
        seconds, so it shows no sample of a class of per-sample probability p w.p.
        E[(1 - p)^(L/P)] = 1 / (1 - (stall_s / P) log(1 - p)), and the stalls are Poisson."""
        if per_epoch <= 0:
            return
        old = self._state() if on is not None else ()
        dc = per_epoch * (p_tr * (1 - stall_pi) + (1 - p_tr) * stall_pi)
        self.c0, self.c1 = self.c0 + dc, self.c1 + dc
        self.t0 = self.t0 + per_epoch * stall_s * (1 - stall_pi)
        self.t1 = self.t1 + per_epoch * stall_s * stall_pi
        for k, p in (("z0", 1.0 - stall_pi), ("z1", stall_pi)):
            shows = np.where(p >= 1.0, float(stall_s > 0),
                             1.0 - 1.0 / (1.0 - (stall_s / period_s) * _log_none(p)))
            setattr(self, k, getattr(self, k) - per_epoch * shows)
        self._masked(on, old)

    def straddle(self, share: np.ndarray, dur: float, step: float, period_s: float,
                 on: np.ndarray) -> None:
        """A training phase whose step pattern straddles the cut (``share`` of its windows
        above it): per step one burst and one idle run that a sample can see (min(1, L / P)
        of them), runs internal to training; its dur / P samples land at the pattern's phases
        uniformly, so it shows no burst sample w.p. (1 - share)^(dur / P)."""
        old = self._state()
        n = (dur / step) * np.minimum(np.minimum(1.0, share * step / period_s),
                                      (1.0 - share) * step / period_s)
        self.t0, self.t1 = self.t0 + dur * (1.0 - share), self.t1 + dur * share
        self.c0, self.c1 = self.c0 + n, self.c1 + n
        self.z0 = self.z0 + (dur / period_s) * _log_none(share)
        self.z1 = self.z1 + (dur / period_s) * _log_none(1.0 - share)
        self.l0, self.l1 = np.zeros_like(self.l0), np.zeros_like(self.l1)
        self._masked(on, old)


def grid_counts(epoch: list[Seg], startup_s: float, epochs: int, stalls_per_epoch: float,
                period_s: float, max_epochs: int = 4096) -> list[Seg]:
    """The one-level segments of ``epoch`` with their sample counts on the trace's grid
    (``Seg.counts``, the mean over the epochs). The trace samples at t = kP and lays the
    epochs out back to back from the end of the start-up, so a phase [x, x + d) holds
    exactly ceil((x + d) / P) - ceil(x / P) samples, the same count epoch after epoch when
    the epoch lasts close to a whole number of samples -- until an input-pipeline stall
    (Poisson, ``stalls_per_epoch``, during training; seconds long, many samples) moves the
    grid: from then on the count is d / P on average (floor or ceil). A training phase gets
    the share of its last sample's window inside it per epoch (``Seg.edge``; U(0, 1] on a
    moved grid). Epochs past ``max_epochs`` count as moved."""
    e = np.arange(min(max(int(epochs), 0), max_epochs), dtype=np.float64)
    length = float(sum(float(s.w.sum()) for s in epoch))
    out, x = [], 0.0
    for k, s in enumerate(epoch):
        d = float(s.w.sum())
        if e.size == 0:
            out.append(s)
            continue
        if s.step > 0:  # training's last sample (window share phi inside it), after stalls
            end = startup_s + e * length + x + d
            phi = (end - period_s * (np.ceil(end / period_s) - 1.0)) / period_s
            out.append(Seg(s.v, s.w, s.step, edge=(
                phi, np.exp(-stalls_per_epoch * (e + 1.0)), max(int(epochs), 0) - e.size)))
            x += d
            continue
        a = startup_s + e * length + x
        nd = np.ceil((a + d) / period_s) - np.ceil(a / period_s)
        # the grid is where it was laid out while no stall came before the phase (training
        # is phase 0: its own stalls come after its first samples)
        p = np.exp(-stalls_per_epoch * (e + (1.0 if k > 0 else 0.0)))
        u = d / period_s
        n = p * nd + (1.0 - p) * u
        q = p * (nd >= 1.0) + (1.0 - p) * min(1.0, u)
        m = p * np.maximum(nd - 1.0, 0.0) + (1.0 - p) * max(u - 1.0, 0.0)
        rest = max(int(epochs), 0) - e.size  # past max_epochs: moved
        tot = float(e.size + rest)
        out.append(Seg(s.v, s.w, s.step, (
            (float(n.sum()) + rest * u) / tot, (float(q.sum()) + rest * min(1.0, u)) / tot,
            (float(m.sum()) + rest * max(u - 1.0, 0.0)) / tot)))
        x += d
    return out


def _one_epoch(rc: RunCounter, epoch: list[Seg], pis: list[np.ndarray], mid: np.ndarray,
               split: np.ndarray, period_s: float, stall_pi: np.ndarray,
               stall_per_epoch: float, stall_s: float) -> None:
    for idx, (s, pi) in enumerate(zip(epoch, pis, strict=True)):
        dur = float(s.w.sum())
        if s.step <= 0:
            if s.counts is None:
                rc.add(pi[:, 0], dur, dur / period_s)
            else:
                rc.add_counted(pi[:, 0], period_s, s.counts)
            if idx == 0:  # training without a step pattern (memory, CPU)
                rc.stalls(pi[:, 0], stall_pi, stall_per_epoch, stall_s, period_s)
            continue
        hard = s.v[None, :] > mid[:, None]
        nh = hard.sum(axis=1)
        # the step pattern straddles the cut: per step one burst and one idle run
        strad = split & (nh > 0) & (nh < hard.shape[1])
        if strad.any():
            rc.straddle(np.where(hard, s.w[None, :], 0.0).sum(axis=1) / dur, dur, s.step,
                        period_s, strad)
        rest = None if not strad.any() else ~strad
        if rest is not None and not rest.any():
            continue
        p_tr = pi @ s.w / dur
        edge = split & (dur >= 2 * period_s)
        if edge.all() or not edge.any():
            e = float(edge.all())
            rc.add(p_tr, dur - period_s * e, dur / period_s - e, on=rest)
        else:  # rows with and without the edge sample: two masked tokens
            for e, m in ((1.0, edge), (0.0, ~edge)):
                rc.add(p_tr, dur - period_s * e, dur / period_s - e,
                       on=m if rest is None else m & rest)
        rc.stalls(p_tr, stall_pi, stall_per_epoch, stall_s, period_s, on=rest)
        last_edge = edge if rest is None else (rest & edge)
        if last_edge.any():
            # the last training sample's window runs past the end of training: its value is
            # the training level times the share phi of the window inside training: U(0, 1]
            # on a moved grid (above the cut w.p. 1 - cut / g), as laid out before
            g = float(np.dot(s.v, s.w) / dur)
            pe = np.maximum(0.0, 1.0 - mid / g) if g > 0 else np.zeros(mid.shape)
            if s.edge is not None and s.edge[0].size:
                phi, p, rest = s.edge
                det = (g * phi[None, :] > mid[:, None]).astype(np.float64)
                pe = ((det * p + pe[:, None] * (1.0 - p)).sum(axis=1) + rest * pe) \
                    / (phi.size + rest)
            rc.add(pe, period_s, 1.0, on=None if last_edge.all() else last_edge)


@np.errstate(divide="ignore", invalid="ignore")  # log(1 - p) at p = 1 (``_log_none``)
def run_lengths(st_pi: np.ndarray, epoch: list[Seg], pis: list[np.ndarray], mid: np.ndarray,
                split: np.ndarray, epochs: int, period_s: float, stall_pi: np.ndarray,
                stall_per_epoch: float, stall_s: float, p_some: bool = True
                ) -> tuple[np.ndarray, np.ndarray]:
    """(mean burst run, mean idle run) seconds per cut: start-up samples (``st_pi``, [cuts x
    samples]), then the epoch pattern ``epochs`` times (``pis``: [cuts x values] per segment;
    ``mid``, ``split``, ``stall_pi``: per cut).

    One epoch is an affine map of the state it starts from (runs counted, and the class of
    the last seen sample, depend linearly on that class's probability), so the epoch's
    tokens are walked once, from three start states at once (no sample seen, idle, burst),
    and the epochs are iterated on the map. A cut whose end-of-epoch state repeats is
    periodic: every further epoch adds what the last one did."""
    c = st_pi.shape[0]
    st = RunCounter(c)
    st.add_samples(st_pi, period_s)
    ep = RunCounter(3 * c)
    ep.l0[c:2 * c] = 1.0
    ep.l1[2 * c:] = 1.0
    _one_epoch(ep, epoch, [np.tile(p, (3, 1)) for p in pis], np.tile(mid, 3),
               np.tile(split, 3), period_s, np.tile(stall_pi, 3), stall_per_epoch, stall_s)

    def lin(x: np.ndarray, l0: np.ndarray, l1: np.ndarray) -> np.ndarray:
        z = x[:c]
        return z + l0 * (x[c:2 * c] - z) + l1 * (x[2 * c:] - z)

    c0, c1, l0, l1 = st.c0, st.c1, st.l0, st.l1
    done = np.zeros(c, bool)
    out0, out1 = np.zeros(c), np.zeros(c)
    last: list[tuple[np.ndarray, np.ndarray]] = []  # the last two epochs' end states
    n_ep = max(int(epochs), 0)
    for k in range(n_ep):
        per = np.zeros(c, bool)
        if len(last) == 2:
            (b0, b1), (a0, a1) = last
            per = ~done & (np.abs(a0 - b0) <= _PERIODIC_ATOL + _PERIODIC_RTOL * np.abs(b0)) \
                & (np.abs(a1 - b1) <= _PERIODIC_ATOL + _PERIODIC_RTOL * np.abs(b1))
        d0, d1 = lin(ep.c0, l0, l1), lin(ep.c1, l0, l1)
        c0, c1 = c0 + d0, c1 + d1
        l0, l1 = lin(ep.l0, l0, l1), lin(ep.l1, l0, l1)
        if per.any():
            rem = n_ep - k - 1
            out0[per] = c0[per] + rem * d0[per]
            out1[per] = c1[per] + rem * d1[per]
            done |= per
            if done.all():
                break
        last = [*last[-1:], (l0, l1)]
    c0, c1 = np.where(done, out0, c0), np.where(done, out1, c1)
    t0, t1 = st.t0 + n_ep * ep.t0[:c], st.t1 + n_ep * ep.t1[:c]
    z0, z1 = (st.z0 + n_ep * ep.z0[:c], st.z1 + n_ep * ep.z1[:c]) if n_ep else (st.z0, st.z1)
    b = np.where(c1 > 1e-9, t1 / c1, 0.0)
    i = np.where(c0 > 1e-9, t0 / c0, 0.0)
    if p_some:  # P(at least one run of the class) (module docstring)
        b, i = b * (0.0 - np.expm1(z1)), i * (0.0 - np.expm1(z0))
    return b, i
