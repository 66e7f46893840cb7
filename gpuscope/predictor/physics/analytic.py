"""Analytic labels: every target of a run in closed form from the emulator's estimate
(the goal: every target's nMSE within 1.5x of the label noise floor).

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
  weighted values) with the labeler's minimum gap; with sensor noise, the gap is that of the
  noisy samples' own split (``noisy_kmeans``: Lloyd's steps on the clipped Gaussian mixture
  from the samples' expected extremes, as the labeler starts from the noisy minimum and
  maximum); with two, the labeler's default ``peakband`` rule averages the run lengths over
  the thresholds ``f x peak`` for the band's fractions f (``labeling.band_fractions``; the
  peak below) and blends them with the one-level labels in the gap, ``kmeans``
  (paper-literal) cuts at the k-means threshold;
* runs (``analytic_runs``, every cut at once): phases in time order (start-up once, the
  epoch pattern ``epochs`` times) are merged by class; a training phase whose window values
  straddle the threshold contributes one burst and one idle run per step that a sample can
  see (``min(1, L/P)`` of them); expected input-pipeline stalls split training runs; a
  class's mean run is weighted by the probability that the trace has a run of it at all
  (the labeler gives 0 without one); short phases hold the samples the trace's grid puts in
  them (``grid_counts``: deterministic until a stall moves the grid);
* the peak: the 95th percentile of the steady-state values (from the first time memory
  reaches 90 % of its maximum), optionally of the values plus the trace's Gaussian sensor
  noise (``sensor_noise=True``: the expected label of a noisy trace).

The module-level tolerance of this closed form against a noise-free synthesised trace is
derived in ``tests/test_analytic_labels.py``.
"""

from __future__ import annotations

import math

import numpy as np

from gpuscope.cluster.devices import DeviceSpec
from gpuscope.core.targets import PEAK_FRACTION, PEAK_QUANTILE, RESOURCES, TARGETS
from gpuscope.emulator.perf import EmulatedJob, Estimate
from gpuscope.predictor.physics.run_stats import Seg, grid_counts, run_lengths
from gpuscope.profiling.labeling import DEFAULT_METHOD, band_fractions, gap_weight

#: Sensor noise s.d. of each resource in ``synth_trace`` (utilisations only where > 0).
SENSOR_SD: dict[str, float] = {"gpu_util": 2.0, "gpu_mem_util": 1.5, "cpu_util": 1.0,
                               "gpu_mem": 2.0}
#: The labeler's minimum k-means gap, as a share of capacity (labeling.MIN_GAP_FRACTION).
MIN_GAP_FRACTION = 0.05
#: Quadrature nodes over one training step.
N_STEP = 48
#: Targets this module computes (all but execution time, which ``physics`` composes).
LABEL_TARGETS: tuple[str, ...] = tuple(t for t in TARGETS if t != "exec_time_s")


#: Inner points of 16 equal parts of [0, 1] (``mixture_quantile``).
_GRID = np.arange(1, 16) / 16.0


def _const(v: float, dur: float) -> Seg:
    return Seg(np.array([float(v)]), np.array([max(float(dur), 0.0)]))


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
    # bisection to cap / 2^40, 4 halvings at a time: the CDF at the 15 inner points of 16
    # equal parts (the dyadic points bisection would visit), keep the part that holds q
    lo, hi = 0.0, float(cap)
    for _ in range(10):
        xs = lo + (hi - lo) * _GRID
        k = int(np.count_nonzero(ndtr((xs[:, None] - v[None, :]) / s[None, :]) @ w < q))
        lo, hi = (xs[k - 1] if k else lo), (xs[k] if k < xs.size else hi)
    return 0.5 * (lo + hi)


