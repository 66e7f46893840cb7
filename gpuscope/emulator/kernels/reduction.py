"""Row reductions: softmax, layer norm, batch norm, sums over an axis.

``rows`` independent reductions of ``cols`` elements each. The data streams as any
memory-bound kernel (``memory.stream_time``), ``passes`` times over the input (a row that fits
a warp's registers, ``cols <= 1024``, is read once; a longer row is read again per pass of the
block kernel: ``passes_long``); and each row costs a reduction latency, a tree over its
``cols`` elements, on the SM that holds it::

    t = stream_time(passes * in_bytes + out_bytes) + ceil(rows / (SMs * rows_per_sm))
        * (row_cycles + cols_cycles * log2(cols)) / f_clock

so many short rows fill the GPU and stream, a few long rows wait on their reductions.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gpuscope.emulator.kernels.device import KernelDevice
from gpuscope.emulator.kernels.memory import stream_time

#: Longest row a warp-per-row kernel holds in registers (PyTorch's softmax_warp_forward).
WARP_ROW: int = 1024


def row_time(rows: np.ndarray, cols: np.ndarray, in_bytes: np.ndarray, out_bytes: np.ndarray,
             dev: KernelDevice, p: Mapping[str, float], pm: Mapping[str, float]) -> np.ndarray:
    """Seconds for the row reductions (module docstring); ``p``: this kernel's parameters,
    ``pm``: the memory parameters."""
    cols = np.maximum(cols, 1.0)
    passes = np.where(cols <= WARP_ROW, 1.0, p["passes_long"])
    byts = passes * in_bytes + out_bytes
    t = stream_time(byts, in_bytes + out_bytes, dev, pm)
    waves = np.ceil(np.maximum(rows, 1.0) / (dev.sms * p["rows_per_sm"]))
    return t + waves * (p["row_cycles"] + p["cols_cycles"] * np.log2(cols + 1.0)) / dev.clock
