"""GPU emulator: a device performance model that writes profiler-format traces.

Public API:

* ``estimate(job, graph, device) -> Estimate``: iteration time, utilisations, memory, status
  and execution time of a job on a catalog device (``gpuscope.cluster.devices``), from its OpGraph;
* ``multi_gpu_time(t1, job, graph, device, g)``: data-parallel execution time on g GPUs;
* ``footprint``: the memory model; ``EmulatorParams`` / ``default_params``: its constants;
* ``synth_trace``: a 6 Hz trace of an emulated run; ``emulate_campaign``: runs folders exactly
  as a real profiling campaign writes them (``gpuscope emulate``);
* ``kernel_time(op, device, **shape)``: one kernel's device time by the kernel model
  (``gpuscope.emulator.kernels``).

Names load on first use (:mod:`gpuscope.core.lazy`).
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "MemoryFootprint": ".memory", "footprint": ".memory",
    "multi_gpu_time": ".multigpu", "speedup": ".multigpu",
    "EmulatorParams": ".params", "default_params": ".params",
    "Estimate": ".perf", "GraphCost": ".perf", "estimate": ".perf",
    "CostCache": ".runs", "emulate_campaign": ".runs", "emulate_device": ".runs",
    "synth_trace": ".traces", "kernel_time": ".kernels.api",
})
