"""Multi-agent DRL allocation on partitions, flavors and servers (seed 003, Narantuya et al.).

One DQN agent per partition places each arriving job of a fixed flavor on a server or queues
it (§5); the environment is event-driven with seed 003's Eq. 2-4 utilisation, the four
rewards of §5.2, an LJF queue and node-level GPU packing; baselines are the paper's two
readings of "Naïve" (first-fit, random-fit / random-pinned), best-fit and a clairvoyant
brute-force oracle. torch is imported only by the agent and training.
"""

from gpuscope.mdrl.baselines import (
    BASELINES,
    BestFit,
    FirstFit,
    Oracle,
    Pinned,
    RandomFit,
    make_baseline,
    run_episode,
)
from gpuscope.mdrl.env import EpisodeResult, PartitionEnv, gym_env
from gpuscope.mdrl.simulate import (
    Episode,
    EpisodeSampler,
    Flavor,
    JobReq,
    Partition,
    Server,
    energy_reduction,
    fig3_episode,
    inefficient_energy_mwh,
    partition_from_cluster,
    utilisation,
)

__all__ = [
    "BASELINES", "BestFit", "Episode", "EpisodeResult", "EpisodeSampler", "FirstFit", "Flavor",
    "JobReq", "Oracle", "Partition", "PartitionEnv", "Pinned", "RandomFit", "Server",
    "energy_reduction", "fig3_episode", "gym_env", "inefficient_energy_mwh", "make_baseline",
    "partition_from_cluster", "run_episode", "utilisation",
]
