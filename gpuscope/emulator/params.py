"""The emulator's parameters: host costs, overheads, memory terms (docs/emulator.md).

Physical figures come from the device catalog (``gpuscope.cluster.devices``). How fast each kernel runs
on a device is the kernel model's (``gpuscope.emulator.kernels``, its fitted constants in
``kernels/kernel_params.json``, carried here as ``kernels``); what is here is the rest no
datasheet gives: the host's dispatch, sync and input pipeline per host era, start-up,
memory-footprint terms, data-parallel overlap. Few numbers, fitted on declared fit sets
(``gpuscope.emulator.calibration.fit``); the calibrated values live in ``calibration.json``.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.emulator.kernels.params import KernelParams, default_kernel_params

CALIBRATION_FILE: Path = Path(__file__).with_name("calibration.json")
#: Version of the emulator's model; bump on any change to performance, memory or traces
#: (the bundled emulated datasets record it; ``gpuscope.emulator.calibration.bundle``).
EMULATOR_VERSION: str = "3.4"
#: GPU-side constants of emulator 2.x, now the kernel model's (``kernels/kernel_params.json``).
GPU_SIDE_V2: frozenset[str] = frozenset({
    "class_eff", "arch_eff", "arch_class_eff", "arch_winograd", "bw_eff", "tensor_eff",
    "winograd_speedup", "fill_threads_per_sm", "launch_us", "mem_latency_us"})


def _default_cpu_ms() -> dict[str, float]:
    # Input pipeline CPU cost per sample, in ms of one i7-4790K core (docs/emulator.md):
    # ImageNet: JPEG decode (~110 KB, ~400x350) + random-resized crop + flip + normalise with
    # PIL/libjpeg-turbo runs at ~150-200 images/s per core -> 6 ms; CIFAR-10/MNIST: random
    # crop/flip + to-tensor of a decoded 32x32 (28x28) array, ~0.1 ms.
    return {"imagenet": 6.0, "cifar10": 0.12, "mnist": 0.05}


def _default_cpu_ms_kind() -> dict[str, float]:
    # By dataset kind when the dataset has no entry above: decoded images by pixel count
    # (JPEG decode + augmentation of a 256x256 photo ~3 ms), token/sequence/tabular batches
    # are index lookups into tensors already in memory (~10 us per sample); RL frames come
    # from an emulator step (Atari ALE ~0.2 ms per frame with preprocessing).
    return {"image": 3.0, "tokens": 0.01, "sequence": 0.01, "tabular": 0.005, "frames": 0.2}


def _default_inline_ops() -> dict[str, float]:
    # Datasets a training loop indexes on its main thread, without DataLoader worker
    # processes: ops dispatched per sample. Gavel's LM (workloads/pytorch/language_modeling/
    # main.py, CorpusDataset on the GPU, DataLoader num_workers=0): get_input slices data and
    # target (slice + select each, a view), two new_zeros and two cats = 9 ops per sample.
    return {"wikitext2": 9.0}


@dataclass(frozen=True)
class EmulatorParams:
    """All tunable constants of the performance model (see the module docstring).

    Attributes:
        kernels: the kernel model's fitted constants (``KernelParams``; not saved in
            ``calibration.json``: they live in ``kernels/kernel_params.json``).
        dispatch_us: host-side framework cost per kernel on a reference core, microseconds
            (PyTorch eager dispatch); the main thread must issue every kernel.
        cudnn_dispatch_us: the same for a convolution or normalisation kernel (cuDNN calls:
            descriptor and execution-plan set-up), microseconds.
        view_dispatch_us: the same for a view op (no kernel), microseconds. Legacy era 2.8:
            a view only computes sizes and strides and makes a tensor that aliases its input;
            PyTorch's operator micro-benchmark timed ``as_strided`` from Python at 2.8 us
            (pytorch/pytorch PR #28890, 2019) and ``x.view(-1)`` from C++ at 0.58 us
            (PR #61466), against the ~12 us of an op that launches a kernel. Set, not fitted
            (a backward's views, e.g. ``cat``'s gradient slices, are C++ calls: the upper
            figure is the conservative one).
        per_tensor_optimizer: 1 when the host's framework runs the optimizer update and
            ``zero_grad`` as a Python loop over parameter tensors (PyTorch 1.x, TF 1.x's
            per-variable apply ops: one kernel and one dispatch per tensor per step of the
            update), 0 when it runs one foreach kernel per step as traced (PyTorch >= 2.0);
            ``hostwork.optimizer_tensor_counts``. Not fitted: a property of the software era.
        host_gbs: streaming memory bandwidth of one reference host core, GB/s (a host-side
            optimizer, ``hostwork.host_serial_times``); assumed from one-thread STREAM figures of
            2014-2016 desktop/server cores (10-15 GB/s), not fitted.
        step_sync_ms: serial host latency per step on a reference core, ms: the training
            loop synchronises every step (``loss.item()``; the DataLoader hand-off is
            ``loader_handoff_ms``), so
            the GPU waits this long before the next step's first kernel. Legacy era: the
            modern era's value measured on the H100 (in-process steps, no loader), an
            assumption: the bubble is taken as the same in both software generations.
        loader_handoff_ms: serial latency per step of taking the batch from DataLoader
            worker processes (multiprocessing queue, shared-memory tensors passed by file
            descriptor, unpickled on the main thread), reference-core ms; fitted (legacy:
            Gavel ResNet-18 P100, which loads CIFAR-10 with 2 workers). Not paid by datasets
            in ``inline_ops_per_sample``; 0 in the modern era (its steps were measured
            in-process).
        inline_ops_per_sample: datasets loaded on the main thread (no worker processes), ops
            dispatched per sample: ``batch * ops * dispatch_us`` of serial host time per step
            instead of the hand-off and the parallel input pipeline (``hostwork``).
        cpu_ms_per_sample: input pipeline cost per sample by dataset (reference core ms).
        cpu_ms_per_kind: the same by dataset kind, for datasets not named above.
        cpu_ms_default: the same for anything else.
        amp_act_factor: saved-activation bytes under AMP over those of the FP32 trace (most
            saved tensors are half precision; softmax, norm statistics and losses stay FP32).
        amp_layout_passes: extra memory passes over a convolution's traffic when it runs on
            half-precision tensor cores with NCHW tensors: cuDNN transposes the input to NHWC
            and the output back (a read and a write of each; 2, not fitted).
        ctx_switch_us: GPU time lost per context switch when worker processes time-slice one
            GPU without MPS, microseconds: a job with ``workers`` > 1 pays one switch per time
            slice and per queue drain (``hostwork.context_switches``). Fitted on the fit
            families' identical-pair colocations in Gavel (two copies of a ResNet-18 or
            ResNet-50 job on one GPU; ``calibration.fit.fit_ctx_switch``); 0 switches it off.
        ctx_slice_ms: the time slice a CUDA context holds the GPU while another context has
            work, ms (not fitted: 2 ms, the scale NVIDIA documents for its GPU scheduler's
            timeslices, ``NVRM_GPU_CHANNEL_TIMESLICE`` >= 1 ms, 1.5-2 ms recommended for
            low/medium priority contexts, DRIVE OS "Setting the Timeslice").
        host_gpu_p: the norm of (GPU time, dispatch time) that is one step's time
            (``hostwork.host_gpu_s``; inf: the plain ``max(t_gpu, t_dispatch)``, 1: their
            sum). Per host era: the legacy value (this one) fitted with ``cudnn_dispatch_us`` on
            pytorch-gpu-benchmark's fit rows (``calibration.measured.fit_legacy_dispatch``),
            the modern era's with its step costs on the measured H100 steps of the fit
            families (``calibration.fit.fit_host_steps``).
        h2d_eff: achievable fraction of PCIe bandwidth for the batch copy.
        startup_s: process start, framework import and CUDA context creation.
        autotune_s_per_conv: cuDNN autotuning per forward convolution at start-up.
        eval_fraction: evaluation steps per epoch as a fraction of training steps.
        ckpt_gbs: checkpoint write speed, GB/s.
        context_mb: CUDA context + framework reservation on the device, MB.
        workspace_mb: cuDNN/cuBLAS workspace, MB.
        alloc_overhead: caching-allocator fragmentation on activations and gradients.
        context_mb_lo, context_mb_hi: the memory band's CUDA context (``emulator.memory``):
            PyTorch with lazy module loading creates a 287 MB context, with eager loading
            667 MB (pytorch/pytorch#86509), 781 MB measured on an older release
            (pytorch/pytorch#34323).
        workspace_mb_lo, workspace_mb_hi: the band's workspace: cuBLAS's alone (two handles,
            forward and autograd threads, of 32 MiB on Hopper: ``CublasHandlePool.cpp``);
            a large cuDNN algorithm's.
        mem_err: relative error of the traced tensors' bytes against the allocator's peak
            (log units; both ends of the band), from the measured H100 steps
            (``benchmarks/emulator_memory.py``).
        memory_liveness: 1 (default): the activation memory is the step's liveness peak
            over the traced graph less its gradients (``emulator.liveness``); 0: the previous rule, the bytes saved for backward (``memory.saved_bytes``).
        overlap: fraction of the gradient all-reduce hidden behind backward (fitted).
        link_eff: achievable fraction of PCIe/NVLink bandwidth in all-reduce (fitted).
        allreduce_latency_us: per ring step latency, microseconds.
        stall_rate_per_min: input-pipeline stalls (page cache misses, GC) per minute.
        stall_s: mean stall length, seconds.
        iter_jitter: relative standard deviation of step lengths in traces.
        max_trace_samples: longest trace; longer runs are sampled more coarsely.
        host_eras: per host/software generation (``DeviceSpec.host_era``), the host-side
            parameters that replace the ones above on that generation's devices
            (:meth:`for_era`; docs/emulator.md "Host eras"). The values above are the
            ``legacy`` era's (seed 001's and Gavel's machines).
    """

    kernels: KernelParams = field(default_factory=default_kernel_params, compare=False)
    dispatch_us: float = 12.0
    cudnn_dispatch_us: float = 12.0
    view_dispatch_us: float = 2.8
    step_sync_ms: float = 5.0
    loader_handoff_ms: float = 0.0
    inline_ops_per_sample: dict[str, float] = field(default_factory=_default_inline_ops)
    per_tensor_optimizer: float = 1.0
    cpu_ms_per_sample: dict[str, float] = field(default_factory=_default_cpu_ms)
    cpu_ms_per_kind: dict[str, float] = field(default_factory=_default_cpu_ms_kind)
    cpu_ms_default: float = 0.05
    host_gbs: float = 10.0
    amp_act_factor: float = 0.6
    amp_layout_passes: float = 2.0
    ctx_switch_us: float = 0.0
    ctx_slice_ms: float = 2.0
    host_gpu_p: float = math.inf
    h2d_eff: float = 0.7
    startup_s: float = 6.0
    autotune_s_per_conv: float = 0.03
    eval_fraction: float = 0.1
    ckpt_gbs: float = 0.5
    context_mb: float = 400.0
    workspace_mb: float = 256.0
    alloc_overhead: float = 0.1
    memory_liveness: float = 1.0
    context_mb_lo: float = 270.0
    context_mb_hi: float = 750.0
    workspace_mb_lo: float = 64.0
    workspace_mb_hi: float = 512.0
    mem_err: float = 0.08
    overlap: float = 0.5
    link_eff: float = 0.7
    allreduce_latency_us: float = 30.0
    stall_rate_per_min: float = 1.0
    stall_s: float = 1.0
    iter_jitter: float = 0.05
    max_trace_samples: float = 200_000
    host_eras: dict[str, dict[str, float]] = field(default_factory=dict)

    def for_era(self, era: str) -> EmulatorParams:
        """These parameters with the host-era overrides of ``era`` applied (unchanged for an
        era without overrides, e.g. ``legacy``)."""
        over = self.host_eras.get(era)
        if not over:
            return self
        kw: dict[str, Any] = {}
        for k, v in over.items():
            cur = getattr(self, k)
            val: Any = v  # a dict-valued parameter (e.g. arch_eff) is overridden key by key
            kw[k] = {**cur, **val} if isinstance(cur, dict) else float(val)
        return replace(self, **kw)

    def with_(self, **changes: Any) -> EmulatorParams:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The host-side parameters (the kernel model's are saved on their own)."""
        return {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)
                if f.name != "kernels"}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EmulatorParams:
        names = {f.name for f in fields(cls)} - {"kernels"}
        old = sorted(set(d) & GPU_SIDE_V2)
        if old:
            raise InputError(f"emulator parameter(s) {', '.join(old)} belong to emulator 2.x; "
                             f"since 3.0 kernel speeds are the kernel model's "
                             f"(gpuscope/emulator/kernels/kernel_params.json)")
        unknown = sorted(set(d) - names - {"_comment", "fitted_on", "provenance"})
        if unknown:
            raise InputError(f"unknown emulator parameter(s): {', '.join(unknown)}")
        base = cls()
        kw: dict[str, Any] = {}
        for k, v in d.items():
            if k not in names:
                continue
            cur = getattr(base, k)
            if k == "host_eras":
                kw[k] = {str(era): _era_overrides(str(era), o, names) for era, o in dict(v).items()}
            elif isinstance(cur, dict):
                kw[k] = {**cur, **{str(a): float(b) for a, b in v.items()}}
            else:
                kw[k] = float(v)
        return cls(**kw)

    def save(self, path: str | Path, **extra: Any) -> Path:
        from gpuscope.core.io import write_json

        return write_json(path, {**extra, **self.to_dict()}, what="emulator parameters",
                          sort_keys=True)

    @classmethod
    def load(cls, path: str | Path) -> EmulatorParams:
        from gpuscope.core.io import read_json

        return cls.from_dict(read_json(path, "emulator parameters", kind=dict))


def _era_overrides(era: str, over: Any, names: set[str]) -> dict[str, Any]:
    """One era's overrides: known scalar parameters (floats) or per-dataset tables."""
    if not isinstance(over, dict):
        raise InputError(f"host era {era!r}: expected a table of parameters")
    unknown = sorted((set(over) - names) | ({"host_eras"} & set(over)))
    if unknown:
        raise InputError(f"host era {era!r}: unknown parameter(s) {', '.join(unknown)}")
    return {str(k): ({str(a): float(b) for a, b in v.items()} if isinstance(v, dict) else float(v))
            for k, v in over.items()}


_LOADED: dict[tuple[str, int, int], EmulatorParams] = {}


def default_params() -> EmulatorParams:
    """The calibrated parameters when ``calibration.json`` exists, else the defaults. The file
    is read once per version of it (its path, modification time and size): an allocation
    prices thousands of jobs, and the parameters are immutable."""
    try:
        st = CALIBRATION_FILE.stat()
    except FileNotFoundError:
        return EmulatorParams()
    key = (str(CALIBRATION_FILE), st.st_mtime_ns, st.st_size)
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = EmulatorParams.load(CALIBRATION_FILE)
    return _LOADED[key]
