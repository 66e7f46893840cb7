"""Checkpoints, transfer learning, batched prediction and the GBT baseline."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from gpuscope.core.errors import CheckpointError
from gpuscope.core.targets import TARGETS
from gpuscope.jobs.spec import table_jobs
from gpuscope.predictor.base import PREDICTION_COLUMNS, load_predictor
from gpuscope.predictor.gnn.baselines import GBTBaseline, row_features
from gpuscope.predictor.gnn.checkpoint import FORMAT_VERSION, load_checkpoint, save_checkpoint
from gpuscope.predictor.gnn.evaluation import evaluate
from gpuscope.predictor.gnn.model import DriplePredictorNet
from gpuscope.predictor.gnn.predict import GNNPredictor
from gpuscope.predictor.gnn.splits import make_splits
from gpuscope.predictor.gnn.train import TrainConfig, fit_predictor
from gpuscope.testing import synthetic_dataset

FAST = dict(epochs=3, steps=2, hidden=16, progress=False, graph_stats=True)


@pytest.fixture(scope="module")
def data():
    return synthetic_dataset(n_jobs=24, max_nodes=12, unseen=4, mem_limit_mb=3500)


@pytest.fixture(scope="module")
def trained(data):
    return fit_predictor(data, TrainConfig(**FAST))


def _jobs(data):
    return [j for j in table_jobs(3) + table_jobs(4) if j.graph_key in data.graphs]


def test_save_load_gives_identical_predictions(tmp_path, data, trained) -> None:
    path = save_checkpoint(trained.bundle, tmp_path / "m.pt")
    obj = torch.load(path, weights_only=True)  # safe loading works
    assert obj["targets"] == list(TARGETS) and obj["device"] == data.device
    assert obj["dataset_fingerprint"] == data.fingerprint and "vocab" in obj
    jobs = _jobs(data)
    a = GNNPredictor(trained.bundle, graphs=data.graphs).predict(jobs)
    b = load_predictor(path, graphs=data.graphs).predict(jobs)
    assert list(a.columns) == list(PREDICTION_COLUMNS)
    assert isinstance(a, pd.DataFrame) and a.equals(b)
    assert ((b[list(TARGETS)] >= 0).all().all()) and b["oom_prob"].between(0, 1).all()
    half = load_predictor(save_checkpoint(trained.bundle, tmp_path / "h.pt", half=True),
                          graphs=data.graphs).predict(jobs)
    assert np.allclose(half["exec_time_s"], a["exec_time_s"], rtol=0.05)


def test_one_batched_pass_equals_one_job_at_a_time(data, trained) -> None:
    jobs = _jobs(data)[:6]
    many = GNNPredictor(trained.bundle, graphs=data.graphs).predict(jobs)
    single = [GNNPredictor(trained.bundle, graphs=data.graphs).predict([j]) for j in jobs]
    for i, s in enumerate(single):
        assert np.allclose(s[list(TARGETS)].to_numpy(), many[list(TARGETS)].iloc[[i]].to_numpy(),
                           rtol=1e-4, atol=1e-6)


def test_bad_checkpoints_raise_one_clear_error(tmp_path, trained) -> None:
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(junk)
    path = save_checkpoint(trained.bundle, tmp_path / "m.pt")
    obj = torch.load(path, weights_only=True)
    obj["format_version"] = FORMAT_VERSION + 98  # 2 is the physics format
    torch.save(obj, tmp_path / "v.pt")
    with pytest.raises(CheckpointError, match="format version"):
        load_checkpoint(tmp_path / "v.pt")
    with pytest.raises(CheckpointError, match="target set"):
        load_checkpoint(path, targets="driple")
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")
    obj = torch.load(path, weights_only=True)
    del obj["state_dict"]["head.weight"]
    torch.save(obj, tmp_path / "w.pt")
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(tmp_path / "w.pt")


def test_transfer_learning_starts_from_the_source_weights(data, trained) -> None:
    target = synthetic_dataset(n_jobs=24, max_nodes=12, unseen=4, seed=9, speed=2.0,
                               device="fastgpu")
    frozen = fit_predictor(target, TrainConfig(**{**FAST, "epochs": 1, "lr": 0.0}),
                           init_from=trained.bundle)
    for k, v in trained.bundle.net.state_dict().items():
        assert torch.equal(v, frozen.bundle.net.state_dict()[k]), k
    head = fit_predictor(target, TrainConfig(**{**FAST, "epochs": 2, "finetune": "head"}),
                         init_from=trained.bundle)
    src, new = trained.bundle.net.state_dict(), head.bundle.net.state_dict()
    for k in src:
        same = torch.equal(src[k], new[k])
        assert same != k.startswith(DriplePredictorNet.HEAD_PREFIXES), k
    assert head.bundle.train["init_from"] == data.device


def test_transfer_needs_the_same_target_set(data, trained) -> None:
    with pytest.raises(CheckpointError, match="targets"):
        fit_predictor(data, TrainConfig(**{**FAST, "targets": "driple"}),
                      init_from=trained.bundle)


def test_gbt_baseline_beats_the_mean_and_evaluate_table(data, trained) -> None:
    parts = make_splits(data.labels, "random", 0)
    X, Y = row_features(data), data.targets(TARGETS)
    gbt = GBTBaseline(TARGETS, min_samples_leaf=2).fit(X[parts["train"]], Y[parts["train"]])
    pred = gbt.predict(X)
    j = TARGETS.index("exec_time_s")
    tr = parts["train"]
    ok = np.isfinite(Y[tr, j])
    err_gbt = np.mean((pred[tr, j][ok] - Y[tr, j][ok]) ** 2)
    err_mean = np.var(Y[tr, j][ok])
    assert err_gbt < 0.5 * err_mean
    table = evaluate(trained.bundle, data, baseline="gbt")
    assert set(table["model"]) == {"gnn-full", "gbt-full"}
    assert {"train", "val", "test", "unseen"} <= set(table["split"])
    assert {"nmse_gpu_util", "nmse_exec_time", "mape_exec_pct", "r2"} <= set(table.columns)
