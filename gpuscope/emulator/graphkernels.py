"""A traced training step's kernels as the kernel model sees them (``KernelBatch``).

``GraphCost.from_graph`` calls ``graph_kernels`` once per graph; every kernel node becomes one
row, priced by ``gpuscope.emulator.kernels`` (the same model ``gpuscope emulate kernels`` and
``kernel_time`` use):

* cuBLAS GEMMs (``mm``, ``addmm``, ``bmm``, ...): ``(batch, M, N, K)`` from the output and
  the FLOPs (``graphcost._gemm_mnk``); fused attention: its FLOPs and bytes;
* convolutions: the forward geometry read off the producers' shapes (input, weight, and the
  output or the output gradient), forward or backward (data and weight gradients, or the
  weight gradient alone when the FLOPs say the input needs none); transposed convolutions as
  the data gradient of the convolution they invert;
* a recurrence: one timestep's GEMM (``perf`` repeats it ``T`` times);
* row reductions: layer/group norm and softmax over the last axis, batch norm over all but
  the channel axis, sums and means (rows = output elements);
* everything else (element-wise, activations, pooling, losses, copies, dropout, optimizer
  updates): a memory-bound kernel of its traffic.

A convolution or GEMM whose shapes cannot be read is priced by its FLOPs and bytes at the
GEMM's efficiency (kind ``flops``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import permutations

import numpy as np

from gpuscope.emulator.kernels.model import KIND, ROW_TABLES, KernelBatch
from gpuscope.graphs.opgraph import OpGraph, OpNode
from gpuscope.graphs.ops.aten import ATTENTION_NAMES, GATES, base_name, recurrent_cell

_NORM_ROWS = {"native_layer_norm": "layer_norm", "native_layer_norm_backward": "layer_norm",
              "layer_norm": "layer_norm", "native_group_norm": "layer_norm",
              "native_group_norm_backward": "layer_norm",
              "native_batch_norm": "batch_norm", "native_batch_norm_backward": "batch_norm",
              "cudnn_batch_norm": "batch_norm", "cudnn_batch_norm_backward": "batch_norm",
              "_native_batch_norm_legit": "batch_norm",
              "_native_batch_norm_legit_functional": "batch_norm",
              "_softmax": "softmax", "_log_softmax": "softmax", "softmax": "softmax",
              "log_softmax": "softmax", "_softmax_backward_data": "softmax",
              "_log_softmax_backward_data": "softmax"}
_REDUCE = frozenset({"sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std",
                     "norm", "linalg_vector_norm", "logsumexp", "var_mean", "std_mean"})


def _op(op: str) -> str:
    parts = op.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] in ("aten", "gpuscope") else parts[0]


def conv_geometry(ins: Sequence[tuple[int, ...]], out: tuple[int, ...],
                  backward: bool) -> tuple[list[float], bool] | None:
    """``(geometry, transposed)`` of a 2-D convolution (``kernels.conv.GEOM``) from its
    producers' shapes ``ins`` and its output ``out`` (forward: ``(x, w)`` -> ``y``; backward:
    ``(dy, x, w)``); None when no assignment of the shapes is a convolution."""
    four = [tuple(s) for s in ins if len(s) == 4]
    for cand in permutations(four, 3 if backward else 2):
        if backward:
            y, x, w = cand
        else:
            (x, w), y = cand, tuple(out)
        if len(y) != 4 or x[0] != y[0]:
            continue
        if w[0] == y[1] and w[1] > 0 and x[1] % w[1] == 0 and w[2] <= x[2] + 8:
            g = x[1] // w[1]
            return [x[0], x[1], x[2], x[3], y[1], w[2], w[3],
                    max(1, round(x[2] / max(1, y[2]))), g, y[2], y[3]], False
        if not backward and w[0] == x[1] and w[1] > 0 and y[1] % w[1] == 0 and y[2] >= x[2]:
            g = y[1] // w[1]  # transposed: the data gradient of a y -> x convolution
            return [y[0], y[1], y[2], y[3], x[1], w[2], w[3],
                    max(1, round(y[2] / max(1, x[2]))), g, x[2], x[3]], True
    return None


def graph_kernels(graph: OpGraph, kern_idx: Sequence[int], flops: np.ndarray,
                  byts: np.ndarray, dtype_bytes: np.ndarray, steps: np.ndarray,
                  gemm_mnk: np.ndarray, attn_fp32: np.ndarray) -> KernelBatch:
    """The ``KernelBatch`` of a graph's kernel nodes ``kern_idx`` (module docstring); the
    arrays are ``GraphCost``'s, one entry per kernel node."""
    n = len(kern_idx)
    kb = KernelBatch.empty(n)
    kb.flops[:], kb.bytes[:], kb.dtype_bytes[:] = flops, byts, dtype_bytes
    kb.work[:] = byts
    prods: dict[int, list[int]] = {}
    for s, d in graph.edges:
        prods.setdefault(d, []).append(s)
    for j, i in enumerate(kern_idx):
        node = graph.nodes[i]
        kb.half[j] = node.dtype_bytes <= 2 and node.op_class in ("conv", "matmul")
        _fill_row(kb, j, node, [graph.nodes[p].shape for p in prods.get(i, [])],
                  float(flops[j]), float(steps[j]), gemm_mnk[j], bool(attn_fp32[j]))
    return kb


