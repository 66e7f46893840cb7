"""The co-location simulator for seed 004: workers, containers, monitor ticks, migration pauses.

Event-driven and exact between events: the jobs running on a worker progress at the speeds the
``SharingModel`` gives them (fractions of their solo speed), so the next completion is known in
closed form. Events: arrivals, completions, the end of a migration pause and the monitor tick
every ``interval`` seconds (all workers tick together).

Policies:

* ``ds``: the paper's default placement, round-robin by container count — the k-th arriving
  job goes to worker ``k mod W`` (``placement_rule="rr"``; this reproduces Fig. 5's DS average
  275 s under ``ps``) or, with ``"least"``, to the worker with the fewest active containers
  (ties: lowest index); jobs never move;
* ``specon``: the same initial placement (the paper's ``change_yaml.py`` pins SpeCon's pods to
  DS's nodes), then Algorithm 1 at every tick, Algorithm 2 on each request, Algorithm 3 at
  every tick and every completion;
* ``specon-srpt`` (gpuscope's, not the paper's): as ``specon``, but Algorithm 2's destination
  minimises the added completion time predicted from remaining time (``scheduler.
  reallocate_srpt``); the predicted execution time carries a lognormal error ``pred_error``.

A migration pauses the job for ``N(pause_mean, pause_sd)`` seconds clipped at 0 (Fig. 2: < 5 s,
sd 1.43 s): it holds no share of either worker meanwhile and counts on its destination.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gpuscope.core.errors import InputError
from gpuscope.specon.losscurve import LossCurve, preset
from gpuscope.specon.monitor import GROWTHS, SCOPES, SMOOTHINGS, Container, monitor_tick
from gpuscope.specon.scheduler import (
    Decision,
    reallocate,
    reallocate_srpt,
    rebalance,
    rebalance_srpt,
)
from gpuscope.specon.sharing import SharingModel
from gpuscope.specon.traces import JobSpecS

POLICIES: tuple[str, ...] = ("ds", "specon", "specon-srpt")
_EPS = 1e-9


@dataclass(frozen=True)
class SimConfig:
    """Everything a run depends on besides its jobs (defaults: the paper's evaluation)."""

    n_workers: int = 4
    policy: str = "specon"
    alpha: float = 0.01
    interval_s: float = 30.0
    growth: str = "relative-init"
    smoothing: str = "interval-mean"
    request_scope: str = "worker"
    request_min: int = 1
    exclude_self: bool = False
    rebalance: bool = True
    sharing: SharingModel = field(default_factory=SharingModel)
    pause_mean_s: float = 4.0
    pause_sd_s: float = 1.43
    pred_error: float = 0.2
    ema_beta: float = 0.7
    placement_rule: str = "rr"
    seed: int = 0

    def check(self) -> None:
        if self.policy not in POLICIES:
            raise InputError(f"unknown policy {self.policy!r}; expected one of {', '.join(POLICIES)}")
        for name, val, options in (("growth", self.growth, GROWTHS),
                                   ("smoothing", self.smoothing, SMOOTHINGS),
                                   ("request scope", self.request_scope, SCOPES)):
            if val not in options:
                raise InputError(f"unknown {name} {val!r}; expected one of {', '.join(options)}")
        if self.placement_rule not in ("rr", "least"):
            raise InputError(f"unknown placement {self.placement_rule!r}; expected rr or least")
        if self.n_workers < 1 or self.interval_s <= 0 or self.alpha <= 0:
            raise InputError("workers, interval and alpha must be > 0")
        if self.pause_mean_s < 0 or self.pause_sd_s < 0:
            raise InputError("migration pause mean and sd must be >= 0")


@dataclass
class JobResult:
    job: int
    model: str
    platform: str
    arrival_s: float
    finish_s: float
    worker_first: int
    worker_last: int
    n_moves: int

    @property
    def jct_s(self) -> float:
        return self.finish_s - self.arrival_s


@dataclass
class SimResult:
    policy: str
    jobs: list[JobResult]
    decisions: list[Decision]
    timeline: list[tuple[float, tuple[int, ...], tuple[float, ...]]]  # t, active, busy share

    @property
    def avg_jct_s(self) -> float:
        return float(np.mean([j.jct_s for j in self.jobs]))

    @property
    def makespan_s(self) -> float:
        return max(j.finish_s for j in self.jobs) - min(j.arrival_s for j in self.jobs)

    def count(self, kind: str) -> int:
        return sum(1 for d in self.decisions if d.kind == kind)

    def placement(self) -> dict[int, int]:
        return {j.job: j.worker_first for j in self.jobs}


@dataclass
class _Job:
    spec: JobSpecS
    curve: LossCurve
    pred_s: float
    worker: int = -1
    first: int = -1
    p: float = 0.0
    p_tick: float = 0.0
    ema: float | None = None
    paused_until: float = 0.0
    finish: float | None = None
    moves: int = 0
    cont: Container | None = None


def _least_loaded(counts: list[int]) -> int:
    return min(range(len(counts)), key=lambda w: (counts[w], w))


def simulate(jobs: list[JobSpecS], cfg: SimConfig,
             placement: dict[int, int] | None = None) -> SimResult:
    """Run ``jobs`` under ``cfg``; ``placement`` pins initial workers (SpeCon replays DS's)."""
    cfg.check()
    if not jobs:
        raise InputError("no jobs to simulate")
    rng = np.random.default_rng([4, cfg.seed, 1])
    state = [_Job(s, preset(s.model),
                  s.solo_s * float(np.exp(rng.normal(0.0, cfg.pred_error))) if cfg.pred_error
                  else s.solo_s) for s in jobs]
    pending = sorted(state, key=lambda j: (j.spec.arrival_s, j.spec.job))
    active: list[_Job] = []
    decisions: list[Decision] = []
    timeline: list[tuple[float, tuple[int, ...], tuple[float, ...]]] = []
    nw = cfg.n_workers
    t = pending[0].spec.arrival_s
    next_tick = math.floor(t / cfg.interval_s) * cfg.interval_s + cfg.interval_s
    migrating = cfg.policy != "ds"
    placed = 0

    def counts() -> list[int]:
        n = [0] * nw
        for j in active:
            n[j.worker] += 1
        return n

    def speeds() -> dict[int, float]:
        out: dict[int, float] = {}
        for w in range(nw):
            run = [j for j in active if j.worker == w and j.paused_until <= t + _EPS]
            for j, s in zip(run, cfg.sharing.speeds([j.spec.model for j in run]), strict=True):
                out[id(j)] = s / j.spec.solo_s  # progress per second
        return out

    def record(sp: dict[int, float]) -> None:
        busy = [0.0] * nw
        for j in active:
            busy[j.worker] += sp.get(id(j), 0.0) * j.spec.solo_s
        timeline.append((t, tuple(counts()), tuple(round(b, 4) for b in busy)))

    def move(j: _Job, d: Decision) -> None:
        decisions.append(d)
        if d.to is None:
            return
        j.worker = d.to
        j.moves += 1
        assert j.cont is not None
        j.cont.worker = d.to
        j.paused_until = t + max(0.0, float(rng.normal(cfg.pause_mean_s, cfg.pause_sd_s)))

    def run_rebalance() -> None:
        if migrating and cfg.rebalance and active:
            conts = [j.cont for j in active if j.cont is not None]
            by_id = {j.spec.job: j for j in active}
            if cfg.policy == "specon-srpt":
                rem = {o.spec.job: o.pred_s * (1.0 - o.p) for o in active}
                free = {o.spec.job for o in active if o.paused_until <= t + _EPS}
                ds_ = rebalance_srpt(conts, nw, rem, cfg.pause_mean_s, t, free)
            else:
                ds_ = rebalance(conts, nw, t)
            for d in ds_:
                move(by_id[d.job], d)

    def observe_losses() -> dict[int, float]:
        out = {}
        for j in active:
            if j.paused_until > t + _EPS or j.cont is None or j.cont.migrated:
                continue
            dp = j.p - j.p_tick
            if dp <= _EPS:
                continue  # no new log line since the last tick
            n_steps = max(1.0, dp * j.spec.steps)
            if cfg.smoothing == "interval-mean":
                e = j.curve.mean(j.p_tick, j.p) * (1 + rng.normal(0, j.curve.sigma / math.sqrt(n_steps)))
            else:
                e = float(j.curve(j.p)) * (1 + rng.normal(0, j.curve.sigma))
                if cfg.smoothing == "ema":
                    j.ema = e if j.ema is None else cfg.ema_beta * j.ema + (1 - cfg.ema_beta) * e
                    e = j.ema
            j.p_tick = j.p
            out[j.spec.job] = e
        return out

    while pending or active:
        sp = speeds()
        record(sp)
        t_next = min(
            pending[0].spec.arrival_s if pending else math.inf,
            next_tick if (migrating and active) else math.inf,
            min((j.paused_until for j in active if j.paused_until > t + _EPS), default=math.inf),
            min((t + (1.0 - j.p) / sp[id(j)] for j in active if sp.get(id(j), 0.0) > 0),
                default=math.inf),
        )
        if math.isinf(t_next):
            raise RuntimeError("simulation stalled")  # cannot happen: a running job progresses
        for j in active:
            j.p = min(1.0, j.p + (t_next - t) * sp.get(id(j), 0.0))
        t = t_next
        done = [j for j in active if j.p >= 1.0 - _EPS]
        for j in done:
            j.finish = t
            active.remove(j)
        while pending and pending[0].spec.arrival_s <= t + _EPS:
            j = pending.pop(0)
            if placement and j.spec.job in placement:
                w = placement[j.spec.job]
            else:
                w = placed % nw if cfg.placement_rule == "rr" else _least_loaded(counts())
            placed += 1
            if not 0 <= w < nw:
                raise InputError(f"job {j.spec.job}: placement on worker {w} of {nw}")
            j.worker = j.first = w
            j.cont = Container(j.spec.job, w)
            active.append(j)
        if done:
            run_rebalance()
        if migrating and t >= next_tick - _EPS:
            next_tick += cfg.interval_s
            tick(active, cfg, t, observe_losses(), move, nw)
            run_rebalance()
    results = [JobResult(j.spec.job, j.spec.model, j.spec.platform, j.spec.arrival_s,
                         float(j.finish if j.finish is not None else math.nan),
                         j.first, j.worker, j.moves) for j in state]
    return SimResult(cfg.policy, sorted(results, key=lambda r: r.job), decisions, timeline)


def tick(active: list[_Job], cfg: SimConfig, t: float, losses: dict[int, float],
         move: object, nw: int) -> None:
    """Algorithm 1 over all workers, then Algorithm 2 (or the srpt rule) per request."""
    conts = [j.cont for j in active if j.cont is not None]
    by_id = {j.spec.job: j for j in active}
    requests = monitor_tick(conts, losses, t, cfg.alpha, cfg.growth, cfg.request_scope,
                            cfg.request_min)
    for c in requests:
        j = by_id[c.job]
        if cfg.policy == "specon-srpt":
            rem = {o.spec.job: o.pred_s * (1.0 - o.p) for o in active}
            d = reallocate_srpt(c, conts, nw, rem, cfg.pause_mean_s, t)
        else:
            usage = [0.0] * nw  # R(w, t): demanded share, one unit per active container
            for o in active:
                usage[o.worker] += 1.0
            d = reallocate(c, conts, nw, usage, t, cfg.exclude_self)
        move(j, d)  # type: ignore[operator]


__all__ = ["POLICIES", "JobResult", "SimConfig", "SimResult", "run_policies", "simulate"]


def run_policies(jobs: list[JobSpecS], cfg: SimConfig,
                 policies: tuple[str, ...] = ("specon", "specon-srpt")) -> dict[str, SimResult]:
    """DS first, then each policy from DS's initial placement (the paper's ``change_yaml.py``)."""
    from dataclasses import replace

    ds = simulate(jobs, replace(cfg, policy="ds"))
    out = {"ds": ds}
    for pol in policies:
        out[pol] = simulate(jobs, replace(cfg, policy=pol), ds.placement())
    return out
