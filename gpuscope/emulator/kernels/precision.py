"""Which math a kernel runs in: the emulator's one place for precision rules.

A convolution, GEMM, recurrence or fused attention runs either on the FP32 CUDA cores
("SIMT", the FP32 peak) or on tensor cores (TF32, FP16 or BF16 peak), depending on the job's
precision (``PRECISIONS``), the kernel's dtype in the traced graph and the architecture:

* ``fp32``: cuDNN kernels (convolutions, recurrences) use TF32 tensor cores on Ampere and later
  (PyTorch's default ``cudnn.allow_tf32 = True``); cuBLAS GEMMs do not
  (``matmul.allow_tf32 = False`` by default since PyTorch 1.12);
* ``tf32``: convolutions, recurrences and GEMMs on TF32 tensor cores (Ampere and later);
* ``amp-fp16``: on FP16 tensor cores (Volta and later); ``amp-bf16``: on BF16 tensor cores,
  which only Ampere and later have (before: the FP32 rate);
* a kernel traced in half precision (a graph traced under autocast, or ``model.half()``) runs
  on the FP16 tensor cores where the device has them, else at the FP32 rate (Pascal's
  GP102/GP104 run FP16 math at 1/64 rate, so cuDNN/cuBLAS compute half tensors in FP32);
  under ``amp-bf16`` only where the device has BF16 tensor cores (Ampere and later);
* fused attention on FP32 tensors is PyTorch's memory-efficient kernel, whose FP32 GEMMs on
  sm80+ are CUTLASS's 3xTF32 (three TF32 products per FP32 product, whatever ``allow_tf32``
  says): a third of the TF32 peak; before Ampere the FP32 rate.

Under ``amp-*`` a graph not traced under autocast has its activation traffic halved except the
optimizer's and the ops autocast keeps in FP32 (``amp_traffic``). Under ``model.half()`` (an
FP32-traced step whose every tensor is half, ``GraphCost.model_half``) all traffic is halved,
the optimizer's too, except batch norm's (``model_half_keeps_fp32``).
"""

from __future__ import annotations

import numpy as np

from gpuscope.emulator.kernels.device import KernelDevice

PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "amp-fp16", "amp-bf16")
#: Architectures with TF32 and BF16 tensor cores (Ampere and later).
TF32_ARCHS: frozenset[str] = frozenset({"ampere", "ada", "hopper"})
#: Architectures with FP16 tensor cores (Volta and later).
TENSOR_ARCHS: frozenset[str] = frozenset({"volta", "turing", "ampere", "ada", "hopper"})


def has_tf32(dev: KernelDevice) -> bool:
    return dev.arch in TF32_ARCHS and dev.tf32 > 0


def has_fp16_tc(dev: KernelDevice) -> bool:
    return dev.arch in TENSOR_ARCHS and dev.fp16 > 0


def half_on_tensor_cores(dev: KernelDevice, precision: str, half_traced: bool) -> bool:
    """Whether half-precision convolutions/GEMMs of this job run on tensor cores."""
    if not has_fp16_tc(dev) or (precision == "amp-bf16" and not has_tf32(dev)):
        return False
    return half_traced or precision in ("amp-fp16", "amp-bf16")


def mm_rates(dev: KernelDevice, precision: str, cudnn: np.ndarray, gemm: np.ndarray,
             half: np.ndarray, attn_fp32: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Peak FLOP/s and tensor-core flag of each compute kernel (rules in the module docstring).

    ``cudnn``: convolutions and recurrences; ``gemm``: cuBLAS GEMMs and fused attention;
    ``half``: kernels traced in half precision; ``attn_fp32``: fused attention on FP32 tensors.
    """
    n = len(cudnn)
    rate = np.full(n, dev.fp32)
    tc = np.zeros(n, dtype=bool)
    mm = cudnn | gemm
    if has_tf32(dev):
        if precision == "fp32":
            tc |= cudnn & ~half
        elif precision == "tf32":
            tc |= mm & ~half
        rate = np.where(tc, dev.tf32, rate)
    if has_fp16_tc(dev) and (precision != "amp-bf16" or has_tf32(dev)):
        amp = precision in ("amp-fp16", "amp-bf16")
        fp16 = (mm & half) | (mm if amp else np.zeros(n, dtype=bool))
        rate = np.where(fp16, dev.fp16, rate)
        tc |= fp16
    if has_tf32(dev) and precision in ("fp32", "tf32"):
        rate = np.where(attn_fp32, dev.tf32 / 3.0, rate)
        tc |= attn_fp32
    return rate, tc


def model_half_keeps_fp32(batch_norm: np.ndarray) -> np.ndarray:
    """The kernels of an FP32-traced step that keep their FP32 traffic under ``model.half()``
    (``amp_traffic``'s ``keep_fp32``; every other kernel, the optimizer's too, moves half):
    the ``batch_norm`` kernels. PyTorch calls cuDNN's batch norm on a half input only when its
    weight is FP32 (``use_cudnn`` in ``aten/src/ATen/native/Normalization.cpp``, PyTorch 1.x
    and 2.x: ``input.scalar_type() != at::kHalf || weight.scalar_type() == at::kFloat``),
    which autocast keeps and ``model.half()`` does not; PyTorch's own kernels run instead
    (per-channel reductions accumulating in FP32, element by element), taken at the element
    rate of the FP32 kernel: its FP32 traffic. Measured (pytorch-gpu-benchmark, VGG with and
    without batch norm): under ``model.half()`` the batch norms take 0.7-1.2x their FP32 time
    on Turing and Ampere GPUs, where cuDNN's half kernels would take about half; 2.1-2.4x on a
    TITAN Xp, which this rule does not give."""
    return batch_norm


def amp_traffic(byts: np.ndarray, precision: str, half_traced: bool,
                keep_fp32: np.ndarray | None) -> np.ndarray:
    """Bytes each kernel moves under ``precision``: halved under ``amp-*`` for a graph not
    traced under autocast, except kernels in ``keep_fp32`` (optimizer, autocast's FP32 ops)."""
    if not precision.startswith("amp") or half_traced or keep_fp32 is None:
        return byts
    return np.where(keep_fp32, byts, 0.5 * byts)
