"""Analytic labels: every target of a run in closed form from the emulator's estimate
(issue 13, "every target's nMSE within 1.5x of the label noise floor").

The emulated labels are (almost) deterministic functions of the emulator's ``Estimate`` and
the job's run length: ``gpuscope.emulator.traces.synth_trace`` lays out start-up, then per
epoch training (a periodic on/off GPU pattern of period ``iter_s``), evaluation and a
checkpoint, and ``gpuscope.profiling.labeling.label_trace`` reduces the samples with the
k-means burst/idle split and the steady-state 95th-percentile peak. This module applies the
same label rules to the *phase structure* instead of to samples, so no trace is synthesised:

* each phase of each resource is a small weighted set of values (seconds each value lasts):
  constant levels, the start-up memory ramp, and the training-window utilisation
  ``f(u) = (B(u + P) - B(u)) / P`` of the busy pattern ``B`` seen through a sample window
  ``P`` (quadrature over one step), as the trace samples it;
* one level or two: the weighted 1-D k-means (``kmeans_threshold``'s Lloyd steps on
  weighted values) with the labeler's minimum gap; with two, the labeler's default
  ``peakband`` rule averages the run lengths over the thresholds ``f x peak`` for the band's
  fractions f (``labeling.band_fractions``; the peak below), ``kmeans`` (paper-literal) cuts
  at the k-means threshold;
* runs: phases in time order (start-up once, the epoch pattern ``epochs`` times) are merged
  by class; a training phase whose window values straddle the threshold contributes one
  burst and one idle run per step that a sample can see (``min(1, L/P)`` of them); expected
  input-pipeline stalls split training runs;
* the peak: the 95th percentile of the steady-state values (from the first time memory
  reaches 90 % of its maximum), optionally of the values plus the trace's Gaussian sensor
  noise (``sensor_noise=True``: the expected label of a noisy trace).

The module-level tolerance of this closed form against a noise-free synthesised trace is
derived in ``tests/test_analytic_labels.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuscope.devices import DeviceSpec
from gpuscope.emulator.perf import EmulatedJob, Estimate
from gpuscope.profiling.labeling import DEFAULT_METHOD, band_fractions, gap_weight
from gpuscope.resources import PEAK_FRACTION, PEAK_QUANTILE, RESOURCES, TARGETS

#: Sensor noise s.d. of each resource in ``synth_trace`` (utilisations only where > 0).
SENSOR_SD: dict[str, float] = {"gpu_util": 2.0, "gpu_mem_util": 1.5, "cpu_util": 1.0,
                               "gpu_mem": 2.0}
#: The labeler's minimum k-means gap, as a share of capacity (labeling.MIN_GAP_FRACTION).
MIN_GAP_FRACTION = 0.05
#: Quadrature nodes over one training step / over the start-up memory ramp.
N_STEP, N_RAMP = 48, 8
#: Targets this module computes (all but execution time, which ``physics`` composes).
LABEL_TARGETS: tuple[str, ...] = tuple(t for t in TARGETS if t != "exec_time_s")


#: Probabilists' Gauss-Hermite nodes and weights (5 points): E[g(N(0, 1))].
_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(5)
_GH_W = _GH_W / _GH_W.sum()


@dataclass
class _Seg:
    """Values in time order and the seconds each lasts; ``step`` > 0 marks a training phase
    (period of its on/off pattern)."""

    v: np.ndarray
    w: np.ndarray
    step: float = 0.0


def _const(v: float, dur: float) -> _Seg:
    return _Seg(np.array([float(v)]), np.array([max(float(dur), 0.0)]))


def window_busy(iter_s: float, busy_s: float, period_s: float, n: int = N_STEP) -> np.ndarray:
    """Busy fraction of a sample window [u, u + P] for u at ``n`` midpoints of one step (the
    GPU busy the first ``busy_s`` of every ``iter_s``)."""
    T, b, P = float(iter_s), min(float(busy_s), float(iter_s)), float(period_s)
    u = (np.arange(n) + 0.5) / n * T

    def B(x: np.ndarray) -> np.ndarray:
        return np.floor(x / T) * b + np.minimum(np.mod(x, T), b)

    return np.clip((B(u + P) - B(u)) / P, 0.0, 1.0)


def weighted_kmeans(v: np.ndarray, w: np.ndarray, max_iter: int = 300) -> tuple[float, float]:
    """``labeling.kmeans_threshold`` on values ``v`` with weights ``w`` (sample counts): (the
    largest value of the low cluster, the midpoint of the two centres: where a value between
    the levels, such as a window straddling the end of training, falls)."""
    o = np.argsort(v, kind="stable")
    xs, ws = v[o], w[o]
    cw, cs = np.cumsum(ws), np.cumsum(ws * xs)
    n = xs.size
    c0, c1 = float(xs[0]), float(xs[-1])
    k_prev = -1
    for _ in range(max_iter):
        k = min(max(int(np.searchsorted(xs, 0.5 * (c0 + c1), side="right")), 1), n - 1)
        if k == k_prev:
            break
        k_prev = k
        c0 = cs[k - 1] / max(cw[k - 1], 1e-300)
        c1 = (cs[-1] - cs[k - 1]) / max(cw[-1] - cw[k - 1], 1e-300)
    return float(xs[k_prev - 1]), 0.5 * (c0 + c1)


def mixture_quantile(v: np.ndarray, w: np.ndarray, q: float, sd: float, cap: float,
                     noise_at_zero: bool = True) -> float:
    """The ``q`` quantile of values ``v`` (weights ``w``) plus N(0, sd) noise, clipped to
    [0, cap] (noise-free and a plain weighted quantile when ``sd`` is 0)."""
    keep = w > 0
    v, w = v[keep], w[keep] / w[keep].sum()
    if sd <= 0:
        o = np.argsort(v, kind="stable")
        cw = np.cumsum(w[o])
        return float(np.clip(v[o][min(int(np.searchsorted(cw, q - 1e-12)), v.size - 1)], 0, cap))
    from scipy.special import ndtr

    s = np.where((v > 0) | noise_at_zero, sd, 1e-9)
    lo, hi = 0.0, float(cap)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if float(np.dot(w, ndtr((mid - v) / s))) < q:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _startup(est: Estimate, threads: float, mem_cap: float, period_s: float
             ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The start-up samples exactly as ``synth_trace`` takes them (t = kP < start-up), noise
    aside: (times, values per resource)."""
    S = float(est.startup_s)
    mem = est.memory
    t = np.arange(0.0, S, period_s)
    frac = np.clip(t / max(S, 1e-9), 0.0, 1.0)
    base, ctx = mem.context_mb + mem.weights_mb, mem.context_mb
    m = np.where(frac < 0.4, 0.0, np.where(frac < 0.6, ctx, ctx + (base - ctx) * np.clip(
        (frac - 0.6) / 0.2, 0.0, 1.0)))
    tune = frac > 0.8
    m[tune] = base + min(mem.workspace_mb, 0.5 * mem.activations_mb)
    return t, {"gpu_util": np.where(tune, 90.0, 0.0), "gpu_mem_util": np.where(tune, 27.0, 0.0),
               "gpu_mem": np.clip(m, 0.0, mem_cap), "cpu_util": np.full(t.size, 100.0 / threads)}


