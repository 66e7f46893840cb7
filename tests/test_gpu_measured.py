"""The real-GPU path: the in-process step timer, the runner on non-image jobs, and the
committed H100 measurements (benchmarks/gpu_session.sh)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd

from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling.steps import COLUMNS, measure_jobs
from gpuscope.workloads import run

ROOT = Path(__file__).resolve().parents[1]


def test_steptimes_measures_and_resumes(tmp_path: Path) -> None:
    jobs = [JobSpec("lenet", "cifar10", "sgd", 2, 1), JobSpec("rnn", "mnist_seq", "adam", 4, 1)]
    out = tmp_path / "steps.csv"
    assert measure_jobs(jobs, out, "cpu", progress=False, target_s=0.05, warmup=1) == 2
    rows = list(csv.DictReader(out.open()))
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert list(rows[0]) == list(COLUMNS)
    assert all(float(r["step_s"]) > 0 and r["provenance"] == "measured" for r in rows)
    assert int(rows[0]["params"]) == 62006  # LeNet-5 on CIFAR-10 (3x32x32, 10 classes)
    # a rerun skips what is there
    assert measure_jobs(jobs, out, "cpu", progress=False, target_s=0.05, warmup=1) == 0


def test_runner_trains_a_sequence_job(tmp_path: Path, capsys: object) -> None:
    """Token/sequence jobs draw batches in the main process (they failed in the image
    pipeline on the H100 before)."""
    job = JobSpec("rnn", "mnist_seq", "adam", 4, 2, steps_per_epoch=3)
    f = tmp_path / "job.json"
    f.write_text(json.dumps(job.to_dict()))
    log = tmp_path / "loss.csv"
    rc = run.main(["--job", str(f), "--device", "cpu", "--workers", "0", "--loss-log", str(log)])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])  # type: ignore[attr-defined]
    assert rc == run.EXIT_OK and out["status"] == "ok" and out["steps"] == 6
    assert len(pd.read_csv(log)) == 6


def test_committed_h100_measurements_are_consistent() -> None:
    steps = pd.read_csv(ROOT / "datasets/measured/h100-steps.csv")
    assert len(steps) == 75 and (steps["status"] == "ok").all()
    assert (steps["provenance"] == "measured").all()
    assert steps["device_name"].str.contains("H100").all()
    assert {"fp32", "tf32", "amp-fp16", "amp-bf16"} <= set(steps["precision"])
    lab = pd.read_parquet(ROOT / "datasets/measured/h100/labels.parquet")
    assert len(lab) == 23 and set(lab["provenance"]) == {"measured"}
    assert set(lab["device"]) == {"h100"} and (lab["status"] == "ok").all()
    # NVML sampled for real: GPU memory peaks are those of a big card, not absent
    assert lab["gpu_mem_peak"].notna().all() and lab["gpu_mem_peak"].max() > 5000
    manifest = json.loads((ROOT / "datasets/measured/h100/manifest.json").read_text())
    assert "H100" in json.dumps(manifest)