def _extremes(v: np.ndarray, w: np.ndarray, s: np.ndarray, cap: float, n: float
              ) -> tuple[float, float]:
    """Medians of the minimum and the maximum of ``n`` samples of the clipped mixture (values
    ``v``, weights ``w`` summing to 1, s.d. ``s``): its 1 - 0.5^(1/n) and 0.5^(1/n)
    quantiles, searched on grids of 16 within 8 s.d. of the lowest / highest level (to 3e-4
    s.d.; the levels more than 16 s.d. away add their whole weight or none), over [0, cap]
    where the quantile is not in that bracket (a light extreme level)."""
    from scipy.special import ndtr

    q = 0.5 ** (1.0 / max(n, 1.0))
    top = float(np.max(s))
    grid = np.arange(1, 16) / 16.0
    out = []
    for qk, end in ((1.0 - q, float(v.min())), (q, float(v.max()))):
        near = np.abs(v - end) <= 16.0 * top
        base = float(w[~near & (v < end)].sum())
        vn, wn, sn = v[near], w[near], s[near]
        lo, hi = max(end - 8.0 * top, 0.0), min(end + 8.0 * top, cap)
        f = base + ndtr((np.array([lo, hi])[:, None] - vn[None, :]) / sn[None, :]) @ wn
        if not (f[0] < qk <= f[1]) or lo >= hi:
            lo, hi, vn, wn, sn, base = 0.0, float(cap), v, w, s, 0.0
        for _ in range(4 if hi - lo < 16.0 * top + 1e-9 else 9):
            xs = lo + (hi - lo) * grid
            k = int(np.count_nonzero(base + ndtr((xs[:, None] - vn[None, :]) / sn[None, :])
                                     @ wn < qk))
            lo, hi = (xs[k - 1] if k else lo), (xs[k] if k < xs.size else hi)
        out.append(0.5 * (lo + hi))
    return out[0], out[1]


def noisy_kmeans(v: np.ndarray, w: np.ndarray, sd: float, cap: float, noise_at_zero: bool,
                 n: float, max_iter: int = 300) -> tuple[float, float]:
    """The labeler's 2-means split (``labeling.kmeans_threshold``) of ``n`` samples drawn
    from values ``v`` (weights ``w``) plus N(0, ``sd``) sensor noise clipped to [0, ``cap``]
    (utilisations at 0 noise-free unless ``noise_at_zero``): (threshold, distance between
    the two centres). As the labeler: Lloyd's steps from the samples' minimum and maximum
    (their medians: the mixture's 1 - 0.5^(1/n) and 0.5^(1/n) quantiles; the noise moves
    them off the levels, and a level near the first midpoint goes to the side the noisy
    extremes put it on), each class's centre the mean of the noisy values on its side of
    the midpoint (closed form for clipped Gaussians)."""
    from scipy.special import ndtr

    keep = w > 0
    v, inv = np.unique(v[keep], return_inverse=True)  # repeated levels: one component
    w = np.bincount(inv.ravel(), weights=w[keep])
    w = w / w.sum()
    s = np.where((v > 0) | noise_at_zero, sd, 0.0)
    g = s > 0
    sg = np.where(g, s, 1.0)
    c0, c1 = _extremes(v, w, np.where(g, s, 1e-9), cap, n)
    a, c = -v / sg, (cap - v) / sg
    pa, pc = ndtr(a), ndtr(c)
    fa, fc = np.exp(-0.5 * a * a), np.exp(-0.5 * c * c)
    k = 1.0 / math.sqrt(2.0 * math.pi)
    # E[X] of each clipped component, and below the threshold t: mass and partial mean
    mean = np.where(g, v * (pc - pa) - s * k * (fc - fa) + cap * (1.0 - pc), v)
    tot = float(np.dot(w, mean))
    thr = 0.5 * (c0 + c1)
    for _ in range(max_iter):
        b = (thr - v) / sg
        pb = ndtr(b)
        m = np.where(g, pb, (v <= thr).astype(np.float64))
        pm = np.where(g, v * (pb - pa) - s * k * (np.exp(-0.5 * b * b) - fa), v * m)
        lo_w = float(np.dot(w, m))
        if lo_w <= 1e-12 or lo_w >= 1.0 - 1e-12:
            break
        lo_s = float(np.dot(w, pm))
        c0, c1 = lo_s / lo_w, (tot - lo_s) / (1.0 - lo_w)
        new = 0.5 * (c0 + c1)
        if abs(new - thr) <= 1e-9 * max(1.0, cap):
            break
        thr = new
    return thr, c1 - c0


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
           ) -> tuple[dict[str, list[Seg]], dict[str, float]]:
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
        "gpu_util": [Seg(100.0 * f, fw, iter_s), _const(ev, ev_s), _const(0.0, ck_s)],
        "gpu_mem_util": [Seg(np.clip(100.0 * f * ratio, 0, 100), fw, iter_s),
                         _const(np.clip(ev * gmu / max(gu, 1e-12), 0, 100), ev_s),
                         _const(0.0, ck_s)],
        "gpu_mem": [_const(total, tr_s), _const(total, ev_s), _const(total, ck_s)],
        "cpu_util": [_const(cpu_tr, tr_s), _const(min(60.0 * cu, 100.0), ev_s),
                     _const(one, ck_s)],
    }
    return epoch, {"gpu_util": 0.0, "gpu_mem_util": 0.0, "gpu_mem": total, "cpu_util": cpu_tr}


