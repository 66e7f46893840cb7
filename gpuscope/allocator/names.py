"""The allocator's names and defaults a user types: policies, queue orders, named queues, the
bundled checkpoint folder, the mix weight and the restart base cost.

They live in a module that imports neither NumPy nor pandas, so ``gpuscope allocate --help``
and ``gpuscope tjng --help`` list them at once; the modules that use them import them from
here (the policy registry, :data:`gpuscope.allocator.policies.POLICIES`, holds the policies
themselves, under these names and in this order).
"""

from __future__ import annotations

from gpuscope.core.data import bundled

#: Placement policies, in the order tables list them (``allocator.policies``).
POLICY_NAMES: tuple[str, ...] = (
    "oracle", "exec-time", "comp-eff", "driple", "random", "round-robin", "ect", "oracle-ect",
    "makespan", "mix", "ect-online",
)
#: The policy of ``allocate``, the API and the demo: it uses every GPU of the cluster.
DEFAULT_POLICY: str = "ect"
#: Orders of each GPU's queue (``allocator.ordering``).
ORDERS: tuple[str, ...] = ("fifo", "sjf", "sjf-eff", "plan")
#: Queues ``--jobs`` takes by name (``allocator.inputs``).
NAMED_QUEUES: dict[str, str] = {
    "table4": "seed 001 Table 4 workload, 128 jobs (gan counted twice), all queued at t=0",
    "table4-112": "seed 001 Table 4 workload as its matrix reads, 112 jobs, queued at t=0",
    "table8": "seed 001 Table 8: six jobs one minute apart",
}
#: The bundled predictor checkpoints (``--model-dir``).
DEFAULT_MODEL_DIR = bundled("checkpoints")
#: The mix policy's weight of average JCT against makespan (``--mix-weight``).
DEFAULT_WEIGHT: float = 0.5
#: Seconds a restart costs whatever the model: process start, CUDA context, data loader
#: (``allocator.restart``, ``--restart-base-s``).
RESTART_BASE_S: float = 30.0
