"""GPU emulator: a device performance model that writes profiler-format traces (issue 4).

Public API:

* ``estimate(job, graph, device) -> Estimate``: iteration time, utilisations, memory, status
  and execution time of a job on a catalog device (``gpuscope.cluster.devices``), from its OpGraph;
* ``multi_gpu_time(t1, job, graph, device, g)``: data-parallel execution time on g GPUs;
* ``footprint``: the memory model; ``EmulatorParams`` / ``default_params``: its constants;
* ``synth_trace``: a 6 Hz trace of an emulated run; ``emulate_campaign``: runs folders exactly
  as a real profiling campaign writes them (``gpuscope emulate``).
"""

from gpuscope.emulator.memory import MemoryFootprint, footprint
from gpuscope.emulator.multigpu import multi_gpu_time, speedup
from gpuscope.emulator.params import EmulatorParams, default_params
from gpuscope.emulator.perf import Estimate, GraphCost, estimate
from gpuscope.emulator.runs import CostCache, emulate_campaign, emulate_device
from gpuscope.emulator.traces import synth_trace

__all__ = [
    "CostCache", "EmulatorParams", "Estimate", "GraphCost", "MemoryFootprint",
    "default_params", "emulate_campaign", "emulate_device", "estimate", "footprint",
    "multi_gpu_time", "speedup", "synth_trace",
]
