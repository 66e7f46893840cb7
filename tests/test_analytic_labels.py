"""Analytic labels: the closed form of every target from the emulator's estimate
equals the label of the synthesised trace.

Reference: a *noise-free* emulated run (``synth_trace(sensor_noise=False)``, ``iter_jitter``
and ``stall_rate_per_min`` 0), labelled by ``label_trace``. Tolerances, derived from what the
closed form leaves out:

* burst/idle durations: a run of d seconds holds floor(d/P) or ceil(d/P) samples of P
  seconds, so a mean run length is off by < P; the closed form counts the runs that a sample
  may or may not see (the last training window straddling the end of training, phases
  shorter than P) by their expectation, off by < 1 run per epoch: with >= 5 epochs and >= 1
  run of each class per epoch, < 1/5 of a run per run -> |a - y| <= P + y / 5;
* peaks: the 95th percentile of the samples; the closed form weighs each phase by its
  duration, the trace by its samples, which differ by < 1 sample per phase boundary (3 per
  epoch and one per start-up sample), so the label lies between the closed form's
  quantiles at q -/+ that share of the samples (plus the trace's 0.01 rounding).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpuscope.cluster.devices import get_device
from gpuscope.core.targets import PEAK_QUANTILE, RESOURCES
from gpuscope.emulator import default_params, estimate, synth_trace
from gpuscope.emulator.runs import run_meta
from gpuscope.emulator.traces import PERIOD_S, effective_period
from gpuscope.jobs.spec import JobSpec
from gpuscope.predictor.physics import analytic as al
from gpuscope.predictor.physics.features import FeatureBuilder
from gpuscope.profiling.labeling import label_trace

JOBS = [JobSpec(model=m, dataset="cifar10", optimizer=o, batch_size=b, epochs=5,
                steps_per_epoch=100)
        for m, o, b in (("lenet", "sgd", 16), ("resnet20", "adam", 64), ("alexnet", "sgd", 32))]


@pytest.fixture(scope="module")
def builder(tmp_path_factory: pytest.TempPathFactory) -> FeatureBuilder:
    return FeatureBuilder(cache_dir=tmp_path_factory.mktemp("cache") / "graphs")


@pytest.mark.parametrize(("device", "method"), [("titanx", "peakband"), ("h100", "peakband"),
                                                 ("titanx", "kmeans")])
def test_analytic_labels_equal_noise_free_trace_labels(builder: FeatureBuilder,
                                                      device: str, method: str) -> None:
    # peakband's labels are means over its cuts of labels each within the tolerance, so
    # within it too (the tolerance is linear in y)
    dev = get_device(device)
    p = dataclasses.replace(default_params(), iter_jitter=0.0, stall_rate_per_min=0.0)
    for job in JOBS:
        est = estimate(job, builder.graph_entry(job)[1], dev, p)
        df, ex = synth_trace(est, job, dev, p, seed=0, sensor_noise=False)
        per = effective_period(est, PERIOD_S, int(p.max_trace_samples))
        y = label_trace(df, run_meta(job, dev, est, ex, 0, per), method)
        a = al.analytic_labels(est, job, dev, per, method=method)
        n = len(df)
        for r in RESOURCES:
            for s in ("burst_s", "idle_s"):
                t = f"{r}_{s}"
                assert abs(a[t] - y[t]) <= per + y[t] / 5, (job.key, device, t, a[t], y[t])
            # the peak's bracket: the closed form's quantiles at q -/+ delta
            t_st, st = al._startup(est, dev.host_threads, dev.mem_mb, per)
            epoch, stall = al._epoch(est, job, dev.host_threads, dev.mem_mb, per)
            v = np.concatenate([st[r]] + [sg.v for sg in epoch[r]])
            w = np.concatenate([np.full(t_st.size, per)] + [sg.w * job.epochs for sg in epoch[r]])
            delta = (3 * job.epochs + t_st.size) / n
            cap = dev.mem_mb if r == "gpu_mem" else 100.0
            lo = al.mixture_quantile(v, w, max(PEAK_QUANTILE - delta, 0.0), 0.0, cap)
            hi = al.mixture_quantile(v, w, min(PEAK_QUANTILE + delta, 1.0), 0.0, cap)
            t = f"{r}_peak"
            assert lo - 0.06 <= y[t] <= hi + 0.06, (job.key, device, t, lo, hi, y[t])
            assert lo - 0.06 <= a[t] <= hi + 0.06


def test_sensor_noise_moves_only_what_noise_moves(builder: FeatureBuilder) -> None:
    """The expected label under the trace's sensor noise: the memory peak rises by about
    the 95th percentile of N(0, 2 MB); a saturated utilisation stays at or below 100."""
    dev = get_device("titanx")
    job = JOBS[1]
    est = estimate(job, builder.graph_entry(job)[1], dev)
    clean = al.analytic_labels(est, job, dev, PERIOD_S)
    noisy = al.analytic_labels(est, job, dev, PERIOD_S, sensor_noise=True)
    assert noisy["gpu_mem_peak"] - clean["gpu_mem_peak"] == pytest.approx(1.645 * 2.0, abs=0.3)
    assert all(noisy[f"{r}_peak"] <= 100.0 + 1e-9 for r in RESOURCES if r != "gpu_mem")
    oom = dataclasses.replace(est, status="oom")
    assert all(np.isnan(v) for v in al.analytic_labels(oom, job, dev, PERIOD_S).values())


def test_weighted_kmeans_matches_the_labeler() -> None:
    """Weighted Lloyd steps on levels = the labeler's k-means on the repeated samples."""
    from gpuscope.profiling.labeling import kmeans_threshold

    rng = np.random.default_rng(0)
    for _ in range(20):
        v = np.round(rng.uniform(0, 100, 6), 1)
        c = rng.integers(1, 40, 6)
        thr, _ = al.weighted_kmeans(v, c.astype(float))
        assert thr == kmeans_threshold(np.repeat(v, c))


