"""Samplers against a fake NVML module and the real psutil (seed 001 §2.2)."""

from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

from gpuscope.core.targets import GPU_RESOURCES
from gpuscope.profiling.samplers import NvmlReader, Sampler

MB = 2**20


class NVMLError(Exception):
    pass


class FakeNvml:
    """The slice of pynvml the sampler uses; utilisation ramps by one per read."""

    NVMLError = NVMLError

    def __init__(self, fail_init: bool = False, count: int = 1) -> None:
        self.fail_init, self.count = fail_init, count
        self.reads = 0
        self.shutdowns = 0

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise NVMLError("Driver Not Loaded")

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        return f"h{i}"

    def nvmlDeviceGetUtilizationRates(self, h: str) -> SimpleNamespace:
        self.reads += 1
        return SimpleNamespace(gpu=min(100, 40 + self.reads), memory=25)

    def nvmlDeviceGetMemoryInfo(self, h: str) -> SimpleNamespace:
        return SimpleNamespace(used=3000 * MB, total=16384 * MB, free=13384 * MB)

    def nvmlDeviceGetName(self, h: str) -> bytes:
        return b"Fake GPU 16GB"

    def nvmlSystemGetDriverVersion(self) -> str:
        return "555.42"


def test_fake_nvml_columns_values_and_identity() -> None:
    fake = FakeNvml()
    s = Sampler(period_s=0.05, nvml=fake).start()
    info = s.device_info()
    time.sleep(0.5)
    df = s.stop()
    assert list(df.columns) == ["t_s", *GPU_RESOURCES, "cpu_util"]
    assert s.missing == {}
    assert 5 <= len(df) <= 12
    assert (df["gpu_mem"] == 3000.0).all() and (df["gpu_mem_util"] == 25.0).all()
    assert df["gpu_util"].tolist() == [min(100.0, 41.0 + i) for i in range(len(df))]
    assert info == {"kind": "gpu", "name": "Fake GPU 16GB", "memory_total_mb": 16384.0,
                    "driver": "555.42", "gpu_index": 0}
    assert fake.shutdowns == 1
    assert ((df["cpu_util"] >= 0) & (df["cpu_util"] <= 100)).all()


def test_monotonic_timestamps_at_the_period() -> None:
    s = Sampler(period_s=0.05, use_nvml=False).start()
    time.sleep(0.6)
    df = s.stop()
    t = df["t_s"].to_numpy()
    assert (np.diff(t) > 0).all()
    # Absolute deadlines: sample k lands near k * period (loaded machine: generous bound).
    assert abs(float(np.median(np.diff(t))) - 0.05) < 0.02
    assert t[0] >= 0.05 - 1e-3


def test_no_nvml_means_absent_columns_with_reason() -> None:
    s = Sampler(period_s=0.05, nvml=FakeNvml(fail_init=True)).start()
    time.sleep(0.2)
    df = s.stop()
    assert not set(GPU_RESOURCES) & set(df.columns)
    assert set(s.missing) == set(GPU_RESOURCES)
    assert "Driver Not Loaded" in s.missing["gpu_util"]
    assert s.device_info() == {}


def test_gpu_index_out_of_range() -> None:
    r = NvmlReader(FakeNvml(count=1), index=3)
    assert not r.available and "none at index 3" in r.reason


def test_failed_nvml_read_is_nan_not_zero() -> None:
    fake = FakeNvml()

    def boom(h: str) -> None:
        raise NVMLError("GPU is lost")

    fake.nvmlDeviceGetUtilizationRates = boom  # type: ignore[method-assign]
    s = Sampler(period_s=0.05, nvml=fake)
    s.start()
    time.sleep(0.15)
    df = s.stop()
    assert len(df) and df["gpu_util"].isna().all() and df["gpu_mem"].isna().all()


def test_process_tree_cpu_of_a_busy_child() -> None:
    # A parent that spawns a busy grandchild: the tree's CPU share is sampled, not just the root.
    code = ("import subprocess, sys; subprocess.run([sys.executable, '-c', "
            "'import time\\nt = time.time()\\nwhile time.time() - t < 1.5: pass'])")
    proc = subprocess.Popen([sys.executable, "-c", code])
    s = Sampler(period_s=0.1, pid=proc.pid, use_nvml=False).start()
    proc.wait()
    df = s.stop()
    assert "proc_cpu_util" in df.columns
    ncpu = __import__("psutil").cpu_count()
    # One busy core is 100/ncpu % of all cores; a shared, loaded machine may give it a small
    # slice only, so ask for a tenth of that (an idle tree reads ~0).
    assert df["proc_cpu_util"].max() > 100.0 / ncpu / 10
    assert df["proc_cpu_util"].max() <= 100.0 + 1e-6


def test_bad_period() -> None:
    with pytest.raises(ValueError):
        Sampler(period_s=0.0)
