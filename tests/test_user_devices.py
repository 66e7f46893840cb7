"""A GPU the catalog lacks: ``gpuscope devices add`` (by --like scaling, --spec, NVML), a
hand-written user catalog, ``--catalog`` on every command that takes device names, and the
allocator's fallback to the multi-device checkpoint."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuscope.cli import build_parser, main
from gpuscope.cluster.devices import get_device, load_catalog
from gpuscope.core.errors import InputError

MB = 2**20


class FakeA100Nvml:
    """The NVML calls ``devices add --from-nvml`` makes, answering as an A100 SXM4 40GB."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int: return 1
    def nvmlDeviceGetHandleByIndex(self, i: int) -> str: return "h"
    def nvmlDeviceGetName(self, h: str) -> bytes: return b"NVIDIA A100-SXM4-40GB"
    def nvmlSystemGetDriverVersion(self) -> str: return "550.54"
    def nvmlDeviceGetUUID(self, h: str) -> str: return "GPU-1234"
    def nvmlDeviceGetMemoryInfo(self, h: str) -> SimpleNamespace:
        return SimpleNamespace(total=40960 * MB, used=0, free=40960 * MB)
    def nvmlDeviceGetCudaComputeCapability(self, h: str) -> tuple[int, int]: return (8, 0)
    def nvmlDeviceGetNumGpuCores(self, h: str) -> int: return 6912
    def nvmlDeviceGetMaxClockInfo(self, h: str, kind: int) -> int:
        return 1410 if kind == self.NVML_CLOCK_SM else 1215
    def nvmlDeviceGetMemoryBusWidth(self, h: str) -> int: return 5120
    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: str) -> int: return 4
    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: str) -> int: return 400_000


@pytest.fixture()
def user_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    p = tmp_path / "config" / "gpuscope" / "devices.toml"
    monkeypatch.setenv("GPUSCOPE_USER_DEVICES", str(p))
    return p


def test_add_like_scales_peaks_and_bandwidth_by_sms(user_catalog: Path, capsys) -> None:
    assert main(["devices", "add", "my-gpu", "--like", "a100",
                 "--spec", "mem_gb=48,sm_count=84"]) == 0
    d = get_device("my-gpu")
    # the A100 has 108 SMs; the new GPU gives no clock: scaled by 84/108 alone
    assert d.fp32_tflops == pytest.approx(19.5 * 84 / 108, abs=1e-3)
    assert d.tensor_tflops == pytest.approx(312 * 84 / 108, abs=1e-3)
    assert d.tf32_tflops == pytest.approx(156 * 84 / 108, abs=1e-3)
    assert d.mem_bw_gbs == pytest.approx(1555 * 84 / 108, abs=1e-3)
    assert (d.mem_gb, d.sm_count, d.arch, d.host_era) == (48.0, 84, "ampere", "modern")
    assert d.sources["mem_gb"].startswith("given") and "scaled" in d.sources["fp32_tflops"]
    err = capsys.readouterr().err
    assert "fp32_tflops" in err and "--spec" in err
    # the bundled catalog file is untouched; the user's holds the entry
    assert "my-gpu" not in load_catalog(Path(__file__).parents[1] / "datasets" / "devices.toml")
    assert "[devices.my-gpu]" in user_catalog.read_text()
    # listed as the user's
    assert main(["devices", "list"]) == 0
    assert any(line.startswith("my-gpu") and "user" in line
               for line in capsys.readouterr().out.splitlines())


def test_add_scales_by_sm_count_times_clock(user_catalog: Path) -> None:
    # the T4 gives a 1590 MHz boost clock: half the SMs at half the clock is a quarter
    assert main(["devices", "add", "small-t4", "--like", "t4",
                 "--spec", "sm_count=20,boost_clock_mhz=795"]) == 0
    assert get_device("small-t4").fp32_tflops == pytest.approx(8.1 / 4, abs=1e-3)
    assert get_device("small-t4").mem_bw_gbs == pytest.approx(320 / 4, abs=1e-3)


@pytest.mark.parametrize("argv, msg", [
    (["devices", "add", "a100", "--like", "t4"], "bundled GPU type"),
    (["devices", "add", "x1", "--spec", "mem_gb=3"], "give --like"),
    (["devices", "add", "x1", "--like", "nosuch"], "not in the catalog"),
    (["devices", "add", "x1", "--like", "t4", "--spec", "mem_gb"], "KEY=VALUE"),
    (["devices", "add", "x1", "--like", "t4", "--spec", "sm_count=many"], "not a number"),
    (["devices", "add", "Bad Name", "--like", "t4"], "lower-case"),
    (["devices", "add", "x1", "--like", "t4", "--spec", "arch=blackwell"], "unknown arch"),
])
def test_add_bad_input_is_one_line(argv, msg, user_catalog: Path, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0], err
    assert not user_catalog.exists()


def test_add_twice_needs_force(user_catalog: Path, capsys) -> None:
    assert main(["devices", "add", "g1", "--like", "t4"]) == 0
    assert main(["devices", "add", "g1", "--like", "v100"]) == 2
    assert main(["devices", "add", "g1", "--like", "v100", "--force"]) == 0
    assert get_device("g1").arch == "volta"


