"""Host-side work of a training step: the input pipeline's cost per sample, and
the host work the device waits for in RL jobs (Gavel's A3C, ``workloads/models/gavel.py``)
and in jobs that build sparse batches on the main thread (Gavel's Recommendation).

``perf.estimate`` adds ``t_env + t_update`` (``host_serial_times``) and the sparse batch's
host time (``sparse_batch_host_s``) to the step's serial host time, copies the batch's
``batch_h2d_bytes`` and densifies a sparse batch on the device (``sparse_densify_s``), and
waits for the worker processes' kernels and context switches when several share one GPU
without MPS (``time_sliced_gpu_s``). In a host era
whose framework loops over parameter tensors in the optimizer (``per_tensor_optimizer``,
PyTorch 1.x), every foreach kernel of the traced step is one kernel and one dispatch per
tensor, and ``zero_grad`` zeroes each gradient (``optimizer_tensor_counts``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from gpuscope.cluster.devices import DeviceSpec
from gpuscope.emulator.params import EmulatorParams
from gpuscope.graphs.ops.aten import is_foreach

if TYPE_CHECKING:
    from gpuscope.emulator.graphcost import EmulatedJob, GraphCost
    from gpuscope.graphs.opgraph import OpGraph, OpNode


def achievable_bw(device: DeviceSpec, params: EmulatorParams) -> float:
    """Achievable DRAM bandwidth of ``device``, bytes/s: the datasheet's ``mem_bw_gbs`` times
    the kernel model's streaming efficiency for its memory (``kernels.memory.dram_eff``)."""
    from gpuscope.emulator.kernels.device import KernelDevice
    from gpuscope.emulator.kernels.memory import dram_eff

    return device.mem_bw_gbs * 1e9 * dram_eff(KernelDevice.from_spec(device), params.kernels.memory)


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


def loader_times(job: EmulatedJob, device: DeviceSpec, params: EmulatorParams) -> tuple[float, float]:
    """(hand-off from DataLoader workers, in-line loading on the main thread) per step,
    seconds: a dataset with ops in ``params.inline_ops_per_sample`` is indexed on the main thread
    (``batch * ops * dispatch_us``, serial with the step, no hand-off); any other dataset
    comes from worker processes (``loader_handoff_ms`` per batch)."""
    speed = device.host_single_core
    ops = params.inline_ops_per_sample.get(job.dataset, 0.0)
    if ops <= 0:
        return params.loader_handoff_ms * 1e-3 / speed, 0.0
    return 0.0, job.batch_size * ops * params.dispatch_us * 1e-6 / speed


