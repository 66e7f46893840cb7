"""One kernel, or a NeuSight-schema table, priced by the kernel model (the public entry points
of ``gpuscope.emulator.kernels``)."""


from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from gpuscope.cluster.devices import DeviceSpec, get_device
from gpuscope.core.errors import InputError
from gpuscope.emulator.kernels.device import KernelDevice
from gpuscope.emulator.kernels.model import KernelBatch, price
from gpuscope.emulator.kernels.ops import batch_from_table, with_dtype
from gpuscope.emulator.kernels.params import KernelParams, default_kernel_params
from gpuscope.emulator.kernels.precision import PRECISIONS


def kernel_time(op: str, device: DeviceSpec | str, precision: str = "fp32",
                dtype_bytes: int = 4, params: KernelParams | None = None,
                **shape: float) -> float:
    """Device seconds of one kernel on ``device`` (launch included).

    ``op``: a NeuSight op with its shape columns as keywords (``kernel_time("bmm", "a100",
    B=8, M=512, N=64, K=512)``; ``ops.OP_COLUMNS``), ``gemm`` with ``b, m, n, k`` (output
    ``m x n``, reduction ``k``) or ``memory`` with ``bytes``. ``dtype_bytes`` 2 marks a half
    precision kernel (half the traffic; tensor cores where ``precision`` rules allow)."""
    if precision not in PRECISIONS:
        raise InputError(f"unknown precision {precision!r}; expected one of {', '.join(PRECISIONS)}")
    spec = get_device(device) if isinstance(device, str) else device
    p = params or default_kernel_params()
    if op == "gemm":
        b, m, n, k = (float(shape.get(x, 1.0)) for x in "bmnk")
        kb = batch_from_table(pd.DataFrame([{"op": "bmm", "B": b, "M": m, "N": k, "K": n}]))
    elif op == "memory":
        kb = KernelBatch.empty(1)
        kb.bytes[:] = kb.work[:] = float(shape.get("bytes", 0.0))
    else:
        kb = batch_from_table(pd.DataFrame([{"op": op, **shape}]))
    with_dtype(kb, dtype_bytes)
    return float(price(kb, KernelDevice.from_spec(spec), p, precision)[0])


def predict_table(df: pd.DataFrame, params: KernelParams | None = None,
                  catalog: Any = None) -> np.ndarray:
    """``pred_ms`` of each row of a NeuSight-schema table with a ``device`` column: its kernel
    seen through a single CUDA-event timed launch (``calibration.kernel_fit``'s model, the
    host's pre/post floors at the fitted medians)."""
    from gpuscope.emulator.calibration.kernel_fit import predict_ms

    return predict_ms(df, params or default_kernel_params(), catalog)
