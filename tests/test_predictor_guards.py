"""Both predictor kinds guard their domain and predict nothing physically impossible: peaks
within capacity, a footprint above the device's memory is out of memory, execution time never
falls with more epochs or steps; the GNN's training domain (recorded, or derived for bundled
checkpoints). Expectations worked out by hand from the inputs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from gpuscope.core.data import bundled
from gpuscope.core.targets import TARGETS
from gpuscope.jobs.spec import JobSpec
from gpuscope.predictor.base import PREDICTION_COLUMNS, domain_warning
from gpuscope.predictor.gnn.checkpoint import load_checkpoint, save_checkpoint
from gpuscope.predictor.gnn.domain import feature_names, recorded_domain
from gpuscope.predictor.gnn.predict import GNNPredictor
from gpuscope.predictor.gnn.train import TrainConfig, fit_predictor
from gpuscope.predictor.guard import NO_DOMAIN, limit, out_of_domain
from gpuscope.testing import synthetic_dataset


def test_limit_clips_peaks_and_flags_memory_as_out_of_memory() -> None:
    targets = ("gpu_util_peak", "gpu_mem_peak", "exec_time_s")
    y = np.array([[227.0, 21600.0, 35.0], [103.0, 8000.0, -1.0], [99.0, 12288.0, 5.0]])
    over, flagged, why = limit(y, targets, 12288.0)
    assert y.tolist() == [[100.0, 12288.0, 35.0], [100.0, 8000.0, 0.0], [99.0, 12288.0, 5.0]]
    assert over.tolist() == [True, False, False]  # exactly the device's memory still fits
    assert flagged.tolist() == [True, False, False]  # 103 % is within the 5 % tolerance
    assert why == ["gpu_util_peak=227.0% above 100.0% (clipped); gpu_mem_peak=21600 MB above "
                   "12288 MB device memory (out of memory)", "", ""]
    # unknown device memory (a CPU): no memory limit; the clipped values of an earlier step
    # are judged by their raw values
    y2, raw = np.array([[100.0, 9e4]]), np.array([[150.0, 9e4]])
    over, flagged, why = limit(y2, targets[:2], None, raw)
    assert not over[0] and flagged[0] and why[0].startswith("gpu_util_peak=150.0%")


def test_out_of_domain_names_the_worst_inputs() -> None:
    ok, why = out_of_domain(np.array([[1.0, 5.0], [1.04, 3.0], [3.0, 2.0]]), ["a", "b"],
                            np.array([0.0, 2.0]), np.array([1.0, 4.0]))
    # a's range 0-1 widened by 5 %: 1.04 is inside; 3.0 is 2 ranges out, b's 5.0 half one
    assert ok.tolist() == [False, True, False]
    assert why == ["b=5 outside [2, 4]", "", "a=3 outside [0, 1]"]


# -- the GNN ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def constant_gnn() -> GNNPredictor:
    """A titanx (12288 MB) GNN whose head ignores its inputs: every job gets exec 100 s,
    gpu_util_peak 227 %, gpu_mem_peak 21.6 GB and OOM probability 0.42; trained run lengths
    10-20 epochs of 100 steps (graph ranges wide open)."""
    d = synthetic_dataset(n_jobs=None, max_nodes=10, unseen=0, device="titanx")  # all graphs
    b = fit_predictor(d, TrainConfig(epochs=1, steps=2, hidden=8, progress=False)).bundle
    want = np.array([[1.0] * len(TARGETS)])
    for t, v in (("exec_time_s", 100.0), ("gpu_util_peak", 227.0), ("gpu_mem_peak", 21600.0)):
        want[0, TARGETS.index(t)] = v
    with torch.no_grad():
        b.net.head.weight.zero_()
        b.net.head.bias.copy_(torch.as_tensor(b.labels.transform(want)[0]))
        b.net.oom_head.weight.zero_()
        b.net.oom_head.bias.fill_(math.log(0.42 / 0.58))
    b.train["targets_seen"] = list(TARGETS)
    names = feature_names("driple")
    lo = {"log10_epochs": 1.0, "log10_steps_per_epoch": 2.0, "log10_total_steps": 3.0}
    hi = {"log10_epochs": math.log10(20), "log10_steps_per_epoch": 2.0,
          "log10_total_steps": math.log10(2000)}
    b.domain = {"features": list(names), "min": [lo.get(n, -50.0) for n in names],
                "max": [hi.get(n, 50.0) for n in names]}
    return GNNPredictor(b, graphs=d.graphs)


def _job(epochs: int, steps: int = 100, i: int = 0) -> JobSpec:
    return JobSpec(model="vgg11", dataset="imagenet", optimizer="sgd", batch_size=8,
                   epochs=epochs, steps_per_epoch=steps, job_id=f"j{i}")


def test_gnn_peaks_capped_and_a_footprint_above_memory_is_oom(constant_gnn) -> None:
    df = constant_gnn.predict([_job(15)])
    assert list(df.columns) == list(PREDICTION_COLUMNS)
    r = df.iloc[0]
    assert r["gpu_util_peak"] == 100.0 and r["gpu_mem_peak"] == 12288.0
    # the learnt head says 0.42 (it would be placed); 21.6 GB does not fit 12 GB
    assert bool(r["oom"]) and r["oom_prob"] == 1.0
    assert not r["in_domain"] and r["domain_reason"].startswith(
        "gpu_util_peak=227.0% above 100.0% (clipped); gpu_mem_peak=21600 MB above 12288 MB")
    assert r["exec_time_s"] == pytest.approx(100.0, rel=1e-4)  # trained run length: as is


def test_gnn_exec_time_never_falls_with_more_epochs_or_steps(constant_gnn) -> None:
    """Outside 10-20 epochs x 100 steps the run is clamped in and its time scaled by total
    steps: 5 epochs = 100 x 500/1000, 40 epochs = 100 x 4000/2000, 10 epochs of 1000 steps
    = 100 x 10000/1000."""
    epochs = [1, 2, 5, 10, 15, 20, 40, 100, 1000]
    df = constant_gnn.predict([_job(e, i=i) for i, e in enumerate(epochs)])
    want = [10.0, 20.0, 50.0, 100.0, 100.0, 100.0, 200.0, 500.0, 5000.0]
    np.testing.assert_allclose(df["exec_time_s"], want, rtol=1e-4)
    assert np.all(np.diff(df["exec_time_s"]) >= 0)
    steps = constant_gnn.predict([_job(10, s, i) for i, s in enumerate((10, 100, 1000))])
    np.testing.assert_allclose(steps["exec_time_s"], [10.0, 100.0, 1000.0], rtol=1e-4)
    outside = df.set_index("job_id")["domain_reason"]
    assert "log10_epochs=1.6 outside [1, 1.3]" in outside["j6"]
    assert "log10_epochs" not in outside["j4"]


def test_gnn_without_a_recorded_domain_says_so(constant_gnn, tmp_path) -> None:
    b = constant_gnn.bundle
    bare = GNNPredictor(load_checkpoint(save_checkpoint(b, tmp_path / "c.pt")),
                        graphs=constant_gnn.graphs)
    assert bare.domain == b.domain  # the checkpoint keeps it
    bare.domain = None  # as a checkpoint written before domains were recorded
    with torch.no_grad():
        b2 = bare.bundle
        b2.net.head.bias.copy_(torch.as_tensor(b2.labels.transform(
            np.array([[1.0] * len(TARGETS)]))[0]))  # peaks within capacity: no limit flags
        b2.net.oom_head.bias.fill_(-5.0)
    df = bare.predict([_job(15), _job(40, i=1)])
    assert df["in_domain"].all() and (df["domain_reason"] == NO_DOMAIN).all()
    line = domain_warning(df)
    assert line is not None and "records no training domain: 2 of 2 jobs" in line
    assert domain_warning(constant_gnn.predict([_job(15)])) is not None  # out of domain


def test_new_gnn_checkpoints_record_their_training_domain() -> None:
    d = synthetic_dataset(n_jobs=10, max_nodes=8, unseen=0, seed=4)
    res = fit_predictor(d, TrainConfig(epochs=1, steps=2, hidden=8, progress=False))
    dom = res.bundle.domain
    assert dom is not None and dom["features"] == list(feature_names("driple"))
    train = d.labels.iloc[res.splits["train"]]
    i = dom["features"].index("log2_batch_size")
    assert (dom["min"][i], dom["max"][i]) == (math.log2(train["batch_size"].min()),
                                              math.log2(train["batch_size"].max()))
    ops = [float(d.graphs[k].x[:, 1].sum()) for k in train["graph_key"]]
    j = dom["features"].index("log10_ops")
    assert dom["max"][j] == pytest.approx(math.log10(max(ops)))


def test_bundled_gnn_domain_is_derived_from_its_dataset() -> None:
    """a100-driple.pt records its domain; a checkpoint that records none (one written before
    domains were recorded) gets the ranges of its bundled dataset's training rows (Table 3:
    batch 8-64, 10 and 20 epochs of 100 steps), the same as recorded."""
    from dataclasses import replace

    b = load_checkpoint(bundled("checkpoints", "a100-driple.pt"))
    assert b.domain is not None
    dom = recorded_domain(replace(b, domain=None))
    assert dom is not None
    got = {f: (lo, hi) for f, lo, hi in zip(dom["features"], dom["min"], dom["max"])}
    assert got["log2_batch_size"] == (3.0, 6.0)
    assert got["log10_epochs"] == pytest.approx((1.0, math.log10(20)))
    assert got["log10_steps_per_epoch"] == (2.0, 2.0)
    assert dom["features"] == b.domain["features"]
    assert np.allclose(dom["min"], b.domain["min"]) and np.allclose(dom["max"], b.domain["max"])


# -- the physics predictor: execution time composes per-step time x steps --------------------
def test_physics_exec_time_is_monotone_in_epochs_and_steps(tmp_path) -> None:
    from gpuscope.predictor.physics.dataset import PhysicsData
    from gpuscope.predictor.physics.features import FeatureBuilder
    from gpuscope.predictor.physics.model import PhysicsPredictor, fit_physics

    builder = FeatureBuilder(cache_dir=tmp_path / "graphs")
    jobs = [JobSpec(model=m, dataset="cifar10", optimizer="sgd", batch_size=b, epochs=e,
                    steps_per_epoch=50) for m in ("trivial",) for b in (16, 64)
            for e in (1, 2, 3)]
    frame = builder.frame(jobs, ["v100"] * len(jobs), progress=False)
    # labels: the emulator's execution time x 1.3 and a memory peak 1.5x the device's memory
    lab = pd.DataFrame({"model": [j.model for j in jobs], "device": "v100", "split": "train",
                        "status": "ok", "family": [j.model for j in jobs],
                        "provenance": "emulated",
                        "exec_time_s": 1.3 * frame["an_exec_s"],
                        "gpu_mem_peak": 1.5 * frame["an_capacity_mb"]})
    ck = fit_physics(PhysicsData(lab, jobs, frame), kinds="gbt", gbt_min_leaf=2, min_labels=5)
    pred = PhysicsPredictor(ck, builder=builder)
    grid = [j.with_(epochs=e, steps_per_epoch=s, job_id=f"{e}-{s}")
            for j in jobs[:1] for e in (1, 2, 5, 20) for s in (10, 50, 500)]
    t = pred.predict(grid)["exec_time_s"].to_numpy().reshape(4, 3)
    assert np.all(np.diff(t, axis=0) > 0) and np.all(np.diff(t, axis=1) > 0)
    # a learnt memory peak above the device's memory is out of memory, clipped and flagged
    r = pred.predict(jobs[:1]).iloc[0]
    cap = float(frame["an_capacity_mb"].iloc[0])
    assert r["gpu_mem_peak"] == cap and bool(r["oom"]) and r["oom_prob"] == 1.0
    assert not r["in_domain"] and "device memory (out of memory)" in r["domain_reason"]
