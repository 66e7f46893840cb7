"""Data-parallel training on g GPUs of one node, for the allocator's t_jng tables.

Each GPU keeps the job's per-GPU batch and runs the single-GPU step; after backward the
gradients are summed with a ring all-reduce (Patarasuk & Yuan), which moves
``2 (g-1)/g x gradient bytes`` per GPU over the slowest link in ``2 (g-1)`` steps:

    t_ar(g)   = 2 (g-1)/g * grad_bytes / (link_bw * link_eff) + 2 (g-1) * latency
    t_iter(g) = t_iter(1) + (1 - overlap) * t_ar(g)

The link is NVLink when the device has it, else PCIe (a K80/M60/P100 node). ``overlap`` (the
fraction of the all-reduce hidden behind the backward pass, as PyTorch DDP buckets do) and
``link_eff`` are fitted to Gavel's measured 1/2/4/8-GPU throughputs (``calibrate``). The job's
samples are split over the g GPUs, so its execution time is

    T(g) = startup + (T(1) - startup) * t_iter(g) / (g * t_iter(1))

which is sublinear in g: the speed-up g * t_iter(1) / t_iter(g) is below g.
"""

from __future__ import annotations

from gpuscope.cluster.devices import DeviceSpec
from gpuscope.core.errors import InputError
from gpuscope.emulator.params import EmulatorParams, default_params
from gpuscope.emulator.perf import GraphCost, estimate
from gpuscope.graphs.opgraph import OpGraph
from gpuscope.jobs.spec import JobSpec


def link_gbs(device: DeviceSpec) -> float:
    """Per-GPU all-reduce link bandwidth, GB/s: NVLink where present, else PCIe x16."""
    return device.nvlink_gbs / 2.0 if device.nvlink_gbs > 0 else device.pcie_gbs


def allreduce_s(grad_bytes: float, device: DeviceSpec, g: int, params: EmulatorParams) -> float:
    """Ring all-reduce time of ``grad_bytes`` over ``g`` GPUs, seconds (0 for one GPU)."""
    if g <= 1:
        return 0.0
    bw = link_gbs(device) * 1e9 * params.link_eff
    return 2.0 * (g - 1) / g * grad_bytes / bw + 2.0 * (g - 1) * params.allreduce_latency_us * 1e-6


def iter_time_g(
    iter_s: float, grad_bytes: float, device: DeviceSpec, g: int, params: EmulatorParams,
) -> float:
    """Per-iteration time with g GPUs (each at the job's per-GPU batch)."""
    return iter_s + (1.0 - params.overlap) * allreduce_s(grad_bytes, device, g, params)


def speedup(
    iter_s: float, grad_bytes: float, device: DeviceSpec, g: int,
    params: EmulatorParams | None = None,
) -> float:
    """Throughput on g GPUs over throughput on one: g * t_iter(1) / t_iter(g)."""
    p = params or default_params()
    return g * iter_s / iter_time_g(iter_s, grad_bytes, device, g, p)


def multi_gpu_time(
    t1: float, job: JobSpec, graph: OpGraph | GraphCost, device: DeviceSpec, g: int,
    params: EmulatorParams | None = None,
) -> float:
    """Execution time on ``g`` GPUs of ``job`` whose one-GPU execution time is ``t1`` seconds
    (measured, predicted or emulated): the start-up is paid once and the training part shrinks
    by the all-reduce-limited speed-up of the emulated step. ``inf`` when the job does not fit
    one GPU (data parallelism replicates the model)."""
    if g < 1:
        raise InputError(f"number of GPUs must be >= 1, got {g}")
    p = params or default_params()
    est = estimate(job, graph, device, p)
    if est.status != "ok":
        return float("inf")
    grad_bytes = est.memory.grads_mb / (1.0 + p.alloc_overhead) * 2**20
    startup = min(est.startup_s, float(t1))
    return startup + (float(t1) - startup) / speedup(est.iter_s, grad_bytes, device, g, p)
