"""``gpuscope train | evaluate | predict`` on a dataset folder in the contract's format."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from gpuscope.cli import main
from gpuscope.core.targets import DRIPLE_TARGETS, TARGETS
from gpuscope.graphs import save_encoded
from gpuscope.jobs.queue import write_queue
from gpuscope.jobs.spec import table_jobs
from gpuscope.predictor.base import PREDICTION_COLUMNS
from gpuscope.predictor.gnn.data import load_dataset
from gpuscope.testing import synthetic_dataset

TRAIN = ["--arch", "gnn", "--epochs", "2", "--steps", "2", "--hidden", "16", "--quiet"]


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    d = synthetic_dataset(n_jobs=20, max_nodes=10, unseen=4, mem_limit_mb=3500)
    root = tmp_path_factory.mktemp("ds") / "emulated" / "synthgpu"
    root.mkdir(parents=True)
    d.labels.to_parquet(root / "labels.parquet")
    save_encoded(root / "graphs.parquet", d.graphs)
    (root / "vocab.json").write_text(json.dumps({"format": "gpuscope.opvocab/1", "key": "op",
                                                 "n_graphs": 1, "total": 1, "counts": {"a": 1}}))
    (root / "manifest.json").write_text(json.dumps({"provenance": "emulated",
                                                    "encoding": {"k": 100}}))
    return root


def test_dataset_folder_loads_with_contexts(dataset_dir) -> None:
    d = load_dataset(dataset_dir)
    assert d.device == "synthgpu" and d.provenance == "emulated"
    assert d.contexts.shape == (len(d), 9) and d.encoding["features"] == "driple"


def test_train_evaluate_predict(tmp_path, dataset_dir, capsys) -> None:
    model = tmp_path / "m.pt"
    assert main(["train", "--dataset", str(dataset_dir), "-o", str(model), *TRAIN,
                 "--graph-stats"]) == 0
    assert "best val MSE" in capsys.readouterr().out
    assert main(["evaluate", "--dataset", str(dataset_dir), "--model", str(model),
                 "--baseline", "gbt"]) == 0
    out = capsys.readouterr().out
    assert "gnn-full" in out and "gbt-full" in out and "exec_MAPE%" in out
    keys = set(pd.read_parquet(dataset_dir / "labels.parquet")["graph_key"])
    jobs = [j for j in table_jobs(3) + table_jobs(4) if j.graph_key in keys][:5]
    queue = write_queue(jobs, tmp_path / "q.csv")
    pred = tmp_path / "pred.csv"
    assert main(["predict", "--model", str(model), "--jobs", str(queue), "-o", str(pred),
                 "--graphs", str(dataset_dir)]) == 0
    df = pd.read_csv(pred)
    assert list(df.columns) == [*PREDICTION_COLUMNS, "device_kind"] and len(df) == 5 \
        and set(df["device_kind"]) == {"emulated"}
    # transfer learning from the checkpoint, head only
    tl = tmp_path / "tl.pt"
    assert main(["train", "--dataset", str(dataset_dir), "-o", str(tl), *TRAIN,
                 "--init-from", str(model), "--finetune", "head"]) == 0
    assert torch.load(tl, weights_only=True)["train"]["init_from"] == "synthgpu"


def test_bad_checkpoint_is_one_line_and_exit_2(tmp_path, dataset_dir, capsys) -> None:
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"\x00garbage")
    queue = write_queue(table_jobs(3)[:1], tmp_path / "q.csv")
    rc = main(["predict", "--model", str(bad), "--jobs", str(queue), "-o",
               str(tmp_path / "p.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("gpuscope: error: checkpoint") and err.count("\n") == 1
    driple = tmp_path / "d.pt"
    assert main(["train", "--dataset", str(dataset_dir), "-o", str(driple), *TRAIN,
                 "--targets", "driple"]) == 0
    assert torch.load(driple, weights_only=True)["targets"] == list(DRIPLE_TARGETS)
    capsys.readouterr()
    rc = main(["train", "--dataset", str(dataset_dir), "-o", str(tmp_path / "x.pt"), *TRAIN,
               "--init-from", str(driple)])
    err = capsys.readouterr().err
    assert rc == 2 and "target set" in err and err.count("\n") == 1


def test_bad_options_exit_2(tmp_path, dataset_dir, capsys) -> None:
    for extra in (["--split", "nope"], ["--targets", "nope"], ["--fraction", "1.5"],
                  ["--finetune", "head"], ["--steps", "0"], ["--steps", "half"],
                  ["--exec-per-step"], ["--bounded-peaks"]):
        rc = main(["train", "--dataset", str(dataset_dir), "-o", str(tmp_path / "m.pt"),
                   *TRAIN, *extra])
        assert rc == 2, extra
    assert main(["train", "--dataset", str(tmp_path / "none"), "-o", str(tmp_path / "m.pt")]) == 2
    assert "missing" in capsys.readouterr().err


def test_default_recipe_and_paper_literal_switches(tmp_path, dataset_dir) -> None:
    fast = ["--arch", "gnn", "--epochs", "1", "--hidden", "16", "--quiet"]
    dflt, lit = tmp_path / "d.pt", tmp_path / "lit.pt"
    assert main(["train", "--dataset", str(dataset_dir), "-o", str(dflt), *fast]) == 0
    assert main(["train", "--dataset", str(dataset_dir), "-o", str(lit), *fast,
                 "--no-graph-stats", "--no-log-exec"]) == 0
    d, p = (torch.load(f, weights_only=True) for f in (dflt, lit))
    j = TARGETS.index("exec_time_s")
    # defaults: L = 8 fixed, whole-graph statistics in the MLP, log-space execution time
    assert d["config"]["steps"] == 8 and d["config"]["graph_dim"] > 0 and d["labels"]["log"][j]
    # the seed's inputs and labels: [r ‖ u] only, plain min-max labels
    assert p["config"]["graph_dim"] == 0
    assert not any(p["labels"]["log"])