def host_serial_times(cost: GraphCost, job: EmulatedJob, device: DeviceSpec,
                      params: EmulatorParams) -> tuple[float, float]:
    """(environment, host update) time of one step the device waits for, seconds,
    for graphs whose ``meta`` says so (``env_steps``, ``host_optimizer``; Gavel's A3C, see
    ``workloads/models/gavel.py``); zeros for every other job.

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
                              + 2 * params.kernels.launch_us * 1e-6 + input_bytes_per_sample(job) / pcie)
    if not cost.host_optimizer or cost.optimizer is None:
        return t_env, 0.0
    opt_bytes = float(cost.bytes[cost.optimizer].sum())
    t_update = 2 * cost.param_bytes / pcie + opt_bytes / (params.host_gbs * 1e9 * speed)
    return t_env, t_update


# --- sparse batches built in the training loop (Gavel's Recommendation) ------------------
#: Reference-core seconds per element PyTorch spends building a tensor from a Python list of
#: NumPy arrays (``torch.LongTensor([rows, cols])``: ``tensor_new.cpp``'s element-by-element
#: ``recursive_store``, one NumPy scalar made and unpacked per element): the mean of two
#: published micro-benchmarks of 1-D/innermost-long arrays, 53.1 ns (pytorch/pytorch PR
#: #51731: 10,000 arrays of 10,000 float64 in 5.31 s) and 62.5 ns (pytorch/pytorch issue
#: #57467, PyTorch 1.8.1: 10 arrays of 3x1024x1024 in 1.967 s). Assumption: their (unnamed)
#: CPUs run it as fast as the reference core (i7-4790K).
PY_LIST_ELEMENT_S: float = 0.5 * (5.31 / 1e8 + 1.9666567809181288 / (10 * 3 * 1024 * 1024))
#: Reference-core seconds per comparison of a comparison sort on random keys (``np.unique``'s
#: argsort): half the branches mispredict (random keys), at 15-20 cycles each on Haswell
#: (Agner Fog, "The microarchitecture of Intel, AMD and VIA CPUs", Haswell chapter), 17 cycles
#: at the reference core's 4.4 GHz; ``log2(nnz)`` comparisons per element.
SORT_COMPARE_S: float = 0.5 * 17 / 4.4e9
#: Bytes per rating NumPy/SciPy's C loops stream while Recoder builds one batch
#: (``recoder/data.py``; int32 indices, float64 values, int64 NumPy indices), read + write:
#: CSR row fancy-indexing 24 (indices + data copied), ``nonzero()`` twice 2 x 54 (COO row
#: expansion 4, column and data copies 8 + 16, ``data != 0`` mask 9, two masked gathers 17),
#: the batch slice 24, ``np.unique(return_inverse=True)`` 60 besides its argsort (gather 16,
#: flags 9, cumsum 9, inverse scatter 24 + padding), ``torch.FloatTensor(data)`` 12 (float64
#: to float32), the COO constructor's index check 16; streamed at ``params.host_gbs``.
SPARSE_STREAM_BYTES_PER_NNZ: float = 24 + 2 * 54 + 24 + 60 + 12 + 16
#: Bytes per rating copied to the device: two int64 COO indices and one float32 value.
SPARSE_H2D_BYTES_PER_NNZ: float = 2 * 8 + 4


def sparse_batch_nnz(cost: GraphCost, batch_size: int) -> float:
    """Expected non-zeros of one sparse batch (``sparse_nnz_per_sample`` x batch), 0 for a
    dense input."""
    return cost.sparse_nnz_per_sample * batch_size


def sparse_batch_host_s(cost: GraphCost, batch_size: int, device: DeviceSpec,
                        params: EmulatorParams) -> float:
    """Host time to build one sparse batch in the training loop, seconds (0 for dense inputs).

    Gavel's Recommendation (``workloads/pytorch/recommendation``: Recoder with
    ``num_data_workers=0``) builds every batch on the main thread between two steps, so the
    device waits for it. With ``n`` the batch's ratings and ``b`` its users, on a reference
    core::

        t = (2 n + 2 b) * PY_LIST_ELEMENT_S          # torch.LongTensor([rows, cols]); the
                                                     # sampler's list and np.array of b ids
          + n * log2(n) * SORT_COMPARE_S              # np.unique(return_inverse=True)
          + n * SPARSE_STREAM_BYTES_PER_NNZ / host_gbs  # NumPy/SciPy copies and masks

    divided by the host's single-core speed."""
    n = sparse_batch_nnz(cost, batch_size)
    if n <= 0:
        return 0.0
    b = float(batch_size)
    t = ((2 * n + 2 * b) * PY_LIST_ELEMENT_S + n * np.log2(max(n, 2.0)) * SORT_COMPARE_S
         + n * SPARSE_STREAM_BYTES_PER_NNZ / (params.host_gbs * 1e9))
    return float(t / device.host_single_core)


def batch_h2d_bytes(cost: GraphCost, job: EmulatedJob) -> float:
    """Bytes of one batch copied to the device: the sparse COO batch (indices, values and the
    user ids, int64) when the graph says its input is sparse, else the dense samples."""
    n = sparse_batch_nnz(cost, job.batch_size)
    if n > 0:
        return n * SPARSE_H2D_BYTES_PER_NNZ + 8.0 * job.batch_size
    return job.batch_size * input_bytes_per_sample(job)


