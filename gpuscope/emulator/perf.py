"""Per-iteration time, utilisations and execution time of a job on a device.

GPU time of one training step: every kernel of the traced step priced by the kernel model
(``gpuscope.emulator.kernels``, emulator 3.0: per-class models of cuBLAS GEMMs with tile and
wave quantisation, cuDNN convolutions, memory-bound and row-reduction kernels, fitted on
measured kernels; the device enters through its spec sheet only), plus the batch's copy::

    t_gpu = sum_i t_kernel(i) + batch bytes / (PCIe * eff_h2d)

``GraphCost.kernels`` holds each node's kernel shapes (``graphkernels``); which peak a
kernel's math runs at under the job's precision (TF32, FP16/BF16 tensor cores, autocast's
FP32 islands, 3xTF32 attention) is ``kernels.precision``, the one place for those rules.
Four graph-level terms stay here: a **recurrent layer** (one ``gpuscope.<cell>_recurrence``
node per layer and direction) is ``T`` sequential timesteps, each one GEMM of its batch and
one fused element-wise kernel (``RNN_KERNELS_PER_STEP`` launches)::

    t_rnn = T * (t_kernel(one step's GEMM and traffic) + launch)

**per-tensor optimizer loops** of a PyTorch 1.x host era launch each foreach kernel once per
parameter tensor (``hostwork.per_tensor_kernels``: ``launch`` per extra kernel); a
convolution's **bias** is its own memory-bound kernel (PyTorch adds it after the cuDNN call and
reduces the output gradient for its gradient: ``graphcost.conv_bias_bytes``,
``bias_kernel_times``; launched inside the convolution's own call, so no dispatch of its
own); and half-precision tensor-core convolutions on NCHW tensors (PyTorch's default memory format) pay
cuDNN's NCHW<->NHWC transposes, ``amp_layout_passes`` more memory-bound passes over each
convolution's traffic. A fused attention node is a GEMM-class kernel (its FLOPs are
``torch.utils.flop_counter``'s, causal ones scaled by the score tiles visited; traffic
``O(B H S d)``).

Host, in parallel: the main thread dispatches every op (``dispatch_us`` per op on a reference
core; ``cudnn_dispatch_us`` per convolution/normalisation kernel, ``view_dispatch_us`` per
view) and synchronises once per step (``step_sync_ms``), plus, when the batch comes from
DataLoader worker processes, their hand-off (``loader_handoff_ms``), with the values of the
device's host era (``DeviceSpec.host_era``, ``EmulatorParams.for_era``); the input pipeline
prepares the next batch (``cpu_ms_per_sample * batch / (cores * speed)``), or, for a dataset
indexed on the main thread (``inline_ops_per_sample``), its ops are serial host work. In an era
with ``per_tensor_optimizer`` (PyTorch 1.x) each traced foreach optimizer kernel is one kernel
and one dispatch per parameter tensor, and ``zero_grad`` zeroes every gradient (``hostwork``). One iteration lasts
``max(host_gpu(t_gpu, t_dispatch) + t_sync + t_serial, workers * t_slice, workers * t_pipeline)``:
``host_gpu`` is their p-norm, the max of the two when one dominates and more than the max
as they get close (``hostwork.host_gpu_s``: the launch queue and the GPU alternately starve);
``t_serial`` is host work the device waits for (``hostwork``: an RL job's environment steps,
a host-side optimizer, a sparse batch built on the main thread, which is then copied as COO
and densified on the device; 0 for other jobs) and ``workers`` the processes sharing the GPU
without MPS (Hogwild workers; 1 for other jobs), each paying a context switch per time slice
and per queue drain (``t_slice``, ``hostwork.context_switches``; ``t_gpu`` for one process)
and waiting for its context after each drain (in ``t_serial``). NVML's utilization.gpu is the busy fraction ``t_gpu / t_iter``, utilization.memory the memory-busy fraction. Execution time =
start-up (process and CUDA context, cuDNN autotuning of each distinct convolution
configuration, weights upload) + epochs x (steps x t_iter +
evaluation + checkpoint) + expected input-pipeline stalls.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, replace

import numpy as np

from gpuscope.cluster.devices import DeviceSpec
from gpuscope.cluster.precision import usable_peaks
from gpuscope.emulator.graphcost import (  # noqa: F401  (re-exported)
    _CLASS_INDEX,
    _CUDNN_CLASSES,
    _NO_KERNEL_CLASSES,
    PRECISIONS,
    RNN_KERNELS_PER_STEP,
    EmulatedJob,
    GraphCost,
    job_precision,
)
from gpuscope.emulator.hostwork import (
    batch_h2d_bytes,
    cpu_ms_per_sample,
    host_gpu_s,
    host_serial_times,
    loader_times,
    per_tensor_kernels,
    sparse_batch_host_s,
    sparse_densify_s,
    time_slice_wait_s,
    time_sliced_gpu_s,
    zero_grad_gpu_s,
)
from gpuscope.emulator.kernels.device import KernelDevice
from gpuscope.emulator.kernels.memory import stream_time
from gpuscope.emulator.kernels.model import KIND, ROW_TABLES, KernelBatch, price
from gpuscope.emulator.kernels.precision import (
    amp_traffic,
    half_on_tensor_cores,
    model_half_keeps_fp32,
)
from gpuscope.emulator.memory import (
    OPTIMIZER_COPIES,
    MemoryFootprint,
    footprint_from_sizes,
)
from gpuscope.emulator.params import EmulatorParams, default_params
from gpuscope.graphs.opgraph import OpGraph


@dataclass(frozen=True)
class Estimate:
    """The emulator's prediction for one job on one device (times in seconds, utilisations as
    fractions 0-1, memory in MB)."""

    device: str
    status: str
    t_gpu_s: float
    t_gpu_fwd_s: float
    t_mem_s: float
    t_dispatch_s: float
    t_pipeline_s: float
    iter_s: float
    t_sync_s: float
    gpu_util: float
    gpu_mem_util: float
    cpu_util: float
    mem_mb: float
    memory: MemoryFootprint
    startup_s: float
    eval_s: float
    ckpt_s: float
    stall_s: float
    exec_time_s: float
    bottleneck: str
    batch_size: int

    @property
    def samples_per_s(self) -> float:
        """Training throughput (0 for a run that does not fit)."""
        return 0.0 if self.status != "ok" else self.batch_size / self.iter_s

    @property
    def fit_status(self) -> str:
        """``fits``, ``at_risk`` or ``oom`` (``memory.MemoryFootprint.fit_status``); status
        ``oom`` exactly when this is ``oom``."""
        return self.memory.fit_status


#: ``kernel_times`` results by (graph cost, device, precision, kernel parameters and the two
#: host-era figures it reads): a campaign estimates one graph many times (epochs, seeds) and a
#: host-side fit re-estimates the same graphs with other host parameters only.
_TIMES: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = {}


def kernel_times(cost: GraphCost, device: DeviceSpec, params: EmulatorParams,
                 precision: str = "fp32") -> tuple[np.ndarray, np.ndarray]:
    """(time, memory-busy time) of every kernel of one step, seconds (module docstring)."""
    key = (id(cost), device, precision, id(params.kernels), params.amp_layout_passes,
           params.per_tensor_optimizer)
    hit = _TIMES.get(key)
    if hit is None:
        hit = _TIMES[key] = _kernel_times(cost, device, params, precision)
        weakref.finalize(cost, _TIMES.pop, key, None)  # an id is reused once its cost is gone
        weakref.finalize(params.kernels, _TIMES.pop, key, None)
    return hit[0].copy(), hit[1].copy()


def _kernel_times(cost: GraphCost, device: DeviceSpec, params: EmulatorParams,
                  precision: str) -> tuple[np.ndarray, np.ndarray]:
    kp = params.kernels
    dev = KernelDevice.from_spec(device)
    kb = cost.kernels if cost.kernels is not None else flops_batch(cost)
    keep: np.ndarray | None
    if cost.pure_half:
        keep = model_half_keeps_fp32((kb.kind == KIND["rows"])
                                     & (kb.rowsub == ROW_TABLES.index("batch_norm")))
    else:
        keep = cost.optimizer if cost.keeps_fp32 is None or cost.optimizer is None else (
            cost.optimizer | cost.keeps_fp32)
    byts = amp_traffic(cost.bytes, precision, cost.half_traced, keep)
    if byts is not cost.bytes:  # half-precision activations of a graph traced in FP32
        scale = np.where(cost.bytes > 0, byts / np.maximum(cost.bytes, 1e-30), 1.0)
        kb = replace(kb, bytes=kb.bytes * scale, work=kb.work * scale)
    t_op = price(kb, dev, kp, precision)
    t_mem = stream_time(kb.bytes, kb.work, dev, kp.memory)
    launch = kp.launch_us * 1e-6
    if cost.steps is not None:  # a recurrence: T sequential steps of a GEMM + element-wise
        rec = cost.steps > 0
        t_op = np.where(rec, cost.steps * (t_op + (RNN_KERNELS_PER_STEP - 1) * launch), t_op)
        t_mem = np.where(rec, cost.steps * t_mem, t_mem)
    t_op = t_op + (per_tensor_kernels(cost, params) - 1.0) * launch
    if cost.bias_bytes is not None:  # a convolution's bias: its own memory-bound kernel
        t_b, t_bm = bias_kernel_times(cost, dev, params, precision)
        t_op, t_mem = t_op + t_b, t_mem + t_bm
    if params.amp_layout_passes > 0 and half_on_tensor_cores(dev, precision, cost.half_traced):
        # NCHW activations: cuDNN's half-precision tensor-core kernels work in NHWC, so each
        # convolution (forward and backward) is wrapped in layout transposes of its tensors
        conv = cost.cls == _CLASS_INDEX["conv"]
        t_lay = np.where(conv, params.amp_layout_passes * stream_time(kb.bytes, kb.work, dev, kp.memory), 0.0)
        t_op, t_mem = t_op + t_lay, t_mem + t_lay
    return t_op, t_mem


def bias_kernel_times(cost: GraphCost, dev: KernelDevice, params: EmulatorParams,
                      precision: str) -> tuple[np.ndarray, np.ndarray]:
    """(time, memory-busy time) of each kernel node's separate bias kernel (``GraphCost.
    bias_bytes``: a convolution's bias add, or its bias-gradient reduction), seconds; 0 where
    the node has none. A memory-bound kernel of the model, launch included; half the traffic
    under ``amp-*`` for a graph traced in FP32, as the convolution's activations."""
    assert cost.bias_bytes is not None
    has = cost.bias_bytes > 0
    byts = amp_traffic(cost.bias_bytes, precision, cost.half_traced, np.zeros(len(has), dtype=bool))
    kb = KernelBatch.empty(int(has.sum()))
    kb.bytes[:] = kb.work[:] = byts[has]
    t, t_mem = np.zeros(len(has)), np.zeros(len(has))
    t[has] = price(kb, dev, params.kernels, precision)
    t_mem[has] = stream_time(kb.bytes, kb.work, dev, params.kernels.memory)
    return t, t_mem


