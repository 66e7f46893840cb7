"""Datasets: the committed measured CPU dataset, rebuilding from its traces, provenance rules,
and the label/plot commands (design.md, Datasets and Labels)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuscope.cli import main as profile_main
from gpuscope.core.errors import InputError
from gpuscope.core.targets import GPU_RESOURCES
from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling import (
    LABEL_COLUMNS,
    Ledger,
    TraceMeta,
    build_dataset,
    label_runs,
    read_trace,
    write_trace,
)

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "datasets" / "measured" / "amd-epyc"


def test_committed_measured_dataset_is_complete() -> None:
    labels = pd.read_parquet(MEASURED / "labels.parquet")
    assert list(labels.columns) == list(LABEL_COLUMNS)
    assert len(labels) >= 60 and labels["run_id"].is_unique
    assert set(labels["provenance"]) == {"measured"} and set(labels["device"]) == {"amd-epyc"}
    assert set(labels["split"]) == {"train", "unseen"}
    ok = labels[labels["status"] == "ok"]
    assert len(ok) >= 60
    # No GPU on this machine: GPU targets absent (NaN), never zeros; CPU targets measured.
    gpu_targets = [f"{r}_{s}" for r in GPU_RESOURCES for s in ("burst_s", "idle_s", "peak")]
    assert labels[gpu_targets].isna().all().all()
    assert ok[["cpu_util_burst_s", "cpu_util_idle_s", "exec_time_s"]].notna().all().all()
    assert (ok["exec_time_s"] > 0).all()
    manifest = json.loads((MEASURED / "manifest.json").read_text())
    assert manifest["provenance"] == "measured" and manifest["rows"] == len(labels)
    assert manifest["counts_by_status"] == labels["status"].value_counts().to_dict()
    assert manifest["hardware"]["kind"] == "cpu" and manifest["hardware"]["cpu_model"]
    assert any("shared" in n for n in manifest["notes"])
    assert "proc_cpu_util" in manifest["mean_utilisation_pct"]
    from gpuscope.graphs import OpVocabulary, load_encoded

    graphs = load_encoded(MEASURED / "graphs.parquet")
    assert set(graphs) == set(labels["graph_key"]) - set(manifest["graph_errors"])
    assert len(OpVocabulary.load(MEASURED / "vocab.json")) > 0
    assert (MEASURED / "MANIFEST.md").read_text().startswith("# Dataset: amd-epyc (measured)")


def test_labels_recomputed_from_committed_traces() -> None:
    committed = pd.read_parquet(MEASURED / "labels.parquet").set_index("run_id").sort_index()
    assert (MEASURED / "traces").is_dir(), "the committed measured dataset ships its raw traces"
    again = label_runs(MEASURED).set_index("run_id").sort_index()
    committed = committed.loc[again.index]
    pd.testing.assert_frame_equal(again, committed, check_dtype=False)


def test_build_dataset_from_committed_traces(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "traces").mkdir(parents=True)
    picked = sorted((MEASURED / "traces").glob("lenet-*.parquet"))[:2] + sorted(
        (MEASURED / "traces").glob("cvae-*.parquet"))[:1]
    assert len(picked) == 3
    with Ledger(runs / "ledger.sqlite") as led:
        for p in picked:
            shutil.copy2(p, runs / "traces" / p.name)
            led.record(read_trace(p)[1], runs / "traces" / p.name)
    out = tmp_path / "ds"
    m = build_dataset([runs], out, notes=["test"], progress=False, cache_dir=tmp_path / "cache")
    labels = pd.read_parquet(out / "labels.parquet")
    assert len(labels) == 3 and m["rows"] == 3 and m["provenance"] == "measured"
    from gpuscope.graphs import load_encoded

    graphs = load_encoded(out / "graphs.parquet")
    assert set(graphs) == set(labels["graph_key"]) and m["graphs"] == len(graphs)
    for d in graphs.values():
        assert d.x.shape[1] == 3 and d.x.shape[0] <= 100
    assert json.loads((out / "vocab.json").read_text())["total"] > 0
    assert m["raw_traces"] == "all" and len(list((out / "traces").glob("*.parquet"))) == 3


def _emulated_runs(d: Path) -> Path:
    job = JobSpec("lenet", "cifar10", "sgd", 8, 1, steps_per_epoch=3)
    meta = TraceMeta(run_id=job.key, job=job.to_dict(), device="amd-epyc", status="ok",
                     exec_time_s=2.0, provenance="emulated", mem_total_mb=8192.0)
    n = 30
    df = pd.DataFrame({"t_s": np.arange(n) / 6, "gpu_util": np.r_[np.zeros(10), np.full(20, 97.0)],
                       "gpu_mem_util": np.full(n, 40.0), "gpu_mem": np.full(n, 7500.0),
                       "cpu_util": np.full(n, 30.0)})
    p = write_trace(d / "traces" / f"{job.key}.parquet", df, meta)
    with Ledger(d / "ledger.sqlite") as led:
        led.record(meta, p)
    return d


def test_emulated_runs_build_and_never_mix(tmp_path: Path) -> None:
    emu = _emulated_runs(tmp_path / "emu")
    m = build_dataset([emu], tmp_path / "ds", progress=False, graphs=False)
    assert m["provenance"] == "emulated"
    row = pd.read_parquet(tmp_path / "ds" / "labels.parquet").iloc[0]
    assert row["gpu_util_peak"] == 97.0 and row["gpu_util_burst_s"] == pytest.approx(20 / 6)
    assert row["gpu_mem_peak"] == 7500.0  # > 90 % of the 8192 MB device
    assert "simulated" in (tmp_path / "ds" / "MANIFEST.md").read_text()
    with pytest.raises(InputError, match="mix measured and emulated"):
        build_dataset([MEASURED, emu], tmp_path / "ds2", progress=False, graphs=False)


def test_label_and_plot_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    emu = _emulated_runs(tmp_path / "emu")
    assert profile_main(["profile", "label", str(emu), "-o", str(tmp_path / "l.csv")]) == 0
    df = pd.read_csv(tmp_path / "l.csv")
    assert len(df) == 1 and math.isclose(df["cpu_util_peak"][0], 30.0)  # steady 30 %
    trace = next((MEASURED / "traces").glob("resnet20-*.parquet"))
    png = tmp_path / "fig.png"
    assert profile_main(["profile", "plot", trace.stem, "--runs", str(MEASURED), "-o", str(png)]) == 0
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    assert profile_main(["profile", "plot", "nope", "--runs", str(MEASURED), "-o", str(png)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert profile_main(["profile", "label", str(tmp_path), "-o", str(tmp_path / "x.parquet")]) == 2