def sparse_densify_s(cost: GraphCost, batch_size: int, device: DeviceSpec,
                     params: EmulatorParams) -> float:
    """Device time of ``.to_dense()`` on a sparse batch, seconds: the dense
    ``batch x sparse_dense_width`` FP32 matrix written (zeros), then each non-zero's COO
    triplet read and its value written, at the achievable bandwidth, two kernel launches (0
    for dense inputs)."""
    n = sparse_batch_nnz(cost, batch_size)
    if n <= 0:
        return 0.0
    byts = 4.0 * batch_size * cost.sparse_dense_width + SPARSE_H2D_BYTES_PER_NNZ * n
    return float(byts / achievable_bw(device, params) + params.kernels.launch_us * 2e-6)


# --- per-tensor optimizer loops (PyTorch 1.x; legacy host era) -----------------
def optimizer_tensor_counts(graph: OpGraph, kernels: list[OpNode]) -> tuple[np.ndarray, int]:
    """(per kernel, the parameter tensors a foreach optimizer kernel covers, else 1; the number
    of parameter tensors).

    The graph is traced with ``foreach=True`` (PyTorch >= 2.0's default on a GPU): one
    ``_foreach_*`` kernel per arithmetic step of the update over every parameter tensor. PyTorch
    1.x (Gavel's and seed 001's era) looped over the parameters in Python instead, one kernel
    and one dispatch per tensor for the same step (``torch/optim/sgd.py``, ``adam.py`` of
    v1.4: ``for p in group['params']: ... buf.mul_(momentum).add_(...); p.data.add_(...)``),
    and ``zero_grad`` zeroed each gradient (``p.grad.zero_()``). A foreach kernel's tensors
    are not in the graph; they are taken as the share of the parameters' elements it touches
    (exact for a job with one optimizer; a step counter per tensor, one element each, counts
    ~0, as PyTorch 1.x kept it as a Python int)."""
    params = [n for n in graph.nodes if n.op == "Parameter"]
    n_par, elems = len(params), float(sum(max(1, n.numel) for n in params))
    counts = np.ones(len(kernels), dtype=np.float64)
    if n_par == 0:
        return counts, 0
    for j, n in enumerate(kernels):
        if n.phase == "optimizer" and is_foreach(n.op):
            counts[j] = max(1.0, float(round(n_par * min(1.0, n.numel / elems))))
    return counts, n_par


def per_tensor_extra_dispatch(cost: GraphCost) -> float:
    """Ops a per-tensor optimizer loop and ``zero_grad`` add to the traced (foreach) step:
    ``sum(tensors - 1)`` over the foreach kernels, plus one zeroing per parameter tensor."""
    if cost.opt_tensors is None:
        return 0.0
    return float((cost.opt_tensors - 1.0).sum()) + float(cost.n_param_tensors)


def per_tensor_kernels(cost: GraphCost, params: EmulatorParams) -> np.ndarray | float:
    """Kernels each traced kernel is on the GPU: in a ``per_tensor_optimizer`` era (PyTorch
    1.x) a foreach optimizer kernel is one kernel per parameter tensor; 1 otherwise."""
    if params.per_tensor_optimizer > 0 and cost.opt_tensors is not None:
        return 1.0 + params.per_tensor_optimizer * (cost.opt_tensors - 1.0)
    return 1.0


def zero_grad_gpu_s(cost: GraphCost, device: DeviceSpec, params: EmulatorParams) -> float:
    """GPU time of a per-tensor ``zero_grad`` (one memset kernel per gradient: its launch and
    the gradient bytes written); 0 for foreach-era software, which sets gradients to None."""
    if params.per_tensor_optimizer <= 0 or cost.n_param_tensors == 0:
        return 0.0
    return (cost.n_param_tensors * params.kernels.launch_us * 1e-6
            + cost.param_bytes / achievable_bw(device, params))


# --- host and GPU in one step --------------------------------------------------------------
#: Range of ``host_gpu_p`` a fit searches: 1 is the sum, 100 the max but for 0.7 % at equal
#: times.
HOST_GPU_P_RANGE: tuple[float, float] = (1.0, 100.0)


