"""Baselines of seed 003 and a clairvoyant oracle.

The paper's "Naïve" is defined twice: §3.2/Fig. 3 "finds an available server from the first
server" (``first-fit``) and §6.1 "submits a job to a randomly selected GPU server if the server
has enough resources" (``random-fit``: uniform among servers with room, else wait;
``random-pinned``: one random server per job, wait for that one — the literal sentence).
``best-fit`` (gpuscope's): the fitting server with the fewest free GPUs.
The ``oracle`` (a check of what the partition allows) is a clairvoyant brute force over the m^(K−1)
pinned server choices of the episode's single-server jobs, scored by replaying the episode.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from gpuscope.core.errors import InputError
from gpuscope.mdrl.env import EpisodeResult, PartitionEnv
from gpuscope.mdrl.simulate import Episode


class Policy(Protocol):
    """Chooses an action for ``env.cur``; ``begin`` is called at each episode start."""

    def begin(self, env: PartitionEnv) -> None: ...

    def act(self, env: PartitionEnv) -> int: ...


class FirstFit:
    """§3.2: the lowest-index server with room, else queue."""

    def begin(self, env: PartitionEnv) -> None:
        pass

    def act(self, env: PartitionEnv) -> int:
        ok = np.flatnonzero(env.fits())
        return env.run_action(int(ok[0])) if ok.size else env.queue_action()


class BestFit(FirstFit):
    """The fitting server with the fewest free GPUs (ties: lowest index)."""

    def act(self, env: PartitionEnv) -> int:
        ok = np.flatnonzero(env.fits())
        if not ok.size:
            return env.queue_action()
        return env.run_action(int(ok[np.argmin(env.free[ok, 0])]))


@dataclass
class RandomFit:
    """§6.1 reading 1: uniform among the servers with room, else queue."""

    seed: int = 0
    rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def begin(self, env: PartitionEnv) -> None:
        pass

    def act(self, env: PartitionEnv) -> int:
        ok = np.flatnonzero(env.fits())
        return env.run_action(int(self.rng.choice(ok))) if ok.size else env.queue_action()


@dataclass
class Pinned:
    """Each job waits for its own server: ``choice[job_id]``, or a random one drawn once
    (``random-pinned``, §6.1 reading 2) when the job is not in ``choice``."""

    choice: dict[int, int] = field(default_factory=dict)
    seed: int = 0
    rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)
        self._fixed = dict(self.choice)

    def begin(self, env: PartitionEnv) -> None:
        self.choice = dict(self._fixed)

    def act(self, env: PartitionEnv) -> int:
        assert env.cur is not None
        jid = env.cur.job_id
        if jid not in self.choice:
            self.choice[jid] = int(self.rng.integers(env.m))
        j = self.choice[jid]
        return env.run_action(j) if env.fits()[j] else env.queue_action()


def run_episode(env: PartitionEnv, policy: Policy, episode: Episode | None = None,
                seed: int | None = None) -> EpisodeResult:
    """Play one episode (a fixed ``episode``, else one drawn from ``env``'s sampler)."""
    env.reset(seed=seed, options={"episode": episode} if episode is not None else None)
    policy.begin(env)
    done = env.terminal
    while not done:
        _, _, done, _, _ = env.step(policy.act(env))
    assert env.result is not None
    return env.result


OBJECTIVES: dict[str, Callable[[EpisodeResult], float]] = {
    "u_term": lambda r: r.u_term,
    "u_end": lambda r: r.u_end,
    "makespan": lambda r: -r.makespan_h,
}


#: Most placements the brute-force oracle simulates (m servers ^ n single-server jobs).
MAX_ORACLE_PLACEMENTS: int = 200_000


@dataclass
class Oracle:
    """Clairvoyant brute force: the best pinned placement of the episode for ``objective``
    (u_term, u_end or makespan); ties go to the least total waiting, then to the first in
    lexicographic server order (Fig. 3: (1, 2, 2, 1) waits nowhere, (1, 1, 1, 2) does)."""

    objective: str = "u_term"

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise InputError(f"unknown oracle objective {self.objective!r}; "
                             f"choose from {', '.join(OBJECTIVES)}")

    def solve(self, env: PartitionEnv, episode: Episode) -> tuple[EpisodeResult, tuple[int, ...]]:
        """The best result and its placement (server index per single-server job)."""
        score = OBJECTIVES[self.objective]
        ids = [j.job_id for j in episode.jobs if j.flavor in env.flv]
        if env.m ** len(ids) > MAX_ORACLE_PLACEMENTS:  # no parameter value may hang
            raise InputError(f"the brute-force oracle would simulate {env.m}^{len(ids)} "
                             f"placements (limit {MAX_ORACLE_PLACEMENTS}); use fewer --jobs "
                             "or --no-oracle / another --policy")
        arrival = {j.job_id: j.arrival_h for j in episode.jobs}
        best: tuple[float, float, EpisodeResult, tuple[int, ...]] | None = None
        for combo in itertools.product(range(env.m), repeat=len(ids)):
            r = run_episode(env, Pinned(dict(zip(ids, combo))), episode)
            sc = score(r)
            wait = sum(r.starts[i] - arrival[i] for i in ids if i in r.starts)
            if best is None or sc > best[0] + 1e-9 or (sc > best[0] - 1e-9
                                                       and wait < best[1] - 1e-9):
                best = (sc, wait, r, combo)
        assert best is not None
        return best[2], best[3]


BASELINES: dict[str, Callable[[int], Policy]] = {
    "first-fit": lambda s: FirstFit(),
    "best-fit": lambda s: BestFit(),
    "random-fit": lambda s: RandomFit(seed=s),
    "random-pinned": lambda s: Pinned(seed=s),
}


def make_baseline(name: str, seed: int = 0) -> Policy:
    if name not in BASELINES:
        raise InputError(f"unknown policy {name!r}; choose from "
                         f"{', '.join([*BASELINES, 'oracle', 'dqn'])}")
    return BASELINES[name](seed)
