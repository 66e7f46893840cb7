"""Samplers: NVML (GPU) and psutil (CPU) read every 1/6 s in a background thread (seed 001 §2.2).

Columns (design.md, Runs): ``gpu_util`` (NVML utilization.gpu %), ``gpu_mem_util``
(utilization.memory %, memory-controller busy), ``gpu_mem`` (memory used, MB), ``cpu_util``
(system CPU over all cores, %, as the seed), ``proc_cpu_util`` (the job's process tree, % of
all cores, so it is on the same scale as ``cpu_util``). Timestamps are ``time.monotonic()``
seconds from the sampler's start. Without NVML the GPU columns are absent and
:attr:`Sampler.missing` says why — never zeros.

The NVML module is injectable (``nvml=``): tests pass a fake ``pynvml``.
"""

from __future__ import annotations

import math
import threading
import time
from types import ModuleType
from typing import Any

import pandas as pd
import psutil

from gpuscope.core.targets import GPU_RESOURCES
from gpuscope.profiling.trace import DEFAULT_PERIOD_S

_MB = 1024.0 * 1024.0
#: The process tree is re-listed at most this often (listing children scans /proc).
TREE_REFRESH_S = 1.0


class NvmlReader:
    """One GPU through NVML. ``available`` is False (and ``reason`` says why) when NVML
    cannot be loaded, initialised, or has no GPU at ``index``."""

    def __init__(self, nvml: ModuleType | None = None, index: int = 0) -> None:
        self.index = index
        self.available = False
        self.reason = ""
        self._nvml: Any = nvml
        self._handle: Any = None
        if self._nvml is None:
            try:
                import pynvml

                self._nvml = pynvml
            except ImportError as e:
                self.reason = f"nvidia-ml-py not installed ({e})"
                return
        try:
            self._nvml.nvmlInit()
        except Exception as e:  # NVMLError_LibraryNotFound/DriverNotLoaded on CPU hosts
            self.reason = f"NVML unavailable: {type(e).__name__}: {e}"
            return
        try:
            count = int(self._nvml.nvmlDeviceGetCount())
            if index >= count:
                self.reason = f"NVML sees {count} GPU(s), none at index {index}"
                self._nvml.nvmlShutdown()
                return
            self._handle = self._nvml.nvmlDeviceGetHandleByIndex(index)
        except Exception as e:
            self.reason = f"NVML device query failed: {type(e).__name__}: {e}"
            return
        self.available = True
        self._info = self._query_info()

    def read(self) -> tuple[float, float, float]:
        """(utilization.gpu %, utilization.memory %, memory used MB); NaN on a failed read."""
        try:
            u = self._nvml.nvmlDeviceGetUtilizationRates(self._handle)
            m = self._nvml.nvmlDeviceGetMemoryInfo(self._handle)
            return float(u.gpu), float(u.memory), float(m.used) / _MB
        except Exception:
            return math.nan, math.nan, math.nan

    def info(self) -> dict[str, Any]:
        """Device identity: name, memory total (MB), driver version, UUID, index ({} without
        NVML)."""
        return dict(getattr(self, "_info", {}))

    def _query_info(self) -> dict[str, Any]:
        from gpuscope.cluster.nvml import read_identity

        return read_identity(self._nvml, self._handle, self.index)

    def close(self) -> None:
        if self.available:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self.available = False


