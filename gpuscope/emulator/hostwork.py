"""Host-side work of a training step (issues 4, 11): the input pipeline's cost per sample, and
the host work the device waits for in RL jobs (Gavel's A3C, ``workloads/models_gavel.py``).

``perf.estimate`` adds ``t_env + t_update`` (``host_serial_times``) to the step's serial
host time and waits for ``workers * t_gpu`` when several worker processes share one GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuscope.devices import DeviceSpec
from gpuscope.emulator.params import EmulatorParams

if TYPE_CHECKING:
    from gpuscope.emulator.perf import EmulatedJob, GraphCost


def input_bytes_per_sample(job: EmulatedJob) -> float:
    """Bytes of one input sample copied to the device (FP32 elements of the sample shape)."""
    spec = job.dataset_spec
    if hasattr(spec, "sample_bytes"):
        return float(spec.sample_bytes)
    shape = tuple(getattr(spec, "sample_shape", ()) or ())
    return 4.0 * float(np.prod(shape)) if shape else 4.0


def cpu_ms_per_sample(job: EmulatedJob, params: EmulatorParams) -> float:
    """Input-pipeline cost of one sample (reference-core ms): by dataset name, else by the
    dataset's kind (``params.cpu_ms_per_kind``), else ``params.cpu_ms_default``."""
    if job.dataset in params.cpu_ms_per_sample:
        return params.cpu_ms_per_sample[job.dataset]
    kind = str(getattr(job.dataset_spec, "kind", "") or "")
    return params.cpu_ms_per_kind.get(kind, params.cpu_ms_default)


def host_serial_times(cost: GraphCost, job: EmulatedJob, device: DeviceSpec,
                      params: EmulatorParams) -> tuple[float, float]:
    """(environment, host update) time of one step the device waits for, seconds,
    for graphs whose ``meta`` says so (``env_steps``, ``host_optimizer``; Gavel's A3C, see
    ``workloads/models_gavel.py``); zeros for every other job.

    Per environment step the host waits for the device (the sampled action is copied back),
    steps the environment (``cpu_ms_per_sample`` of the job's dataset, frames: one emulator
    step with preprocessing) and copies the next observation to the device; two transfers at
    ``launch_us`` latency plus the observation over PCIe. A host optimizer (Hogwild A3C: the
    shared model lives in host memory) costs the weights' copy to the device and the
    gradients' copy back over PCIe, and the optimizer's traffic (its traced kernels' bytes)
    streamed by one host core at ``host_gbs`` (``estimate`` removes its GPU kernel time)."""
    speed = device.host_single_core
    pcie = device.pcie_gbs * 1e9 * params.h2d_eff
    t_env = cost.env_steps * (cpu_ms_per_sample(job, params) * 1e-3 / speed
                              + 2 * params.launch_us * 1e-6 + input_bytes_per_sample(job) / pcie)
    if not cost.host_optimizer or cost.optimizer is None:
        return t_env, 0.0
    opt_bytes = float(cost.bytes[cost.optimizer].sum())
    t_update = 2 * cost.param_bytes / pcie + opt_bytes / (params.host_gbs * 1e9 * speed)
    return t_env, t_update
