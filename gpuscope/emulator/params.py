"""The emulator's parameters: efficiency factors, host costs, overheads (docs/emulator.md).

Physical figures come from the device catalog (``gpuscope.cluster.devices``); what is here is the part
no datasheet gives: how much of the peak a training step achieves. Few numbers, on purpose,
so that fitting them to measurements (``gpuscope.emulator.calibration.fit``) cannot overfit: one
compute efficiency per op class, one bandwidth efficiency, one factor per architecture
generation, and the data-parallel overlap. Defaults were set once from public knowledge
(cuDNN convolutions reach 50-70 % of FP32 peak, streaming kernels 70-80 % of bandwidth); the
calibrated values live in ``calibration.json`` beside this module.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError

CALIBRATION_FILE: Path = Path(__file__).with_name("calibration.json")
#: Version of the emulator's model; bump on any change to performance, memory or traces
#: (the bundled emulated datasets record it; ``gpuscope.emulator.calibration.bundle``).
EMULATOR_VERSION: str = "2.5.1"
#: Largest accepted ``mem_latency_us``: 10x the ~1 us a GPU's DRAM round trip takes at most.
MAX_MEM_LATENCY_US: float = 10.0


def _default_class_eff() -> dict[str, float]:
    # Fraction of FP32 (or tensor-core) peak a kernel of each class reaches when it fills the
    # GPU; memory-bound classes rarely reach this and are limited by bandwidth instead.
    return {"conv": 0.6, "matmul": 0.7, "norm": 0.3, "pool": 0.3, "activation": 0.3,
            "elementwise": 0.3, "reduction": 0.3, "loss": 0.3, "optimizer": 0.3,
            "data_movement": 0.3, "random": 0.3, "other": 0.3}


def _default_arch_eff() -> dict[str, float]:
    return {"kepler": 1.0, "maxwell": 1.0, "pascal": 1.0, "volta": 1.0, "turing": 1.0,
            "ampere": 1.0, "ada": 1.0, "hopper": 1.0}


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
        class_eff: achievable fraction of compute peak per op class.
        arch_eff: per-architecture multiplier on compute and bandwidth efficiency (fitted).
        arch_class_eff: cited exceptions, ``"<arch>:<op class>"`` -> fraction of the FP32
            (CUDA-core) peak that class reaches on that architecture when it fills the GPU;
            replaces ``class_eff[class] * arch_eff[arch]`` for the compute side of that pair
            only (memory side, tensor-core rates and every other pair unchanged), e.g.
            ``kepler:matmul`` = cuBLAS SGEMM on a Kepler die (docs/emulator.md, calibration).
        arch_winograd: per-architecture exceptions to ``winograd_speedup``, ``"<arch>"`` ->
            the speed-up of 3x3 convolutions on that architecture (``kepler`` fitted on jcjohnson/cnn-benchmarks' K40c vs GTX
            1080 cuDNN 5 times, docs/emulator.md); every other architecture keeps
            ``winograd_speedup``.
        bw_eff: achievable fraction of memory bandwidth.
        tensor_eff: fraction of the tensor-core peak (TF32 on Ampere+, FP16/BF16 under AMP)
            that tensor-core matmuls and convolutions reach (``perf._mm_rate``).
        winograd_speedup: effective speed-up of 3x3 convolutions (cuDNN Winograd: 2.25x fewer
            multiplies in theory, less in practice).
        fill_threads_per_sm: output elements per SM at which a kernel half-fills the GPU
            (small kernels cannot occupy a big GPU: rate x numel / (numel + sms x this)).
        launch_us: GPU-side gap per kernel (launch latency), microseconds.
        mem_latency_us: DRAM latency a memory-bound kernel pays once (its loads, then its
            stores), microseconds: ``t_mem = bytes / bw + mem_latency`` (Little's law, in
            place of the compute side's fill). 0 = the older fill model
            (``bytes / (bw * fill)``, which charged a one-element kernel
            ``SMs x fill_threads_per_sm x dtype / bw``: 8 us on an L4).
        dispatch_us: host-side framework cost per kernel on a reference core, microseconds
            (PyTorch eager dispatch); the main thread must issue every kernel.
        cudnn_dispatch_us: the same for a convolution or normalisation kernel (cuDNN calls:
            descriptor and execution-plan set-up), microseconds.
        view_dispatch_us: the same for a view op (no kernel), microseconds.
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
            GPU without MPS, microseconds on an architecture with ``arch_eff`` 1 (divided by
            the device's ``arch_eff``): a job with ``workers`` > 1 pays one switch per kernel
            after which its queue drains (``hostwork.time_sliced_gpu_s``). Fitted on the fit
            families' identical-pair colocations in Gavel (two copies of a ResNet-18 or
            ResNet-50 job on one GPU; ``calibrate.fit_ctx_switch``); 0 switches it off.
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

    class_eff: dict[str, float] = field(default_factory=_default_class_eff)
    arch_eff: dict[str, float] = field(default_factory=_default_arch_eff)
    arch_class_eff: dict[str, float] = field(default_factory=dict)
    arch_winograd: dict[str, float] = field(default_factory=dict)
    bw_eff: float = 0.75
    tensor_eff: float = 0.35
    winograd_speedup: float = 1.8
    fill_threads_per_sm: float = 2048.0
    launch_us: float = 3.0
    mem_latency_us: float = 0.0
    dispatch_us: float = 12.0
    cudnn_dispatch_us: float = 12.0
    view_dispatch_us: float = 12.0
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
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EmulatorParams:
        names = {f.name for f in fields(cls)}
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
            elif k == "arch_class_eff":
                kw[k] = _arch_class_table(v)
            elif k == "arch_winograd":
                kw[k] = _arch_winograd_table(v)
            elif isinstance(cur, dict):
                kw[k] = {**cur, **{str(a): float(b) for a, b in v.items()}}
            else:
                kw[k] = float(v)
        lat = kw.get("mem_latency_us", 0.0)
        if not 0.0 <= lat <= MAX_MEM_LATENCY_US:
            raise InputError(f"mem_latency_us = {lat} is not a DRAM latency in "
                             f"[0, {MAX_MEM_LATENCY_US:g}] microseconds (0: the fill model)")
        return cls(**kw)

    def save(self, path: str | Path, **extra: Any) -> Path:
        path = Path(path)
        path.write_text(json.dumps({**extra, **self.to_dict()}, indent=1, sort_keys=True) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> EmulatorParams:
        from gpuscope.core.io import read_json

        return cls.from_dict(read_json(path, "emulator parameters", kind=dict))


def _arch_class_table(v: Any) -> dict[str, float]:
    """``arch_class_eff`` checked: keys ``"<arch>:<op class>"``, values in (0, 1]."""
    from gpuscope.graphs.opgraph import OP_CLASSES

    if not isinstance(v, dict):
        raise InputError("arch_class_eff: expected a table of \"<arch>:<op class>\" = fraction")
    out: dict[str, float] = {}
    for key, val in v.items():
        arch, _, cls = str(key).partition(":")
        if not arch or cls not in OP_CLASSES:
            raise InputError(f"arch_class_eff: key {key!r} is not \"<arch>:<op class>\" "
                             f"(op classes: {', '.join(OP_CLASSES)})")
        f = float(val)
        if not 0.0 < f <= 1.0:
            raise InputError(f"arch_class_eff: {key} = {f} is not a fraction of peak in (0, 1]")
        out[str(key)] = f
    return out


#: Largest Winograd speed-up: F(2x2, 3x3) does 16 multiplies where the direct 3x3 does 36.
MAX_WINOGRAD: float = 2.25


def _arch_winograd_table(v: Any) -> dict[str, float]:
    """``arch_winograd`` checked: known architectures, speed-ups in [1, ``MAX_WINOGRAD``]."""
    if not isinstance(v, dict):
        raise InputError("arch_winograd: expected a table of \"<arch>\" = 3x3 speed-up")
    out: dict[str, float] = {}
    for key, val in v.items():
        if str(key) not in _default_arch_eff():
            raise InputError(f"arch_winograd: unknown architecture {key!r} "
                             f"(known: {', '.join(_default_arch_eff())})")
        f = float(val)
        if not 1.0 <= f <= MAX_WINOGRAD:
            raise InputError(f"arch_winograd: {key} = {f} is not a 3x3 speed-up in "
                             f"[1, {MAX_WINOGRAD}]")
        out[str(key)] = f
    return out


def _era_overrides(era: str, over: Any, names: set[str]) -> dict[str, Any]:
    """One era's overrides: known scalar parameters (floats) or per-dataset tables."""
    if not isinstance(over, dict):
        raise InputError(f"host era {era!r}: expected a table of parameters")
    unknown = sorted((set(over) - names) | ({"host_eras"} & set(over)))
    if unknown:
        raise InputError(f"host era {era!r}: unknown parameter(s) {', '.join(unknown)}")
    return {str(k): ({str(a): float(b) for a, b in v.items()} if isinstance(v, dict) else float(v))
            for k, v in over.items()}


def default_params() -> EmulatorParams:
    """The calibrated parameters when ``calibration.json`` exists, else the defaults."""
    if CALIBRATION_FILE.exists():
        return EmulatorParams.load(CALIBRATION_FILE)
    return EmulatorParams()