class ProcessTreeCpu:
    """CPU % of a process and its descendants, as a share of all cores (0–100)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._ncpu = psutil.cpu_count() or 1
        self._procs: dict[int, psutil.Process] = {}
        self._listed_at = -math.inf
        self._refresh(time.monotonic())

    def _refresh(self, now: float) -> set[int]:
        """Re-list the tree; return the pids first seen now (primed, not yet readable)."""
        fresh: set[int] = set()
        try:
            root = psutil.Process(self.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            tree = []
        for p in tree:
            if p.pid not in self._procs:
                self._procs[p.pid] = p
                fresh.add(p.pid)
                try:
                    p.cpu_percent(None)  # first call primes the counter
                except psutil.Error:
                    pass
        self._listed_at = now
        return fresh

    def read(self) -> float:
        now = time.monotonic()
        fresh = self._refresh(now) if now - self._listed_at >= TREE_REFRESH_S else set()
        total = 0.0
        for pid, p in list(self._procs.items()):
            if pid in fresh:
                # Primed microseconds ago: one 10 ms CPU-time tick over that gap would read as
                # thousands of per cent. It counts from the next sample on.
                continue
            try:
                total += p.cpu_percent(None)
            except psutil.Error:
                del self._procs[pid]  # exited: its last interval is lost, a sub-sample error
        # Tick-granular CPU times can still overshoot on a short interval; the tree cannot use
        # more than every core.
        return min(total / self._ncpu, 100.0)


class Sampler:
    """Background sampling thread.

    Args:
        period_s: sampling period (seed 001: 1/6 s).
        pid: the job's root process; when given, ``proc_cpu_util`` is sampled too.
        nvml: NVML module to use (default: ``pynvml``); ``use_nvml=False`` skips NVML.
        gpu_index: which GPU to read.
    """

    def __init__(
        self,
        period_s: float = DEFAULT_PERIOD_S,
        pid: int | None = None,
        nvml: ModuleType | None = None,
        use_nvml: bool = True,
        gpu_index: int = 0,
    ) -> None:
        if not period_s > 0:
            raise ValueError(f"sample period must be > 0 s, got {period_s!r}")
        self.period_s = period_s
        self.pid = pid
        self.gpu = NvmlReader(nvml, gpu_index) if use_nvml else None
        self.missing: dict[str, str] = {}
        if self.gpu is None:
            self.missing = {r: "NVML disabled" for r in GPU_RESOURCES}
        elif not self.gpu.available:
            self.missing = {r: self.gpu.reason for r in GPU_RESOURCES}
        self._rows: list[tuple[float, ...]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._tree: ProcessTreeCpu | None = None

    @property
    def has_gpu(self) -> bool:
        return self.gpu is not None and self.gpu.available

    @property
    def columns(self) -> list[str]:
        cols = ["t_s"]
        if self.has_gpu:
            cols += list(GPU_RESOURCES)
        cols.append("cpu_util")
        if self.pid is not None:
            cols.append("proc_cpu_util")
        return cols

    def sample(self) -> tuple[float, ...]:
        """Take one sample now (also used directly by tests)."""
        t = time.monotonic() - self._t0
        row: list[float] = [t]
        if self.has_gpu:
            assert self.gpu is not None
            row.extend(self.gpu.read())
        row.append(float(psutil.cpu_percent(None)))
        if self._tree is not None:
            row.append(self._tree.read())
        return tuple(row)

    def _loop(self) -> None:
        k = 1
        while True:
            # Absolute deadlines: the period does not drift with the time a read takes.
            delay = self._t0 + k * self.period_s - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                return
            if self._stop.is_set():
                return
            self._rows.append(self.sample())
            k += 1
            lag = time.monotonic() - (self._t0 + k * self.period_s)
            if lag > 0:  # fell behind (loaded machine): skip missed slots, never burst
                k += int(lag // self.period_s) + 1

    def start(self) -> Sampler:
        self._t0 = time.monotonic()
        psutil.cpu_percent(None)  # prime: the first call compares with nothing
        if self.pid is not None:
            self._tree = ProcessTreeCpu(self.pid)
        self._thread = threading.Thread(target=self._loop, name="gpuscope-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> pd.DataFrame:
        """Stop the thread and return the samples (``t_s`` + present resources)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        cols = self.columns  # before closing NVML, which clears has_gpu
        if self.gpu is not None:
            self.gpu.close()
        return pd.DataFrame(self._rows, columns=cols, dtype="float64")

    def device_info(self) -> dict[str, Any]:
        return self.gpu.info() if self.has_gpu and self.gpu is not None else {}

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if not self._stop.is_set():
            self.stop()
