"""Precision rules of the emulator's GEMM and attention rates: FP32 fused
attention at 3xTF32 on Ampere+, tile/wave fill of tensor-core GEMMs; on hand-built graphs."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.cluster.devices import get_device
from gpuscope.emulator import EmulatorParams
from gpuscope.emulator.perf import (
    GEMM_MIN_K_SLICE,
    GEMM_TILE,
    GraphCost,
    gemm_wave_fill,
    gpu_times,
    kernel_times,
)
from gpuscope.graphs.opgraph import OpGraph, OpNode

P = EmulatorParams()  # the defaults, not the calibration file


def _mm(name: str, m: int, n: int, k: int, dtb: int = 4, phase: str = "forward") -> OpNode:
    return OpNode(name, "aten.mm.default", "matmul", (m, n), m * n, dtb, 2.0 * m * n * k,
                  float(dtb * (m * k + k * n + m * n)), phase)


def _attn(dtb: int, b: int = 8, h: int = 12, s: int = 512, d: int = 64) -> OpNode:
    numel = b * h * s * d
    return OpNode("attn", "gpuscope.sdpa_attention.default", "matmul", (b, h, s, d), numel, dtb,
                  4.0 * b * h * s * s * d, float(dtb * 4 * numel), "forward")


def _layer(dtb: int, tokens: int = 4096, width: int = 768) -> OpGraph:
    """A transformer layer's GEMMs (QKV, output, two FFN) and its fused attention, traced in
    ``dtb``-byte precision (4: fp32/tf32 jobs, 2: a graph traced under autocast)."""
    nodes = [_mm("qkv", tokens, 3 * width, width, dtb), _attn(dtb),
             _mm("out", tokens, width, width, dtb), _mm("ffn1", tokens, 4 * width, width, dtb),
             _mm("ffn2", tokens, width, 4 * width, dtb),
             _mm("wgrad", width, 4 * width, tokens, dtb, "backward")]
    return OpGraph("layer", nodes, [], {"batch_size": 8})


def _attn_time(cost: GraphCost, dev: str, prec: str) -> float:
    t, _ = kernel_times(cost, get_device(dev), P, prec)
    return float(t[1])


def test_fp32_attention_runs_3xtf32_on_ampere_and_later() -> None:
    """PyTorch's memory-efficient kernel (FP32 attention) computes 3xTF32 whatever
    ``allow_tf32`` says: same time in fp32 and tf32 jobs, a third of the TF32 rate."""
    cost = GraphCost.from_graph(_layer(4))
    assert cost.attn_fp32 is not None and cost.attn_fp32.tolist() == [False, True] + [False] * 4
    for dev in ("a100", "h100"):
        assert _attn_time(cost, dev, "fp32") == pytest.approx(_attn_time(cost, dev, "tf32"))
        no_rule = GraphCost(**{**cost.__dict__, "attn_fp32": None})
        # tf32 job: slower than a TF32 GEMM (3 products per FP32 product) ...
        assert _attn_time(cost, dev, "tf32") > 2.5 * _attn_time(no_rule, dev, "tf32")
        # ... fp32 job: faster than the CUDA-core FP32 matmul rate it had
        assert _attn_time(cost, dev, "fp32") < _attn_time(no_rule, dev, "fp32")
    # before Ampere the kernel is SIMT: the FP32 matmul rate, unchanged
    no_rule = GraphCost(**{**cost.__dict__, "attn_fp32": None})
    assert _attn_time(cost, "v100", "fp32") == _attn_time(no_rule, "v100", "fp32")
    # a half-precision trace's attention is not FP32
    half = GraphCost.from_graph(_layer(2))
    assert half.attn_fp32 is not None and not half.attn_fp32.any()


def test_gemm_wave_fill_tile_and_wave_quantisation() -> None:
    sms = 132
    t = GEMM_TILE
    rows = np.array([
        [1, t * 12, t * 11, 4096],        # 132 tiles: one full wave
        [1, t * 133, t, 4096],            # 133 tiles: a second wave with one tile
        [1, t * 12, t * 11 - 64, 4096],   # half-empty last tile column
        [1, 768, 768, 4096],              # 36 tiles, K deep: split-K fills the SMs
        [1, 768, 768, GEMM_MIN_K_SLICE],  # 36 tiles, too shallow to split
        [0, 0, 0, 0],                     # not a GEMM
    ], dtype=np.float64)
    f = gemm_wave_fill(rows, sms)
    assert f[0] == pytest.approx(1.0)
    assert f[1] == pytest.approx(133 / 264)
    assert f[2] == pytest.approx((11 * t - 64) / (11 * t))
    assert f[3] == pytest.approx(36 * 3 / 132)  # 3 K slices: 108 of 132 SMs
    assert f[4] == pytest.approx(36 / 132)
    assert f[5] == 1.0
    assert np.all((f > 0) & (f <= 1))


def test_wave_fill_applies_to_tensor_core_gemms_only() -> None:
    """The FP32 (CUDA-core) path keeps its element fill: an fp32 job's GEMMs are unchanged;
    a tf32 job's GEMM with a partial second wave is slower than its FLOPs at full fill."""
    cost = GraphCost.from_graph(_layer(4))
    flat = GraphCost(**{**cost.__dict__, "gemm_mnk": None})
    h100 = get_device("h100")
    t32, _ = kernel_times(cost, h100, P, "fp32")
    f32, _ = kernel_times(flat, h100, P, "fp32")
    assert np.array_equal(t32, f32)
    ttf, _ = kernel_times(cost, h100, P, "tf32")
    ftf, _ = kernel_times(flat, h100, P, "tf32")
    # "out": 4096 x 768 = 192 tiles on 132 SMs, two waves at 0.73
    assert ttf[2] > 1.2 * ftf[2]
    assert np.all(ttf >= ftf * (1 - 1e-12))


