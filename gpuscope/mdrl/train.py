"""Training (seed 003 Algorithm 1, §6.1) and evaluation of the per-partition agents.

"Multi-agent" is cosmetic here: partitions are disjoint and jobs are bound to
one, so each partition's agent trains alone on its own environment with its own replay.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.mdrl.agent import DQNAgent, DQNConfig, DQNPolicy
from gpuscope.mdrl.baselines import Oracle, Policy, make_baseline, run_episode
from gpuscope.mdrl.env import EpisodeResult, PartitionEnv
from gpuscope.mdrl.simulate import Episode, Partition


@dataclass
class TrainResult:
    agent: DQNAgent
    u_term: list[float] = field(default_factory=list)   # per training episode
    returns: list[float] = field(default_factory=list)
    val: list[tuple[int, float]] = field(default_factory=list)  # (episode, greedy U_term)
    best_episode: int = -1
    seconds: float = 0.0


def train_agent(env: PartitionEnv, episodes: int = 1000, cfg: DQNConfig | None = None,
                seed: int = 0, progress: bool = True, desc: str = "train") -> TrainResult:
    """Algorithm 1 for one partition: ε-greedy episodes, one update per transition.

    Every ``cfg.val_every`` episodes the greedy policy plays ``cfg.val_episodes`` fixed
    validation episodes (their own seed, disjoint from the test seeds 10000+); the weights
    with the best mean validation U_term are kept (model selection; 0 disables it).
    """
    import torch
    from tqdm import tqdm

    torch.set_num_threads(1)  # tiny nets: threads cost more than they give (shared CPU)
    cfg = cfg or DQNConfig()
    agent = DQNAgent(env.obs_dim, env.n_actions, cfg, seed=seed,
                     meta={"partition": env.part.name, "state": env.state_kind,
                           "terminal_bonus": env.terminal_bonus,
                           "reward": env.reward_kind, "f_start": env.f_start,
                           "mask": env.mask_kind,
                           "seed": seed,
                           "episodes": episodes})
    res = TrainResult(agent)
    t0 = time.perf_counter()
    val_eps = draw_episodes(env, cfg.val_episodes, 1_000_003 + seed) if cfg.val_every else []
    best: tuple[float, dict[str, Any]] | None = None

    def validate(ep: int) -> None:
        nonlocal best
        pol = DQNPolicy(agent)
        u = float(np.mean([run_episode(env, pol, e).u_term for e in val_eps]))
        res.val.append((ep, u))
        if best is None or u > best[0]:
            best = (u, copy.deepcopy(agent.q.state_dict()))
            res.best_episode = ep

    env.reset(seed=seed)
    bar = tqdm(range(episodes), desc=desc, disable=not progress, leave=False)
    for ep in bar:
        obs, info = env.reset() if ep else (env._obs(), env._info())
        eps = cfg.epsilon(ep)
        done = env.terminal
        while not done:
            a = agent.act(obs, info["action_mask"], eps)
            obs2, r, done, _, info = env.step(a)
            agent.remember(obs, a, r, obs2, done, info["action_mask"])
            for _ in range(cfg.updates_per_step):
                agent.update()
            obs = obs2
        assert env.result is not None
        res.u_term.append(env.result.u_term)
        res.returns.append(env.result.ret)
        if ep % 50 == 49:
            bar.set_postfix(u_term=f"{np.mean(res.u_term[-50:]):.3f}", eps=f"{eps:.2f}")
        if val_eps and (ep + 1) % cfg.val_every == 0:
            validate(ep + 1)  # the next loop turn resets to a sampled episode
    if best is not None:
        agent.q.load_state_dict(best[1])
        agent.q_target.load_state_dict(best[1])
    res.seconds = time.perf_counter() - t0
    return res


def moving_average(x: Sequence[float] | np.ndarray, window: int = 50) -> np.ndarray:
    a = np.asarray(x, float)
    if len(a) < window:
        return np.array([a.mean()]) if len(a) else a
    c = np.cumsum(np.concatenate([[0.0], a]))
    return (c[window:] - c[:-window]) / window


def plateau_episode(curve: Sequence[float], window: int = 100, tol: float = 0.02,
                    step: int = 10) -> int | None:
    """First episode e (a multiple of ``step``) from which every ``window``-episode mean of
    the curve stays within ``tol`` of the final level (the mean of the last 2·``window``
    episodes): slope ≈ 0 after e. ``tol`` 0.02 is ~2 standard errors of a 100-episode mean
    of U_term (per-episode sd ≈ 0.1). ``None`` when the curve is shorter than 3 windows."""
    a = np.asarray(curve, float)
    if len(a) < 3 * window:
        return None
    final = a[-2 * window:].mean()
    means = moving_average(a, window)            # means[i] = mean of a[i:i+window]
    bad = np.flatnonzero(np.abs(means - final) > tol)
    if not bad.size:
        return 0
    return int(-(-(bad[-1] + 1) // step) * step)


def learning_curve_png(curves: Mapping[str, Sequence[float]], path: str, title: str,
                       baselines: dict[str, float] | None = None) -> str:
    """Plot 50-episode moving averages of U_term per run (seed 003 Fig. 5 analogue)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, c in curves.items():
        ma = moving_average(c)
        ax.plot(np.arange(len(ma)) + min(50, len(c)), ma, label=name, lw=1.2)
    for name, v in (baselines or {}).items():
        ax.axhline(v, ls="--", lw=0.8, color="grey")
        ax.text(0, v, f" {name} {v:.3f}", va="bottom", fontsize=7, color="grey")
    ax.set_xlabel("training episode")
    ax.set_ylabel("U_term, 50-episode moving average")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    from gpuscope.core.io import write_figure

    try:
        write_figure(fig, path, what="learning curve", check=False)
    finally:
        plt.close(fig)
    return path


