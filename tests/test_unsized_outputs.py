"""Outputs the trace does not size (for the memory model): the fused attention's logsumexp
and RNG state and the layer norm's mean/rstd (gpuscope.emulator.memory.UNSIZED_OUTPUTS),
counted with the byte counts computed by hand from the shapes."""

from __future__ import annotations

from gpuscope.emulator.liveness import live_profile
from gpuscope.emulator.memory import saved_bytes, unsized_bytes
from gpuscope.graphs.opgraph import OpGraph, OpNode


def _attention_graph() -> OpGraph:
    """q -> fused attention (out B x H x S x d, fp16) -> layer norm (rows x 64) -> relu; in
    backward the layer norm's reads its input and statistics, the attention's q, its output,
    logsumexp and RNG state."""
    b, h, s, d = 2, 4, 128, 16
    n = b * h * s * d
    nodes = [
        OpNode("q", "aten.mm.default", "matmul", (b, h, s, d), n, 2, phase="forward"),
        OpNode("att", "gpuscope.sdpa_attention.default", "matmul", (b, h, s, d), n, 2,
               phase="forward"),
        OpNode("ln", "aten.native_layer_norm.default", "norm", (b * s, 64), b * s * 64, 4,
               phase="forward"),
        OpNode("use", "aten.relu.default", "activation", (b * s, 64), b * s * 64, 4,
               phase="forward"),
        OpNode("g", "aten.mm.default", "matmul", (b * s, 64), b * s * 64, 4, phase="backward"),
        OpNode("lnb", "aten.native_layer_norm_backward.default", "norm", (b * s, 64),
               b * s * 64, 4, phase="backward"),
        OpNode("attb", "gpuscope.sdpa_attention_backward.default", "matmul", (b, h, s, d), n,
               2, phase="backward"),
    ]
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (1, 5), (2, 5), (5, 6), (0, 6), (1, 6)]
    return OpGraph("att", nodes, edges, meta={"param_bytes": 0})


def test_attention_logsumexp_and_layer_norm_stats_are_counted() -> None:
    g = _attention_graph()
    b, h, s, d = 2, 4, 128, 16
    lse_rng = b * h * s * 4 + 2 * 8  # FP32 logsumexp per row + the int64 seed and offset
    stats = 2 * (b * s) * 4  # FP32 mean and rstd per row
    assert unsized_bytes(g.nodes[1]) == lse_rng and unsized_bytes(g.nodes[2]) == stats
    assert unsized_bytes(g.nodes[0]) == 0
    # saved: q, the attention output + logsumexp/RNG, relu's output (read by g), the layer
    # norm's statistics (not its output, which its backward does not read)
    n_q = b * h * s * d * 2
    assert saved_bytes(g) == n_q + n_q + lse_rng + b * s * 64 * 4 + stats


def test_unsized_outputs_live_until_their_backward_reader() -> None:
    g = _attention_graph()
    b, h, s, d = 2, 4, 128, 16
    lse_rng = b * h * s * 4 + 2 * 8
    stats = 2 * (b * s) * 4
    live = live_profile(g, 0.0)
    assert live is not None
    n_q, n_ln = b * h * s * d * 2, b * s * 64 * 4
    # at the relu (node 3): q, the attention output + lse/RNG (read in backward), the layer
    # norm's output (relu's input) and statistics, relu's output
    assert live[3] == n_q + n_q + lse_rng + n_ln + stats + n_ln
    # at the layer norm's backward (node 5): the layer norm's output is gone (its backward does
    # not read it); q, the attention output + lse/RNG, the statistics, g's and lnb's outputs
    assert live[5] == n_q + n_q + lse_rng + stats + n_ln + n_ln