def _frame(builder: FeatureBuilder) -> tuple[object, np.ndarray, np.ndarray]:
    jobs = [j.with_(epochs=e) for j in JOBS for e in (2, 4)]
    devs = ["titanx", "v100"]
    pairs = [(j, d) for j in jobs for d in devs]
    frame = builder.frame([j for j, _ in pairs], [d for _, d in pairs], progress=False)
    steps = np.array([j.total_steps for j, _ in pairs], np.float64)
    return frame, steps, np.array([j.model for j, _ in pairs])


def test_learners_correct_the_analytic_labels_and_v1_states_are_refused(
        builder: FeatureBuilder) -> None:
    from gpuscope.core.targets import TARGETS
    from gpuscope.predictor.physics.features import FEATURES, LABEL_FEATURES
    from gpuscope.predictor.physics.hybrid import HybridModel, decode_targets
    from gpuscope.predictor.physics.targets import analytic_z

    frame, steps, groups = _frame(builder)
    Z = np.column_stack([analytic_z(frame, t) for t in TARGETS])
    Y = decode_targets(frame, Z, TARGETS, steps)  # labels = the analytic labels exactly
    m = HybridModel(kinds="gbt", gbt_iter=20).fit(frame, Y, steps, groups)
    np.testing.assert_allclose(m.predict(frame, steps), Y, rtol=1e-9, atol=1e-9)
    # a version-1 state (label-space learners, no label version, features without the
    # analytic labels) is refused with a reason, as is a foreign feature list
    st = m.get_state()
    again = HybridModel.from_state(st)
    np.testing.assert_array_equal(again.predict(frame, steps), m.predict(frame, steps))
    st.pop("label_version")
    st.pop("residual")
    st["features"] = [f for f in FEATURES if f not in LABEL_FEATURES]
    with pytest.raises(ValueError, match="retrain"):
        HybridModel.from_state(st)
    with pytest.raises(ValueError, match="feature list"):
        HybridModel.from_state({**st, "features": ["not_a_feature"]})
