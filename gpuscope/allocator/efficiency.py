"""Computing efficiency, seed 001 Eq. 2: ``eff = Σ_r peak_r / burst_r``.

Seed 001 §3.2 sums, over the resources r in use, the predicted average peak consumption divided
by the predicted average burst time, and places a job on the device with the highest sum
(Alg. 2). Three guards the paper leaves open, decided here:

* **burst ≈ 0.** A predicted burst can be tiny or negative (seed 001 Table 9 shows -1861.76
  for DCGAN on TitanX: a negative predicted burst). A burst is a run of at least one sample, so
  the shortest burst the profiler can observe is one sample period, 1/6 s (001 §2.2). Bursts
  are clipped to ``BURST_EPS_S = 1/6`` s; peaks are clipped to ``>= 0`` (a consumption).
* **units.** ``gpu_mem`` peaks are MB, the others %; summing raw MB/s with %/s lets memory
  swamp the sum. Every peak is taken in percent of capacity (``gpu_mem`` divided by the
  device's memory total), so each term is "% of capacity per second of burst".
  Seed 001 applied Eq. 2 to min-max-normalised outputs, which has the same effect.
* **absent resources.** A NaN term (a sensor the device lacks) contributes 0.

The resource set is a flag so the seed's ablations (§4.6: one resource alone, all but one) are
``parse_resources("gpu_util")`` and ``parse_resources("-cpu_util")``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from gpuscope.allocator.table import JobDeviceTable
from gpuscope.core.errors import InputError
from gpuscope.core.targets import PERCENT_CAPACITY, RESOURCES

#: Shortest observable burst: one profiler sample period (1/6 s, seed 001 §2.2).
BURST_EPS_S: float = 1.0 / 6.0
#: Resources of the Driple baseline (seed 001 §4.5.2: GPU util and GPU memory util).
DRIPLE_RESOURCES: tuple[str, ...] = ("gpu_util", "gpu_mem_util")
#: Seed 001's names for the resources in Tables 17–20.
SEED_NAMES: dict[str, str] = {
    "gpu_mem_util": "GPU Memory Utilization%",
    "gpu_util": "GPU Utilization%",
    "cpu_util": "CPU Utilization%",
    "gpu_mem": "GPU Memory",
}


def parse_resources(spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """Resource set from a flag: ``all`` (default), ``gpu_util,cpu_util`` (these),
    ``-cpu_util`` (all but these: the seed's "w/o" ablation)."""
    if spec is None:
        return RESOURCES
    if not isinstance(spec, str):
        items = [str(s) for s in spec]
    else:
        items = [s.strip() for s in spec.split(",") if s.strip()]
    if not items or items == ["all"]:
        return RESOURCES
    neg = [s[1:] for s in items if s.startswith("-")]
    pos = [s for s in items if not s.startswith("-")]
    if neg and pos:
        raise InputError(f"resource set {spec!r} mixes kept and removed resources")
    for r in neg + pos:
        if r not in RESOURCES:
            raise InputError(f"unknown resource {r!r}; expected one of {', '.join(RESOURCES)}")
    out = tuple(r for r in RESOURCES if r not in neg) if neg else tuple(dict.fromkeys(pos))
    if not out:
        raise InputError(f"resource set {spec!r} removes every resource")
    return out


def comp_eff(
    table: JobDeviceTable,
    resources: Sequence[str] = RESOURCES,
    mem_total_mb: Mapping[str, float] | None = None,
    burst_eps_s: float = BURST_EPS_S,
) -> np.ndarray:
    """Eq. 2 for every (job, device): ``Σ_{r in resources} peak_r% / max(burst_r, eps)``.

    Args:
        table: predictions pivoted by :class:`JobDeviceTable`.
        resources: resources summed over (the ablation flag).
        mem_total_mb: device -> memory total, to express ``gpu_mem`` peaks in %; without it
            (or for a device not listed) the ``gpu_mem`` peak is used as given.
        burst_eps_s: the burst floor (see the module docstring).
    """
    n, m = table.shape
    eff = np.zeros((n, m))
    for r in resources:
        peak = np.clip(table.get(f"{r}_peak"), 0.0, None)
        burst = np.maximum(table.get(f"{r}_burst_s"), burst_eps_s)
        if r == "gpu_mem" and mem_total_mb:
            scale = np.array(
                [PERCENT_CAPACITY / mem_total_mb[d] if mem_total_mb.get(d) else 1.0
                 for d in table.devices]
            )
            peak = peak * scale[None, :]
        eff += np.nan_to_num(peak / burst, nan=0.0)
    return eff
