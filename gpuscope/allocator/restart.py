"""Checkpoint-restart cost of a stopped job: what preemption pays when the job starts again.

``restart_s = base + 2 · state / PCIe bandwidth + state / memory bandwidth`` per (job, GPU
type): the state (weights and optimizer moments, :data:`BYTES_PER_PARAM` per parameter) is
copied to the host when the job stops and back when it resumes over the device's PCIe link
(``pcie_gen`` in the device catalog), and written into device memory once more; ``base`` is
what does not scale with the model (a new process, CUDA context, data loader warm-up;
:data:`RESTART_BASE_S`, ``--restart-base-s``). ``--restart-s`` replaces the whole formula by
one number.

Parameter counts: the ``model_params`` column of a truth table when it has one, else the
Gavel job families' below, else 0 (the base cost only).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpuscope.allocator.names import RESTART_BASE_S
from gpuscope.cluster.counts import ClusterSpec

#: fp32 weights plus two optimizer moments (Adam; SGD with momentum keeps one).
BYTES_PER_PARAM: float = 12.0
#: Parameters of Gavel's job families, counted on gpuscope's faithful copies
#: (``gpuscope.workloads.models.gavel``, ``gavel_step(model, 16)``; ResNet-50: torchvision).
GAVEL_PARAMS: dict[str, int] = {
    "ResNet-18": 11_173_962, "ResNet-50": 25_557_032, "Transformer": 54_195_712,
    "LM": 13_987_678, "Recommendation": 8_063_508, "CycleGAN": 28_285_832, "A3C": 3_249_639,
}


def params_of(job_types: Sequence[str]) -> np.ndarray:
    """Parameter count per job from its Gavel family name (0 where unknown)."""
    out = np.zeros(len(job_types))
    for i, jt in enumerate(job_types):
        fam = str(jt).split("(")[0].strip()
        out[i] = GAVEL_PARAMS.get(fam, 0)
    return out


def restart_seconds(params: np.ndarray, cluster: ClusterSpec,
                    base_s: float = RESTART_BASE_S) -> np.ndarray:
    """``(n_jobs, n_types)`` restart cost (module docstring)."""
    from gpuscope.cluster.devices import PCIE_GBS, load_catalog

    cat = load_catalog()
    pcie = np.array([PCIE_GBS.get(cat[d].pcie_gen, 15.75) if d in cat else 15.75
                     for d in cluster.devices]) * 1e9
    mem = np.array([cat[d].mem_bw_gbs if d in cat else 300.0 for d in cluster.devices]) * 1e9
    state = np.asarray(params, dtype=float)[:, None] * BYTES_PER_PARAM
    return base_s + 2.0 * state / pcie[None, :] + state / mem[None, :]
