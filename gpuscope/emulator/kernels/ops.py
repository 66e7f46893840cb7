"""Kernel tables in NeuSight's schema -> ``KernelBatch`` (and one kernel -> a batch of one).

The op names and shape columns of NeuSight's kernel measurements (Lee et al., ASPLOS 2025;
``../shared/data/neusight-kernels``): ``bmm`` and ``linear`` (``B, M, N, K``: ``torch.bmm`` of
``(B, M, N) @ (B, N, K)``; ``nn.Linear(N, K)`` with bias on a ``(B, M, N)`` input), ``conv``
(``B, Input_Channel, Output_Channel, Kernel_Szie, Input_Size, Stride, Padding``: a square
``nn.Conv2d`` without bias), the element-wise ``add mul div pow`` of two ``(B, H)`` tensors,
their ``*u`` forms with a Python scalar and ``relu tanh gelu`` of one, and ``softmax`` /
``ln`` (layer norm) over the rows of a ``(B, H)`` tensor, FP32; plus what ``gpuscope profile
kernels`` adds (``gpuscope.profiling.kernelschema``): the optimizer's multi-tensor kernels
(``foreach_*``, memory-bound over all ``B x H`` elements) and a ``precision`` column
(``fp32``, ``tf32``, ``fp16``, ``bf16``; absent: ``fp32``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.emulator.kernels.device import KernelDevice
from gpuscope.emulator.kernels.model import KIND, ROW_TABLES, KernelBatch, device_seconds
from gpuscope.emulator.kernels.params import KernelParams
from gpuscope.profiling.kernelschema import (
    BINARY,
    ELEMENT_TRAFFIC,
    FOREACH,
    MODEL_PRECISION,
    OP_COLUMNS,
    PRECISION_DTYPES,
    UNARY,
)

__all__ = ["BINARY", "FOREACH", "OP_CLASS", "OP_COLUMNS", "UNARY", "batch_from_table",
           "fill", "table_batches", "table_seconds", "with_dtype"]

#: Kernel class of each op (the figures are reported per class).
OP_CLASS: dict[str, str] = {"bmm": "gemm", "linear": "gemm", "conv": "conv",
                            **{op: "elementwise" for op in (*BINARY, *UNARY)},
                            "softmax": "softmax", "ln": "layer_norm",
                            **{op: "optimizer" for op in FOREACH}}


def batch_from_table(df: pd.DataFrame) -> KernelBatch:
    """The kernels of a NeuSight-schema table (column ``op`` and each op's shape columns),
    FP32; a row with an unknown op or a missing/non-positive shape raises ``InputError``
    naming it."""
    if "op" not in df.columns:
        raise InputError("kernel table has no 'op' column")
    ops = df["op"].astype(str).to_numpy()
    bad = sorted(set(ops) - set(OP_COLUMNS))
    if bad:
        more = f" and {len(bad) - 5:,} more" if len(bad) > 5 else ""
        raise InputError(f"kernel table: unknown op(s) {', '.join(b[:40] for b in bad[:5])}"
                         f"{more}; known: {', '.join(OP_COLUMNS)}")
    n = len(df)
    kb = KernelBatch.empty(n)
    cols: dict[str, np.ndarray] = {}
    for op in sorted(set(ops)):
        m = ops == op
        for c in OP_COLUMNS[op]:
            if c not in df.columns:
                raise InputError(f"kernel table: op {op!r} needs column {c!r}")
            v = pd.to_numeric(df.loc[m, c], errors="coerce").to_numpy(dtype=float)
            ok = np.isfinite(v) & (v >= (0 if c == "Padding" else 1))
            if not ok.all():
                i = int(np.flatnonzero(m)[np.flatnonzero(~ok)[0]])
                raise InputError(f"kernel table row {i}: op {op!r} has {c} = "
                                 f"{df[c].iloc[i]!r} (expected a positive number)")
            cols.setdefault(c, np.zeros(n))[m] = v
    fill(kb, ops, cols)
    return kb


def fill(kb: KernelBatch, ops: np.ndarray, cols: Mapping[str, np.ndarray]) -> None:
    """Write the kernels of NeuSight ops ``ops`` with shape columns ``cols`` into ``kb``."""
    def col(c: str) -> np.ndarray:
        return cols.get(c, np.zeros(len(ops)))

    b, m, n, k, h = col("B"), col("M"), col("N"), col("K"), col("H")
    e = b * h
    for op in set(ops.tolist()):
        r = ops == op
        if op in ("bmm", "linear"):
            kb.kind[r] = KIND["gemm"]
            if op == "bmm":  # (B, M, N) @ (B, N, K): out M x K, reduction N
                kb.bmnk[r] = np.stack([b, m, k, n], axis=1)[r]
                kb.bytes[r] = 4.0 * (b * (m * n + n * k + m * k))[r]
            else:  # (B*M) x N times W^T (N x K) plus bias
                kb.bmnk[r] = np.stack([np.ones_like(b), b * m, k, n], axis=1)[r]
                kb.bytes[r] = 4.0 * (b * m * n + n * k + 2 * b * m * k)[r]
            kb.flops[r] = (2.0 * b * m * n * k)[r]
            kb.gemm[r] = True
        elif op == "conv":
            kb.kind[r] = KIND["conv"]
            c_in, c_out = col("Input_Channel"), col("Output_Channel")
            ks, size, st, pad = col("Kernel_Szie"), col("Input_Size"), col("Stride"), col("Padding")
            out = np.floor((size + 2 * pad - ks) / np.maximum(st, 1.0)) + 1
            geom = np.stack([b, c_in, size, size, c_out, ks, ks, st, np.ones_like(b), out, out], 1)
            kb.geom[r] = geom[r]
            kb.flops[r] = (2.0 * b * c_out * out * out * c_in * ks * ks)[r]
            kb.bytes[r] = 4.0 * (b * c_in * size * size + b * c_out * out * out + c_out * c_in * ks * ks)[r]
            kb.cudnn[r] = True
        elif op in ("softmax", "ln"):
            kb.kind[r] = KIND["rows"]
            kb.rowsub[r] = ROW_TABLES.index("softmax" if op == "softmax" else "layer_norm")
            kb.rows[r], kb.cols[r] = b[r], h[r]
            kb.bytes[r] = 8.0 * e[r]
        else:  # element-wise and multi-tensor ops stream every element
            kb.kind[r] = KIND["memory"]
            kb.bytes[r] = 4.0 * ELEMENT_TRAFFIC[op] * e[r]
        kb.work[r] = kb.bytes[r]


def with_dtype(kb: KernelBatch, dtype_bytes: int) -> KernelBatch:
    """``kb`` (built FP32) with tensors of ``dtype_bytes`` per element: the traffic scaled and,
    for 2 bytes, marked half precision (tensor cores where the precision rules allow). In
    place; returns ``kb``."""
    if dtype_bytes != 4:
        kb.bytes[:] *= dtype_bytes / 4.0
        kb.work[:] *= dtype_bytes / 4.0
        kb.dtype_bytes[:] = float(dtype_bytes)
        kb.half[:] = dtype_bytes <= 2
    return kb


def table_batches(df: pd.DataFrame) -> list[tuple[np.ndarray, KernelBatch, str]]:
    """The kernels of a kernel table grouped by row precision (column ``precision``; absent:
    ``fp32``): ``(row mask, batch, emulator precision)`` each (``kernelschema``)."""
    prec = (df["precision"].astype(str).to_numpy() if "precision" in df.columns
            else np.full(len(df), "fp32"))
    bad = sorted(set(prec.tolist()) - set(MODEL_PRECISION))
    if bad:
        raise InputError(f"kernel table: unknown precision(s) {', '.join(bad)}; known: "
                         f"{', '.join(MODEL_PRECISION)}")
    out = []
    for pr in sorted(set(prec.tolist())):
        m = prec == pr
        kb = with_dtype(batch_from_table(df[m]), 2 if PRECISION_DTYPES[pr] != "float32" else 4)
        out.append((m, kb, MODEL_PRECISION[pr]))
    return out


def table_seconds(df: pd.DataFrame | list[tuple[np.ndarray, KernelBatch, str]],
                  dev: KernelDevice, p: KernelParams, fixed: bool = False) -> np.ndarray:
    """Device seconds of each row of a kernel table (or its ``table_batches``) on ``dev``,
    each under its precision. ``fixed``: with the launch and DRAM-latency costs
    (``model.device_seconds``)."""
    groups = table_batches(df) if isinstance(df, pd.DataFrame) else df
    out = np.zeros(sum(len(kb) for _, kb, _ in groups))
    for m, kb, pr in groups:
        out[m] = device_seconds(kb, dev, p, pr, fixed=fixed)
    return out
