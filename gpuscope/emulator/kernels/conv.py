"""Convolutions (cuDNN): implicit GEMM, Winograd, depthwise.

A 2-D convolution of ``N x C x H x W`` by ``K`` filters ``C/g x R x S`` (``g`` groups, stride
``u``, output ``Ho x Wo``) is a GEMM per group (implicit GEMM, as cuDNN's ``*_scudnn_*`` /
``implicit_gemm`` kernels run it)::

    forward:  M = N Ho Wo,  N' = K / g,        K' = C / g x R S
    dgrad:    M = N H W,    N' = C / g,        K' = K / g x R S
    wgrad:    M = K / g,    N' = C / g x R S,  K' = N Ho Wo

priced by the GEMM model (``gemm.gemm_time``, all tile shapes) at ``conv_eff`` of the GEMM's
efficiency. With ``cudnn.benchmark`` cuDNN takes the fastest algorithm, so a 3 x 3 stride-1
convolution without groups also gets the Winograd time, the implicit GEMM's compute divided
by ``wino_gain`` (F(2x2, 3x3) does 2.25x fewer multiplies, F(4x4, 3x3) 4x) plus its input and
output transforms, ``wino_traffic`` extra streams over the activations, and the least is
taken (on the CUDA cores of Maxwell and later: tensor-core convolutions are implicit GEMMs,
Kepler has no Winograd kernels). A depthwise convolution (``g = C``) has no GEMM to speak of: it streams its tensors
and computes at ``dw_eff`` of the FP32 peak, whichever is slower.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gpuscope.emulator.kernels.device import KernelDevice
from gpuscope.emulator.kernels.gemm import gemm_time
from gpuscope.emulator.kernels.memory import stream_time

#: Architectures cuDNN has no Winograd kernels for (its ``*_scudnn_winograd_*`` kernels are
#: built for Maxwell and later; emulator 2.4 fitted Kepler's 3x3 speed-up at 1.2 of 1.8 on
#: jcjohnson/cnn-benchmarks' K40c times).
NO_WINOGRAD: frozenset[str] = frozenset({"kepler"})
#: Columns of a convolution geometry array (forward shapes).
GEOM: tuple[str, ...] = ("n", "c", "h", "w", "k", "r", "s", "stride", "groups", "ho", "wo")
DIRECTIONS: tuple[str, ...] = ("fwd", "dgrad", "wgrad")


def implicit_gemm(geom: np.ndarray, direction: str) -> np.ndarray:
    """``(groups, M, N, K)`` rows of the implicit GEMM of each convolution."""
    n, c, h, w, k, r, s, _, g, ho, wo = (geom[:, i].astype(np.float64) for i in range(len(GEOM)))
    rs = r * s
    if direction == "fwd":
        dims = (n * ho * wo, k / g, c / g * rs)
    elif direction == "dgrad":
        dims = (n * h * w, c / g, k / g * rs)
    else:
        dims = (k / g, c / g * rs, n * ho * wo)
    return np.stack([g, *dims], axis=1)


def conv_time(geom: np.ndarray, direction: str, dev: KernelDevice, rate: np.ndarray | float,
              generation: str, dtype_bytes: np.ndarray | float, p: Mapping[str, float],
              pg: Mapping[str, float], pm: Mapping[str, float]) -> np.ndarray:
    """Device seconds of each convolution in ``direction`` (module docstring); ``p``: conv
    parameters, ``pg``: the GEMM parameters of the math used, ``pm``: memory parameters.
    On tensor cores (``generation`` ``tensor``) cuDNN runs implicit GEMMs, no Winograd."""
    bmnk = implicit_gemm(geom, direction)
    rate = np.broadcast_to(np.asarray(rate, dtype=np.float64), (len(geom),))
    t = np.empty(len(geom))
    for r in np.unique(rate):  # one peak per call of the GEMM model
        rows = rate == r
        t[rows] = gemm_time(bmnk[rows], dev, float(r), _rows(dtype_bytes, rows), pg,
                            generation) / p["conv_eff"]
    n, c, h, w, k, rr, ss, u, g, ho, wo = (geom[:, i].astype(np.float64) for i in range(len(GEOM)))
    act = dtype_bytes * (n * c * h * w + n * k * ho * wo)
    wino = ((rr == 3) & (ss == 3) & (u == 1) & (g == 1) & (generation != "tensor")
            & (dev.arch not in NO_WINOGRAD))
    if wino.any():
        t_w = t / p["wino_gain"] + stream_time(p["wino_traffic"] * act, act, dev, pm)
        t = np.where(wino, np.minimum(t, t_w), t)
    dw = (g > 1) & (g == c)
    if dw.any():
        flops = 2.0 * n * k * ho * wo * rr * ss * (c / g)
        t_dw = np.maximum(stream_time(act + dtype_bytes * k * rr * ss, act, dev, pm),
                          flops / (dev.fp32 * p["dw_eff"]))
        t = np.where(dw, t_dw, t)
    return t


def _rows(x: np.ndarray | float, rows: np.ndarray) -> np.ndarray | float:
    return x[rows] if isinstance(x, np.ndarray) else x