def _epoch(est: Estimate, job: EmulatedJob, threads: float, mem_cap: float, period_s: float
           ) -> tuple[dict[str, list[_Seg]], dict[str, float]]:
    """One epoch's segments (training, evaluation, checkpoint) per resource, and the level
    of each resource during an input-pipeline stall."""
    e = est
    iter_s, t_gpu = float(e.iter_s), float(e.t_gpu_s)
    f = window_busy(iter_s, min(t_gpu, iter_s), period_s)
    tr_s = float(job.steps) * iter_s
    fw = np.full(f.size, tr_s / f.size)
    ev_s, ck_s = float(e.eval_s), float(e.ckpt_s)
    gu, gmu, cu = float(e.gpu_util), float(e.gpu_mem_util), float(e.cpu_util)
    ev = 85.0 * gu
    ratio = float(e.t_mem_s) / max(t_gpu, 1e-12)
    total = min(float(e.memory.total_mb), mem_cap)
    one, cpu_tr = 100.0 / threads, min(100.0 * cu, 100.0)
    epoch = {
        "gpu_util": [_Seg(100.0 * f, fw, iter_s), _const(ev, ev_s), _const(0.0, ck_s)],
        "gpu_mem_util": [_Seg(np.clip(100.0 * f * ratio, 0, 100), fw, iter_s),
                         _const(np.clip(ev * gmu / max(gu, 1e-12), 0, 100), ev_s),
                         _const(0.0, ck_s)],
        "gpu_mem": [_const(total, tr_s), _const(total, ev_s), _const(total, ck_s)],
        "cpu_util": [_const(cpu_tr, tr_s), _const(min(60.0 * cu, 100.0), ev_s),
                     _const(one, ck_s)],
    }
    return epoch, {"gpu_util": 0.0, "gpu_mem_util": 0.0, "gpu_mem": total, "cpu_util": cpu_tr}


