"""Memory-bound kernels (element-wise, activations, copies, pooling, optimizer updates).

A kernel that moves ``bytes`` over a working set of ``W`` bytes (its inputs and outputs) streams
them at the bandwidth of the memory level that holds them::

    t = bytes / BW(W),   1 / BW(W) = r(W) / BW_L2 + (1 - r(W)) / (bw * dram_eff)
    r(W) = 1 / (1 + (W / (l2_frac * L2))^l2_sharp)            (share served by the L2)
    BW_L2 = l2_bytes_per_clk * SMs * f_clock

``bw`` is the datasheet DRAM bandwidth, ``dram_eff`` the fraction a streaming kernel reaches
(``dram_eff_hbm`` on stacked memory: HBM and GDDR controllers reach different fractions),
``r`` the share of the working set the L2 still holds when the kernel runs (tensors a previous
kernel just wrote, or a kernel re-run on the same tensors), falling off as ``W`` outgrows the
usable part of the L2. Fixed costs (the launch and one DRAM round trip) are added by the caller
(``gpuscope.emulator.kernels.model``), so a one-element kernel costs its floor on every device.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gpuscope.emulator.kernels.device import KernelDevice


def l2_share(work: np.ndarray, dev: KernelDevice, p: Mapping[str, float]) -> np.ndarray:
    """Share of a working set of ``work`` bytes served by the L2 (module docstring)."""
    x = np.clip(work / (p["l2_frac"] * dev.l2), 1e-6, 1e3)
    return 1.0 / (1.0 + np.exp(np.minimum(p["l2_sharp"] * np.log(x), 700.0)))


def stream_time(byts: np.ndarray, work: np.ndarray, dev: KernelDevice,
                p: Mapping[str, float]) -> np.ndarray:
    """Seconds to move ``byts`` with working set ``work`` (module docstring)."""
    r = l2_share(work, dev, p)
    bw_l2 = p["l2_bytes_per_clk"] * dev.sms * dev.clock
    return byts * (r / bw_l2 + (1.0 - r) / (dev.bw * dram_eff(dev, p)))


def dram_eff(dev: KernelDevice, p: Mapping[str, float]) -> float:
    """The streaming fraction of ``dev``'s datasheet bandwidth (HBM or GDDR)."""
    return p["dram_eff_hbm"] if dev.hbm else p["dram_eff"]
