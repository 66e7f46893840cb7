"""GEMM and batched GEMM (cuBLAS): tile and wave quantisation over the SMs.

A GEMM ``C[b, M, N] = A[b, M, K] @ B[b, K, N]`` is cut into output tiles of ``tn x tm``
(cuBLAS is column-major: its tile's first side runs along our N, the output's columns). With
``T = b * ceil(N / tn) * ceil(M / tm) * s`` tiles (``s``: split-K slices of ``ceil(K / s)``),
each SM runs ``n = ceil(T / SMs)`` of them, one after another or side by side::

    t       = n * 2 tn tm ceil(K / s) / (rate_sm * min(e(tile), n * occ(tile)))
              + ceil(n * occ(tile)) * c / f_clock + split-K reduction 2 s b M N x 4 B / (bw * bw_eff)
    e(tile) = eff * [a / (a + h q)] / [64 / (64 + h)],   a = tn tm / (tn + tm)

``rate_sm`` is the SM's peak (FP32 CUDA cores, or the tensor cores' rate: ``precision``);
``e`` the fraction of it an SM full of such tiles reaches, falling with the tile's arithmetic
intensity ``a`` (64 for 128 x 128) against the intensity ``h q`` that half-fills the SM:
``q`` the SM's FP32 FLOP per shared-memory byte relative to a 64-lane SM
(``KernelDevice.simt_intensity``: 2 on the 128-lane SMs of GP10x, GA10x, AD10x and GH100,
whose tiles need twice the reuse; 1 on tensor cores, whose operands are fed otherwise);
``occ = occ_128 x (tile area / 128^2)^occ_pow`` the
fraction of an SM one tile keeps busy alone, so ``n`` tiles on an SM reach ``min(e, n occ)``
(a partly filled wave of small tiles is latency-bound, a full one bandwidth-bound); ``c``
the fixed cycles of a tile's prologue and epilogue. The time is the least over the tiles the
library's kernel generation offers (``TILES``: cuBLAS's SIMT kernels ``maxwell_sgemm_*``,
``volta_sgemm_*``, ``ampere_sgemm_*``, as profiled; strided-batched calls use fewer) and over
split-K, bounded below by streaming the operands once: ``bytes(A, B, C) / (bw x bw_eff)``.
NVIDIA's "Matrix Multiplication Background User's Guide" describes tile and wave quantisation.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gpuscope.emulator.kernels.device import KernelDevice

#: cuBLAS SIMT kernel generation by architecture (the SGEMM kernels profiled on each).
SIMT_GENERATION: dict[str, str] = {"kepler": "maxwell", "maxwell": "maxwell", "pascal": "maxwell",
                                   "volta": "volta", "turing": "volta", "ampere": "ampere",
                                   "ada": "ampere", "hopper": "ampere"}
_ALL = ((128, 128), (128, 64), (64, 128), (64, 64), (128, 32), (32, 128), (32, 32))
#: Tiles (along N, along M) per kernel generation, single GEMMs and strided-batched GEMMs.
TILES: dict[str, dict[str, tuple[tuple[int, int], ...]]] = {
    "maxwell": {"single": ((128, 32), (32, 128), (64, 64), (128, 64)), "batched": ((128, 64),)},
    "volta": {"single": _ALL, "batched": ((64, 64), (32, 128), (128, 32), (128, 64), (128, 128))},
    "ampere": {"single": _ALL, "batched": ((128, 128),)},
    "tensor": {"single": ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64)),
               "batched": ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64))},
}
SPLITS: tuple[int, ...] = (1, 2, 4, 8, 16)


def simt_generation(arch: str, overrides: Mapping[str, str]) -> str:
    """The cuBLAS SIMT kernel generation an architecture's GEMMs use: ``overrides``
    (``KernelParams.tile_generation``), else ``SIMT_GENERATION`` (Ampere's for the rest)."""
    return overrides.get(arch, SIMT_GENERATION.get(arch, "ampere"))
#: Least K depth of one split-K slice.
MIN_SLICE: int = 128


def tile_time(b: np.ndarray, m: np.ndarray, n: np.ndarray, k: np.ndarray, tn: int, tm: int,
              s: int, rate_sm: float, sms: int, clock: float, p: Mapping[str, float],
              q: float = 1.0) -> np.ndarray:
    """Time of the GEMMs with one tile shape and split (module docstring), seconds; ``q``
    the SM's relative FLOP per shared-memory byte."""
    a = tn * tm / (tn + tm)
    h = p["ai_half"]
    e = p["eff"] * (a / (a + h * q)) / (64.0 / (64.0 + h))
    occ = min(1.0, p["occ_128"] * (tn * tm / 128.0**2) ** p["occ_pow"])
    tiles = b * np.ceil(n / tn) * np.ceil(m / tm) * s
    kk = np.ceil(k / s)
    per_sm = np.ceil(tiles / sms)
    t = per_sm * 2.0 * tn * tm * kk / (rate_sm * np.minimum(e, per_sm * occ))
    return t + np.ceil(per_sm * occ) * p["cta_cycles"] / clock


def gemm_time(bmnk: np.ndarray, dev: KernelDevice, rate: float, dtype_bytes: np.ndarray | float,
              p: Mapping[str, float], generation: str) -> np.ndarray:
    """Device time of GEMMs ``(batch, M, N, K)`` (rows of ``bmnk``) at peak ``rate`` FLOP/s,
    seconds; ``generation``: a key of ``TILES`` (``SIMT_GENERATION`` or ``"tensor"``)."""
    b, m, n, k = (bmnk[:, i].astype(np.float64) for i in range(4))
    rate_sm = rate / dev.sms
    best = np.full(len(b), np.inf)
    batched = b > 1
    bw = dev.bw * p["bw_eff"]
    q = 1.0 if generation == "tensor" else dev.simt_intensity
    for kind, rows in (("single", ~batched), ("batched", batched)):
        if not rows.any():
            continue
        for tn, tm in TILES[generation][kind]:
            for s in SPLITS:
                t = tile_time(b, m, n, k, tn, tm, s, rate_sm, dev.sms, dev.clock, p, q)
                if s > 1:
                    t = np.where(np.ceil(k / s) >= MIN_SLICE, t + 8.0 * s * b * m * n / bw, np.inf)
                best = np.where(rows, np.minimum(best, t), best)
    stream = dtype_bytes * b * (m * k + k * n + m * n) / bw
    return np.maximum(best, stream)