class _RunCounter:
    """Expected run counts and times of a sequence of tokens (per-sample burst probability
    ``pi``, seconds ``d``, samples ``n``): a token of under one sample is seen w.p. ``n``; a
    run starts where a seen sample's class differs from the last seen one's (module
    docstring); samples are independent given their levels."""

    def __init__(self) -> None:
        self.tot = np.zeros(2)  # idle, burst seconds
        self.cnt = np.zeros(2)
        self.last = np.zeros(2)  # P(last seen sample idle / burst)

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
        """Consecutive whole samples (the start-up), vectorised."""
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


def _burst_prob(v: np.ndarray, thr: float, mid: float, split: bool, allburst: bool,
                sd: float, noise_at_zero: bool) -> np.ndarray:
    """P(a sample at level v is labelled burst)."""
    v = np.asarray(v, np.float64)
    if not split:
        return np.full(v.shape, float(allburst))
    if sd <= 0:
        return (v > thr).astype(np.float64)
    from scipy.special import ndtr

    noisy = (v > 0) | noise_at_zero
    return np.where(noisy, 1.0 - ndtr((mid - v) / sd), (v > mid).astype(np.float64))


def _run_lengths(st_pi: np.ndarray, epoch: list[_Seg], pis: list[np.ndarray], mid: float,
                 split: bool, epochs: int, period_s: float, stall_pi: float,
                 stall_per_epoch: float, stall_s: float) -> tuple[float, float]:
    """(mean burst run, mean idle run) seconds: start-up samples, then the epoch pattern."""
    rc = _RunCounter()
    rc.add_samples(st_pi, period_s)
    seen: list[np.ndarray] = []
    for k in range(max(int(epochs), 0)):
        if k >= 2 and bool(np.all(np.abs(seen[-1] - seen[-2]) <= 1e-12 + 1e-5 * np.abs(seen[-2]))):
            # a periodic state: every further epoch adds what the last one did
            cnt0, tot0 = rc.cnt.copy(), rc.tot.copy()
            _one_epoch(rc, epoch, pis, mid, split, period_s, stall_pi, stall_per_epoch,
                       stall_s)
            rem = int(epochs) - k - 1
            rc.cnt += rem * (rc.cnt - cnt0)
            rc.tot += rem * (rc.tot - tot0)
            break
        _one_epoch(rc, epoch, pis, mid, split, period_s, stall_pi, stall_per_epoch, stall_s)
        seen.append(rc.last.copy())
    return rc.means()


def _stalls(rc: _RunCounter, p_tr: float, stall_pi: float, per_epoch: float,
            stall_s: float) -> None:
    """Expected stalls inside one epoch's training: each splits it, one run of each class
    more when the stall's class differs from training's."""
    if per_epoch > 0:
        rc.cnt += per_epoch * (p_tr * (1 - stall_pi) + (1 - p_tr) * stall_pi)
        rc.tot += per_epoch * stall_s * np.array([1 - stall_pi, stall_pi])


