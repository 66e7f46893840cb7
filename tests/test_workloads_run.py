"""The CPU input pipeline, the run entry point (JSON line, loss log, exit codes) and the CLI."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gpuscope.cli import main as gpuscope_main
from gpuscope.workloads import run
from gpuscope.workloads.data import (
    PipelineSpec,
    SyntheticImageDataset,
    _dct_matrix,
    blocks_to_image,
    epoch_batches,
    make_loader,
)


def test_dct_matrix_is_orthonormal_and_matches_the_definition() -> None:
    d = _dct_matrix()
    np.testing.assert_allclose(d @ d.T, np.eye(8), atol=1e-6)
    # DCT-II row k, column i: c_k cos(pi (2i+1) k / 16), c_0 = sqrt(1/8), c_k = sqrt(2/8).
    assert d[0, 3] == pytest.approx(np.sqrt(1 / 8))
    assert d[2, 1] == pytest.approx(0.5 * np.cos(np.pi * 3 * 2 / 16))


def test_inverse_dct_of_a_dc_block_is_flat() -> None:
    coef = np.zeros((1, 1, 1, 8, 8), dtype=np.float32)
    coef[..., 0, 0] = 80.0  # orthonormal 2-D IDCT: a DC of 80 is 80/8 = 10 in every pixel
    img = blocks_to_image(coef, 8)
    assert img.shape == (8, 8, 1) and np.all(img == 138)


@pytest.mark.parametrize(
    "dataset,target,shape",
    [("imagenet", "classifier", (3, 224, 224)), ("cifar10", "classifier", (3, 32, 32)),
     ("mnist", "gan", (1, 28, 28)), ("mnist", "vae", (1, 28, 28))],
)
def test_samples_have_real_shapes_and_ranges(dataset: str, target: str, shape: tuple) -> None:
    ds = SyntheticImageDataset(PipelineSpec(dataset, target), seed=1)
    x, y = ds[123]
    assert x.shape == shape and x.dtype == torch.float32 and isinstance(y, int)
    assert len(ds) == {"imagenet": 1_281_167, "cifar10": 50_000, "mnist": 60_000}[dataset]
    if target == "gan":
        assert -1 <= float(x.min()) and float(x.max()) <= 1
    elif target == "vae":
        assert 0 <= float(x.min()) and float(x.max()) <= 1
    else:  # normalised: roughly zero-centred, not constant
        assert abs(float(x.mean())) < 1.5 and float(x.std()) > 0.1


def test_samples_are_deterministic_and_augmentation_changes_per_epoch() -> None:
    spec = PipelineSpec("cifar10")
    a = SyntheticImageDataset(spec, seed=2, epoch=0)
    x0, y0 = a[7]
    x1, y1 = SyntheticImageDataset(spec, seed=2, epoch=0)[7]
    assert torch.equal(x0, x1) and y0 == y1
    labels, changed = set(), 0
    for e in range(1, 6):
        xe, ye = SyntheticImageDataset(spec, seed=2, epoch=e)[7]
        labels.add(ye)
        changed += not torch.equal(xe, x0)
    assert labels == {y0} and changed >= 3  # same image content, new crop/flip most epochs
    assert not torch.equal(SyntheticImageDataset(spec, seed=3)[7][0], x0)


def test_loader_with_workers_and_epoch_batches() -> None:
    loader = make_loader(PipelineSpec("cifar10"), batch_size=4, num_workers=2, seed=0)
    x, y = next(iter(loader))
    assert x.shape == (4, 3, 32, 32) and y.shape == (4,) and y.dtype == torch.long
    # More steps than one epoch holds: the pipeline reshuffles and keeps going.
    spec = PipelineSpec("mnist", "gan", size=5)
    batches = list(epoch_batches(spec, batch_size=2, steps=4, num_workers=0))
    assert [b[0].shape[0] for b in batches] == [2, 2, 1, 2]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)  # small CPU steps on a loaded shared machine: avoid spinning
    yield
    torch.set_num_threads(n)


def _job(tmp_path: Path, **kw) -> Path:
    d = {"model": "resnet20", "dataset": "cifar10", "optimizer": "sgd", "batch_size": 4,
         "epochs": 1, "steps_per_epoch": 2, **kw}
    p = tmp_path / "job.json"
    p.write_text(json.dumps(d))
    return p


def test_run_entry_point_tiny_job(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    log = tmp_path / "loss.csv"
    rc = run.main(["--job", str(_job(tmp_path, epochs=2)), "--loss-log", str(log),
                   "--device", "cpu", "--workers", "1"])
    out = capsys.readouterr().out.strip().splitlines()
    assert rc == run.EXIT_OK == 0 and len(out) == 1
    res = json.loads(out[0])
    assert res["status"] == "ok" and res["steps"] == 4 and res["device"] == "cpu"
    assert res["error"] is None and res["exec_time_s"] >= res["train_time_s"] > 0
    rows = list(csv.DictReader(log.open()))
    assert [r["step"] for r in rows] == ["1", "2", "3", "4"]
    assert [r["epoch"] for r in rows] == ["0", "0", "1", "1"]
    assert all(np.isfinite(float(r["loss"])) for r in rows)
    assert float(rows[-1]["t_s"]) >= float(rows[0]["t_s"]) > 0


@pytest.mark.parametrize(
    "content,match",
    [('{"model": "resnet20", "dataset": "mnist", "optimizer": "sgd", "batch_size": 4, '
      '"epochs": 1}', "defined for"),
     ("{not json", "not valid JSON"),
     ('{"model": "resnet20", "dataset": "cifar10", "optimizer": "sgd", "batch_size": 0, '
      '"epochs": 1}', "batch_size")],
)
def test_invalid_job_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture, content: str,
                             match: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(content)
    rc = run.main(["--job", str(p)])
    res = json.loads(capsys.readouterr().out)
    assert rc == run.EXIT_INPUT == 2 and res["status"] == "error" and match in res["error"]


def test_missing_job_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert run.main(["--job", str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in json.loads(capsys.readouterr().out)["error"]


def test_out_of_memory_exits_3(tmp_path: Path) -> None:
    # resnet20 at batch 2048 needs 128 MiB for each 16x32x32 activation and ~40 of them
    # (GBs); 256 MB of headroom holds the 1 MB of weights but not the forward pass.
    job = _job(tmp_path, batch_size=2048, steps_per_epoch=1)
    proc = subprocess.run(
        [sys.executable, "-m", "gpuscope.workloads.run", "--job", str(job), "--device", "cpu",
         "--workers", "0", "--memory-limit-mb", "256"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == run.EXIT_OOM == 3, proc.stderr[-2000:]
    assert res["status"] == "oom" and res["steps"] == 0


def test_is_oom_classification() -> None:
    assert run.is_oom(MemoryError())
    assert run.is_oom(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert run.is_oom(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried"))
    assert not run.is_oom(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    assert not run.is_oom(ValueError("out of memory"))  # only allocator errors count


def test_cli_workloads_list(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuscope.workloads.cli as wcli

    built = wcli.catalog_rows()  # builds every catalog model once (seconds)
    monkeypatch.setattr(wcli, "catalog_rows", lambda: built)
    assert gpuscope_main(["workloads", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    from gpuscope.jobs.spec import MODEL_DATASETS

    # 15 CNNs x 2 datasets + 4 generative models on MNIST + 9 transformers, + later additions
    assert len(rows) == sum(map(len, MODEL_DATASETS.values())) >= 34 + 9
    by = {(r["model"], r["dataset"]): r["params"] for r in rows}
    assert by[("resnet50", "imagenet")] == 25_557_032 and by[("lenet", "cifar10")] == 62_006
    assert gpuscope_main(["workloads", "list"]) == 0
    assert "vgg16" in capsys.readouterr().out