def flops_batch(cost: GraphCost) -> KernelBatch:
    """Kernels of a ``GraphCost`` built without shapes (``kernels`` None): convolutions and
    GEMMs priced by FLOPs and bytes, every other kernel as memory-bound."""
    kb = KernelBatch.empty(len(cost.flops))
    mm = (cost.cls == _CLASS_INDEX["conv"]) | (cost.cls == _CLASS_INDEX["matmul"])
    kb.kind[mm] = KIND["flops"]
    kb.flops[:], kb.bytes[:], kb.work[:] = cost.flops, cost.bytes, cost.bytes
    kb.cudnn[:] = cost.cls == _CLASS_INDEX["conv"]
    kb.gemm[:] = cost.cls == _CLASS_INDEX["matmul"]
    if cost.is_half is not None:
        kb.half[:] = cost.is_half
    return kb


def gpu_times(cost: GraphCost, device: DeviceSpec, params: EmulatorParams,
              precision: str = "fp32") -> tuple[float, float, float]:
    """(GPU busy time, its forward-phase part, memory-busy time) of one step, seconds."""
    t_op, t_mem = kernel_times(cost, device, params, precision)
    return float(t_op.sum()), float(t_op[cost.forward].sum()), float(t_mem.sum())


def scalar_fraction(cost: GraphCost, device: DeviceSpec, params: EmulatorParams | None = None,
                    precision: str = "fp32") -> float:
    """Fraction of the step's GPU time spent in kernels with a scalar output."""
    p = params or default_params()
    t_op, _ = kernel_times(cost, device, p, precision)
    if cost.scalar is None or t_op.sum() <= 0:
        return 0.0
    return float(t_op[cost.scalar].sum() / t_op.sum())


