"""The kernel-level performance model: one cost model for every kernel the emulator prices.

Public API:

* ``kernel_time(op, device, **shape)``: device seconds of one kernel (a NeuSight-schema op:
  ``bmm``, ``linear``, ``conv``, element-wise, ``softmax``, ``ln``; or ``gemm``/``memory``);
* ``KernelBatch`` / ``price``: many kernels at once (the graph emulator's path);
* ``KernelDevice``: a catalog device's spec figures; ``KernelParams``: the fitted constants
  (``kernel_params.json``); ``predict_table``: a NeuSight-schema table priced as single
  timed launches (``gpuscope emulate kernels``).

Per-class math: ``gemm``, ``conv``, ``memory``, ``reduction`` (module docstrings); which
peak a kernel runs at: ``precision``; learnt shape corrections: ``correction``. Names load on
first use (:mod:`gpuscope.core.lazy`).
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "kernel_time": ".api", "predict_table": ".api",
    "KernelBatch": ".model", "device_seconds": ".model", "price": ".model",
    "KernelDevice": ".device", "KernelParams": ".params", "default_kernel_params": ".params",
    "OP_CLASS": ".ops", "OP_COLUMNS": ".ops", "batch_from_table": ".ops",
})