def _one_epoch(rc: _RunCounter, epoch: list[_Seg], pis: list[np.ndarray], mid: float,
               split: bool, period_s: float, stall_pi: float, stall_per_epoch: float,
               stall_s: float) -> None:
    for idx, (s, pi) in enumerate(zip(epoch, pis, strict=True)):
        dur = float(s.w.sum())
        if s.step <= 0:
            rc.add(float(pi[0]), dur, dur / period_s)
            if idx == 0:  # training without a step pattern (memory, CPU)
                _stalls(rc, float(pi[0]), stall_pi, stall_per_epoch, stall_s)
            continue
        hard = s.v > mid
        if split and hard.any() and not hard.all():
            # the step pattern straddles the threshold: per step one burst and one idle run
            # that a sample can see (min(1, L / P) of them), runs internal to training
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
        _stalls(rc, p_tr, stall_pi, stall_per_epoch, stall_s)
        if edge:
            # the last training sample's window runs past the end of training: its value is
            # the training level times U(0, 1], above the k-means midpoint w.p. 1 - mid / g
            g = float(np.dot(s.v, s.w) / dur)
            rc.add(max(0.0, 1.0 - mid / g) if g > 0 else 0.0, period_s, 1.0)


def analytic_labels(est: Estimate, job: EmulatedJob, device: DeviceSpec, period_s: float,
                    stall_rate_per_min: float = 0.0, stall_s: float = 1.0,
                    sensor_noise: bool = False, method: str = DEFAULT_METHOD
                    ) -> dict[str, float]:
    """The 12 non-execution-time labels of ``job``'s run on ``device`` from its ``Estimate``
    (NaN for a run that is not ``ok``). ``period_s``: the trace's sample period
    (``traces.effective_period``); ``stall_*``: expected input-pipeline stalls
    (``EmulatorParams``; 0 for a noise-free trace); ``sensor_noise``: the trace's Gaussian
    sensor noise (``SENSOR_SD``) in the burst/idle classes and the peaks (the expected label
    of a synthesised trace), else the labels of a noise-free trace; ``method``: the labeler's
    burst/idle rule (``peakband`` or ``kmeans``, ``labeling``)."""
    if method not in ("peakband", "kmeans"):
        raise ValueError(f"analytic labels: no closed form for method {method!r}")
    out = {t: math.nan for t in LABEL_TARGETS}
    if est.status != "ok":
        return out
    threads = float(device.host_threads)
    mem_cap = float(device.mem_mb)
    epochs = int(job.epochs)
    lam = stall_rate_per_min / 60.0 * float(job.steps) * float(est.iter_s)
    t_st, st = _startup(est, threads, mem_cap, period_s)
    epoch, stall = _epoch(est, job, threads, mem_cap, period_s)
    # steady state: from the first sample whose memory reaches 90 % of the maximum
    m_max = max(float(st["gpu_mem"].max()) if t_st.size else 0.0, stall["gpu_mem"])
    above = np.flatnonzero(st["gpu_mem"] >= PEAK_FRACTION * m_max)
    first = int(above[0]) if above.size else t_st.size
    for r in RESOURCES:
        cap = mem_cap if r == "gpu_mem" else 100.0
        sd = SENSOR_SD[r] if sensor_noise else 0.0
        nz = r in ("cpu_util", "gpu_mem")  # utilisations are noisy only where > 0
        # with sensor noise (and step jitter), a training level whose window values spread
        # less than the minimum gap is one level to the split: in the trace it is a
        # continuum that Lloyd's steps do not cut, where its quadrature nodes would be cut
        # (a noise-free trace's windows are discrete values, cut as the nodes are)
        kv = [np.array([np.dot(s.v, s.w) / max(s.w.sum(), 1e-300)])
              if sensor_noise and s.step > 0 and np.ptp(s.v) < MIN_GAP_FRACTION * cap
              else s.v for s in epoch[r]]
        kw = [np.array([s.w.sum()]) if x.size != s.v.size else s.w
              for s, x in zip(epoch[r], kv, strict=True)]
        v = np.concatenate([st[r]] + kv + [np.array([stall[r]])])
        w = np.concatenate([np.full(t_st.size, period_s)] + [x * epochs for x in kw]
                           + [np.array([lam * stall_s * epochs])])
        keep = w > 0
        v, w = v[keep], w[keep]
        # burst/idle split (labeling.burst_mask with the labeler's minimum gap)
        lo, hi = float(v.min()), float(v.max())
        split, allburst, thr, mid, wt = False, hi > 0.0, 0.0, 0.0, 0.0
        if hi - lo > 1e-12 * max(1.0, abs(hi)):
            # Lloyd's steps on the noise-free levels: on the noisy distribution (Gauss-Hermite
            # nodes, or a fine grid) they flip more of the bistable splits (three levels
            # almost equally far apart) the wrong way than the right way on the bundled
            # titanx, gtx1080 and h100 datasets
            thr, mid = weighted_kmeans(v, w)
            vn, wn = v, w
            if sd > 0:  # the gap of the noisy, clipped samples (Gauss-Hermite nodes)
                vn = np.clip(v[:, None] + np.where((v > 0) | nz, sd, 0.0)[:, None]
                             * _GH_X[None, :], 0.0, cap)
                wn = w[:, None] * _GH_W[None, :]
                hm = np.broadcast_to((v > thr)[:, None], vn.shape)
            else:
                hm = v > thr
            lm = ~hm
            gap = np.sum(vn[hm] * wn[hm]) / wn[hm].sum() - np.sum(vn[lm] * wn[lm]) / wn[lm].sum()
            if method == "peakband":  # blended in the gap (labeling.two_level_weight)
                wt = gap_weight(float(gap), MIN_GAP_FRACTION * cap)
                allburst = float(np.dot(v, w) / w.sum()) > 0.0
                split = wt > 0.0
            elif gap < MIN_GAP_FRACTION * cap:
                allburst = float(np.dot(v, w) / w.sum()) > 0.0
            else:
                split = True

        # steady-state peak: start-up samples from the first steady one, epochs, stalls
        pv = np.concatenate([st[r][first:]] + [s.v for s in epoch[r]] + [np.array([stall[r]])])
        pw = np.concatenate([np.full(t_st.size - first, period_s)]
                            + [s.w * epochs for s in epoch[r]]
                            + [np.array([lam * stall_s * epochs])])
        peak = mixture_quantile(pv, pw, PEAK_QUANTILE, sd, cap, noise_at_zero=nz)
        out[f"{r}_peak"] = peak
        # peakband: the mean over the band's cuts f x peak (weight wt) and the one-level
        # labels (1 - wt), as the labeler; kmeans: one cut at the k-means threshold
        parts: list[tuple[float, list[tuple[float, float, bool]]]] = []
        if method == "peakband" and split:
            parts.append((wt, [(f * max(peak, 0.0), f * max(peak, 0.0), True)
                               for f in band_fractions()]))
            if wt < 1.0:
                parts.append((1.0 - wt, [(0.0, 0.0, False)]))
        else:
            parts.append((1.0, [(thr, mid, split)]))
        bo, io = 0.0, 0.0
        for wk, cuts in parts:
            bs, is_ = [], []
            for th, md, sp in cuts:
                def bp(x: np.ndarray, sd: float = sd, nz: bool = nz, thr: float = th,
                       mid: float = md, split: bool = sp, allburst: bool = allburst
                       ) -> np.ndarray:
                    return _burst_prob(x, thr, mid, split, allburst, sd, nz)

                b, i = _run_lengths(bp(st[r]), epoch[r], [bp(s.v) for s in epoch[r]], md, sp,
                                    epochs, period_s, float(bp(np.array([stall[r]]))[0]), lam,
                                    stall_s)
                bs.append(b)
                is_.append(i)
            bo += wk * float(np.mean(bs))
            io += wk * float(np.mean(is_))
        out[f"{r}_burst_s"], out[f"{r}_idle_s"] = bo, io
    return out
