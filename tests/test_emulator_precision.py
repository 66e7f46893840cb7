"""Precision rules of the emulator's GEMM and attention rates
(``gpuscope.emulator.kernels.precision``): FP32 fused attention at 3xTF32 on Ampere+, tensor
cores by precision and architecture, autocast's FP32 ops; on hand-built graphs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpuscope.cluster.devices import get_device
from gpuscope.emulator import EmulatorParams
from gpuscope.emulator.perf import GraphCost, gpu_times, kernel_times
from gpuscope.graphs.opgraph import OpGraph, OpNode

P = EmulatorParams()  # the defaults, not the calibration file


def _no_rule(cost: GraphCost) -> GraphCost:
    """``cost`` with its FP32 attention priced as any FP32 GEMM (the 3xTF32 rule off)."""
    assert cost.kernels is not None
    kb = dataclasses.replace(cost.kernels, attn_fp32=np.zeros(len(cost.kernels), dtype=bool))
    return dataclasses.replace(cost, attn_fp32=None, kernels=kb)


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
        no_rule = _no_rule(cost)
        # tf32 job: slower than a TF32 GEMM (3 products per FP32 product) ...
        assert _attn_time(cost, dev, "tf32") > 2.5 * _attn_time(no_rule, dev, "tf32")
        # ... fp32 job: faster than the CUDA-core FP32 matmul rate it had
        assert _attn_time(cost, dev, "fp32") < _attn_time(no_rule, dev, "fp32")
    # before Ampere the kernel is SIMT: the FP32 matmul rate, unchanged
    no_rule = _no_rule(cost)
    assert _attn_time(cost, "v100", "fp32") == _attn_time(no_rule, "v100", "fp32")
    # a half-precision trace's attention is not FP32
    half = GraphCost.from_graph(_layer(2))
    assert half.attn_fp32 is not None and not half.attn_fp32.any()


def test_tensor_cores_by_precision_and_architecture() -> None:
    """An fp32 job's GEMMs stay on the CUDA cores (``matmul.allow_tf32`` off); tf32 puts them
    on TF32 tensor cores on Ampere+ only; a half-precision trace runs FP16 tensor cores on
    Volta+, but an ``amp-bf16`` job has no BF16 tensor cores before Ampere."""
    c32, c16 = GraphCost.from_graph(_layer(4)), GraphCost.from_graph(_layer(2))
    ffn = 3  # a 4096 x 3072 x 768 GEMM
    h100, v100 = get_device("h100"), get_device("v100")
    t = {p: kernel_times(c32, h100, P, p)[0][ffn] for p in ("fp32", "tf32")}
    assert t["tf32"] < t["fp32"] / 3
    assert kernel_times(c32, v100, P, "tf32")[0][ffn] == kernel_times(c32, v100, P, "fp32")[0][ffn]
    fp16 = kernel_times(c16, v100, P, "amp-fp16")[0][ffn]
    bf16 = kernel_times(c16, v100, P, "amp-bf16")[0][ffn]
    assert bf16 > 3 * fp16


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
