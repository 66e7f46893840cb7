"""``gpuscope estimate``: a job or a queue x catalog devices, through the emulator."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from gpuscope.cli import main
from gpuscope.cluster.devices import get_device
from gpuscope.emulator import estimate
from gpuscope.graphs.export import export_graph
from gpuscope.jobs.queue import write_queue
from gpuscope.jobs.spec import JobSpec

JOB = ["--model", "resnet20", "--dataset", "cifar10", "--batch-size", "32", "--epochs", "3"]


def test_csv_matches_the_emulator_api(tmp_path, capsys) -> None:
    assert main(["estimate", *JOB, "--devices", "v100,quadro-p600", "--format", "csv",
                 "--graph-cache", str(tmp_path)]) == 0
    df = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
    assert list(df["device"]) == ["v100", "quadro-p600"]
    job = JobSpec("resnet20", "cifar10", "sgd", 32, 3)
    e = estimate(job, export_graph(job), get_device("v100"))
    row = df.iloc[0]
    assert row["step_s"] == pytest.approx(e.iter_s) and row["fits"]
    assert row["exec_time_s"] == pytest.approx(e.exec_time_s)
    assert row["samples_per_s"] == pytest.approx(32 / e.iter_s)
    assert row["steps"] == 3 * math.ceil(50_000 / 32) and row["provenance"] == "emulated"


def test_table_lists_every_catalog_device_and_marks_oom(tmp_path, capsys) -> None:
    from gpuscope.cluster.devices import load_catalog

    argv = ["estimate", "--model", "resnet50", "--dataset", "imagenet", "--batch-size", "64",
            "--devices", "all", "--graph-cache", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name in load_catalog():
        assert any(line.startswith(name + " ") for line in lines), name
    # ResNet-50 at batch 64 needs ~10 GB: the 2 GB Quadro P600 cannot hold it
    assert any(line.startswith("quadro-p600") and " OOM " in line for line in lines)
    assert "emulated" in lines[-1]


def test_queue_json_and_output_file(tmp_path, capsys) -> None:
    q = write_queue([JobSpec("lenet", "cifar10", "sgd", 16, 1),
                     JobSpec("lenet", "cifar10", "adamw", 16, 2, grad_accum=2)],
                    tmp_path / "q.csv")
    out = tmp_path / "est.json"
    assert main(["estimate", "--jobs", str(q), "--devices", "a100,h100", "--format", "json",
                 "-o", str(out), "--graph-cache", str(tmp_path)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["job_id"], r["device"]) for r in rows] == [
        ("j000", "a100"), ("j000", "h100"), ("j001", "a100"), ("j001", "h100")]
    assert json.loads(out.read_text()) == rows
    # grad_accum 2: 32 samples per optimizer step
    assert rows[2]["samples_per_s"] == pytest.approx(32 / rows[2]["step_s"])


def test_module_job(tmp_path, capsys) -> None:
    f = tmp_path / "net.py"
    f.write_text("from torch import nn\n\ndef build():\n    return nn.Sequential(nn.Flatten(), "
                 "nn.Linear(3 * 32 * 32, 10))\n")
    assert main(["estimate", "--module", f"{f}:build", "--dataset", "cifar10", "--batch-size",
                 "8", "--optimizer", "adamw", "--precision", "amp-bf16", "--devices", "t4",
                 "--graph-cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "net.build (module)" in out and "\nt4 " in out


@pytest.mark.parametrize("argv, needle", [
    (JOB + ["--devices", "v100,nope"], "unknown device 'nope'"),
    (["--devices", "v100"], "needs a model"),
    (["--jobs", "q.csv", "--model", "lenet", "--devices", "v100"], "not both"),
    (JOB + ["--devices", "v100", "--precision", "fp8"], "unknown precision"),
    (JOB + ["--devices", "v100", "--input-shape", "3x32x32"], "not both"),
])
def test_bad_input_one_line(argv: list[str], needle: str, capsys) -> None:
    capsys.readouterr()
    assert main(["estimate", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err


def test_graph_file_carries_its_job(tmp_path, capsys) -> None:
    """``estimate --graph`` uses the batch size, optimizer and precision ``graph export``
    recorded (not batch 1 / sgd), says so, and the options still override them."""
    g = tmp_path / "g.json"
    assert main(["graph", "export", "--model", "resnet20", "--dataset", "cifar10",
                 "--optimizer", "adam", "--batch-size", "64", "-o", str(g)]) == 0
    capsys.readouterr()
    assert main(["estimate", "--graph", str(g), "--devices", "v100", "--format", "csv"]) == 0
    out = capsys.readouterr()
    row = pd.read_csv(pd.io.common.StringIO(out.out)).iloc[0]
    assert "batch_size 64" in out.err and "optimizer adam" in out.err
    job = JobSpec("resnet20", "cifar10", "adam", 64, 1)
    e = estimate(job, export_graph(job), get_device("v100"))
    assert row["steps"] == math.ceil(50_000 / 64) and row["model"] == "resnet20"
    assert row["exec_time_s"] == pytest.approx(e.exec_time_s)
    # an option given wins and is not listed as taken from the graph
    assert main(["estimate", "--graph", str(g), "--devices", "v100", "--format", "csv",
                 "--batch-size", "16", "--optimizer", "sgd"]) == 0
    out = capsys.readouterr()
    assert pd.read_csv(pd.io.common.StringIO(out.out)).iloc[0]["steps"] == 50_000 // 16
    assert "batch_size" not in out.err and "optimizer" not in out.err
