"""Multi-agent DRL allocation on partitions, flavors and servers (seed 003, Narantuya et al.).

One DQN agent per partition places each arriving job of a fixed flavor on a server or queues
it (§5); the environment is event-driven with seed 003's Eq. 2-4 utilisation, the four
rewards of §5.2, an LJF queue and node-level GPU packing; baselines are the paper's two
readings of "Naïve" (first-fit, random-fit / random-pinned), best-fit and a clairvoyant
brute-force oracle. torch is imported only by the agent and training.

Names load on first use (:mod:`gpuscope.core.lazy`).
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "BASELINES": ".baselines", "BestFit": ".baselines", "FirstFit": ".baselines",
    "Oracle": ".baselines", "Pinned": ".baselines", "RandomFit": ".baselines",
    "make_baseline": ".baselines", "run_episode": ".baselines",
    "EpisodeResult": ".env", "PartitionEnv": ".env", "gym_env": ".env",
    "Episode": ".simulate", "EpisodeSampler": ".simulate", "Flavor": ".simulate",
    "JobReq": ".simulate", "Partition": ".simulate", "Server": ".simulate",
    "energy_reduction": ".simulate", "fig3_episode": ".simulate",
    "inefficient_energy_mwh": ".simulate", "partition_from_cluster": ".simulate",
    "utilisation": ".simulate",
})
