"""``random`` and ``round-robin``: placements that read only the fit mask.

* ``random`` — a seeded uniform choice among the GPUs the job fits (types weighted by count).
* ``round-robin`` — GPU instances in turn, skipping those the job does not fit.
"""

from __future__ import annotations

import numpy as np

from gpuscope.allocator.policies.base import Placement, Policy, PolicyInputs, select_device
from gpuscope.allocator.table import JobDeviceTable


def _place_random(inp: PolicyInputs, table: JobDeviceTable) -> Placement:
    n, m = table.shape
    rng = np.random.default_rng(inp.seed)
    counts = np.asarray(inp.cluster.counts, dtype=float)
    # Gumbel-max over types weighted by GPU count = a uniform pick of a fitting GPU.
    keys = np.log(counts)[None, :] - np.log(-np.log(rng.random((n, m))))
    return Placement("random", select_device(keys, table.fits, True), np.full((n, m), np.nan),
                     True)


def _place_round_robin(inp: PolicyInputs, table: JobDeviceTable) -> Placement:
    n, m = table.shape
    inst = inp.cluster.instance_device
    fits = table.fits
    dev = np.full(n, -1, dtype=np.int64)
    ptr = 0
    for j in range(n):
        for k in range(len(inst)):
            g = (ptr + k) % len(inst)
            if fits[j, inst[g]]:
                dev[j], ptr = inst[g], g + 1
                break
    return Placement("round-robin", dev, np.full((n, m), np.nan), True)


RANDOM = Policy("random", "any", _place_random,
                "a seeded uniform choice among the GPUs the job fits")
ROUND_ROBIN = Policy("round-robin", "any", _place_round_robin,
                     "GPU instances in turn, skipping those the job does not fit")