def estimate(
    job: EmulatedJob, graph: OpGraph | GraphCost, device: DeviceSpec,
    params: EmulatorParams | None = None,
) -> Estimate:
    """Emulate ``job`` on ``device`` from its training-step graph (see the module docstring)."""
    p = (params or default_params()).for_era(device.host_era)
    cost = graph if isinstance(graph, GraphCost) else GraphCost.from_graph(graph, job.batch_size)
    prec = job_precision(job)
    # the tensor-core formats the architecture has for this precision (no BF16 before Ampere)
    device = usable_peaks(device, prec)
    # a graph traced under autocast already holds half-precision activations and weight casts
    mem = footprint_from_sizes(cost.param_bytes, cost.act_bytes(p), job.optimizer, device, p,
                               "fp32" if cost.half_traced else prec)
    if cost.workers > 1:  # one process per worker: each its own context, model and state
        mem = mem.times(float(cost.workers))
    speed = device.host_single_core
    t_gpu, t_fwd, t_mem = gpu_times(cost, device, p, prec)
    t_gpu += zero_grad_gpu_s(cost, device, p)
    t_opt_gpu = 0.0
    if cost.host_optimizer and cost.optimizer is not None:  # it runs on the host instead
        t_opt_gpu = float(kernel_times(cost, device, p, prec)[0][cost.optimizer].sum())
        t_gpu -= t_opt_gpu
    t_env, t_update = host_serial_times(cost, job, device, p)
    t_h2d = batch_h2d_bytes(cost, job) / (device.pcie_gbs * 1e9 * p.h2d_eff)
    t_h2d += sparse_densify_s(cost, job.batch_size, device, p)
    t_gpu += t_h2d
    t_dispatch = cost.dispatch_s(p, speed)
    cores = device.host_pipeline_cores
    # an RL job's environment is its input pipeline, stepped in line with the device; a sparse
    # batch built on the main thread is too (no loader workers)
    t_batch = sparse_batch_host_s(cost, job.batch_size, device, p)
    t_handoff, t_inline = loader_times(job, device, p)
    in_line = bool(cost.env_steps) or t_batch > 0 or p.inline_ops_per_sample.get(job.dataset, 0.0) > 0
    cpu_per_iter = 0.0 if in_line else job.batch_size * cpu_ms_per_sample(job, p) * 1e-3 / speed
    # worker processes each feed their own step from the host's pipeline cores
    t_pipe = cost.workers * cpu_per_iter / cores
    # the worker hand-off only where the batch comes from loader workers
    t_sync = p.step_sync_ms * 1e-3 / speed + (0.0 if in_line else t_handoff)
    # worker processes share the GPU (time-sliced contexts): their kernels and the context
    # switches between them add up, and each waits for its context after a queue drain
    # (hostwork.context_switches)
    t_serial = t_env + t_update + t_batch + t_inline + time_slice_wait_s(cost, t_gpu, p)
    t_gpu_all = cost.workers * time_sliced_gpu_s(cost, t_gpu, p)
    iter_s = max(host_gpu_s(t_gpu, t_dispatch, p) + t_sync + t_serial, t_gpu_all, t_pipe)
    # "dispatch" is the main thread: its dispatching plus the host work the device waits for
    bottleneck = ("gpu", "dispatch", "input")[int(np.argmax([t_gpu_all, t_dispatch + t_serial,
                                                             t_pipe]))]
    # CPU: pipeline workers + the dispatching main thread (of each worker process), over all
    # hardware threads.
    busy_cores = cost.workers * (cpu_per_iter + t_dispatch + t_sync + t_serial) / iter_s
    cpu_util = min(1.0, busy_cores / device.host_threads)

    startup = (p.startup_s + p.autotune_s_per_conv * cost.n_conv_configs
               + cost.param_bytes / (device.pcie_gbs * 1e9 * p.h2d_eff))
    steps = job.steps
    eval_steps = max(1, math.ceil(p.eval_fraction * steps))
    eval_iter = max(host_gpu_s(t_fwd + t_h2d, cost.dispatch_s(p, speed, forward_only=True), p), t_pipe)
    eval_s = eval_steps * eval_iter
    ckpt_s = 0.2 + cost.param_bytes * (1 + OPTIMIZER_COPIES.get(job.optimizer, 1)) / (p.ckpt_gbs * 1e9)
    train_s = job.epochs * (steps * iter_s + eval_s + ckpt_s)
    stall = p.stall_rate_per_min * train_s / 60.0 * p.stall_s
    if mem.fits:
        status, exec_s = "ok", startup + train_s + stall
    else:  # the first step's allocation fails after start-up
        status, exec_s = "oom", startup
    return Estimate(
        device=device.name, status=status, t_gpu_s=t_gpu, t_gpu_fwd_s=t_fwd, t_mem_s=t_mem,
        t_dispatch_s=t_dispatch, t_pipeline_s=t_pipe, iter_s=iter_s, t_sync_s=t_sync,
        gpu_util=min(1.0, t_gpu_all / iter_s),
        gpu_mem_util=min(1.0, cost.workers * t_mem / iter_s),
        cpu_util=cpu_util, mem_mb=mem.total_mb, memory=mem, startup_s=startup, eval_s=eval_s,
        ckpt_s=ckpt_s, stall_s=stall if status == "ok" else 0.0, exec_time_s=exec_s,
        bottleneck=bottleneck, batch_size=job.batch_size,
    )

