"""The four profiled resources and the prediction targets (seed 001 Table 2, design.md).

| key            | meaning                                   | unit | capacity            |
|----------------|-------------------------------------------|------|---------------------|
| ``gpu_util``     | NVML utilization.gpu                     | %    | 100                 |
| ``gpu_mem_util`` | NVML utilization.memory (controller busy)| %    | 100                 |
| ``gpu_mem``      | device memory used                       | MB   | device memory total |
| ``cpu_util``     | host CPU utilisation over all cores      | %    | 100                 |

Per resource r the labels are ``r_burst_s`` (mean length in seconds of contiguous burst runs),
``r_idle_s`` (same for idle runs) and ``r_peak`` (95th percentile of the steady-state samples;
see ``gpuscope.profiling.labeling``); then ``exec_time_s``. Seed 001 predicts execution time once per resource and sums the
four; one execution-time head is equivalent for every decision gpuscope makes.
"""

from __future__ import annotations

RESOURCES: tuple[str, ...] = ("gpu_util", "gpu_mem_util", "gpu_mem", "cpu_util")
GPU_RESOURCES: tuple[str, ...] = ("gpu_util", "gpu_mem_util", "gpu_mem")
UNITS: dict[str, str] = {"gpu_util": "%", "gpu_mem_util": "%", "gpu_mem": "MB", "cpu_util": "%"}
#: Fixed capacities; ``gpu_mem``'s capacity is the device's memory total (trace metadata).
PERCENT_CAPACITY: float = 100.0
PEAK_FRACTION: float = 0.9
#: Quantile of the steady-state samples that is a resource's peak label (profiling.labeling).
PEAK_QUANTILE: float = 0.95

LABEL_STATS: tuple[str, ...] = ("burst_s", "idle_s", "peak")

#: The 13 prediction targets, in order: per resource burst, idle, peak; then execution time.
TARGETS: tuple[str, ...] = tuple(f"{r}_{s}" for r in RESOURCES for s in LABEL_STATS) + (
    "exec_time_s",
)
#: Driple's target set (GPU util and GPU memory util only), seed 001's comparison baseline.
DRIPLE_TARGETS: tuple[str, ...] = tuple(
    f"{r}_{s}" for r in ("gpu_util", "gpu_mem_util") for s in LABEL_STATS
)
TARGET_SETS: dict[str, tuple[str, ...]] = {"full": TARGETS, "driple": DRIPLE_TARGETS}

#: Run statuses of the profiler and emulator.
STATUSES: tuple[str, ...] = ("ok", "oom", "error", "timeout")
PROVENANCES: tuple[str, ...] = ("measured", "emulated")


def capacity(resource: str, mem_total_mb: float | None = None) -> float:
    """Capacity of ``resource``: 100 for percentages, the device memory total for ``gpu_mem``."""
    if resource not in RESOURCES:
        raise KeyError(f"unknown resource {resource!r}; expected one of {', '.join(RESOURCES)}")
    if resource == "gpu_mem":
        if mem_total_mb is None or mem_total_mb <= 0:
            raise ValueError("gpu_mem needs the device's memory total (MB) as its capacity")
        return float(mem_total_mb)
    return PERCENT_CAPACITY
