"""``exec-time`` (seed 001 Alg. 1) and ``oracle``: each job to its lowest execution time.

Both score each job alone: ``exec-time`` by the predicted time, ``oracle`` by the true one
(its fit mask is the true run's status). Neither looks at the load already placed.
"""

from __future__ import annotations

from gpuscope.allocator.policies.base import Placement, Policy, PolicyInputs, select_device
from gpuscope.allocator.table import JobDeviceTable


def _lowest_time(name: str):  # type: ignore[no-untyped-def]
    def place(inp: PolicyInputs, table: JobDeviceTable) -> Placement:
        s = table.get("exec_time_s")
        return Placement(name, select_device(s, table.fits, False), s, False)

    return place


EXEC_TIME = Policy("exec-time", "pred", _lowest_time("exec-time"),
                   "Alg. 1: the lowest predicted execution time")
ORACLE = Policy("oracle", "truth", _lowest_time("oracle"),
                "the lowest true execution time (ground truth)")
