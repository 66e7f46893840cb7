"""Bytes an aten op reads from its inputs (``OpNode.bytes_accessed`` = read + written).

By default a kernel reads every input tensor once. Indexed reads do not: they touch only the
rows (or elements) their index selects, fetched in DRAM sectors of ``SECTOR_BYTES``:

.. math::
    \\mathrm{read}(op) = \\sum_{t \\ne \\mathrm{table}} |t| + n_{\\mathrm{idx}} \\cdot
    \\max(s \\cdot e, \\mathrm{SECTOR\\_BYTES})

with ``n_idx`` the index's element count, ``s`` the elements one index selects (a row of
``embedding``, a slice of ``index_select``, one element of ``gather`` or ``nll_loss``) and
``e`` the table's element size. Why it matters: ``nll_loss_forward`` gathers one
log-probability per target, but counted as reading the whole ``(N, C)`` input it made Gavel's
LM loss (vocabulary 33,278) a 373 MB read, ~7 % of the step on an L4; an embedding's forward
reads the batch's rows, not the table. Backward kernels that write a full-size gradient
(``embedding_dense_backward``, ``nll_loss_backward``) keep the default: their output is dense.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

#: DRAM access granularity of NVIDIA GPUs since Maxwell (32-byte sectors; CUDA C++ Best
#: Practices Guide, "Coalesced Access to Global Memory").
SECTOR_BYTES = 32

#: op base name -> (table argument position, index argument position, slice rule). Positions
#: are among the op's tensor arguments in call order (``embedding(weight, indices)``,
#: ``index_select(self, dim, index)``, ``nll_loss_forward(self, target, weight, ...)``).
_INDEXED: dict[str, tuple[int, int, str]] = {
    "embedding": (0, 1, "row"),
    "index_select": (0, 1, "slice"),
    "gather": (0, 1, "element"),
    "nll_loss_forward": (0, 1, "element"),
    "nll_loss2d_forward": (0, 1, "element"),
}


def _nbytes(t: torch.Tensor) -> int:
    return int(t.numel()) * int(t.element_size())


def read_bytes(op_base: str, ins: Sequence[torch.Tensor], dim: int | None = None) -> float:
    """Bytes ``op_base`` reads from ``ins`` (distinct tensors, in call order); ``dim`` is
    ``index_select``'s dimension."""
    uniq = list({id(t): t for t in ins}.values())
    rule = _INDEXED.get(op_base)
    if rule is None or len(ins) <= max(rule[0], rule[1]):
        return float(sum(_nbytes(t) for t in uniq))
    table, index = ins[rule[0]], ins[rule[1]]
    if rule[2] == "row":
        per = int(table.shape[-1]) if table.dim() else 1
    elif rule[2] == "slice":
        d = (dim or 0) % max(1, table.dim())
        per = math.prod(int(s) for i, s in enumerate(table.shape) if i != d)
    else:
        per = 1
    gathered = int(index.numel()) * max(per * int(table.element_size()), SECTOR_BYTES)
    rest = sum(_nbytes(t) for t in uniq if t is not table)
    return float(rest + min(gathered, _nbytes(table)))
