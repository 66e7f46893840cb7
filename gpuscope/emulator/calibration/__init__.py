"""Maintainer tools of the emulator: fitting its constants on measurements.

* ``fit``: the graph-level parameters (host eras, multi-GPU, start-up) on measured steps
  and runs; ``fidelity``: the comparisons against others' measurements; ``bundle``: the
  bundled datasets' provenance;
* ``kernel_fit``: the kernel model's parameters fitted on measured kernel latencies
  (NeuSight's schema), leave-one-GPU-out validation, and one device's figures fitted from its
  own kernel sweep (``fit_device``);
* ``cited``: the SIMT GEMM scales of architectures no measured kernel covers, from cited
  cuBLAS SGEMM figures, and Kepler's convolution scale from measured network times;
* ``profiled``: a profiled GPU's catalog entry, parameters and fit report from its kernel
  sweep (``fit_profiled``, ``write_profiled``: ``gpuscope emulator fit``).

Names load on first use (:mod:`gpuscope.core.lazy`).
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "DeviceFit": ".kernel_fit", "KernelFitResult": ".kernel_fit", "fit_device": ".kernel_fit",
    "fit_kernel_params": ".kernel_fit", "leave_one_gpu_out": ".kernel_fit",
    "read_kernel_table": ".kernel_fit",
    "cited_scales": ".cited", "with_cited_scales": ".cited",
    "ProfiledFit": ".profiled", "fit_profiled": ".profiled", "write_profiled": ".profiled",
})