def _fill_row(kb: KernelBatch, j: int, node: OpNode, ins: list[tuple[int, ...]], flops: float,
              steps: float, mnk: np.ndarray, attn_fp32: bool) -> None:
    name, op = base_name(node.op), _op(node.op)
    shape = tuple(node.shape)
    if node.op_class == "conv":
        kb.cudnn[j] = True
        geo = conv_geometry(ins, shape, backward=op.endswith("_backward"))
        if geo is None:
            kb.kind[j] = KIND["flops"]
            return
        g, transposed = geo
        kb.kind[j], kb.geom[j] = KIND["conv"], g
        if op.endswith("_backward"):
            fwd = 2.0 * g[0] * g[4] * g[9] * g[10] * g[1] / g[8] * g[5] * g[6]
            kb.direction[j] = 3 if flops > 1.5 * fwd else 2
        else:
            kb.direction[j] = 1 if transposed else 0
        return
    if name in ATTENTION_NAMES:
        kb.kind[j], kb.gemm[j], kb.attn_fp32[j] = KIND["attention"], True, attn_fp32
        return
    cell = recurrent_cell(name)
    if cell is not None and steps > 0 and len(shape) == 3:
        b, gh = float(shape[1]), _gates_width(cell, name, shape)
        h = gh / GATES[cell]
        kb.kind[j], kb.cudnn[j] = KIND["gemm"], True
        kb.bmnk[j] = (1.0, b, gh, h) if not name.endswith("_backward") else (1.0, b, h, gh)
        kb.bytes[j] = kb.work[j] = kb.bytes[j] / steps
        return
    if node.op_class == "matmul":
        kb.gemm[j] = True
        if mnk[0] > 0:
            kb.kind[j], kb.bmnk[j] = KIND["gemm"], mnk
        else:
            kb.kind[j] = KIND["flops"]
        return
    table = _NORM_ROWS.get(op)
    numel = max(1.0, float(node.numel))
    if table is not None and shape:
        kb.kind[j], kb.rowsub[j] = KIND["rows"], ROW_TABLES.index(table)
        if table == "batch_norm" and len(shape) >= 2:
            kb.rows[j], kb.cols[j] = float(shape[1]), numel / max(1, shape[1])
        else:
            kb.rows[j], kb.cols[j] = numel / max(1, shape[-1]), float(shape[-1])
        return
    if node.op_class == "reduction" and name in _REDUCE:
        elems = max(numel, kb.bytes[j] / max(1.0, kb.dtype_bytes[j]) - numel)
        kb.kind[j], kb.rowsub[j] = KIND["rows"], ROW_TABLES.index("reduce")
        kb.rows[j], kb.cols[j] = numel, max(1.0, elems / numel)


def _gates_width(cell: str, name: str, shape: tuple[int, ...]) -> float:
    """Gate elements per sample of one timestep, ``G x H`` (forward outputs pack
    ``RNN_PACKED x H`` per sample, backward ones ``G x H``)."""
    from gpuscope.graphs.ops.aten import RNN_PACKED

    w = float(shape[2])
    return w if name.endswith("_backward") else GATES[cell] * w / RNN_PACKED[cell]
