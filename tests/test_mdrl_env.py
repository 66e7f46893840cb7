"""Seed 003 mDRL environment: Eq. 2-4, Fig. 3, Fig. 7, rewards, masks, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.cluster.config import default_cluster
from gpuscope.mdrl.baselines import FirstFit, Oracle, Pinned, RandomFit, run_episode
from gpuscope.mdrl.env import PartitionEnv
from gpuscope.mdrl.simulate import (
    Episode,
    EpisodeSampler,
    JobReq,
    energy_reduction,
    fig3_episode,
    inefficient_energy_mwh,
    partition_from_cluster,
    utilisation,
)

CL = default_cluster()
A100 = partition_from_cluster(CL, "A100")
V100 = partition_from_cluster(CL, "V100")
S, M, L, F = 0, 1, 2, 3  # flavor indices (sorted by GPUs)


def _env(part=A100, **kw) -> PartitionEnv:
    return PartitionEnv(part, EpisodeSampler(part, **kw))


def test_eq2_4_hand_computed() -> None:
    # job A: λ 0.25 started at 0, ran 10 h (completed); job B: λ 0.5 started at 4, running.
    # At t = 12: τ_A = 10 (completed: its run time), τ_B = 8; T = 12 - 0 = 12.
    u = utilisation(12.0, [(0.25, 0.0, 10.0), (0.5, 4.0, 100.0)])
    assert u == pytest.approx((0.25 * 10 + 0.5 * 8) / 12)      # = 6.5 / 12
    assert utilisation(0.0, [(1.0, 0.0, 5.0)]) == 0.0            # T = 0: defined as 0
    assert utilisation(3.0, []) == 0.0


def test_fig3_first_fit_and_oracle_exact() -> None:
    env = _env()
    ep = fig3_episode(A100)
    ff = run_episode(env, FirstFit(), ep)
    assert ff.makespan_h == pytest.approx(32 * 24)               # t1 + 31 d
    assert ff.u_end == pytest.approx(22.875 / 32) and round(ff.u_end, 3) == 0.715
    # job 4 (l) finds 4 + 4 GPUs split over the servers and cannot start before t1+7; the
    # paper draws it running first, then f; LJF runs f first: same makespan and U
    assert ff.starts[4] == pytest.approx(8 * 24) and ff.starts[3] == pytest.approx(22 * 24)
    best, placement = Oracle("u_end").solve(env, ep)
    assert best.makespan_h == pytest.approx(27 * 24)             # t0 + 27 d
    assert round(best.u_end, 3) == 0.847
    assert tuple(p + 1 for p in placement) == (1, 2, 2, 1)


def test_fig7_energy() -> None:
    assert inefficient_energy_mwh(0.62, CL.partition_power_kw("A100")) == pytest.approx(3.5568)
    assert inefficient_energy_mwh(0.62, CL.partition_power_kw("V100")) == pytest.approx(1.9152)
    assert inefficient_energy_mwh(0.770, 13.0) == pytest.approx(2.15, abs=0.005)
    assert inefficient_energy_mwh(0.772, 7.0) == pytest.approx(1.15, abs=0.005)
    assert energy_reduction(0.62, 0.770) == pytest.approx(0.395, abs=0.0005)
    assert energy_reduction(0.62, 0.772) == pytest.approx(0.400, abs=0.0025)  # paper: 39.8 %


def _check_no_overcommit(env: PartitionEnv) -> None:
    assert (env.free >= -1e-9).all() and (env.free <= env._cap + 1e-9).all()


@pytest.mark.parametrize("part", [A100, V100], ids=["A100", "V100"])
def test_random_episodes_u_bounded_no_overcommit_mask_sound(part) -> None:
    rng = np.random.default_rng(0)
    for i in range(600):
        env = _env(part, iat_h=float(rng.choice([0.0, 6.0, 24.0, 72.0])))
        obs, info = env.reset(seed=i)
        done = env.terminal
        while not done:
            mask = info["action_mask"]
            assert mask.sum() >= 1 and mask[env.queue_action()]
            fits = env.fits()
            for a in np.flatnonzero(mask[: env.n * env.m]):      # a run the mask allows fits
                assert fits[a % env.m]
            a = int(rng.integers(env.n_actions)) if rng.random() < 0.3 else \
                int(rng.choice(np.flatnonzero(mask)))
            obs, r, done, _, info = env.step(a)
            assert env.observation_space.contains(obs)
            _check_no_overcommit(env)
            assert env.utilisation() <= 1 + 1e-9
        res = env.result
        assert res is not None
        assert 0 <= res.u_term <= 1 + 1e-9 and 0 <= res.u_end <= 1 + 1e-9
        assert len(res.starts) == len(env.episode.jobs)          # every job ran
        assert res.makespan_h >= res.t_term_h


def test_same_seed_same_trajectory() -> None:
    def traj(seed: int) -> list:
        env = _env(iat_h=6.0)
        pol = RandomFit(seed=3)
        env.reset(seed=seed)
        out, done = [], env.terminal
        while not done:
            a = pol.act(env)
            obs, r, done, _, info = env.step(a)
            out.append((a, r, obs.tobytes(), info["t_h"]))
        return out
    assert traj(7) == traj(7)
    assert traj(7) != traj(8)


def _ep(*jobs: tuple[int, float, float]) -> Episode:
    js = [JobReq(i, k, a, d) for i, (k, a, d) in enumerate(jobs)]
    return Episode(tuple(js))


@pytest.mark.parametrize(
    ("name", "setup", "decision", "reward"),
    [
        # queue while a server has room: -1
        ("queue-with-room", [], "queue", -1.0),
        # run on a chosen server without room: -1 (and the job is queued)
        ("run-no-room", [0], "run0", -1.0),
        # queue while no server has room: 0
        ("queue-no-room", [0, 1], "queue", 0.0),
        # run with room: U(p, t) of Eq. 4 (l job on server 0 since t=0, now t=10: U = 0.5)
        ("run-room", [0], "run1", 0.5),
    ],
)
def test_reward_rules_table(name: str, setup: list[int], decision: str, reward: float) -> None:
    # setup: l jobs (8 GPUs, 100 h) arriving at t = 0 on the listed servers; then an l job
    # arrives at t = 10 and takes `decision`; the f job arrives at t = 50.
    jobs = [(L, 0.0, 100.0) for _ in setup] + [(L, 10.0, 100.0), (F, 50.0, 10.0)]
    env = _env()
    env.reset(options={"episode": _ep(*jobs)})
    for j in setup:
        env.step(env.run_action(j))
    assert env.t == 10.0
    a = env.queue_action() if decision == "queue" else env.run_action(int(decision[-1]))
    _, r, *_ = env.step(a)
    assert r == pytest.approx(reward)
    if decision == "run0":
        assert any(q.job_id == len(setup) for q in env.queue) or env.terminal


def test_queued_job_is_represented_and_f_terminal() -> None:
    env = _env()
    env.reset(options={"episode": _ep((L, 0.0, 5.0), (L, 1.0, 5.0), (L, 2.0, 5.0),
                                      (F, 3.0, 10.0))})
    env.step(env.run_action(0))
    env.step(env.run_action(1))
    assert env.t == 2.0 and env.fits().sum() == 0
    env.step(env.queue_action())                    # no room: 0, re-presented at t = 5
    assert env.cur is not None and env.cur.job_id == 2 and env.t == 5.0
    _, r, done, _, info = env.step(env.run_action(0))
    # f waits for the whole partition: starts at 10 (terminal), U_term = (0.5*5*2+0.5*5)/10
    assert done and info["u_term"] == pytest.approx(0.75) and info["t_term_h"] == 10.0
    assert info["makespan_h"] == 20.0


def test_pinned_waits_for_its_server() -> None:
    env = _env()
    ep = _ep((M, 0.0, 10.0), (M, 1.0, 10.0), (F, 30.0, 1.0))
    r = run_episode(env, Pinned({0: 0, 1: 0}), ep)
    assert r.starts[1] == 1.0 and r.placement[1] == (0,)       # fits next to job 0
    ep = _ep((L, 0.0, 10.0), (M, 1.0, 10.0), (F, 30.0, 1.0))
    r = run_episode(env, Pinned({0: 0, 1: 0}), ep)
    assert r.starts[1] == 10.0                                  # waits for server 0


def test_check_env() -> None:
    gym = pytest.importorskip("gymnasium")
    from gymnasium.utils.env_checker import check_env

    from gpuscope.mdrl.env import gym_env

    env = gym_env(A100, EpisodeSampler(A100, iat_h=6.0))
    assert isinstance(env, gym.Env)
    check_env(env, skip_render_check=True)


def test_f_start_last_is_fig3_narrative() -> None:
    env = PartitionEnv(A100, EpisodeSampler(A100), f_start="last")
    ff = run_episode(env, FirstFit(), fig3_episode(A100))
    # the paper's text: job 4 (l) starts at t1+7, job 5 (f) at t1+17, all done at t1+31
    assert ff.starts[3] == pytest.approx(8 * 24) and ff.starts[4] == pytest.approx(18 * 24)
    assert ff.makespan_h == pytest.approx(32 * 24)


def test_mask_fit_and_terminal_reward() -> None:
    env = PartitionEnv(A100, EpisodeSampler(A100, iat_h=6.0), mask="fit", reward="terminal")
    rng = np.random.default_rng(1)
    for seed in range(50):
        obs, info = env.reset(seed=seed)
        done, rewards = env.terminal, []
        while not done:
            mask = info["action_mask"]
            assert mask[env.queue_action()] == (not env.fits().any())
            obs, r, done, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
            rewards.append(r)
        assert rewards[:-1] == [0.0] * (len(rewards) - 1)
        assert rewards[-1] == pytest.approx(info["u_term"])


def test_plateau_episode() -> None:
    from gpuscope.mdrl.train import plateau_episode

    rng = np.random.default_rng(0)
    curve = np.concatenate([np.linspace(0.5, 0.7, 300), np.full(700, 0.7)])
    p = plateau_episode(curve + rng.normal(0, 0.05, 1000))
    assert p is not None and 150 <= p <= 300
    assert plateau_episode(np.linspace(0.4, 0.8, 1000)) >= 800     # still rising: late
    assert plateau_episode([0.5] * 100) is None


def test_extensions_tjng_and_gavel(tmp_path) -> None:
    import pandas as pd

    from gpuscope.mdrl.extensions import GavelEpisodes, TjngDurations, load_gavel_multi

    # two jobs; V100 twice as slow as A100 for every g; 8-GPU l job on A100 = 1 h / 2 h
    rows = [(j, typ, g, base * (2.0 if typ == "v100" else 1.0) * 8 / g, 1.0, "emulated")
            for j, base in (("j0", 3600.0), ("j1", 7200.0)) for typ in ("a100", "v100")
            for g in (2, 4, 8, 16)]
    table = pd.DataFrame(rows, columns=["job_id", "node_type", "n_gpus", "exec_time_s",
                                        "cost_per_h", "source"])
    dur = TjngDurations(table)
    dur.calibrate(A100)        # median l-size time on the fastest type (1.5 h) -> 336 h
    assert dur.scale == pytest.approx(336 / 1.5)
    rng = np.random.default_rng(0)
    a = [dur(rng, A100, L) for _ in range(20)]
    v = [dur(rng, V100, L) for _ in range(20)]
    assert {round(d) for d, _ in a} == {224, 336}             # capped at the l limit (336 h)
    assert all(d == 336 for d, _ in v)                          # slower: capped
    assert dur(rng, A100, S)[0] <= 72                           # s limit
    # a trace in Gavel's format (7 tab-separated fields): single-GPU jobs are left out
    gpus = [1, 2, 4, 1, 8, 16, 2, 4, 8, 1]
    lines = [f"LM (batch size 20)\tcmd\t-n\t1\t1000\t{3600.0 * i:.1f}\t{g}" for i, g in enumerate(gpus)]
    (tmp_path / "t.trace").write_text("\n".join(lines) + "\n")
    trace = load_gavel_multi(tmp_path / "t.trace")
    assert trace["gpus"].tolist() == [2, 4, 8, 16, 2, 4, 8]
    assert trace["arrival_h"].tolist() == [1.0, 2.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    g = GavelEpisodes(A100, trace=trace)
    ep = g(np.random.default_rng(3))
    assert len(ep.jobs) == 5 and ep.jobs[0].arrival_h == 0.0 and ep.jobs[-1].flavor == F
    assert all(j.flavor in (S, M, L) for j in ep.jobs[:-1]) and "measured" in ep.source
    assert all(x >= 0 for x in np.diff([j.arrival_h for j in ep.jobs]))
