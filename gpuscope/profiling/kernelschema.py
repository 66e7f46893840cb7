"""The measured-kernel table's schema: NeuSight's ops and shape columns, plus the sweep's own.

NeuSight (Lee et al., ASPLOS 2025; ``../shared/data/neusight-kernels``) times one launch of a
PyTorch op per row: ``bmm`` and ``linear`` (``B, M, N, K``: ``torch.bmm`` of ``(B, M, N) @
(B, N, K)``; ``nn.Linear(N, K)`` with bias on a ``(B, M, N)`` input), ``conv`` (``B,
Input_Channel, Output_Channel, Kernel_Szie, Input_Size, Stride, Padding``: a square
``nn.Conv2d`` without bias), the element-wise ``add mul div pow`` of two ``(B, H)`` tensors,
their ``*u`` forms with a Python scalar and ``relu tanh gelu`` of one, and ``softmax`` /
``ln`` (layer norm) over the rows of a ``(B, H)`` tensor; ``latency_ms``: CUDA events around
the call. ``gpuscope profile kernels`` writes the same columns and adds the optimizer's
multi-tensor kernels (``FOREACH``: ``B`` tensors of ``H`` elements each, one
``torch._foreach_*`` call) and the precision each row ran in (``PRECISION_DTYPES``).

A light module (no numpy/pandas/torch): the emulator's kernel model reads the same names.
"""

from __future__ import annotations

BINARY: tuple[str, ...] = ("add", "mul", "div", "pow")
UNARY: tuple[str, ...] = ("addu", "mulu", "divu", "powu", "relu", "tanh", "gelu")
#: Multi-tensor optimizer kernels, in place on a list of ``B`` tensors of ``H`` elements:
#: ``_foreach_add_(xs, ys)``, ``_foreach_mul_(xs, scalar)``, ``_foreach_addcmul_(xs, ys, zs)``
#: (the updates of SGD momentum, weight decay and Adam's moments).
FOREACH: tuple[str, ...] = ("foreach_add", "foreach_mulu", "foreach_addcmul")
#: Bytes per element each element-wise or multi-tensor op moves, in units of the dtype's size
#: (inputs read + outputs written).
ELEMENT_TRAFFIC: dict[str, int] = {**{op: 3 for op in BINARY}, **{op: 2 for op in UNARY},
                                   "foreach_add": 3, "foreach_mulu": 2, "foreach_addcmul": 4}
#: Every op and the shape columns it needs.
OP_COLUMNS: dict[str, tuple[str, ...]] = {
    "bmm": ("B", "M", "N", "K"), "linear": ("B", "M", "N", "K"),
    "conv": ("B", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride",
             "Padding"),
    **{op: ("B", "H") for op in (*BINARY, *UNARY, "softmax", "ln", *FOREACH)},
}
#: Every shape column, in table order.
SHAPE_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(c for cols in OP_COLUMNS.values()
                                                     for c in cols))
#: Precision of a row (column ``precision``) -> the torch dtype its tensors have. ``fp32``
#: runs with PyTorch's defaults (cuBLAS in FP32; cuDNN may use TF32 on Ampere and later),
#: ``tf32`` with TF32 allowed for matmuls and convolutions; ``fp16``/``bf16`` in half.
PRECISION_DTYPES: dict[str, str] = {"fp32": "float32", "tf32": "float32", "fp16": "float16",
                                    "bf16": "bfloat16"}
#: The emulator precision (``JobSpec.precision``) each row precision is priced under.
MODEL_PRECISION: dict[str, str] = {"fp32": "fp32", "tf32": "tf32", "fp16": "amp-fp16",
                                   "bf16": "amp-bf16"}
