"""Honest provenance of a measured run: what NVML reports is recorded in every run, a device
name NVML contradicts is refused (or kept with --device-name-override, on the record), and a
CPU-only campaign says so in its dataset manifest (the README test follows it through the
checkpoint and the predictions)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuscope.cli import main
from gpuscope.cluster.devices import DEFAULT_CATALOG, load_catalog
from gpuscope.cluster.nvml import gpu_identity, name_conflict
from gpuscope.core.provenance import device_kind, folder_device_kind

MB = 2**20
CAMPAIGN = """[campaign]
timeout_s = 30
period_s = 0.05
[[matrix]]
models = ["lenet"]
datasets = ["cifar10"]
optimizers = ["sgd"]
batch_sizes = [8]
epochs = [1]
steps_per_epoch = 1
"""


class NoGpu:
    class NVMLError(Exception):
        pass

    def nvmlInit(self) -> None:
        raise self.NVMLError("NVML Shared Library Not Found")


class OneGpu:
    """An NVML that sees one GPU of this name and memory."""

    def __init__(self, name: str, mib: int) -> None:
        self.name, self.mib = name, mib

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int: return 1
    def nvmlDeviceGetHandleByIndex(self, i: int) -> str: return "h"
    def nvmlDeviceGetName(self, h: str) -> str: return self.name
    def nvmlSystemGetDriverVersion(self) -> str: return "550.54"
    def nvmlDeviceGetUUID(self, h: str) -> str: return "GPU-42"
    def nvmlDeviceGetUtilizationRates(self, h: str) -> SimpleNamespace:
        return SimpleNamespace(gpu=50, memory=20)
    def nvmlDeviceGetMemoryInfo(self, h: str) -> SimpleNamespace:
        return SimpleNamespace(total=self.mib * MB, used=1000 * MB, free=0)


H100 = ("NVIDIA H100 80GB HBM3", 81559)


@pytest.mark.parametrize("name, gpu, conflict", [
    ("a100", None, "NVML sees no GPU"),
    ("my-gpu", None, None),                   # the user's own label: recorded CPU-only
    ("a100", H100, "NVML reports NVIDIA H100 80GB HBM3 with 79.6 GB"),
    ("h100", H100, None),
    ("a10", ("NVIDIA A100-SXM4-40GB", 40960), "24 GB in the catalog"),
    ("a100", ("NVIDIA A100-SXM4-40GB", 40960), None),
    ("a100-pcie-80gb", ("NVIDIA A100 80GB PCIe", 81920), None),
    ("v100", ("Tesla T4", 15360), "not the GPU NVML reports"),  # same 16 GB, other model
    ("my-lab-gpu", H100, None),
])
def test_name_conflict(name, gpu, conflict) -> None:
    ident = gpu_identity(OneGpu(*gpu) if gpu else NoGpu())
    assert ident["kind"] == ("gpu" if gpu else "none")
    why = name_conflict(name, ident, load_catalog(DEFAULT_CATALOG), load_catalog())
    assert (why is None) if conflict is None else (conflict in str(why)), why


def _run(tmp_path: Path, name: str, *extra: str) -> int:
    camp = tmp_path / "c.toml"
    camp.write_text(CAMPAIGN)
    return main(["profile", "run", str(camp), "--device-name", name, "--out",
                 str(tmp_path / "runs"), "--quiet", "--command", f"{sys.executable} -c pass",
                 *extra])


def test_contradicted_name_is_refused_before_any_run(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", NoGpu())
    assert _run(tmp_path, "a100") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "NVML sees no GPU" in err[0] and "--device-name-override" in err[0]
    assert not (tmp_path / "runs").exists()
    monkeypatch.setitem(sys.modules, "pynvml", OneGpu(*H100))
    assert _run(tmp_path, "a100") == 2
    assert "79.6 GB" in capsys.readouterr().err


def test_override_is_recorded_and_cpu_only_is_said(tmp_path, monkeypatch, capsys) -> None:
    from gpuscope.profiling.ledger import Ledger

    monkeypatch.setitem(sys.modules, "pynvml", NoGpu())
    assert _run(tmp_path, "a100", "--device-name-override", "--no-nvml") == 0
    err = capsys.readouterr().err
    assert "kept (--device-name-override" in err and "CPU-only" in err
    with Ledger(tmp_path / "runs" / "ledger.sqlite") as ledger:
        meta = json.loads(ledger.runs()["meta_json"].iloc[0])
    info = meta["device_info"]
    assert info["kind"] == "cpu" and info["gpu"].startswith("none (NVML unavailable")
    assert "NVML sees no GPU" in info["name_override"]


def test_gpu_identity_recorded_with_uuid(tmp_path, monkeypatch) -> None:
    from gpuscope.profiling.ledger import Ledger

    monkeypatch.setitem(sys.modules, "pynvml", OneGpu(*H100))
    assert _run(tmp_path, "h100") == 0
    with Ledger(tmp_path / "runs" / "ledger.sqlite") as ledger:
        info = json.loads(ledger.runs()["meta_json"].iloc[0])["device_info"]
    assert (info["kind"], info["name"], info["uuid"]) == ("gpu", H100[0], "GPU-42")


def test_device_kind_of_runs_and_folders(tmp_path: Path) -> None:
    gpu, cpu = {"kind": "gpu", "name": "x"}, {"kind": "cpu", "gpu": "none (...)"}
    assert device_kind([gpu, gpu]) == "gpu" and device_kind([cpu]) == "cpu-only"
    assert device_kind([gpu, cpu]) == "mixed" and device_kind([cpu], "emulated") == "emulated"
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "manifest.json").write_text(json.dumps({"device_kind": "cpu-only"}))
    (tmp_path / "old").mkdir()  # a manifest from before device_kind: its hardware says
    (tmp_path / "old" / "manifest.json").write_text(json.dumps(
        {"provenance": "measured", "hardware": {"kind": "cpu", "cpu_model": "AMD EPYC"}}))
    assert folder_device_kind(tmp_path / "new") == "cpu-only"
    assert folder_device_kind(tmp_path / "old") == "cpu-only"
    assert folder_device_kind(tmp_path) is None
