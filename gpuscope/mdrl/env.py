"""Event-driven partition environment of seed 003 §5 (Gymnasium API by duck typing).

One decision per presented job. Actions (§5.1): ``n·m`` "run flavor k on server j"
(``a = k·m + j``) and ``n`` "queue flavor k" (``a = n·m + k``), n = single-server flavors,
m = servers. The job already has a flavor: the mask allows only its m run
actions on servers with room and its queue action; the flavor part of an action is otherwise
ignored (the agent cannot resize a job).

Rewards, §5.2: queue while some server has room −1; run on a server without room
−1 and the job is queued; queue while no server has room 0; run with room U(p, t) of Eq. 4
(the new job has τ = 0). ``terminal_bonus`` (gpuscope's, default 0) adds w·U_term to the
transition that reaches the terminal event; ``reward="terminal"`` (gpuscope's) drops the
per-step rewards and pays U_term on that transition only (the quantity Figs. 5-6 report).

Events: completions before arrivals at equal times; jobs arrive one by one in order (a burst
submits job 1, then job 2, ...). An arrival presents the new job; a release event presents the
queued jobs that fit some server, largest first (LJF, §5.1; a queued job is
re-presented at the release event). The multi-server (f) job is not an agent
decision: it starts when the whole partition is free; that is the *terminal event*,
where ``U_term`` is measured. Jobs still waiting then are placed first-fit to get
``U_end`` and the makespan (first arrival to last completion).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuscope.mdrl.simulate import Episode, JobReq, Partition, utilisation

STATES: tuple[str, ...] = ("paper", "flavor", "full")
REWARDS: tuple[str, ...] = ("paper", "terminal")
F_STARTS: tuple[str, ...] = ("ljf", "last")
MASKS: tuple[str, ...] = ("paper", "fit")


@dataclass
class _Run:
    job: JobReq
    servers: tuple[int, ...]
    start: float


@dataclass
class EpisodeResult:
    """Outcome of one episode (hours)."""

    u_term: float
    u_end: float
    t_term_h: float
    makespan_h: float
    placement: dict[int, tuple[int, ...]] = field(default_factory=dict)
    starts: dict[int, float] = field(default_factory=dict)
    ret: float = 0.0


class PartitionEnv:
    """Seed 003's per-partition environment (Algorithm 1's A_i sees only its partition p_i).

    ``sampler(rng) -> Episode`` draws episodes; ``reset(options={"episode": ep})`` replays a
    fixed one. ``state``: ``paper`` (free GPUs per server), ``flavor`` (+ one-hot flavor of the
    job and queued count per flavor), ``full`` (+ hours to each server's next
    release / longest limit and the share of jobs still to arrive; gpuscope's).
    """

    metadata: dict[str, Any] = {"render_modes": []}
    render_mode = None

    def __init__(self, part: Partition, sampler: Callable[[np.random.Generator], Episode],
                 state: str = "flavor", terminal_bonus: float = 0.0,
                 reward: str = "paper", f_start: str = "ljf", mask: str = "paper") -> None:
        if reward not in REWARDS:
            from gpuscope.core.errors import InputError

            raise InputError(f"unknown --reward {reward!r}; choose from {', '.join(REWARDS)}")
        if state not in STATES:
            from gpuscope.core.errors import InputError

            raise InputError(f"unknown --state {state!r}; choose from {', '.join(STATES)}")
        self.part = part
        self.sampler = sampler
        self.state_kind = state
        self.terminal_bonus = terminal_bonus
        self.reward_kind = reward
        if f_start not in F_STARTS:
            from gpuscope.core.errors import InputError

            raise InputError(f"unknown --f-start {f_start!r}; choose from {', '.join(F_STARTS)}")
        self.f_start = f_start
        if mask not in MASKS:
            from gpuscope.core.errors import InputError

            raise InputError(f"unknown --mask {mask!r}; choose from {', '.join(MASKS)}")
        self.mask_kind = mask
        self.m = len(part.servers)
        self.flv = part.single
        self.n = len(self.flv)
        self.n_actions = self.n * self.m + self.n
        self.obs_dim = self.m + (0 if state == "paper" else 2 * self.n) + \
            (self.m + 1 if state == "full" else 0)
        self._hmax = max(f.limit_h for f in part.flavors)
        self._cap = np.array([[s.gpus, s.cpus, s.mem_gb] for s in part.servers], float)
        self._np_random: np.random.Generator | None = None
        try:  # spaces only when gymnasium is installed (optional extra "rl")
            from gymnasium import spaces

            self.action_space = spaces.Discrete(self.n_actions)
            self.observation_space = spaces.Box(0.0, 1.0, (self.obs_dim,), np.float32)
        except ImportError:  # pragma: no cover
            pass

    # -- Gymnasium API ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None or self._np_random is None:
            self._np_random = np.random.default_rng(seed)
        ep = (options or {}).get("episode") or self.sampler(self._np_random)
        self.episode: Episode = ep
        self.t = 0.0
        self.free = self._cap.copy()
        self.running: list[tuple[float, int, int]] = []  # heap of (end, seq, job_id)
        self.runs: dict[int, _Run] = {}
        self.queue: list[JobReq] = []
        self.arrivals = list(ep.jobs)
        self.todo: list[JobReq] = []
        self.cur: JobReq | None = None
        self.terminal = False
        self.result: EpisodeResult | None = None
        self._seq = 0
        self._ret = 0.0
        self._advance()
        return self._obs(), self._info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self.cur is None:
            raise RuntimeError("step() after the episode ended; call reset()")
        job, a = self.cur, int(action)
        fits = self._fits(job)
        if a < self.n * self.m:
            j = a % self.m
            if fits[j]:
                self._start(job, (j,))
                r = utilisation(self.t, self._started())
            else:  # run on a server without room: -1 and the job is queued (§5.2)
                self.queue.append(job)
                r = -1.0
        else:
            self.queue.append(job)
            r = -1.0 if fits.any() else 0.0
        self.cur = None
        self._advance()
        if self.reward_kind == "terminal":
            r = 0.0
        if self.terminal and self.result is not None:
            r += (1.0 if self.reward_kind == "terminal" else self.terminal_bonus) * \
                self.result.u_term
        self._ret += r
        if self.result is not None:
            self.result.ret = self._ret
        return self._obs(), float(r), self.terminal, False, self._info()

    def action_masks(self) -> np.ndarray:
        """Allowed actions for the current job: its runs on servers with room and its queue
        action (``mask="paper"``), or the queue only when no server has room (``"fit"``)."""
        mask = np.zeros(self.n_actions, bool)
        if self.cur is None:
            return mask
        k = self.flv.index(self.cur.flavor)
        fits = self._fits(self.cur)
        mask[k * self.m:(k + 1) * self.m] = fits
        mask[self.n * self.m + k] = self.mask_kind == "paper" or not fits.any()
        return mask

    def close(self) -> None:
        pass

    # -- helpers for policies --------------------------------------------------------------------
    def run_action(self, server: int) -> int:
        """The action "run the current job on ``server``"."""
        assert self.cur is not None
        return self.flv.index(self.cur.flavor) * self.m + server

    def queue_action(self) -> int:
        assert self.cur is not None
        return self.n * self.m + self.flv.index(self.cur.flavor)

    def fits(self) -> np.ndarray:
        """Per server: does the current job fit now?"""
        return self._fits(self.cur) if self.cur is not None else np.zeros(self.m, bool)

    def utilisation(self) -> float:
        """Eq. 4 now."""
        return utilisation(self.t, self._started())

    # -- internals -------------------------------------------------------------------------------
    def _need(self, job: JobReq) -> np.ndarray:
        f = self.part.flavors[job.flavor]
        return np.array([f.gpus, f.cpus, f.mem_gb], float)

    def _fits(self, job: JobReq) -> np.ndarray:
        return np.all(self.free >= self._need(job) - 1e-9, axis=1)

    def _started(self) -> list[tuple[float, float, float]]:
        return [(self.part.flavors[r.job.flavor].rate, r.start, r.job.duration_h)
                for r in self.runs.values()]

    def _start(self, job: JobReq, servers: tuple[int, ...]) -> None:
        need = self._need(job)
        if len(servers) == 1:
            self.free[servers[0]] -= need
        else:  # the multi-server job takes the whole partition
            self.free[list(servers)] = 0.0
        assert (self.free >= -1e-9).all(), "over-commit"
        self.runs[job.job_id] = _Run(job, servers, self.t)
        heapq.heappush(self.running, (self.t + job.duration_h, self._seq, job.job_id))
        self._seq += 1

    def _release(self, jid: int) -> None:
        run = self.runs[jid]
        if len(run.servers) == 1:
            self.free[run.servers[0]] += self._need(run.job)
        else:
            for j in run.servers:
                s = self.part.servers[j]
                self.free[j] = (s.gpus, s.cpus, s.mem_gb)

    def _all_free(self) -> bool:
        return bool(np.all(np.abs(self.free - self._cap) < 1e-6))

    def _is_multi(self, job: JobReq) -> bool:
        return job.flavor not in self.flv

    def _try_start_multi(self) -> bool:
        """A waiting multi-server job starts once the partition is free: first (``ljf``), or
        after every job that arrived before it has started (``last``)."""
        for job in sorted(self.queue, key=lambda q: (-q.flavor, q.job_id)):
            if self.f_start == "last" and any(
                    not self._is_multi(q) and q.job_id < job.job_id for q in self.queue):
                continue
            if self._is_multi(job) and self._all_free():
                self.queue.remove(job)
                if not self.terminal:
                    self._terminate(job)
                self._start(job, tuple(range(self.m)))
                return True
        return False

    def _terminate(self, job: JobReq) -> None:
        self.terminal = True
        u = utilisation(self.t, self._started())
        self.result = EpisodeResult(u_term=u, u_end=u, t_term_h=self.t, makespan_h=0.0)

    def _advance(self) -> None:
        """Run events until a job needs a decision or the terminal event (then finish)."""
        while True:
            while self.todo and not self.terminal:
                job = self.todo.pop(0)
                if job in self.queue:  # re-presented only if it fits somewhere now
                    if not self._fits(job).any():
                        continue
                    self.queue.remove(job)
                self.cur = job
                return
            if self.terminal:
                self._finish()
                return
            if self._try_start_multi():
                continue
            t_rel = self.running[0][0] if self.running else None
            t_arr = self.arrivals[0].arrival_h if self.arrivals else None
            if t_rel is None and t_arr is None:
                # nothing runs or arrives, jobs wait for the f job (f_start "last"): the
                # agent queued a job that fits an empty partition; place it first-fit
                job = min((q for q in self.queue if not self._is_multi(q)),
                          key=lambda q: (-q.flavor, q.job_id))
                self.queue.remove(job)
                self._start(job, (int(np.flatnonzero(self._fits(job))[0]),))
                continue
            new: list[JobReq] = []
            released = t_arr is None or (t_rel is not None and t_rel <= t_arr + 1e-9)
            if released:  # completions first at equal times
                assert t_rel is not None
                self.t = max(self.t, t_rel)
                while self.running and self.running[0][0] <= self.t + 1e-9:
                    self._release(heapq.heappop(self.running)[2])
            else:  # one arrival per event: jobs are submitted one by one, in order
                job = self.arrivals.pop(0)
                self.t = max(self.t, job.arrival_h)
                if self._is_multi(job):
                    self.queue.append(job)
                else:
                    new.append(job)
            if self._try_start_multi():
                continue
            cands = new + ([q for q in self.queue if not self._is_multi(q)] if released else [])
            self.todo = sorted(cands, key=lambda q: (-self.part.flavors[q.flavor].gpus,
                                                     q.arrival_h, q.job_id))

    def _finish(self) -> None:
        """After the terminal event: place the rest first-fit, LJF, until all complete."""
        assert self.result is not None
        self.cur = None
        while self.queue or self.running:
            self._try_start_multi()
            for job in sorted(self.queue, key=lambda q: (-q.flavor, q.job_id)):
                if self._is_multi(job):
                    break  # the next multi job waits for the whole partition (LJF head)
                fits = np.flatnonzero(self._fits(job))
                if fits.size:
                    self.queue.remove(job)
                    self._start(job, (int(fits[0]),))
            if not self.running:
                break
            end, _, jid = heapq.heappop(self.running)
            self.t = max(self.t, end)
            self._release(jid)
            while self.running and self.running[0][0] <= self.t + 1e-9:
                self._release(heapq.heappop(self.running)[2])
        started = self._started()
        t_end = max((r.start + r.job.duration_h for r in self.runs.values()), default=self.t)
        first = min(j.arrival_h for j in self.episode.jobs)
        self.result.u_end = utilisation(t_end, started)
        self.result.makespan_h = t_end - first
        self.result.t_term_h -= first
        self.result.placement = {i: r.servers for i, r in self.runs.items()}
        self.result.starts = {i: r.start for i, r in self.runs.items()}

    def _obs(self) -> np.ndarray:
        caps = np.array([s.gpus for s in self.part.servers], float)
        parts = [self.free[:, 0] / caps]
        if self.state_kind != "paper":
            onehot = np.zeros(self.n)
            if self.cur is not None:
                onehot[self.flv.index(self.cur.flavor)] = 1.0
            qc = np.zeros(self.n)
            for q in self.queue:
                if q.flavor in self.flv:
                    qc[self.flv.index(q.flavor)] += 1
            parts += [onehot, np.minimum(qc / max(1, len(self.episode.jobs)), 1.0)]
        if self.state_kind == "full":
            nxt = np.full(self.m, self._hmax)
            for end, _, jid in self.running:
                for j in self.runs[jid].servers:
                    nxt[j] = min(nxt[j], end - self.t)
            left = len(self.arrivals) / max(1, len(self.episode.jobs))
            parts += [np.clip(nxt / self._hmax, 0, 1), np.array([left])]
        return np.clip(np.concatenate(parts), 0.0, 1.0).astype(np.float32)

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"action_mask": self.action_masks(), "t_h": self.t}
        if self.result is not None:
            r = self.result
            info.update(u_term=r.u_term, u_end=r.u_end, t_term_h=r.t_term_h,
                        makespan_h=r.makespan_h)
        return info


def gym_env(part: Partition, sampler: Callable[[np.random.Generator], Episode],
            **kw: Any) -> Any:
    """The same environment as a ``gymnasium.Env`` subclass (for ``check_env`` and wrappers)."""
    import gymnasium

    cls = type("GymPartitionEnv", (PartitionEnv, gymnasium.Env), {})
    return cls(part, sampler, **kw)
