"""Per-iteration time, utilisations and execution time of a job on a device.

GPU time of one training step (a roofline per kernel, summed over the OpGraph)::

    t_gpu = sum_i max(flops_i / (peak_i * eff_class(i) * eff_arch * fill_i),
                      bytes_i / (bw * eff_bw * eff_arch * fill_i)) + launch
          + batch bytes / (PCIe * eff_h2d)

**Parallelism from work**: ``fill_i = w_i / (w_i + SMs * fill_threads_per_sm)``
where ``w_i`` is the number of elements the kernel touches, inputs and outputs
(``bytes_accessed / dtype_bytes``), not its output size: a reduction or a loss with a scalar
output reads its whole input with one thread per element (a tree reduction), an optimizer
update touches parameters, gradients and state; a GEMM's tiles cover its operands. A scalar
loss therefore costs microseconds, and a reduction's time grows with its input.

**Memory latency** (``params.mem_latency_us``, cited in the calibration; 0 = the older fill
model): a non-recurrent kernel's memory side is ``bytes / bw + mem_latency``
(Little's law: full bandwidth once a DRAM round trip is paid), not ``bytes / (bw * fill)``,
whose limit for a tiny kernel, ``SMs x fill_threads_per_sm x dtype / bw``, is a latency of
2-8 us (8.4 us for BatchNorm's ``num_batches_tracked += 1`` on an L4) where GPU DRAM accesses
take ~0.2 us (200-800 cycles; Dive into Deep Learning §13.4): 0.4 us = a load and the
dependent store. Recurrent layers keep the per-timestep fill.

**Recurrent layers** (``gpuscope.graphs.ops.recurrent``: one ``gpuscope.<cell>_recurrence`` node
per layer and direction, and one ``..._backward`` for backward-data) are sequential kernels,
as cuDNN runs them: T timesteps, each a GEMM ``(B x H) @ (H x G*H)`` and one fused
element-wise kernel, each timestep waiting for the previous one. With the node's totals
``f`` (FLOPs), ``b`` (bytes) over T steps, per timestep ``f/T``, ``b/T`` and the parallelism
of one step, ``w = B * G * H`` gate elements (B batch, G gates: LSTM 4, GRU 3, RNN 1; H
hidden)::

    t_rnn = T * (max(f/T / (peak * eff * eff_arch * fill(w)), b/T / (bw * ...  * fill(w)))
                 + RNN_KERNELS_PER_STEP * launch)
          = max(f / (... fill(w)), b / (... fill(w))) + T * RNN_KERNELS_PER_STEP * launch

so a small batch fills a small part of the GPU for every step (``fill(w)`` with the per-step
``w``, not the T-fold total), and ``RNN_KERNELS_PER_STEP * launch`` is the per-timestep
latency floor. The memory side uses the elements one step moves, ``b / (T * dtype)``, as
every other kernel's does (the weights are read by many threads at once). A one-step
recurrence (an ``nn.LSTMCell`` call) has no chain: its GEMM's parallelism is that of any GEMM
(the elements it touches). The input projection of all timesteps and the weight gradient
are ordinary, fully parallel GEMMs (``aten.addmm``/``aten.mm`` nodes). Host: the node is one PyTorch op
(one ``dispatch_us``); cuDNN's own per-timestep launches cost the host about what they cost
the GPU (``launch``) and overlap with it, so they are not charged twice.

**Fused attention** (``gpuscope.graphs.ops.attention``: one ``gpuscope.sdpa_attention`` node
forward, one backward, as FlashAttention/the memory-efficient kernel run it) is a GEMM-class
kernel: its FLOPs are ``torch.utils.flop_counter``'s (backward includes the recomputed
``Q K^T``), a causal node's scaled by the fraction of score tiles the kernel visits
(``graphs.ops.aten.causal_fraction``, 128-row tiles), its traffic ``q, k, v``, output, logsumexp
(and mask), ``O(B H S d)``, not the ``S x S`` probabilities.

``peak_i`` by precision (``JobSpec.precision``; ``fp32`` when the job has none):

* ``fp32``: FP32 peak; convolutions and recurrent layers use the TF32 tensor cores on Ampere
  and later (cuDNN's default in PyTorch, ``cudnn.allow_tf32``), matmuls do not
  (``matmul.allow_tf32`` is off by default);
* ``tf32``: convolutions and matmuls on the TF32 tensor-core peak (Ampere and later);
* ``amp-fp16``: convolutions and matmuls on the FP16 tensor-core peak (Volta and later), all
  activation traffic halved; ``amp-bf16``: the same on Ampere and later (no BF16 tensor cores
  before: FP32 rate); the optimizer update stays FP32, and so do the ops CUDA autocast runs in
  FP32 (norms, softmax, losses, reductions: ``graphcost.AUTOCAST_FP32_FORWARD``; the halving is
  for graphs not traced under autocast, a traced one carries its dtypes). Half-precision
  tensor-core convolutions on NCHW tensors (PyTorch's default memory format) also pay
  cuDNN's NCHW<->NHWC transposes: ``amp_layout_passes`` more passes over each convolution's traffic, memory-bound.

Fused attention on FP32 tensors (``fp32`` and ``tf32`` jobs) is neither: FlashAttention and
cuDNN attention take half precision only, so PyTorch runs its memory-efficient kernel, whose
FP32 GEMMs on sm80+ are CUTLASS's 3xTF32 (``OpMultiplyAddFastF32``: three TF32 tensor-core
products per FP32 product; ``aten/src/ATen/native/transformers/cuda/mem_eff_attention/
gemm_kernel_utils.h``, ``DefaultGemmType<ArchTag >= 80, float>``), whatever
``matmul.allow_tf32`` says: ``tf32 peak / 3 x tensor_eff x arch_eff`` on Ampere and later
(no new constant); before Ampere the kernel uses CUDA cores (the FP32 matmul rate).

``eff_class * eff_arch`` is replaced, for the compute side only, by a cited
``arch_class_eff["<arch>:<class>"]`` where one exists (``class_compute_eff``; e.g. Kepler
matmuls at cuBLAS SGEMM's 0.63 of peak, Kepler convolutions stay fitted on ResNet-50).

3x3 convolutions (``GraphCost.winograd``) run ``winograd_speedup`` times faster (cuDNN's
Winograd kernels), or ``arch_winograd[arch]`` where the architecture has its own figure
(Kepler's, fitted on published K40c vs GTX 1080 cuDNN 5 times
of eight CNNs, docs/emulator.md).

Every ``peak_i`` is the datasheet figure at boost clock times the device's ``clock_factor``
(sustained over boost SM clock under load where the catalog cites one, e.g. the 70 W T4;
else 1); the memory bandwidth is not scaled (the memory clock is not
power-throttled).

Host, in parallel: the main thread dispatches every op (``dispatch_us`` per op on a reference
core; ``cudnn_dispatch_us`` per convolution/normalisation kernel, ``view_dispatch_us`` per
view) and synchronises once per step (``step_sync_ms``), plus, when the batch comes from
DataLoader worker processes, their hand-off (``loader_handoff_ms``), with the values of the
device's host era (``DeviceSpec.host_era``, ``EmulatorParams.for_era``); the input pipeline
prepares the next batch (``cpu_ms_per_sample * batch / (cores * speed)``), or, for a dataset
indexed on the main thread (``inline_ops_per_sample``), its ops are serial host work. In an era
with ``per_tensor_optimizer`` (PyTorch 1.x) each traced foreach optimizer kernel is one kernel
and one dispatch per parameter tensor, and ``zero_grad`` zeroes every gradient (``hostwork``). One iteration lasts
``max(max(t_gpu, t_dispatch) + t_sync + t_serial, workers * t_slice, workers * t_pipeline)``:
``t_serial`` is host work the device waits for (``hostwork``: an RL job's environment steps,
a host-side optimizer, a sparse batch built on the main thread, which is then copied as COO
and densified on the device; 0 for other jobs) and ``workers`` the processes sharing the GPU
without MPS (Hogwild workers; 1 for other jobs), each paying a context switch per kernel
after which its queue drains (``t_slice``, ``hostwork.time_sliced_gpu_s``; ``t_gpu`` for one
process). NVML's utilization.gpu is the busy fraction ``t_gpu / t_iter``, utilization.memory the memory-busy fraction. Execution time =
start-up (process and CUDA context, cuDNN autotuning of each distinct convolution
configuration, weights upload) + epochs x (steps x t_iter +
evaluation + checkpoint) + expected input-pipeline stalls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuscope.cluster.devices import DeviceSpec
from gpuscope.cluster.precision import usable_peaks
from gpuscope.emulator.graphcost import (  # noqa: F401  (re-exported)
    _CLASS_INDEX,
    _CUDNN_CLASSES,
    _NO_KERNEL_CLASSES,
    _TF32_ARCHS,
    PRECISIONS,
    RNN_KERNELS_PER_STEP,
    EmulatedJob,
    GraphCost,
    job_precision,
)
from gpuscope.emulator.hostwork import (
    achievable_bw,
    batch_h2d_bytes,
    cpu_ms_per_sample,
    host_serial_times,
    loader_times,
    per_tensor_kernels,
    sparse_batch_host_s,
    sparse_densify_s,
    time_sliced_gpu_s,
    zero_grad_gpu_s,
)
from gpuscope.emulator.memory import (
    OPTIMIZER_COPIES,
    MemoryFootprint,
    footprint_from_sizes,
)
from gpuscope.emulator.params import EmulatorParams, default_params
from gpuscope.graphs.opgraph import OP_CLASSES, OpGraph


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


def _mm_rate(cost: GraphCost, device: DeviceSpec, params: EmulatorParams, precision: str,
             rate: np.ndarray) -> np.ndarray:
    """Compute rate of conv/matmul kernels under ``precision`` (module docstring): ``rate`` (the
    CUDA-core rates) raised to the tensor-core peak x ``tensor_eff`` x ``arch_eff`` where the
    precision and the architecture use tensor cores."""
    is_mm = cost.is_mm if cost.is_mm is not None else cost.is_conv_fp32
    arch = params.arch_eff.get(device.arch, 1.0)
    tf32 = device.tf32_tflops * 1e12 * params.tensor_eff * arch
    fp16 = device.tensor_tflops * 1e12 * params.tensor_eff * arch
    if precision == "fp32" and device.tf32_tflops > 0:
        rate = np.where(cost.is_conv_fp32, np.maximum(rate, tf32), rate)
    elif precision == "tf32" and device.tf32_tflops > 0:
        rate = np.where(is_mm, np.maximum(rate, tf32), rate)
    elif precision == "amp-fp16" and device.tensor_tflops > 0:
        rate = np.where(is_mm, np.maximum(rate, fp16), rate)
    elif precision == "amp-bf16" and device.arch in _TF32_ARCHS and device.tensor_tflops > 0:
        rate = np.where(is_mm, np.maximum(rate, fp16), rate)
    if device.tensor_tflops > 0:  # a graph traced in half precision
        rate = np.where(cost.is_half, np.maximum(rate, fp16), rate)
    if cost.attn_fp32 is not None and device.tf32_tflops > 0 and precision in ("fp32", "tf32"):
        # FP32 attention runs PyTorch's memory-efficient kernel (FlashAttention and cuDNN take
        # half precision only), which on sm80+ computes FP32 as 3xTF32 on the tensor cores
        # whatever ``matmul.allow_tf32`` says: a third of the TF32 peak (module docstring)
        rate = np.where(cost.attn_fp32, tf32 / 3.0, rate)
    return rate


#: CTA tile of a tensor-core GEMM (rows x columns of the output), and the least K a split-K
#: slice gets (4 k-tiles of 64): ``gemm_wave_fill`` (assumptions: the mid-size tile of
#: cuBLAS's list in NVIDIA's "Matrix Multiplication Background User's Guide", not fitted).
GEMM_TILE: int = 128
GEMM_MIN_K_SLICE: int = 256


def gemm_wave_fill(mnk: np.ndarray, sm_count: int) -> np.ndarray:
    """Fraction of the GPU a tensor-core GEMM keeps busy: tile and wave quantisation (NVIDIA,
    "Matrix Multiplication Background User's Guide", https://docs.nvidia.com/deeplearning/
    performance/dl-performance-matrix-multiplication/index.html, "Tile quantization" and
    "Wave quantization"). The output ``batch x M x N`` is cut into ``GEMM_TILE``-square tiles,
    one per SM at a time; a GEMM with fewer tiles than SMs splits K (split-K) into as many
    slices as fill the SMs, each at least ``GEMM_MIN_K_SLICE`` deep. Fill = useful tile work
    over ``waves x SMs``; ``kernel_times`` takes the CUDA-core kernel instead where it is
    faster (a tiny GEMM: cuBLAS's heuristics pick the faster kernel). ``mnk`` rows are ``(batch, M, N, K)``; 1 where batch is 0 (not a
    GEMM)."""
    b, m, n, k = mnk[:, 0], mnk[:, 1], mnk[:, 2], mnk[:, 3]
    gemm = b > 0
    t = float(GEMM_TILE)
    tiles = np.where(gemm, b * np.ceil(m / t) * np.ceil(n / t), 1.0)
    split = np.where(tiles < sm_count,
                     np.clip(np.minimum(sm_count // tiles, np.floor(k / GEMM_MIN_K_SLICE)), 1.0, None),
                     1.0)
    slots = tiles * split
    waves = np.ceil(slots / sm_count)
    useful = b * m * n / (t * t) * split
    return np.where(gemm, np.minimum(1.0, useful / (waves * sm_count)), 1.0)


def class_compute_eff(params: EmulatorParams, arch: str) -> np.ndarray:
    """Fraction of the FP32 (CUDA-core) peak each op class (``OP_CLASSES`` order) reaches on
    ``arch`` when it fills the GPU: ``class_eff * arch_eff``, except the cited
    ``arch_class_eff`` pairs (e.g. cuBLAS SGEMM on Kepler), which replace it."""
    a = params.arch_eff.get(arch, 1.0)
    other = params.class_eff.get("other", 0.3)
    return np.array([params.arch_class_eff.get(f"{arch}:{c}", params.class_eff.get(c, other) * a)
                     for c in OP_CLASSES], dtype=np.float64)


def kernel_times(cost: GraphCost, device: DeviceSpec, params: EmulatorParams,
                 precision: str = "fp32") -> tuple[np.ndarray, np.ndarray]:
    """(time, memory-busy time) of every kernel of one step, seconds (module docstring)."""
    ceff = class_compute_eff(params, device.arch)
    rate = _mm_rate(cost, device, params, precision, device.fp32_tflops * 1e12 * ceff[cost.cls])
    wino = params.arch_winograd.get(device.arch, params.winograd_speedup)  # 3x3 convolutions
    rate = np.where(cost.winograd, rate * wino, rate)
    work = cost.work if cost.work is not None else cost.numel
    fill = work / (work + device.sm_count * params.fill_threads_per_sm)
    byts = cost.bytes
    if precision.startswith("amp") and cost.optimizer is not None and not cost.half_traced:
        # half-precision activations, but for the optimizer and the ops autocast keeps FP32
        keep = cost.optimizer if cost.keeps_fp32 is None else cost.optimizer | cost.keeps_fp32
        byts = np.where(keep, byts, 0.5 * byts)
    t_flop = cost.flops / (rate * fill * device.clock_factor)  # sustained SM clock
    if cost.gemm_mnk is not None:  # a tensor-core GEMM's parallelism is its tiles ...
        cuda_core = device.fp32_tflops * 1e12 * ceff[cost.cls]
        tensor = (cost.gemm_mnk[:, 0] > 0) & (rate > cuda_core * 1.0001)
        wave = gemm_wave_fill(cost.gemm_mnk, device.sm_count)
        t_tc = cost.flops / (rate * wave * device.clock_factor)
        # ... unless a CUDA-core kernel is faster (cuBLAS's heuristics pick the faster one)
        t_cc = cost.flops / (cuda_core * fill * device.clock_factor)
        t_flop = np.where(tensor, np.minimum(t_tc, t_cc), t_flop)
    if cost.work_mem is not None:  # a recurrence streams one step's bytes at a time
        fill = cost.work_mem / (cost.work_mem + device.sm_count * params.fill_threads_per_sm)
    bw_full = achievable_bw(device, params)
    bw = bw_full * fill
    t_mem = byts / bw
    if params.mem_latency_us > 0:  # Little's law: full bandwidth after one DRAM latency
        flat = byts / bw_full + params.mem_latency_us * 1e-6
        t_mem = flat if cost.steps is None else np.where(cost.steps > 0, t_mem, flat)
    launches = 1.0 if cost.steps is None else np.where(cost.steps > 0, cost.steps * RNN_KERNELS_PER_STEP, 1.0)
    launches = launches * per_tensor_kernels(cost, params)
    t_op = np.maximum(t_flop, t_mem) + params.launch_us * 1e-6 * launches
    if params.amp_layout_passes > 0 and _half_tensor_convs(cost, device, precision):
        # NCHW activations: cuDNN's half-precision tensor-core kernels work in NHWC, so each
        # convolution (forward and backward) is wrapped in layout transposes of its tensors
        t_lay = np.where(cost.cls == _CLASS_INDEX["conv"], params.amp_layout_passes * byts / bw, 0.0)
        t_op, t_mem = t_op + t_lay, t_mem + t_lay
    return t_op, t_mem


def _half_tensor_convs(cost: GraphCost, device: DeviceSpec, precision: str) -> bool:
    """Whether convolutions run on half-precision tensor cores (see ``_mm_rate``)."""
    if device.tensor_tflops <= 0:
        return False
    return (precision == "amp-fp16" or cost.half_traced
            or (precision == "amp-bf16" and device.arch in _TF32_ARCHS))


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
    t_serial = t_env + t_update + t_batch + t_inline
    # worker processes share the GPU (time-sliced contexts): their kernels and the context
    # switches between them add up (hostwork.time_sliced_gpu_s)
    t_gpu_all = cost.workers * time_sliced_gpu_s(cost, t_gpu, t_dispatch, device, p)
    iter_s = max(max(t_gpu, t_dispatch) + t_sync + t_serial, t_gpu_all, t_pipe)
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
    eval_iter = max(t_fwd + t_h2d, cost.dispatch_s(p, speed, forward_only=True), t_pipe)
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