def burst_probs(v: np.ndarray, thr: np.ndarray, mid: np.ndarray, split: np.ndarray,
                allburst: bool, sd: float, noise_at_zero: bool) -> np.ndarray:
    """[cuts x values]: P(a sample at level v is labelled burst) at each cut (``thr``: the
    noise-free cut, ``mid``: the noisy one; ``split`` False: one level, all burst or not)."""
    v = np.asarray(v, np.float64)[None, :]
    if sd <= 0:
        p = (v > thr[:, None]).astype(np.float64)
    else:
        from scipy.special import ndtr

        noisy = (v > 0) | noise_at_zero
        p = np.where(noisy, 1.0 - ndtr((mid[:, None] - v) / sd),
                     (v > mid[:, None]).astype(np.float64))
    return np.where(split[:, None], p, float(allburst))


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
    epoch = {r: grid_counts(sg, float(est.startup_s), epochs, lam, period_s)
             for r, sg in epoch.items()}
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
            # the kmeans rule cuts at Lloyd's split of the noise-free levels (on the noisy
            # distribution, Gauss-Hermite nodes or a fine grid started at its support's ends,
            # they flipped more of the bistable splits -- three levels almost equally far
            # apart -- the wrong way than the right way on the bundled titanx, gtx1080 and
            # h100 datasets); peakband cuts at shares of the peak
            if method == "kmeans" or sd <= 0:
                thr, mid = weighted_kmeans(v, w)
            if sd > 0:  # the gap of the noisy, clipped samples' own split
                gap = noisy_kmeans(v, w, sd, cap, nz, float(w.sum()) / period_s)[1]
            else:
                hm = v > thr
                gap = np.dot(v[hm], w[hm]) / w[hm].sum() - np.dot(v[~hm], w[~hm]) / w[~hm].sum()
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
        # labels (1 - wt), as the labeler; kmeans: one cut at the k-means threshold; all
        # cuts walked at once (analytic_runs)
        if method == "peakband" and split:
            th = band_fractions() * max(peak, 0.0)
            cut_w = np.full(th.size, wt / th.size)
            sp = np.ones(th.size, bool)
            if wt < 1.0:
                th, sp = np.append(th, 0.0), np.append(sp, False)
                cut_w = np.append(cut_w, 1.0 - wt)
            md = th
        else:
            th, md, sp, cut_w = np.array([thr]), np.array([mid]), np.array([split]), np.ones(1)

        # one burst_probs call for the start-up, every segment and the stall level
        sizes = [st[r].size] + [s.v.size for s in epoch[r]]
        pb = np.split(burst_probs(np.concatenate([st[r]] + [s.v for s in epoch[r]]
                                                 + [np.array([stall[r]])]),
                                  th, md, sp, allburst, sd, nz), np.cumsum(sizes), axis=1)
        b, i = run_lengths(pb[0], epoch[r], pb[1:-1], md, sp, epochs, period_s, pb[-1][:, 0],
                           lam, stall_s)
        bo, io = float(np.dot(cut_w, b)), float(np.dot(cut_w, i))
        out[f"{r}_burst_s"], out[f"{r}_idle_s"] = bo, io
    return out
