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


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def monotonic(self) -> float:
        return self.t


class _BusyProc:
    """A process on one core whose CPU time advances in 10 ms ticks, as /proc reports it.

    ``cpu_percent`` works like psutil's: the CPU-time delta over the wall-time delta since the
    previous call (the first call primes and returns 0); every call takes 0.1 ms of wall time.
    """

    def __init__(self, clock: _Clock, pid: int, start: float, busy: bool) -> None:
        self.clock, self.pid, self.start, self.busy = clock, pid, start, busy
        self.last: tuple[float, float] | None = None
        self.children_: list[_BusyProc] = []

    def children(self, recursive: bool = False) -> list[_BusyProc]:
        return [c for c in self.children_ if c.start <= self.clock.t]

    def cpu_percent(self, interval: None = None) -> float:
        self.clock.t += 1e-4
        t = self.clock.t
        cpu = (int((t - self.start) / 0.01) * 0.01) if self.busy else 0.0
        last, self.last = self.last, (t, cpu)
        return 0.0 if last is None else 100.0 * (cpu - last[1]) / (t - last[0])


def test_process_tree_cpu_skips_a_child_primed_in_the_same_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A child first listed in a read is primed and, before the fix, read 0.1 ms later: a 10 ms
    # tick crossing that gap read as 10,000 % of a core. One busy core of four is 25 %.
    from gpuscope.profiling import samplers

    clock = _Clock()
    root = _BusyProc(clock, 1, 0.0, busy=False)
    # The child starts so that a tick boundary falls between its priming and the next call.
    root.children_.append(_BusyProc(clock, 2, start=1.0 + 2e-4 - 0.00995 - 1e-5, busy=True))
    monkeypatch.setattr(samplers, "time", SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(samplers.psutil, "Process", lambda pid: root)
    tree = samplers.ProcessTreeCpu(1)
    tree._ncpu = 4
    reads = []
    for k in range(1, 30):
        clock.t = k / 10  # one sample per 100 ms; the tree is re-listed every second
        reads.append(tree.read())
    assert max(reads) <= 25.0 * 1.25, reads
    assert max(reads) >= 25.0 * 0.75, reads  # the child is counted from the next sample on


def test_bad_period() -> None:
    with pytest.raises(ValueError):
        Sampler(period_s=0.0)
