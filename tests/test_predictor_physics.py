"""The physics-informed predictor: features, composition, per-target models,
domain guard, checkpoints, honest-evaluation helpers, Gavel rows."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.ensemble import HistGradientBoostingRegressor

from gpuscope.cluster.devices import get_device
from gpuscope.core.errors import InputError
from gpuscope.core.targets import TARGETS
from gpuscope.emulator import estimate
from gpuscope.jobs.spec import JobSpec
from gpuscope.predictor.evaluation import ci95, family_folds, family_split, score
from gpuscope.predictor.physics.dataset import PhysicsData
from gpuscope.predictor.physics.features import (
    FEATURES,
    STEP_FEATURES,
    FeatureBuilder,
    compose_exec,
    step_correction,
)
from gpuscope.predictor.physics.hybrid import HybridModel
from gpuscope.predictor.physics.model import (
    PhysicsPredictor,
    fit_physics,
    read_checkpoint_dict,
    save_physics,
)
from gpuscope.predictor.physics.trees import pack_hgb, predict_packed
from gpuscope.predictor.scaling import MinMaxLabels

MODELS = ("lenet", "resnet20", "trivial", "alexnet")


@pytest.fixture(scope="module")
def builder(tmp_path_factory: pytest.TempPathFactory) -> FeatureBuilder:
    return FeatureBuilder(cache_dir=tmp_path_factory.mktemp("cache") / "graphs")


def _jobs(epochs: int = 1, spe: int | None = 100) -> list[JobSpec]:
    return [JobSpec(model=m, dataset="cifar10", optimizer=o, batch_size=b, epochs=epochs,
                    steps_per_epoch=spe)
            for m in MODELS for o in ("sgd", "adam") for b in (16, 64)]


def _emulated_data(builder: FeatureBuilder, devices: tuple[str, ...] = ("v100",),
                   noise: float = 0.0) -> PhysicsData:
    """Rows labelled by the emulator itself (exec time × optional log-normal noise), with a
    synthetic burst target (2 × step time × 10) and a percentage peak (gpu_util)."""
    rng = np.random.default_rng(0)
    jobs, devs, rows = [], [], []
    for d in devices:
        for j in _jobs(epochs=2):
            est = estimate(j, builder.graph_entry(j)[1], get_device(d))
            jobs.append(j)
            devs.append(d)
            r = {t: np.nan for t in TARGETS}
            r.update(model=j.model, device=d, family=j.model, split="train",
                     provenance="emulated", status=est.status)
            r["exec_time_s"] = est.exec_time_s * math.exp(noise * rng.normal())
            r["gpu_util_peak"] = 100 * est.gpu_util
            r["gpu_util_burst_s"] = 20 * est.iter_s
            rows.append(r)
    return PhysicsData(pd.DataFrame(rows), jobs, builder.frame(jobs, devs))


def test_packed_trees_match_sklearn() -> None:
    rng = np.random.default_rng(1)
    X = rng.random((300, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) * 3 - np.nan_to_num(X[:, 2]) ** 2
    m = HistGradientBoostingRegressor(max_iter=60, random_state=0).fit(X, y)
    # leaf values are stored as float32 (small checkpoints): equal to ~1e-6 relative
    assert np.allclose(predict_packed(pack_hgb(m), X), m.predict(X), rtol=1e-5, atol=1e-5)


def test_compose_and_correction_round_trip(builder: FeatureBuilder) -> None:
    jobs = _jobs()
    frame = builder.frame(jobs, ["v100"] * len(jobs))
    steps = np.array([j.total_steps for j in jobs], float)
    c = np.linspace(-0.5, 0.5, len(jobs))
    exec_t = compose_exec(frame, steps, c)
    assert np.allclose(step_correction(frame, steps, exec_t), c)
    # with no correction the composition is the emulator's own execution time
    for j, e in zip(jobs, compose_exec(frame, steps), strict=True):
        est = estimate(j, builder.graph_entry(j)[1], get_device("v100"))
        assert e == pytest.approx(est.exec_time_s, rel=1e-9)


def test_step_model_never_reads_run_length() -> None:
    assert "r_log_total_steps" in FEATURES and "r_log_total_steps" not in STEP_FEATURES
    assert HybridModel.feature_set("exec_time_s") == STEP_FEATURES


def test_full_epoch_jobs_match_the_emulator(builder: FeatureBuilder) -> None:
    """Trained on 100-step runs, the predictor composes full-epoch execution times that agree
    with the emulator on the full-epoch jobs (and flags them as outside its run lengths)."""
    data = _emulated_data(builder)
    pred = PhysicsPredictor(fit_physics(data, kinds="gbt"), builder=builder)
    full = [j.with_(steps_per_epoch=None, epochs=3, job_id=f"f{i}")
            for i, j in enumerate(_jobs())]
    df = pred.predict(full)
    truth = np.array([estimate(j, builder.graph_entry(j)[1], get_device("v100")).exec_time_s
                      for j in full])
    ok = np.isfinite(df["exec_time_s"].to_numpy())
    mape = np.mean(np.abs(df["exec_time_s"].to_numpy()[ok] - truth[ok]) / truth[ok])
    assert ok.sum() >= len(full) - 2 and mape < 0.02
    assert not df["in_domain"].any()
    assert df["domain_reason"].str.contains("r_log_total_steps").all()
    short = pred.predict(_jobs(epochs=2)[:3])
    assert short["in_domain"].all() and (short["domain_reason"] == "").all()


def test_unseen_targets_nan_peaks_capped_and_oom(builder: FeatureBuilder) -> None:
    data = _emulated_data(builder)
    pred = PhysicsPredictor(fit_physics(data, kinds="gbt"), builder=builder)
    df = pred.predict(_jobs(epochs=2))
    assert df["cpu_util_peak"].isna().all() and df["gpu_mem_idle_s"].isna().all()
    assert (df["gpu_util_peak"] <= 100).all() and (df["gpu_util_peak"] >= 0).all()
    big = JobSpec(model="vgg16", dataset="imagenet", optimizer="adam", batch_size=256,
                  epochs=1, steps_per_epoch=100)
    est = estimate(big, builder.graph_entry(big)[1], get_device("gtx1080"))
    assert est.status == "oom"  # the emulator's memory model: 8 GB is not enough
    multi = PhysicsPredictor(fit_physics(data, kinds="gbt", device="multi"), device="gtx1080",
                             builder=builder)
    row = multi.predict([big]).iloc[0]
    assert bool(row["oom"]) and row["oom_prob"] == 1.0


@pytest.fixture(scope="module")
def auto_checkpoint(builder: FeatureBuilder) -> dict:
    """``fit_physics(kinds="auto")`` on emulator-labelled rows (noise 0): the cross-validated
    choice per target takes seconds, so the two tests below read one fit."""
    return fit_physics(_emulated_data(builder, noise=0.0), kinds="auto")


def test_auto_picks_analytic_when_the_emulator_is_the_truth(auto_checkpoint: dict) -> None:
    m = HybridModel.from_state(auto_checkpoint["model"])
    assert m.chosen_["exec_time_s"] == "analytic"
    assert set(m.chosen_) == {"exec_time_s", "gpu_util_peak", "gpu_util_burst_s"}


def test_few_labels_use_the_analytic_estimate(builder: FeatureBuilder) -> None:
    """A campaign too small to learn a correction from (4 rows < min_labels 10) still predicts
    every target it measured, by the analytic estimate alone; a target it never measured is
    NaN."""
    data = _emulated_data(builder)  # exec time = the emulator's own estimate (noise 0)
    sub = data.subset(np.arange(4))
    m = HybridModel(kinds="gbt").fit(sub.frame, sub.Y(), sub.total_steps())
    assert sorted(m.few_labels_) == sorted(["exec_time_s", "gpu_util_peak", "gpu_util_burst_s"])
    assert {m.chosen_[t] for t in m.few_labels_} == {"analytic"}
    p = m.predict(data.frame, data.total_steps())
    j = TARGETS.index("exec_time_s")
    y = data.Y()[:, j]
    assert np.allclose(p[:, j], y, rtol=1e-6)  # on all 16 jobs, 12 never trained on
    assert np.isnan(p[:, TARGETS.index("cpu_util_peak")]).all()
    again = HybridModel.from_state(m.get_state())
    assert again.few_labels_ == m.few_labels_


def test_learns_a_known_correction(builder: FeatureBuilder) -> None:
    """Labels = emulator × 1.5 on one device: the corrected model gets them within 3 %."""
    data = _emulated_data(builder)
    y = data.Y()
    j = TARGETS.index("exec_time_s")
    y[:, j] = compose_exec(data.frame, data.total_steps(), np.full(len(data), math.log(1.5)))
    m = HybridModel(kinds="gbt", gbt_min_leaf=2).fit(data.frame, y, data.total_steps())
    p = m.predict(data.frame, data.total_steps())[:, j]
    assert np.max(np.abs(p - y[:, j]) / y[:, j]) < 0.03


def test_checkpoint_weights_only_round_trip(builder: FeatureBuilder, auto_checkpoint: dict,
                                            tmp_path) -> None:
    ck = auto_checkpoint
    path = save_physics(ck, tmp_path / "p.pt")
    torch.load(path, weights_only=True)  # safe loading works
    a = PhysicsPredictor(ck, builder=builder).predict(_jobs(epochs=2))
    b = PhysicsPredictor(read_checkpoint_dict(path), builder=builder).predict(_jobs(epochs=2))
    pd.testing.assert_frame_equal(a, b)


def test_family_split_and_intervals() -> None:
    """Five families of 10 rows in five folds: test and val one family each, train three;
    seeds change which, a seed repeats its split; too few families is one clear error."""
    g = np.array(["a"] * 10 + ["b"] * 10 + ["c"] * 10 + ["d"] * 10 + ["e"] * 10)
    tests = set()
    for seed in range(6):
        sp = family_split(g, seed)
        fams = {k: set(g[v]) for k, v in sp.items()}
        assert (len(sp["test"]), len(sp["val"]), len(sp["train"])) == (10, 10, 30)
        assert len(fams["test"]) == len(fams["val"]) == 1 and len(fams["train"]) == 3
        assert not (fams["train"] & fams["test"]) and not (fams["val"] & fams["test"])
        assert sorted(np.concatenate(list(sp.values())).tolist()) == list(range(50))
        assert all((family_split(g, seed)[k] == v).all() for k, v in sp.items())
        tests |= fams["test"]
    assert len(tests) > 1
    folds = family_folds(g, 3, seed=0)  # 5 families in 3 folds: 2, 2 and 1 of them
    assert sorted(len(f) for f in folds) == [10, 20, 20]
    assert family_split(g[:20], 0)["val"].size == 0  # two families: test and train only
    with pytest.raises(InputError, match="at least 2 families"):
        family_split(g[:10], 0)
    m, h = ci95([1.0, 2.0, 3.0])
    assert m == 2.0 and h == pytest.approx(4.302653 / math.sqrt(3), rel=1e-5)


def test_score_uses_training_ranges() -> None:
    train = np.array([[0.0], [10.0]])
    s = score(np.array([[6.0]]), np.array([[5.0]]), MinMaxLabels(("exec_time_s",)).fit(train))
    assert s["nmse_exec_time_s"] == pytest.approx(0.01)
    assert s["mape_exec_pct"] == pytest.approx(20.0)
    # a candidate that leaves an observed entry unpredicted gets no overall nMSE (nor R²)
    both = MinMaxLabels(("gpu_util_peak", "exec_time_s")).fit(np.array([[0.0, 0], [100, 10]]))
    part = score(np.array([[np.nan, 6.0]]), np.array([[50.0, 5.0]]), both)
    assert np.isnan(part["nmse"]) and np.isnan(part["r2"])
    assert part["nmse_exec_time_s"] == pytest.approx(0.01)


def test_gavel_rows() -> None:
    from gpuscope.core.data import parse_job_type
    from research.measured_correctors.gavel_tl import load_gavel

    assert parse_job_type("ResNet-18 (batch size 32)") == ("ResNet-18", 32)
    assert parse_job_type("A3C") == ("A3C", 0)
    df = load_gavel()
    assert set(df["device"]) == {"k80", "p100", "v100"} and len(df) == 78
    r = df[(df.job_type == "ResNet-50 (batch size 32)") & (df.device == "v100")].iloc[0]
    assert r["step_s"] == pytest.approx(1 / 7.787265, rel=1e-6)


def test_cli_train_and_predict_flag_full_epoch_jobs(builder: FeatureBuilder, tmp_path,
                                                    monkeypatch, capsys) -> None:
    from gpuscope.cli import main
    from gpuscope.jobs.queue import write_queue

    monkeypatch.setenv("GPUSCOPE_CACHE", str(Path(str(builder.cache_dir)).parent))
    data = _emulated_data(builder)
    folder = tmp_path / "emulated" / "v100"
    folder.mkdir(parents=True)
    lab = data.labels.copy()
    for k in ("dataset", "optimizer", "batch_size", "epochs", "steps_per_epoch"):
        lab[k] = [getattr(j, k) for j in data.jobs]
    lab.to_parquet(folder / "labels.parquet")
    model = tmp_path / "v100.pt"
    assert main(["train", "--dataset", str(folder), "-o", str(model), "--kinds", "gbt",
                 "--quiet"]) == 0
    assert "physics predictor" in capsys.readouterr().out
    queue = tmp_path / "q.csv"
    write_queue([j.with_(steps_per_epoch=None, job_id=f"j{i}")
                 for i, j in enumerate(_jobs()[:4])], queue)
    out = tmp_path / "p.csv"
    assert main(["predict", "--model", str(model), "--jobs", str(queue), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "4 of 4 jobs lie outside the checkpoint's training domain" in err
    df = pd.read_csv(out)
    assert {"in_domain", "domain_reason", "oom", "step_s"} <= set(df.columns)
    assert main(["predict", "--model", str(model), "--jobs", str(queue), "-o",
                 str(queue)]) == 2
    assert main(["train", "--dataset", str(folder), "-o", str(model), "--kinds", "x"]) == 2


def test_corpus_build_is_resumable(builder: FeatureBuilder, tmp_path) -> None:
    from gpuscope.predictor.physics.corpus import Arch, architectures, build_corpus
    from gpuscope.predictor.physics.dataset import load_physics

    archs = architectures(per_arch=1, hf=False)
    assert len({a.arch for a in archs}) == len(archs) >= 19  # every catalog model, once
    small = [Arch("lenet", "lenet", "catalog", (_jobs()[0],)),
             Arch("resnet20", "resnet", "catalog", (_jobs()[4],))]
    s1 = build_corpus(tmp_path, ["v100", "t4"], small, progress=False, builder=builder)
    assert (s1["architectures"], s1["rows"], s1["built_now"]) == (2, 4, 2)
    s2 = build_corpus(tmp_path, ["v100", "t4"], small, progress=False, builder=builder)
    assert (s2["built_now"], s2["resumed"]) == (0, 2)
    data = load_physics([tmp_path / "corpus.parquet"])
    assert len(data) == 4 and data.labels["provenance"].eq("emulated").all()
    y = data.Y()[:, TARGETS.index("exec_time_s")]
    assert np.allclose(y, data.frame["an_exec_s"].to_numpy())  # labels = the estimate


def test_parallel_analytic_labels_equal_serial(builder: FeatureBuilder,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Labels computed in worker processes are the in-process ones, bit for bit, in order,
    with repeated (job, device) pairs; few new rows stay in-process."""
    import gpuscope.predictor.physics.features as physics

    assert FeatureBuilder(workers=4)._label_workers(physics.PARALLEL_MIN_ROWS - 1) == 1
    assert FeatureBuilder()._label_workers(10**6) == 1  # in-process unless asked
    assert FeatureBuilder(workers=0)._label_workers(10**6) >= 1
    monkeypatch.setattr(physics, "PARALLEL_MIN_ROWS", 2)
    calls: list[int] = []
    fill = FeatureBuilder._fill_parallel
    monkeypatch.setattr(FeatureBuilder, "_fill_parallel",
                        lambda self, *a: (calls.append(a[1]), fill(self, *a))[1])
    jobs = _jobs()[:6]
    devs = ["v100", "t4"]
    js = [j for j in jobs for _ in devs] + jobs[:2]
    ds = [d for _ in jobs for d in devs] + ["v100", "v100"]
    serial = FeatureBuilder(cache_dir=builder.cache_dir, workers=1)
    par = FeatureBuilder(cache_dir=builder.cache_dir, workers=2)
    a = serial.frame(js, ds, progress=False)
    b = par.frame(js, ds, progress=False)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert calls == [2]  # the worker processes did compute b's labels
