"""Predictor model, losses, scaling, splits and training (seed 001 §3.1, §4.3–4.4)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from torch_geometric.data import Batch, Data

from gpuscope.core.targets import DRIPLE_TARGETS, TARGETS
from gpuscope.jobs.spec import MODEL_FAMILY, table_jobs
from gpuscope.predictor.evaluation import score
from gpuscope.predictor.gnn.batching import build_inputs, predict_inputs
from gpuscope.predictor.gnn.losses import masked_bce, masked_mse
from gpuscope.predictor.gnn.model import DriplePredictorNet, ModelConfig
from gpuscope.predictor.gnn.splits import make_splits, subsample
from gpuscope.predictor.gnn.train import TrainConfig, fit_predictor
from gpuscope.predictor.scaling import MinMaxLabels, Standardizer
from gpuscope.testing import synthetic_dataset


def _graph(n: int, seed: int) -> Data:
    g = torch.Generator().manual_seed(seed)
    src = torch.arange(n - 1)
    ei = torch.cat([torch.stack([src, src + 1]), torch.stack([src + 1, src])], 1)
    return Data(x=torch.rand(n, 3, generator=g), edge_index=ei, num_nodes=n)


# -- model ---------------------------------------------------------------------------------
def test_configs_of_earlier_checkpoints_load_unless_they_used_a_removed_switch() -> None:
    """A bundled checkpoint's config (with the fields of the removed experiment switches at
    the values that change nothing) loads; one that used a removed switch is refused."""
    old = {"in_dim": 3, "context_dim": 9, "n_targets": 6, "device_dim": 0, "graph_dim": 8,
           "hidden": 64, "step_ratio": 0.5, "steps": 8, "max_steps": 64, "set2set_steps": 3,
           "bounded": [], "readout": "set2set"}
    assert ModelConfig.from_dict(old) == ModelConfig(3, 9, 6, graph_dim=8, hidden=64, steps=8)
    for key, value in (("bounded", [1]), ("readout", "mean"), ("device_dim", 8),
                       ("steps", None)):
        with pytest.raises(ValueError, match="retrain"):
            ModelConfig.from_dict({**old, key: value})
    cfg = ModelConfig(3, 4, 2, steps=3)
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg


def test_prediction_does_not_depend_on_batch_companions() -> None:
    torch.manual_seed(0)
    net = DriplePredictorNet(ModelConfig(3, 4, 2, hidden=16)).eval()
    a, b = _graph(6, 1), _graph(15, 2)
    with torch.no_grad():
        one = Batch.from_data_list([a])
        r1 = net.embed(one.x, one.edge_index, one.batch, 1)
        both = Batch.from_data_list([b, a])
        r2 = net.embed(both.x, both.edge_index, both.batch, 2)
    assert torch.allclose(r1[0], r2[1], atol=1e-5)


def test_context_alone_changes_the_output() -> None:
    torch.manual_seed(0)
    net = DriplePredictorNet(ModelConfig(3, 4, 13, hidden=16)).eval()
    g = Batch.from_data_list([_graph(8, 3)])
    ctx = torch.zeros(2, 4)
    ctx[1, 1] = 1.0
    with torch.no_grad():
        y, _ = net(g.x, g.edge_index, g.batch, 1, torch.zeros(2, dtype=torch.long), ctx)
    assert not torch.allclose(y[0, -1], y[1, -1])


def test_reset_parameters_restores_a_fresh_init() -> None:
    net = DriplePredictorNet(ModelConfig(3, 4, 2, hidden=8))
    for p in net.parameters():
        p.data.fill_(0.5)
    net.reset_parameters()
    assert not all(bool((p == 0.5).all()) for p in net.parameters())


# -- losses --------------------------------------------------------------------------------
def test_masked_targets_do_not_move_the_loss() -> None:
    target = torch.tensor([[1.0, float("nan")], [0.0, 2.0]])
    pred = torch.tensor([[0.5, 9.0], [1.0, 1.0]], requires_grad=True)
    loss = masked_mse(pred, target)
    # hand-computed over the three observed entries: (0.25 + 1 + 1) / 3
    assert loss.item() == pytest.approx(2.25 / 3)
    loss.backward()
    assert pred.grad[0, 1].item() == 0.0
    pred2 = pred.detach().clone()
    pred2[0, 1] = -1234.0
    assert masked_mse(pred2, target).item() == pytest.approx(loss.item())
    assert masked_mse(pred2, torch.full_like(target, float("nan"))).item() == 0.0


def test_masked_bce_uses_only_usable_rows() -> None:
    logit = torch.tensor([0.0, 100.0])
    label = torch.tensor([1.0, 0.0])
    assert masked_bce(logit, label, torch.tensor([True, False])).item() == pytest.approx(
        math.log(2))


# -- scaling and metrics -------------------------------------------------------------------
def test_min_max_labels_round_trip_and_log_targets() -> None:
    y = np.array([[1.0, 10.0], [3.0, 1000.0], [np.nan, 100.0]])
    lab = MinMaxLabels(("a", "exec_time_s"), (False, True)).fit(y)
    z = lab.transform(y)
    assert z[0, 0] == 0 and z[1, 0] == 1 and np.isnan(z[2, 0])
    assert z[:, 1].min() == pytest.approx(0) and z[:, 1].max() == pytest.approx(1)
    assert np.allclose(lab.inverse(z)[:2], y[:2])
    assert lab.plain(y)[2, 1] == pytest.approx(90 / 990)
    again = MinMaxLabels.from_dict(lab.to_dict())
    assert np.allclose(again.transform(y)[:2], z[:2])


def test_standardizer_log_scales_features() -> None:
    x = torch.tensor([[0.0, 1.0], [math.e - 1, 1.0]])
    s = Standardizer(log=True).fit(x)
    assert s.mean_ == pytest.approx([0.5, math.log(2)])
    assert s.std_[1] == 1.0  # constant column: std 0 → 1
    assert torch.allclose(s.transform(x)[:, 0], torch.tensor([-1.0, 1.0]))


def test_score_matches_hand_computation() -> None:
    lab = MinMaxLabels(("gpu_util_peak", "exec_time_s")).fit(np.array([[0.0, 10], [100, 20]]))
    y = np.array([[50.0, 10.0], [100.0, 20.0]])
    p = np.array([[60.0, 11.0], [100.0, 18.0]])
    s = score(p, y, lab, by="group")
    assert s["nmse_gpu_util"] == pytest.approx((0.1 ** 2) / 2)
    assert s["nmse_exec_time"] == pytest.approx((0.1 ** 2 + 0.2 ** 2) / 2)
    assert s["mape_exec_pct"] == pytest.approx(100 * (0.1 + 0.1) / 2)


# -- splits --------------------------------------------------------------------------------
def _labels() -> pd.DataFrame:
    rows = [{"model": j.model, "split": "train"} for j in table_jobs(3)]
    rows += [{"model": j.model, "split": "unseen"} for j in table_jobs(4)]
    return pd.DataFrame(rows)


def test_random_split_is_60_20_20_and_never_uses_unseen_rows() -> None:
    lab = _labels()
    p = make_splits(lab, "random", seed=3)
    assert (len(p["train"]), len(p["val"]), len(p["test"])) == (260, 86, 86)
    allrows = np.concatenate([p["train"], p["val"], p["test"]])
    assert len(set(allrows)) == 432
    assert not set(allrows) & set(p["unseen"]) and len(p["unseen"]) == len(table_jobs(4))
    assert all((make_splits(lab, "random", seed=3)[k] == v).all() for k, v in p.items())


def test_family_split_holds_out_whole_families() -> None:
    lab = _labels()
    p = make_splits(lab, "family", seed=0)
    fam = lab["model"].map(MODEL_FAMILY)
    seen = set(fam.iloc[p["train"]])
    assert not seen & set(fam.iloc[p["test"]]) and not seen & set(fam.iloc[p["val"]])
    # 7 Table 3 families in 5 folds (2, 2, 1, 1, 1 families): test and val one fold each
    assert len(set(fam.iloc[p["test"]])) in (1, 2) and len(set(fam.iloc[p["val"]])) in (1, 2)
    assert len(p["train"]) + len(p["val"]) + len(p["test"]) == 432
    assert set(lab["split"].iloc[p["unseen"]]) == {"unseen"}


def test_subsample_fraction() -> None:
    rows = np.arange(100)
    s = subsample(rows, 0.25, seed=1)
    assert len(s) == 25 and set(s) <= set(rows)
    assert (subsample(rows, 1.0) == rows).all()


# -- training ------------------------------------------------------------------------------
def _tiny(n_jobs: int = 8, **kw) -> object:
    return synthetic_dataset(n_jobs=n_jobs, max_nodes=21, unseen=0, noise=0.0, **kw)


def test_overfits_a_tiny_dataset() -> None:
    d = _tiny(8)
    rows = np.arange(len(d))
    splits = {"train": rows, "val": rows, "test": rows, "unseen": np.array([], dtype=int)}
    res = fit_predictor(d, TrainConfig(epochs=250, patience=250, lr=1e-2, batch_size=8,
                                       steps=2, hidden=32, progress=False), splits=splits)
    assert res.history[0]["val_mse"] > 0.02
    assert res.best_val < 2e-3


def test_training_is_deterministic_under_a_seed() -> None:
    d = _tiny(12)
    cfg = TrainConfig(epochs=3, steps=2, hidden=16, progress=False, seed=5)
    a, b = fit_predictor(d, cfg), fit_predictor(d, cfg)
    assert [h["val_mse"] for h in a.history] == [h["val_mse"] for h in b.history]
    for (k, v), w in zip(a.bundle.net.state_dict().items(), b.bundle.net.state_dict().values()):
        assert torch.equal(v, w), k


def test_driple_target_set_and_cpu_only_masks() -> None:
    d = _tiny(12, gpu=False)
    res = fit_predictor(d, TrainConfig(targets="driple", epochs=2, steps=2, hidden=16,
                                       progress=False))
    assert res.bundle.targets == DRIPLE_TARGETS and res.bundle.net.config.n_targets == 6
    assert np.isnan(res.best_val) or res.best_val >= 0  # all-NaN labels: no loss, no crash
    res2 = fit_predictor(d, TrainConfig(epochs=2, steps=2, hidden=16, progress=False))
    assert res2.bundle.targets == TARGETS and np.isfinite(res2.best_val)


def test_more_epochs_predict_a_longer_run_after_training() -> None:
    d = synthetic_dataset(n_jobs=64, max_nodes=12, unseen=0, noise=0.0, seed=1)
    res = fit_predictor(d, TrainConfig(epochs=80, patience=80, lr=1e-2, steps=2, hidden=32,
                                       progress=False))
    b = res.bundle
    lab = d.labels
    ctx = d.contexts.clone()
    # the same rows with only the epochs entry of the context doubled/halved
    from gpuscope.graphs.encoding import CONTEXT_FEATURES, context_vector  # noqa: F401

    jobs10 = [r for r in range(len(lab)) if lab["epochs"].iloc[r] == 10]
    from gpuscope.predictor.gnn.data import job_from_row

    ctx20 = torch.stack([context_vector(job_from_row(lab.iloc[r]).with_(epochs=20))
                         for r in jobs10])
    keys = lab["graph_key"].iloc[jobs10].tolist()
    i10 = build_inputs(keys, d.graphs, ctx[jobs10], b.features, b.contexts, gstats=b.gstats)
    i20 = build_inputs(keys, d.graphs, ctx20, b.features, b.contexts, gstats=b.gstats)
    p10, _ = predict_inputs(b.net, i10)
    p20, _ = predict_inputs(b.net, i20)
    e = b.targets.index("exec_time_s")
    t10 = b.labels.inverse(p10.double().numpy())[:, e]
    t20 = b.labels.inverse(p20.double().numpy())[:, e]
    ratio = np.median(t20 / t10)
    assert 1.4 < ratio < 2.8  # the generating function doubles exec time (+5 s)


def test_graph_statistics_are_log_totals() -> None:
    from gpuscope.predictor.gnn.batching import graph_stats

    g = Data(x=torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
             edge_index=torch.tensor([[0, 1, 0], [1, 0, 1]]))
    # sums (4, 6), 2 nodes, column maxima (3, 4), 3 edges
    want = torch.log1p(torch.tensor([4.0, 6.0, 2.0, 3.0, 4.0, 3.0])).double()
    assert torch.allclose(graph_stats(g), want)
    assert torch.allclose(graph_stats(g, 3), want[:3])  # older checkpoints' F + 1 form


def test_exec_time_is_min_max_normalised_in_log_space() -> None:
    d = synthetic_dataset(n_jobs=24, max_nodes=10, unseen=0, noise=0.0, seed=4)
    res = fit_predictor(d, TrainConfig(epochs=1, steps=2, hidden=16, progress=False))
    lab = res.bundle.labels
    j = TARGETS.index("exec_time_s")
    assert lab.log[j] and not lab.log[TARGETS.index("gpu_util_peak")]
    y = d.targets(TARGETS)
    tr = res.splits["train"]
    t = np.log1p(y[tr, j])
    # min-max on the logs of the training split, worked out by hand
    assert lab.min_[j] == pytest.approx(t.min()) and lab.max_[j] == pytest.approx(t.max())
    z = lab.transform(y)
    assert np.allclose(z[tr, j], (t - t.min()) / (t.max() - t.min()))
    ok = np.isfinite(y[:, j])
    assert np.allclose(lab.inverse(z)[ok, j], y[ok, j])  # round trip back to seconds
    back = MinMaxLabels.from_dict(lab.to_dict())
    assert np.allclose(back.inverse(back.transform(y))[ok, j], y[ok, j])
    # the paper-literal switch: plain min-max (no log)
    plain = fit_predictor(d, TrainConfig(epochs=1, steps=2, hidden=16, progress=False,
                                         log_targets=())).bundle.labels
    assert not any(plain.log)
    assert plain.min_[j] == pytest.approx(np.nanmin(y[tr, j]))


def test_steps_kept_out_of_u_and_unseen_targets_are_nan() -> None:
    """``steps_in_u=False``: predictions cannot depend on steps per epoch (a campaign that tunes
    steps per model would leak its speed through them) but through the run's total steps
    outside the trained run lengths; a target never observed in training (a CPU dataset's
    GPU targets) is NaN."""
    from gpuscope.predictor.gnn.data import job_from_row
    from gpuscope.predictor.gnn.predict import GNNPredictor

    d = synthetic_dataset(n_jobs=16, max_nodes=10, unseen=0, noise=0.0, seed=3, gpu=False)
    res = fit_predictor(d, TrainConfig(epochs=2, steps=2, hidden=16, progress=False,
                                       steps_in_u=False))
    assert res.bundle.train["steps_in_u"] is False
    job = job_from_row(d.labels.iloc[res.splits["train"][0]]).with_(job_id="a")  # trained
    p = GNNPredictor(res.bundle, graphs=d.graphs)
    assert p.domain is not None
    most = round(10 ** p.domain["max"][p.domain["features"].index("log10_steps_per_epoch")])
    out = p.predict([job, job.with_(steps_per_epoch=10 * most, job_id="b")])
    other = [t for t in TARGETS if t != "exec_time_s"]
    pd.testing.assert_frame_equal(out[other].iloc[[0]].reset_index(drop=True),
                                  out[other].iloc[[1]].reset_index(drop=True))
    # 10x the most steps per epoch trained: the network sees the run clamped to the most
    # (no steps in u: the same prediction as job a's) and its time is scaled 10x
    assert out["exec_time_s"].iloc[1] == pytest.approx(10 * out["exec_time_s"].iloc[0],
                                                       rel=1e-6)
    assert out["in_domain"].tolist() == [True, False]
    assert out["gpu_util_peak"].isna().all() and out["cpu_util_peak"].notna().all()
