"""Partition model and episodes for seed 003 (Narantuya et al.): Eq. 2-4 utilisation, Fig. 7.

A *partition* is a set of servers with GPU, CPU and memory capacity (node-level packing: a job
of one flavor runs on one server; the multi-server flavor, f in Table 2, needs the whole
partition). An *episode* is K jobs bound to the partition (§6.1: jobs 1..K-1 drawn from the
single-server flavors, job K the terminal f job) with arrival times and durations in hours.

Utilisation, seed 003 §4.2, for the started jobs d of partition p at time t_c:

* Eq. 2: τ(d) = t_c − d.t_s while d runs, τ(d) = its run time once completed
  (the paper's t(d), the time limit, when durations are the limits), i.e. τ = min(t_c − t_s, dur);
* Eq. 3: T = t_c − min_d d.t_s (counted from the first started job);
* Eq. 4: U = Σ_d λ(d)·τ(d) / (R·T) with R = 1; U = 0 when T = 0 (Eq. 4 is 0/0 there).

Fig. 7's inefficient energy: (1 − U) × hours × partition power (the paper's "MW" are MWh).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gpuscope.cluster.config import ClusterConfig
from gpuscope.core.errors import InputError

#: Fig. 3's durations in hours by flavor size rank (s, m, l, f): 3, 7, 10, 14 days.
FIG3_DURATIONS_H: tuple[float, ...] = (72.0, 168.0, 240.0, 336.0)
#: The paper's episode length for Fig. 7 (720 h).
EPISODE_HOURS: float = 720.0


@dataclass(frozen=True)
class Flavor:
    """One flavor of the partition: λ is ``rate`` (Table 2), the time limit in hours."""

    name: str
    gpus: int
    cpus: int
    mem_gb: float
    limit_h: float
    rate: float


@dataclass(frozen=True)
class Server:
    name: str
    gpus: int
    cpus: int
    mem_gb: float
    power_kw: float


@dataclass(frozen=True)
class Partition:
    """Servers (first-fit scan order) and flavors sorted by GPUs (s < m < l < f)."""

    name: str
    servers: tuple[Server, ...]
    flavors: tuple[Flavor, ...]
    gpu_type: str = ""

    @property
    def single(self) -> tuple[int, ...]:
        """Indices of flavors that fit in one server (the agent's n flavors, §5.1)."""
        cap = max(s.gpus for s in self.servers)
        return tuple(i for i, f in enumerate(self.flavors) if f.gpus <= cap)

    @property
    def multi(self) -> tuple[int, ...]:
        """Indices of flavors spanning several servers (f: the terminal job, not an action)."""
        return tuple(i for i in range(len(self.flavors)) if i not in self.single)

    @property
    def power_kw(self) -> float:
        return sum(s.power_kw for s in self.servers)

    def flavor_index(self, name: str) -> int:
        for i, f in enumerate(self.flavors):
            if f.name == name or f.name.split("-")[0] == name:
                return i
        raise InputError(f"partition {self.name!r} has no flavor {name!r}; flavors: "
                         f"{', '.join(f.name for f in self.flavors)}")


def partition_from_cluster(cluster: ClusterConfig, name: str) -> Partition:
    """The :class:`Partition` ``name`` of a cluster file (it needs flavors)."""
    srv = cluster.servers_in(name)
    fl = cluster.flavors_in(name)
    if not fl:
        raise InputError(f"cluster {cluster.name!r}: partition {name!r} has no flavors")
    flavors = sorted((Flavor(f.name, f.gpus, f.cpus, f.mem_gb, f.time_limit_h, cluster.rate(f))
                      for f in fl), key=lambda f: (f.gpus, f.name))
    servers = tuple(Server(s.name, s.gpus, s.cpus, s.mem_gb, s.power_kw) for s in srv)
    part = Partition(name, servers, tuple(flavors), srv[0].gpu_type)
    if not part.single:
        raise InputError(f"partition {name!r}: no flavor fits in one server")
    return part


@dataclass(frozen=True)
class JobReq:
    """One job of an episode: flavor index, arrival and duration in hours."""

    job_id: int
    flavor: int
    arrival_h: float
    duration_h: float
    model: str = ""


@dataclass(frozen=True)
class Episode:
    """K jobs in arrival order; the last is the terminal multi-server job."""

    jobs: tuple[JobReq, ...]
    source: str = "emulated"


DurationFn = Callable[[np.random.Generator, Partition, int], "tuple[float, str]"]


def limit_durations(rng: np.random.Generator, part: Partition, k: int) -> tuple[float, str]:
    """Table 2 limits: Eq. 2's completed job runs exactly t(d) (the default)."""
    return part.flavors[k].limit_h, ""


def fig3_durations(rng: np.random.Generator, part: Partition, k: int) -> tuple[float, str]:
    """Fig. 3's 3/7/10/14 days by size rank (derived from the figure's times)."""
    return FIG3_DURATIONS_H[min(k, len(FIG3_DURATIONS_H) - 1)], ""


DURATIONS: dict[str, DurationFn] = {"limits": limit_durations, "fig3": fig3_durations}


@dataclass
class EpisodeSampler:
    """Seed 003 §6.1 episodes: K−1 jobs uniform over the single-server flavors, then f.

    Arrivals: the first at 0, then exponential gaps of mean ``iat_h`` (the paper
    gives no arrival process); ``iat_h = 0`` is a burst.
    """

    part: Partition
    n_jobs: int = 5
    iat_h: float = 6.0
    durations: DurationFn = limit_durations

    def __post_init__(self) -> None:
        if self.n_jobs < 2:
            raise InputError(f"--jobs must be >= 2, got {self.n_jobs}")
        if self.iat_h < 0:
            raise InputError(f"--iat must be >= 0 hours, got {self.iat_h}")

    def __call__(self, rng: np.random.Generator) -> Episode:
        single = self.part.single
        term = self.part.multi[-1] if self.part.multi else single[-1]
        ks = [int(single[i]) for i in rng.integers(0, len(single), self.n_jobs - 1)] + [term]
        gaps = rng.exponential(self.iat_h, self.n_jobs - 1) if self.iat_h > 0 else \
            np.zeros(self.n_jobs - 1)
        arr = np.concatenate([[0.0], np.cumsum(gaps)])
        jobs = []
        for i, (k, a) in enumerate(zip(ks, arr)):
            d, model = self.durations(rng, self.part, k)
            jobs.append(JobReq(i, k, float(a), float(d), model))
        return Episode(tuple(jobs))


def fig3_episode(part: Partition) -> Episode:
    """Seed 003 Fig. 3: flavors s, m, m, l, f arriving at days 0, 1, 1, 3, 3.5."""
    s, m, lg = part.single[0], part.single[1], part.single[2]
    f = part.multi[-1]
    days = [(s, 0.0), (m, 1.0), (m, 1.0), (lg, 3.0), (f, 3.5)]
    return Episode(tuple(JobReq(i, k, 24.0 * d, FIG3_DURATIONS_H[r], "")
                         for i, ((k, d), r) in enumerate(zip(days, [0, 1, 1, 2, 3]))),
                   source="seed 003 Fig. 3")


def utilisation(t: float, started: Sequence[tuple[float, float, float]]) -> float:
    """Eq. 2-4: U at ``t`` of jobs ``(rate λ, start t_s, duration)`` started by ``t``.

    τ = min(t − t_s, duration) (Eq. 2), T = t − min t_s (Eq. 3), U = Σ λτ / T (Eq. 4, R = 1).
    """
    if not started:
        return 0.0
    t0 = min(s for _, s, _ in started)
    span = t - t0
    if span <= 0:
        return 0.0
    return sum(r * min(max(t - s, 0.0), d) for r, s, d in started) / span


def inefficient_energy_mwh(u: float, power_kw: float, hours: float = EPISODE_HOURS) -> float:
    """Fig. 7: idle share (1 − U) of ``hours`` at the partition's power, in MWh."""
    return (1.0 - u) * hours * power_kw / 1000.0


def energy_reduction(u_base: float, u_new: float) -> float:
    """Relative reduction of inefficient energy going from ``u_base`` to ``u_new``."""
    return 1.0 - (1.0 - u_new) / (1.0 - u_base) if u_base < 1 else 0.0
