"""Emulated runs folders go through the real labeler and dataset builder unchanged."""

from __future__ import annotations

import pandas as pd

from gpuscope.cli import main
from gpuscope.cluster.devices import get_device
from gpuscope.emulator import CostCache, EmulatorParams, emulate_device
from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling import Ledger, build_dataset, label_runs, read_trace
from tests.test_emulator import conv_net


def _jobs() -> list[JobSpec]:
    return [JobSpec("vgg11", "cifar10", opt, b, 2, steps_per_epoch=100)
            for opt in ("sgd", "adam") for b in (8, 64)] + [
        JobSpec("trivial", "cifar10", "sgd", 8, 1, steps_per_epoch=100)]


def test_runs_folder_labels_and_dataset(tmp_path) -> None:
    costs = CostCache(source=lambda j: conv_net(j.batch_size))
    small = get_device("gtx1080")
    out = tmp_path / "gtx1080"
    c = emulate_device(_jobs(), small, out, costs, seed=1, params=EmulatorParams(), progress=False)
    assert sum(c.values()) == 5
    # Resumable: a second call makes no run.
    assert sum(emulate_device(_jobs(), small, out, costs, progress=False).values()) == 0
    with Ledger(out / "ledger.sqlite") as led:
        runs = led.runs()
    assert len(runs) == 5 and set(runs["provenance"]) == {"emulated"}
    df, meta = read_trace(runs["trace_path"].iloc[0])
    assert list(df.columns) == ["t_s", "gpu_util", "gpu_mem_util", "gpu_mem", "cpu_util"]
    assert meta.device_info["emulated"] is True and meta.mem_total_mb == small.mem_mb

    labels = label_runs(out)
    assert len(labels) == 5 and (labels["status"] == "ok").all()
    assert labels["gpu_util_burst_s"].gt(0).all() and labels["gpu_util_idle_s"].gt(0).all()
    assert set(labels["split"]) == {"train", "unseen"}  # trivial is a Table 4 model
    man = build_dataset([out], tmp_path / "ds", graphs=False, progress=False)
    ds = pd.read_parquet(tmp_path / "ds" / "labels.parquet")
    assert len(ds) == 5 and set(ds["provenance"]) == {"emulated"}
    assert man is not None


def test_cli_unknown_device_exit_2(tmp_path, capsys) -> None:
    camp = tmp_path / "c.toml"
    camp.write_text('[campaign]\nname = "x"\n[[matrix]]\nmodels = ["lenet"]\ndatasets = ["mnist"]\n')
    rc = main(["emulate", str(camp), "--devices", "gtx1080,nope", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "unknown device 'nope'" in err[0]