def evaluate(env: PartitionEnv, policies: dict[str, Callable[[int], Policy]],
             episodes: Sequence[Episode], seed: int = 0, oracle: bool = True,
             progress: bool = False) -> pd.DataFrame:
    """Per-episode results of each policy on the same episodes (plus the oracle)."""
    from tqdm import tqdm

    rows = []
    pols = {name: mk(seed) for name, mk in policies.items()}

    def row(name: str, i: int, ep: Episode, r: EpisodeResult) -> tuple:
        # jobs that arrived before the terminal job but started after it (deferred behind f)
        t_f = r.t_term_h + min(j.arrival_h for j in ep.jobs)
        late = sum(1 for j in ep.jobs[:-1] if r.starts.get(j.job_id, t_f) > t_f + 1e-9)
        return (name, seed, i, r.u_term, r.u_end, r.t_term_h, r.makespan_h, late)

    for i, ep in enumerate(tqdm(episodes, desc="eval", disable=not progress, leave=False)):
        for name, pol in pols.items():
            rows.append(row(name, i, ep, run_episode(env, pol, ep)))
        if oracle:
            rows.append(row("oracle", i, ep, Oracle("u_term").solve(env, ep)[0]))
    return pd.DataFrame(rows, columns=["policy", "seed", "episode", "u_term", "u_end",
                                       "t_term_h", "makespan_h", "deferred"])


def baseline_factories(names: Sequence[str]) -> dict[str, Callable[[int], Policy]]:
    def factory(name: str) -> Callable[[int], Policy]:
        return lambda s: make_baseline(name, s)

    return {n: factory(n) for n in names}


def dqn_factory(agent: DQNAgent) -> Callable[[int], Policy]:
    return lambda s: DQNPolicy(agent)


def draw_episodes(env: PartitionEnv, n: int, seed: int) -> list[Episode]:
    """``n`` test episodes from the env's sampler under ``seed`` (disjoint from training:
    callers use seeds offset by 10_000)."""
    rng = np.random.default_rng(seed)
    return [env.sampler(rng) for _ in range(n)]


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Mean U_term, U_end, time to terminal, makespan, jobs deferred behind the terminal job
    per episode and P(U_term < 0.3) per policy."""
    g = df.groupby("policy", sort=False)
    out = g[["u_term", "u_end", "t_term_h", "makespan_h", "deferred"]].mean()
    out["p_u_below_0.3"] = g["u_term"].apply(lambda u: float((u < 0.3).mean()))
    return out


def partition_env(part: Partition, sampler: Callable[[np.random.Generator], Episode],
                  state: str = "flavor", terminal_bonus: float = 0.0,
                  reward: str = "paper", f_start: str = "ljf",
                  mask: str = "paper") -> PartitionEnv:
    return PartitionEnv(part, sampler, state=state, terminal_bonus=terminal_bonus,
                        reward=reward, f_start=f_start, mask=mask)