def test_precision_ordering_on_a_transformer_layer() -> None:
    """bf16 <= tf32 <= fp32 on Ampere and later, with FP32 attention at 3xTF32 and the wave
    fill: the half-precision trace is what an ``amp-*`` job's graph is."""
    c32, c16 = GraphCost.from_graph(_layer(4)), GraphCost.from_graph(_layer(2))
    for name in ("a100", "h100", "l4"):
        d = get_device(name)
        fp32, tf32 = gpu_times(c32, d, P, "fp32")[0], gpu_times(c32, d, P, "tf32")[0]
        bf16 = gpu_times(c16, d, P, "amp-bf16")[0]
        assert bf16 <= tf32 <= fp32, (name, bf16, tf32, fp32)


def test_ops_autocast_keeps_fp32_keep_their_bytes_under_amp() -> None:
    """On a graph not traced under autocast, ``amp-*`` halves activation traffic except for the
    ops CUDA autocast runs in FP32 (layer norm, softmax, losses, sums) and the optimizer."""
    n = 4096 * 768
    nodes = [
        OpNode("ln", "aten.native_layer_norm.default", "norm", (4096, 768), n, 4, 5.0 * n,
               8.0 * n, "forward"),
        OpNode("gelu", "aten.gelu.default", "activation", (4096, 3072), 4 * n, 4, 8.0 * n,
               32.0 * n, "forward"),
        OpNode("lnb", "aten.native_layer_norm_backward.default", "norm", (4096, 768), n, 4,
               8.0 * n, 16.0 * n, "backward"),
        OpNode("sumb", "aten.sum.dim_IntList", "reduction", (768,), 768, 4, float(n),
               4.0 * n, "backward"),  # a bias gradient: runs on the half-precision gradient
        OpNode("opt", "aten._foreach_add_.List", "optimizer", (), n, 4, float(n), 12.0 * n,
               "optimizer"),
    ]
    cost = GraphCost.from_graph(OpGraph("amp", nodes, [], {"batch_size": 8}))
    assert cost.keeps_fp32 is not None and cost.keeps_fp32.tolist() == [True, False, True, False, False]
    assert not cost.half_traced
    d = get_device("a100")
    _, m32 = kernel_times(cost, d, P, "fp32")
    _, m16 = kernel_times(cost, d, P, "amp-bf16")
    assert m16[0] == pytest.approx(m32[0]) and m16[2] == pytest.approx(m32[2])
    assert m16[4] == pytest.approx(m32[4])
    assert m16[1] < 0.6 * m32[1] and m16[3] < 0.6 * m32[3]