def test_add_from_nvml_reads_the_gpu(user_catalog: Path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeA100Nvml())
    assert main(["devices", "add", "lab-a100", "--from-nvml", "--like", "a100"]) == 0
    d = get_device("lab-a100")
    # NVML: 6912 cores / 64 per SM (compute capability 8.0); 6912 x 2 x 1410 MHz;
    # 2 x 1215 MHz x 5120 bits / 8; 40960 MiB
    assert (d.arch, d.sm_count, d.mem_gb, d.pcie_gen, d.power_w) == ("ampere", 108, 40.0, 4, 400.0)
    assert d.fp32_tflops == pytest.approx(19.49, abs=0.01)
    assert d.mem_bw_gbs == pytest.approx(1555.2, abs=0.1)
    assert d.boost_clock_mhz == 1410.0
    # NVML cannot say the tensor peaks: the A100's, at the same SMs and clock (108, 1410 MHz)
    assert d.tensor_tflops == pytest.approx(312.0) and "like a100" in d.sources["tensor_tflops"]
    assert "NVIDIA A100-SXM4-40GB" in d.sources["sm_count"]


def test_hand_written_entry_with_like_and_catalog_option(tmp_path: Path, capsys) -> None:
    cat = tmp_path / "mine.toml"
    cat.write_text('[devices.rig-3090]\nlike = "a10"\nmem_gb = 24\nsm_count = 82\n'
                   'fp32_tflops = 35.6\n')
    with pytest.raises(InputError, match="unknown device 'rig-3090'"):
        get_device("rig-3090")
    d = load_catalog(cat)["rig-3090"]
    assert d.fp32_tflops == 35.6 and d.tensor_tflops == pytest.approx(125 * 82 / 72, abs=1e-3)
    # estimate accepts --catalog, and the GPU is then known to it
    assert main(["estimate", "--model", "lenet", "--dataset", "cifar10", "--batch-size", "8",
                 "--devices", "rig-3090", "--catalog", str(cat), "--format", "csv"]) == 0
    assert "rig-3090" in capsys.readouterr().out
    bad = tmp_path / "clash.toml"
    bad.write_text('[devices.a100]\nlike = "t4"\n')
    assert main(["estimate", "--model", "lenet", "--dataset", "cifar10", "--batch-size", "8",
                 "--devices", "a100", "--catalog", str(bad)]) == 2
    assert "also in the bundled catalog" in capsys.readouterr().err


def _leaves(p: argparse.ArgumentParser, name: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for n, sp in a.choices.items():
                out += _leaves(sp, f"{name} {n}".strip())
    return out or [(name, p)]


def test_every_command_taking_device_names_accepts_catalog() -> None:
    device_opts = {"--devices", "--cluster", "--device-name", "--device"}
    checked = []
    for name, p in _leaves(build_parser()):
        opts = {o for a in p._actions for o in a.option_strings}
        if opts & device_opts and name != "profile steps":  # its --device is torch's: cpu/cuda
            checked.append(name)
            assert "--catalog" in opts, name
    assert {"estimate", "emulate", "predict", "allocate", "tjng", "profile run",
            "predictor corpus", "mdrl train", "slurm up"} <= set(checked)


def test_allocator_falls_back_to_the_multi_device_checkpoint(tmp_path: Path) -> None:
    from gpuscope.allocator.predict import DEFAULT_MODEL_DIR, ModelSet, predict_queue
    from gpuscope.jobs.spec import JobSpec
    from gpuscope.predictor import load_predictor

    jobs = [JobSpec("lenet", "cifar10", "sgd", 8, 1, steps_per_epoch=10, job_id="j1")]
    models = ModelSet(DEFAULT_MODEL_DIR)
    assert "multi.pt" in str(models.fallback_note(["t4", "l4"]))
    assert models.fallback_note(["t4"]) is None
    pred = predict_queue(jobs, ["t4", "l4"], models)
    l4 = pred[pred["device"] == "l4"].reset_index(drop=True)
    direct = load_predictor(DEFAULT_MODEL_DIR / "multi.pt", device="l4").predict(jobs)
    assert l4["exec_time_s"].iloc[0] == pytest.approx(direct["exec_time_s"].iloc[0])
    t4 = pred[pred["device"] == "t4"]["exec_time_s"].iloc[0]
    assert t4 == pytest.approx(load_predictor(DEFAULT_MODEL_DIR / "t4.pt").predict(jobs)
                               ["exec_time_s"].iloc[0])
    # an own checkpoint by --model DEVICE=PATH, a missing folder or file is one line
    own = ModelSet(tmp_path, (("l4", DEFAULT_MODEL_DIR / "t4.pt"),))
    assert own.resolve(["l4"])["l4"] == (DEFAULT_MODEL_DIR / "t4.pt", None)
    with pytest.raises(InputError, match="missing checkpoint folder"):
        ModelSet(tmp_path / "nope").resolve(["t4"])
    with pytest.raises(InputError, match="missing multi-device checkpoint"):
        ModelSet(tmp_path, multi=tmp_path / "m.pt").resolve(["l4"])
