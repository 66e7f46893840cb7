"""Which number formats each GPU architecture's tensor cores compute in: one table the emulator
and the docs share.

A job's precision (``JobSpec.precision``) needs a tensor-core format for its convolutions and
matrix products: ``tf32`` TF32, ``amp-fp16`` FP16, ``amp-bf16`` BF16 (``fp32`` none: CUDA
cores; convolutions of an ``fp32`` job use TF32 where the architecture has it, cuDNN's default).
Where the architecture lacks that format the job still runs, on the CUDA cores at the FP32
rate: PyTorch keeps ``tf32`` math in FP32 (``allow_tf32`` has no effect), and autocast's FP16
or BF16 tensors are multiplied with FP32 arithmetic (cuBLAS/cuDNN without tensor cores), while
their storage stays half size. :func:`effective_precision` says so in one line;
:func:`usable_peaks` is the device as such a job sees it (the tensor peaks it cannot use are 0).

Sources: NVIDIA architecture whitepapers — Volta (2017): FP16 tensor cores, the first; Turing
(2018): FP16 and INT8/INT4, no BF16 or TF32; Ampere GA100 (2020): TF32 and BF16 added; Ada
(2022) and Hopper (2022): FP8 added. Kepler, Maxwell and Pascal have no tensor cores.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuscope.cluster.devices import DeviceSpec

#: Tensor-core formats per architecture (the table; docs/devices.md prints it).
TENSOR_FORMATS: dict[str, frozenset[str]] = {
    "kepler": frozenset(),
    "maxwell": frozenset(),
    "pascal": frozenset(),
    "volta": frozenset({"fp16"}),
    "turing": frozenset({"fp16", "int8"}),
    "ampere": frozenset({"fp16", "bf16", "tf32", "int8"}),
    "ada": frozenset({"fp16", "bf16", "tf32", "fp8", "int8"}),
    "hopper": frozenset({"fp16", "bf16", "tf32", "fp8", "int8"}),
}
#: The first architecture with each format (for the warning's wording).
FIRST_WITH: dict[str, str] = {"fp16": "Volta", "int8": "Turing", "bf16": "Ampere",
                              "tf32": "Ampere", "fp8": "Ada/Hopper"}
#: The tensor-core format a job precision's convolutions and matrix products need.
FORMAT_OF: dict[str, str | None] = {"fp32": None, "tf32": "tf32", "amp-fp16": "fp16",
                                    "amp-bf16": "bf16"}


def supports(arch: str, precision: str) -> bool:
    """Whether ``arch`` runs ``precision``'s convolutions and matrix products on tensor cores
    (``fp32``: always true, it needs none). An unknown architecture supports nothing."""
    fmt = FORMAT_OF.get(precision)
    return fmt is None or fmt in TENSOR_FORMATS.get(arch, frozenset())


def effective_precision(arch: str, precision: str) -> tuple[str, str | None]:
    """(the precision the hardware computes ``precision``'s matrix math in, a one-line warning
    or None). ``tf32`` without TF32 tensor cores is ``fp32``; ``amp-fp16``/``amp-bf16`` without
    their tensor cores keep half-size tensors but multiply at the FP32 rate: the precision stays
    (memory and traffic are half) and the warning says so."""
    if supports(arch, precision):
        return precision, None
    fmt = str(FORMAT_OF[precision])
    why = f"no {fmt.upper()} tensor cores before {FIRST_WITH[fmt]}"
    if precision == "tf32":
        return "fp32", f"{why}: tf32 runs as fp32"
    return precision, (f"{why}: {precision} keeps half-size tensors but multiplies at the "
                       "FP32 rate")


def usable_peaks(device: DeviceSpec, precision: str) -> DeviceSpec:
    """``device`` as a job of ``precision`` sees it: the half-precision tensor peak
    (``tensor_tflops``) is 0 where the architecture lacks the format the job's half tensors
    use (BF16 for ``amp-bf16``, else FP16), and so is ``tf32_tflops`` without TF32 cores."""
    formats = TENSOR_FORMATS.get(device.arch, frozenset())
    half = "bf16" if precision == "amp-bf16" else "fp16"
    tensor = device.tensor_tflops if half in formats else 0.0
    tf32 = device.tf32_tflops if "tf32" in formats else 0.0
    if (tensor, tf32) == (device.tensor_tflops, device.tf32_tflops):
        return device
    return replace(device, tensor_tflops=tensor, tf32_tflops=tf32)


def precision_table() -> str:
    """The table as Markdown: architecture x job precision -> tensor cores or the FP32 rate."""
    precs = list(FORMAT_OF)
    lines = ["| architecture | " + " | ".join(precs) + " | tensor-core formats |",
             "|---" * (len(precs) + 2) + "|"]
    for arch, fmts in TENSOR_FORMATS.items():
        cells = ["CUDA cores" if p == "fp32" else
                 "tensor cores" if supports(arch, p) else "FP32 rate" for p in precs]
        lines.append(f"| {arch} | " + " | ".join(cells) + f" | {', '.join(sorted(fmts)) or '-'} |")
    return "\n".join(lines)
