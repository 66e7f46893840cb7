"""SIMT GEMM efficiency of architectures no measured kernel covers, from cited cuBLAS figures.

The SIMT GEMM parameters are fitted on measured kernels of Pascal, Volta, Turing and GA100
GPUs (``kernel_fit``). For an architecture none of them has (Kepler's SMX; the dual-datapath
FP32 SMs of GA10x, Ada and Hopper) one cited cuBLAS SGEMM measurement sets a scale on the
efficiency, the least that makes the model reproduce it::

    model_share(scale) = median over the cited shapes of  2 b m n k / (t_gemm x FP32 peak)
    scale(arch)        : model_share(scale) = cited share of the FP32 peak

(``t_gemm`` the GEMM model's device time at the fitted parameters, launch left out).
``KernelParams.simt_arch_scale`` holds the single-datapath architectures', ``dual_fp32_scale``
the dual-datapath ones'.

cuDNN's convolutions on Kepler (no Winograd, implicit GEMMs) reach much less than cuBLAS's
SGEMM share, so Kepler's convolutions get a scale of their own (``conv_arch_scale``) from
measured networks: jcjohnson/cnn-benchmarks timed the same seven ImageNet CNNs (forward +
backward, batch 16, Torch and cuDNN 5.0) on a Tesla K40c and a GTX 1080 in one machine. The
scale makes the emulated GPU-time ratio K40c / GTX 1080 match the measured one (the median
over the networks); the shared machine and software cancel in the ratio, and the GTX 1080 is
a Pascal GPU the measured kernels cover::

    median_n log(t_K40c(n; scale) / t_1080(n)) = median_n log(measured_K40c(n) / measured_1080(n))

Recomputed whenever the SIMT parameters are refitted (``benchmarks/emulator_kernels.py
--write``); a test checks the stored GEMM scales against the code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from gpuscope.emulator.kernels.device import KernelDevice
from gpuscope.emulator.kernels.gemm import gemm_time, simt_generation
from gpuscope.emulator.kernels.params import KernelParams

if TYPE_CHECKING:
    from gpuscope.cluster.devices import DeviceSpec
    from gpuscope.graphs import GraphCache

_MiB = float(2**20)


@dataclass(frozen=True)
class CitedSgemm:
    """One cited cuBLAS SGEMM measurement: the device as measured, the GEMMs ``(b, m, n, k)``,
    the share of the FP32 peak reached, the architectures its scale applies to, and the
    reference key (``datasets/devices.toml`` ``[references]``)."""

    ref: str
    device: KernelDevice
    shapes: tuple[tuple[int, int, int, int], ...]
    share: float
    archs: tuple[str, ...]
    dual: bool


ANCHORS: tuple[CitedSgemm, ...] = (
    # RTX 3080 (GA102: 68 SMs of 128 lanes, 1710 MHz, 760 GB/s, 5 MiB L2), 4096^3: 19.12 of
    # 29.8 TFLOP/s; Ada has the same dual-datapath SM and no cited figure of its own
    CitedSgemm("rtx3080_sgemm",
               KernelDevice("rtx3080", "ampere", 68, 29.8e12, 0.0, 0.0, 760e9, 5.0 * _MiB,
                            1710e6, fp32_lanes=128),
               ((1, 4096, 4096, 4096),), 19.12 / 29.8, ("ampere", "ada"), True),
)
#: The K40 anchor: cuBLAS 7.0 at the 875 MHz boost, m = n = k from 2048 to 4352, 3.15 of 5.0
#: TFLOP/s. The H200 anchor uses the catalog's entry (its sustained clock and figures),
#: batched SGEMMs 4096 and 8192 at batch 4-16: 82 % FMA pipe utilisation.
K40_SHAPES: tuple[tuple[int, int, int, int], ...] = tuple(
    (1, s, s, s) for s in range(2048, 4353, 256))
H200_SHAPES: tuple[tuple[int, int, int, int], ...] = tuple(
    (b, s, s, s) for s in (4096, 8192) for b in (4, 8, 16))


def anchors() -> tuple[CitedSgemm, ...]:
    """Every cited SGEMM anchor (the K40's and the H200's devices from the catalog)."""
    from gpuscope.cluster.devices import get_device

    k40 = KernelDevice.from_spec(k40_board(875.0))
    h200 = KernelDevice.from_spec(get_device("h200"))
    return (CitedSgemm("k40_sgemm", k40, K40_SHAPES, 3.15 / 5.0, ("kepler",), False), *ANCHORS,
            CitedSgemm("h200_sgemm", h200, H200_SHAPES, 0.82, ("hopper",), True))


def model_share(a: CitedSgemm, params: KernelParams, scale: float = 1.0) -> float:
    """The model's median share of ``a.device``'s FP32 peak on ``a.shapes`` at ``scale``."""
    pg = {**params.gemm_simt, "eff": params.gemm_simt["eff"] * scale}
    dev = a.device
    gen = simt_generation(dev.arch, params.tile_generation)
    bmnk = np.array(a.shapes, dtype=np.float64)
    t = gemm_time(bmnk, dev, dev.fp32, 4.0, pg, gen)
    return float(np.median(2.0 * bmnk.prod(axis=1) / (t * dev.fp32)))


def anchor_scale(a: CitedSgemm, params: KernelParams) -> float:
    """The efficiency scale at which the model reproduces ``a.share`` (``ratio_scale`` on
    the log share: nearly proportional to the scale; tile latency terms make it not
    exactly)."""
    return ratio_scale(lambda s: -math.log(model_share(a, params, s)), -math.log(a.share))


def cited_scales(params: KernelParams) -> KernelParams:
    """``params`` with ``simt_arch_scale`` and ``dual_fp32_scale`` recomputed from the
    cited anchors, and their provenance."""
    single: dict[str, float] = {}
    dual: dict[str, float] = {}
    notes = []
    for a in anchors():
        s = round(anchor_scale(a, params), 4)
        for arch in a.archs:
            (dual if a.dual else single)[arch] = s
        notes.append(f"{'/'.join(a.archs)} {s}: {a.ref} ({a.device.name}, cited share "
                     f"{a.share:.3f} of the FP32 peak / the model's "
                     f"{model_share(a, params):.3f} unscaled)")
    prov = ("cited cuBLAS SGEMM share of the FP32 peak over the kernel model's share for the "
            "same GEMMs and device (gpuscope.emulator.calibration.cited): " + "; ".join(notes))
    return replace(params, simt_arch_scale=single, dual_fp32_scale=dual,
                   provenance={**params.provenance, "simt_arch_scale": prov,
                               "dual_fp32_scale": prov})


#: jcjohnson/cnn-benchmarks README at commit 0367b1f (``jcjohnson_cnn`` in
#: ``datasets/devices.toml``): "Total (ms)" = forward + backward at batch 16 (Torch, cuDNN
#: 5.0.05, CUDA 8.0 RC), (GTX 1080, Tesla K40c). AlexNet is left out: BVLC AlexNet is not the
#: torchvision network the catalog builds.
JCJOHNSON_MS: dict[str, tuple[float, float]] = {
    "vgg16": (232.55, 920.21), "vgg19": (281.69, 1129.65), "resnet18": (47.07, 168.30),
    "resnet34": (79.70, 303.80), "resnet50": (153.90, 449.90), "resnet101": (235.33, 797.89),
    "resnet152": (328.90, 1146.73)}
JCJOHNSON_BATCH: int = 16


def k40_board(clock_mhz: float) -> DeviceSpec:
    """A Tesla K40 at ``clock_mhz``: the catalog's Kepler entry with the K40 board's figures
    (``k40_board``: 15 SMX, 2880 cores, FP32 peak 2880 x 2 x clock to the board's two
    decimals, 4.29 and 5.04 TFLOP/s; 288 GB/s, 12 GB;
    GK110B's 1.5 MiB L2). The boards ship at the 745 MHz base clock (the K40c benchmarked
    by jcjohnson: 4.29 TFLOP/s); boost, 875 MHz, is selected with nvidia-smi."""
    from gpuscope.cluster.devices import get_device

    return replace(get_device("k80"), name="k40", sm_count=15,
                   fp32_tflops=round(2880 * 2 * clock_mhz * 1e-6, 2), mem_gb=12.0, mem_bw_gbs=288.0,
                   boost_clock_mhz=clock_mhz, sustained_clock_mhz=0.0, l2_mb=1.5,
                   power_w=235.0)


def ratio_scale(log_ratio: Callable[[float], float], target: float, iters: int = 12) -> float:
    """The scale ``s`` with ``log_ratio(s) == target``, for a ``log_ratio`` that falls as
    ``s`` grows about as ``-log(s)`` (a time inversely proportional to an efficiency, plus
    terms the scale does not touch): fixed-point iteration ``s <- s exp(log_ratio(s) -
    target)``."""
    s = 1.0
    for _ in range(iters):
        s *= math.exp(log_ratio(s) - target)
    return s


def kepler_conv_scale(params: KernelParams,
                      cache: GraphCache | None = None) -> tuple[float, str]:
    """``conv_arch_scale["kepler"]`` from the K40c / GTX 1080 network times (module
    docstring) at kernel parameters ``params``, and a provenance line."""
    from gpuscope.cluster.devices import get_device
    from gpuscope.emulator.params import default_params
    from gpuscope.emulator.perf import GraphCost, estimate
    from gpuscope.graphs import GraphCache
    from gpuscope.jobs.spec import JobSpec

    cache = cache or GraphCache()
    ep = replace(default_params(), kernels=params)
    k40, g1080 = k40_board(745.0), get_device("gtx1080")
    jobs = [JobSpec(m, "imagenet", "none", JCJOHNSON_BATCH, 1, precision="fp32",
                    module=f"gpuscope.workloads.models.torchvision:{m}") for m in JCJOHNSON_MS]
    costs = [GraphCost.from_graph(cache.get_or_export(j), JCJOHNSON_BATCH) for j in jobs]
    t1080 = np.array([estimate(j, c, g1080, ep).t_gpu_s for j, c in zip(jobs, costs)])
    target = float(np.median([math.log(k / g) for g, k in JCJOHNSON_MS.values()]))

    def log_ratio(s: float) -> float:
        kp = replace(params, conv_arch_scale={**params.conv_arch_scale, "kepler": s})
        q = replace(ep, kernels=kp)
        tk = np.array([estimate(j, c, k40, q).t_gpu_s for j, c in zip(jobs, costs)])
        return float(np.median(np.log(tk / t1080)))

    s = ratio_scale(log_ratio, target)
    note = (f"kepler {s:.4f}: jcjohnson_cnn K40c / GTX 1080 forward + backward times of "
            f"{', '.join(JCJOHNSON_MS)} at batch 16, median log ratio {target:.3f} measured, "
            f"{log_ratio(1.0):.3f} emulated unscaled (gpuscope.emulator.calibration.cited)")
    return round(s, 4), note


def with_cited_scales(params: KernelParams, cache: GraphCache | None = None) -> KernelParams:
    """``params`` with every cited scale recomputed: the SGEMM anchors (``cited_scales``),
    then Kepler's convolutions on top of them (``kepler_conv_scale``)."""
    q = cited_scales(params)
    s, note = kepler_conv_scale(replace(q, conv_arch_scale={}), cache)
    return replace(q, conv_arch_scale={"kepler": s},
                   provenance={**q.provenance, "conv_arch_scale": note})
