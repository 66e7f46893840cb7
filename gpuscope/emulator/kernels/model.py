"""The one kernel cost model: a batch of kernels (``KernelBatch``) priced on a device.

Every kernel is one of a few kinds, each priced by its class's module (the math is in their
docstrings): a cuBLAS GEMM (``gemm``), a cuDNN convolution (``conv``), a memory-bound kernel
(``memory``), a row reduction (``reduction``: softmax, layer/batch norm, sums), fused attention
and, for a compute kernel the graph does not size, its FLOPs and bytes (a roofline at the
GEMM efficiency). Which peak a kernel's math runs at is ``precision.mm_rates``. Its device time
is that plus the fixed costs of any kernel, ``launch_us`` and, for a kernel that reads memory,
one DRAM round trip (``mem_latency_us``)::

    t = launch + [mem_latency] + t_class(shape, device)

The graph emulator (``gpuscope.emulator.perf``) prices every node of a training step through
``price``; ``kernel_time`` prices one kernel; ``gpuscope emulate kernels`` a table of them.
Deterministic, vectorised (numpy), no per-kernel Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from gpuscope.emulator.kernels import correction
from gpuscope.emulator.kernels.conv import GEOM, conv_time
from gpuscope.emulator.kernels.device import KernelDevice
from gpuscope.emulator.kernels.gemm import gemm_time, simt_generation
from gpuscope.emulator.kernels.memory import stream_time
from gpuscope.emulator.kernels.params import KernelParams
from gpuscope.emulator.kernels.precision import mm_rates
from gpuscope.emulator.kernels.reduction import row_time

#: Kernel kinds (``KernelBatch.kind``).
KINDS: tuple[str, ...] = ("gemm", "conv", "memory", "rows", "attention", "flops")
KIND: dict[str, int] = {k: i for i, k in enumerate(KINDS)}
#: Row-reduction parameter tables (``KernelBatch.rowsub``).
ROW_TABLES: tuple[str, ...] = ("softmax", "layer_norm", "batch_norm", "reduce")
#: Convolution directions (``KernelBatch.direction``): forward, data gradient, weight
#: gradient, and both gradients (``convolution_backward`` computing dgrad and wgrad).
DIRECTION: tuple[str, ...] = ("fwd", "dgrad", "wgrad", "bwd")


@dataclass(frozen=True)
class KernelBatch:
    """``n`` kernels as arrays (one row per kernel).

    ``kind``: index into ``KINDS``; ``flops``; ``bytes`` moved; ``work``: working set, bytes;
    ``dtype_bytes``; ``bmnk`` (n x 4): a GEMM's ``(batch, M, N, K)``; ``geom`` (n x 11): a
    convolution's forward geometry (``conv.GEOM``) and ``direction`` (``DIRECTION``);
    ``rows``/``cols``/``rowsub``: a row reduction's shape and table (``ROW_TABLES``);
    ``cudnn``, ``gemm``, ``half``, ``attn_fp32``: the flags ``precision.mm_rates`` reads.
    """

    kind: np.ndarray
    flops: np.ndarray
    bytes: np.ndarray
    work: np.ndarray
    dtype_bytes: np.ndarray
    bmnk: np.ndarray
    geom: np.ndarray
    direction: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    rowsub: np.ndarray
    cudnn: np.ndarray
    gemm: np.ndarray
    half: np.ndarray
    attn_fp32: np.ndarray

    def __len__(self) -> int:
        return len(self.kind)

    @classmethod
    def empty(cls, n: int) -> KernelBatch:
        """``n`` zero-work memory kernels, to be filled in (``with_``)."""
        return cls(kind=np.full(n, KIND["memory"], dtype=np.int8), flops=np.zeros(n),
                   bytes=np.zeros(n), work=np.zeros(n),
                   dtype_bytes=np.full(n, 4.0), bmnk=np.zeros((n, 4)),
                   geom=np.ones((n, len(GEOM))), direction=np.zeros(n, dtype=np.int8),
                   rows=np.ones(n), cols=np.ones(n), rowsub=np.zeros(n, dtype=np.int8),
                   cudnn=np.zeros(n, dtype=bool), gemm=np.zeros(n, dtype=bool),
                   half=np.zeros(n, dtype=bool), attn_fp32=np.zeros(n, dtype=bool))

    def take(self, idx: np.ndarray) -> KernelBatch:
        """The kernels at ``idx`` (indices or a boolean mask)."""
        return KernelBatch(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    @classmethod
    def concat(cls, parts: list[KernelBatch]) -> KernelBatch:
        return cls(**{f.name: np.concatenate([getattr(p, f.name) for p in parts])
                      for f in fields(cls)})


def device_seconds(kb: KernelBatch, dev: KernelDevice, p: KernelParams,
                   precision: str = "fp32", fixed: bool = True) -> np.ndarray:
    """Device time of every kernel of ``kb`` on ``dev``, seconds (module docstring).
    ``fixed=False`` leaves out the launch and DRAM-latency costs (the part a measurement's
    floor does not contain; ``calibration.kernel_fit``)."""
    n = len(kb)
    t = np.zeros(n)
    rate, tc = mm_rates(dev, precision, kb.cudnn, kb.gemm, kb.half, kb.attn_fp32)
    simt_gen = simt_generation(dev.arch, p.tile_generation)
    for kname, kid in KIND.items():
        rows = kb.kind == kid
        if not rows.any():
            continue
        sub = kb.take(rows)
        r, c = rate[rows], tc[rows]
        if kname in ("gemm", "conv"):
            out = np.empty(len(sub))
            for use_tc in (False, True):
                m = c == use_tc
                if m.any():
                    s = sub.take(m)
                    out[m] = _mm_time(kname, s, dev, r[m], use_tc, simt_gen, p)
                    if not use_tc:  # fitted on FP32 SIMT kernels only
                        tab = "gemm_simt" if kname == "gemm" else "conv"
                        out[m] *= _corr(tab, s, dev, out[m], p)
            t[rows] = out
        elif kname == "memory":
            t[rows] = stream_time(sub.bytes, sub.work, dev, p.memory)
            t[rows] *= _corr("memory", sub, dev, t[rows], p)
        elif kname == "rows":
            out = np.empty(len(sub))
            for i, tab in enumerate(ROW_TABLES):
                m = sub.rowsub == i
                if m.any():
                    s = sub.take(m)
                    out[m] = row_time(s.rows, s.cols, 0.5 * s.bytes, 0.5 * s.bytes, dev,
                                      getattr(p, tab), p.memory)
                    out[m] *= _corr(tab, s, dev, out[m], p)
            t[rows] = out
        else:  # attention and unsized compute kernels: a roofline on FLOPs and bytes
            eff = np.where(c, p.gemm_tc["eff"], p.gemm_simt["eff"])
            if kname == "attention":
                eff = eff * p.attention["eff"]
            t[rows] = np.maximum(sub.flops / (r * eff), stream_time(sub.bytes, sub.work, dev, p.memory))
    if fixed:
        t = t + p.launch_us * 1e-6 + np.where(kb.bytes > 0, p.mem_latency_us * 1e-6, 0.0)
    return t


def shape_features(table: str, kb: KernelBatch, dev: KernelDevice, t: np.ndarray) -> np.ndarray:
    """The correction features (``correction.FEATURES``) of kernels priced by ``table``."""
    cls = correction.TABLE_CLASS[table]
    if cls == "gemm":
        geo = dict(zip("bmnk", kb.bmnk.T))
    elif cls == "conv":
        g = dict(zip(GEOM, kb.geom.T))
        geo = {"n": g["n"], "c": g["c"], "k": g["k"], "hw": g["h"] * g["w"],
               "m_gemm": g["n"] * g["ho"] * g["wo"]}
    else:
        geo = {"rows": kb.rows, "cols": kb.cols}
    geo["work"] = kb.work
    return correction.features(cls, geo, dev, t)


def _corr(table: str, kb: KernelBatch, dev: KernelDevice, t: np.ndarray,
          p: KernelParams) -> np.ndarray:
    model = p.corrections.get(table)
    if not model:
        return np.ones(len(kb))
    return np.exp(correction.apply(shape_features(table, kb, dev, t), model))


def _mm_time(kname: str, kb: KernelBatch, dev: KernelDevice, rate: np.ndarray, tc: bool,
             simt_gen: str, p: KernelParams) -> np.ndarray:
    gen = "tensor" if tc else simt_gen
    pg = p.gemm_tc if tc else p.gemm_simt
    if not tc:  # a cited SIMT efficiency (Kepler; the dual-datapath FP32 SMs)
        scale = (p.dual_fp32_scale.get(dev.arch, 1.0) if dev.dual_fp32
                 else p.simt_arch_scale.get(dev.arch, 1.0))
        if kname == "conv":
            scale *= p.conv_arch_scale.get(dev.arch, 1.0)
        pg = {**pg, "eff": pg["eff"] * scale}
    out = np.empty(len(kb))
    for r in np.unique(rate):
        m = rate == r
        s = kb.take(m)
        if kname == "gemm":
            out[m] = gemm_time(s.bmnk, dev, float(r), s.dtype_bytes, pg, gen)
            continue
        res = np.zeros(len(s))
        for di, d in enumerate(DIRECTION):
            dm = s.direction == di
            if not dm.any():
                continue
            g = s.geom[dm]
            parts = ("dgrad", "wgrad") if d == "bwd" else (d,)
            res[dm] = sum(conv_time(g, part, dev, float(r), gen, s.dtype_bytes[dm], p.conv, pg,
                                    p.memory) for part in parts)
        out[m] = res
    return out


def price(kb: KernelBatch, dev: KernelDevice, p: KernelParams,
          precision: str = "fp32") -> np.ndarray:
    """Device seconds of each kernel of ``kb`` (launch and latency included)."""
    return device_seconds(kb, dev, p, precision, fixed=True)