def host_gpu_p_start(p: float) -> float:
    """A fit's starting ``host_gpu_p``: the current value, kept inside the searched range
    (the default, inf, is the plain max)."""
    return min(max(p, 1.1), 50.0)


def host_gpu_s(t_gpu: float, t_dispatch: float, params: EmulatorParams) -> float:
    """One step's time from its GPU time and its host dispatch time, seconds: their
    ``host_gpu_p``-norm::

        t = (t_gpu ** p + t_dispatch ** p) ** (1 / p)

    The host runs ahead of the GPU through the launch queue, so when one side dominates the
    other is hidden (``t`` -> the max, relative excess ``r ** p / p`` for a ratio ``r`` of
    the smaller to the larger). A step's ops are not uniform, though: in a step whose totals
    are close, the host falls behind in runs of cheap ops (the GPU starves) and the queue
    fills in runs of long kernels (the host waits on the allocator and at synchronisations),
    so the closer the totals the less of the smaller one is hidden: ``2 ** (1 / p)`` times
    either at equal times (the sum for ``p`` = 1). The norm never shortens the step when
    either side grows. ``p`` is fitted; inf gives the plain max."""
    hi, lo = max(t_gpu, t_dispatch), min(t_gpu, t_dispatch)
    p = params.host_gpu_p
    if hi <= 0 or lo <= 0 or math.isinf(p):
        return hi
    return hi * (1.0 + (lo / hi) ** p) ** (1.0 / p)


# --- worker processes time-slicing one GPU (Gavel's A3C; colocated jobs) -------------------
def context_switches(cost: GraphCost, t_gpu: float, params: EmulatorParams) -> tuple[float, float]:
    """(context switches into one worker's context per step, the part of them at queue
    drains) when ``cost.workers`` processes time-slice one GPU without MPS; (0, 0) for one
    process.

    Without MPS each process has its own CUDA context and the GPU runs one context at a
    time; it switches to another context that has work when the running context's time slice
    (``ctx_slice_ms``) expires or its queue drains ("scheduling resources must be swapped on
    and off the GPU", NVIDIA's MPS documentation, "Reduced GPU Context Switching"). So a
    worker's switches per step are set by its slices and its drains, not by its kernels:

    * slice expiries: a worker that keeps its queue full holds the GPU for one slice at a
      time, ``t_gpu / ctx_slice_ms`` switches per step;
    * queue drains: the host waits for the device at each synchronisation of the step (the
      end of the step, and each host round trip of an RL job, ``env_steps``), its queue
      empties and the GPU moves to another context; when the worker issues again its context
      is switched back in if another worker ran in between, probability ``(W - 1) / W`` for
      ``W`` identical workers: ``(1 + env_steps) * (W - 1) / W`` switches per step."""
    w = cost.workers
    if w <= 1:
        return 0.0, 0.0
    drains = (1.0 + cost.env_steps) * (w - 1) / w
    slices = t_gpu / (params.ctx_slice_ms * 1e-3) if params.ctx_slice_ms > 0 else 0.0
    return drains + slices, drains


def time_sliced_gpu_s(cost: GraphCost, t_gpu: float, params: EmulatorParams) -> float:
    """GPU time one worker's step occupies when ``cost.workers`` processes time-slice one GPU
    (no MPS), seconds: its kernels plus ``ctx_switch_us`` per switch into its context
    (``context_switches``); ``t_gpu`` for a single process. ``perf.estimate`` waits for
    ``workers * t`` per step."""
    n, _ = context_switches(cost, t_gpu, params)
    return t_gpu + n * params.ctx_switch_us * 1e-6


def time_slice_wait_s(cost: GraphCost, t_gpu: float, params: EmulatorParams) -> float:
    """Host time one worker waits per step for its context to be switched back in after a
    queue drain (its host is blocked at that synchronisation), seconds: ``ctx_switch_us`` per
    drain switch (``context_switches``); 0 for a single process."""
    _, drains = context_switches(cost, t_gpu, params)
    return drains * params.ctx_switch_us * 1e-6
