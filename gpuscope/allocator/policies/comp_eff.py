"""``comp-eff`` (seed 001 Alg. 2, Eq. 2) and ``driple``: the highest computing efficiency.

``comp-eff`` sums Σ_r peak_r / burst_r over ``--resources``; ``driple`` over GPU util and GPU
memory util from the Driple-target predictor (seed 001 §4.5.2's baseline). Each job is scored
alone, so both pile jobs on whichever device looks best.
"""

from __future__ import annotations

from gpuscope.allocator.efficiency import DRIPLE_RESOURCES, comp_eff
from gpuscope.allocator.policies.base import Placement, Policy, PolicyInputs, select_device
from gpuscope.allocator.table import JobDeviceTable


def _place_comp_eff(inp: PolicyInputs, table: JobDeviceTable) -> Placement:
    s = comp_eff(table, tuple(inp.resources), inp.mem_total_mb)
    return Placement("comp-eff", select_device(s, table.fits, True), s, True)


def _place_driple(inp: PolicyInputs, table: JobDeviceTable) -> Placement:
    s = comp_eff(table, DRIPLE_RESOURCES, inp.mem_total_mb)
    return Placement("driple", select_device(s, table.fits, True), s, True)


COMP_EFF = Policy("comp-eff", "pred", _place_comp_eff,
                  "Alg. 2, Eq. 2: the highest sum of peak/burst over --resources")
DRIPLE = Policy("driple", "driple", _place_driple,
                "comp-eff over GPU util and GPU memory util (Driple-target checkpoints)")
