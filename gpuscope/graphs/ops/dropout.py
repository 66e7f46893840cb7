"""Dropout traced as the GPU runs it (for the memory model).

``F.dropout(x, p, training=True)`` dispatches on the tensor's device
(``aten/src/ATen/native/Dropout.cpp``, ``dropout()``): a CUDA tensor takes the fused
``native_dropout`` kernel (``is_fused_kernel_acceptable``: CUDA/XPU/lazy, ``0 < p < 1``,
non-empty), whose mask is **bool**, one byte per element (``aten/src/ATen/native/cuda/
Dropout.cu``, ``native_dropout_cuda`` -> ``dropout_cuda<bool>``), and backward is one
``native_dropout_backward(grad, mask, scale)``. On the ``meta`` device and on (fake) CPU
tensors, where gpuscope traces, it takes ``_dropout_impl`` instead: ``empty`` + ``bernoulli``
+ ``div_`` + ``mul``, whose saved noise tensor has the INPUT's dtype (4 bytes per element in
fp32, 2 under autocast). ``native_dropout`` itself returns a bool mask on CPU and meta as on
CUDA (checked in torch 2.13: ``tests/test_dropout_mask.py``).

``gpu_dropout()`` makes the traced graph say what a GPU runs: within the block the
out-of-place ``F.dropout`` under training calls ``torch.native_dropout`` (one node forward,
one ``native_dropout_backward`` node; the memory model sizes the node's unrecorded bool
mask, ``gpuscope.emulator.memory.UNSIZED_OUTPUTS``). Before, the noise tensor was an
``empty_like`` node (``constant`` class, which the memory model does not allocate) written
in place, so the masks counted 0 bytes. In-place dropout (``dropout_``), feature and alpha
dropout are not fused on CUDA either and keep PyTorch's own path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch.nn import functional as F

from gpuscope.graphs.ops.patching import swap_functional

_DROPOUT = F.dropout


def fused_dropout(input: torch.Tensor, p: float = 0.5, training: bool = True,
                  inplace: bool = False) -> torch.Tensor:
    """``F.dropout`` as on a CUDA tensor: ``native_dropout`` where ``is_fused_kernel_acceptable``
    would hold (module docstring), PyTorch's own path otherwise."""
    if (training and not inplace and isinstance(input, torch.Tensor) and 0.0 < p < 1.0
            and input.numel() > 0 and input.is_floating_point()):
        return torch.native_dropout(input, float(p), True)[0]
    return _DROPOUT(input, p, training, inplace)


@contextlib.contextmanager
def gpu_dropout(enabled: bool = True) -> Iterator[None]:
    """Within the block ``F.dropout`` (and so ``nn.Dropout``, ``F.multi_head_attention_forward``,
    Hugging Face's ``nn.functional.dropout``) is ``fused_dropout`` (module docstring)."""
    with swap_functional("dropout", _DROPOUT, fused_dropout, enabled):
        yield
