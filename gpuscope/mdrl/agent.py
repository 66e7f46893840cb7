"""The DQN agent of one partition (seed 003 §5, Eq. 6 and Algorithm 1); torch is imported lazily.

The paper gives no hyperparameters; gpuscope's defaults: an MLP with
2 hidden layers of 64 ReLU units, Adam lr 1e-3, Huber loss, γ = 0.95, ε-greedy from 1.0 to 0.05
linearly over the first 300 episodes, a replay memory of 10k transitions (Algorithm 1 sets D up
twice, lines 5 and 8: one memory is meant), batch 64, target network synced every 100
gradient steps (line 7: ω' ← ω). Q-targets follow Eq. 6, r + γ·max_a' Q'(s', a'), with the
max over the actions allowed in s' (masked) and no bootstrap at the terminal event.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from gpuscope.core.errors import CheckpointError, InputError
from gpuscope.core.limits import check_number

#: Widest observation, action set and (half of it) hidden layer a checkpoint may declare, and
#: deepest network: the networks built before its weights are read stay under ~0.5 GB.
MAX_WIDTH: int = 4096
MAX_LAYERS: int = 16

CKPT_VERSION = 1


@dataclass
class DQNConfig:
    """DQN hyperparameters (gpuscope's defaults; each is a ``gpuscope mdrl train`` flag)."""

    hidden: int = 64
    layers: int = 2
    lr: float = 1e-3
    gamma: float = 0.95
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_episodes: int = 300
    replay: int = 10_000
    batch: int = 64
    target_sync: int = 100
    updates_per_step: int = 1
    val_every: int = 25
    val_episodes: int = 50

    def epsilon(self, episode: int) -> float:
        """Linear ε decay over ``eps_episodes`` episodes."""
        frac = min(1.0, episode / max(1, self.eps_episodes))
        return self.eps_start + frac * (self.eps_end - self.eps_start)


def _mlp(obs_dim: int, n_actions: int, cfg: DQNConfig) -> Any:
    import torch.nn as nn

    mods: list[Any] = []
    d = obs_dim
    for _ in range(cfg.layers):
        mods += [nn.Linear(d, cfg.hidden), nn.ReLU()]
        d = cfg.hidden
    mods.append(nn.Linear(d, n_actions))
    return nn.Sequential(*mods)


class Replay:
    """Uniform replay memory of (s, a, r, s', done, mask') in preallocated numpy arrays."""

    def __init__(self, size: int, obs_dim: int, n_actions: int) -> None:
        self.s = np.zeros((size, obs_dim), np.float32)
        self.s2 = np.zeros((size, obs_dim), np.float32)
        self.a = np.zeros(size, np.int64)
        self.r = np.zeros(size, np.float32)
        self.done = np.zeros(size, np.float32)
        self.mask2 = np.zeros((size, n_actions), bool)
        self.size, self.n, self.i = size, 0, 0

    def add(self, s: np.ndarray, a: int, r: float, s2: np.ndarray, done: bool,
            mask2: np.ndarray) -> None:
        i = self.i
        self.s[i], self.a[i], self.r[i], self.s2[i], self.done[i] = s, a, r, s2, float(done)
        self.mask2[i] = mask2
        self.i = (i + 1) % self.size
        self.n = min(self.n + 1, self.size)

    def sample(self, rng: np.random.Generator, batch: int) -> tuple[np.ndarray, ...]:
        idx = rng.integers(0, self.n, batch)
        return (self.s[idx], self.a[idx], self.r[idx], self.s2[idx], self.done[idx],
                self.mask2[idx])


class DQNAgent:
    """One partition's agent A_i: policy net Q_i, target net Q'_i, replay memory D."""

    def __init__(self, obs_dim: int, n_actions: int, cfg: DQNConfig | None = None,
                 seed: int = 0, meta: dict[str, Any] | None = None) -> None:
        import torch

        self.cfg = cfg or DQNConfig()
        self.obs_dim, self.n_actions = obs_dim, n_actions
        self.meta = dict(meta or {})
        self.rng = np.random.default_rng(seed)
        torch.manual_seed(seed)
        self.q = _mlp(obs_dim, n_actions, self.cfg)
        self.q_target = _mlp(obs_dim, n_actions, self.cfg)
        self.q_target.load_state_dict(self.q.state_dict())
        self.opt = torch.optim.Adam(self.q.parameters(), lr=self.cfg.lr)
        self.replay = Replay(self.cfg.replay, obs_dim, n_actions)
        self.steps = 0

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return self.q(torch.as_tensor(obs, dtype=torch.float32)).numpy()

    def act(self, obs: np.ndarray, mask: np.ndarray, eps: float = 0.0) -> int:
        """ε-greedy over the allowed actions; greedy = masked argmax of Q (ties: lowest)."""
        allowed = np.flatnonzero(mask)
        if eps > 0 and self.rng.random() < eps:
            return int(self.rng.choice(allowed))
        q = self.q_values(obs[None])[0]
        return int(allowed[np.argmax(q[allowed])])

    def remember(self, s: np.ndarray, a: int, r: float, s2: np.ndarray, done: bool,
                 mask2: np.ndarray) -> None:
        self.replay.add(s, a, r, s2, done, mask2)

    def update(self) -> float | None:
        """One gradient step on a replay batch (Eq. 6 target, Huber loss)."""
        import torch
        import torch.nn.functional as F

        if self.replay.n < self.cfg.batch:
            return None
        s, a, r, s2, done, m2 = (torch.as_tensor(x) for x in
                                 self.replay.sample(self.rng, self.cfg.batch))
        with torch.no_grad():
            q2 = self.q_target(s2).masked_fill(~m2, -1e9).max(1).values
            q2 = torch.where(m2.any(1), q2, torch.zeros_like(q2))
            y = r + self.cfg.gamma * (1.0 - done) * q2
        q = self.q(s).gather(1, a[:, None]).squeeze(1)
        loss = F.smooth_l1_loss(q, y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.steps += 1
        if self.steps % self.cfg.target_sync == 0:
            self.q_target.load_state_dict(self.q.state_dict())
        return float(loss.detach())

    # -- checkpoints (plain tensors and primitives: torch.load(weights_only=True) works) --------
    def save(self, path: str | Path) -> Path:
        import torch

        from gpuscope.core.io import replace_atomically

        obj = {"version": CKPT_VERSION, "obs_dim": self.obs_dim, "n_actions": self.n_actions,
               "config": asdict(self.cfg), "meta": self.meta, "state_dict": self.q.state_dict()}
        # atomic: a run that dies leaves the previous file intact; a full disk is one line
        return replace_atomically(path, lambda t: torch.save(obj, t), what="mdrl checkpoint",
                                  check=False)

    @classmethod
    def load(cls, path: str | Path) -> DQNAgent:
        from gpuscope.core.io import check_keys, load_torch

        ck = load_torch(path, "mdrl checkpoint")
        if not isinstance(ck, dict) or ck.get("version") != CKPT_VERSION:
            raise CheckpointError(f"{path} is not an mdrl checkpoint of version {CKPT_VERSION}")
        what = f"mdrl checkpoint {path}"
        check_keys(ck, {"obs_dim": int, "n_actions": int, "config": dict, "state_dict": dict},
                   what)
        names = {f.name for f in fields(DQNConfig)}
        try:
            check_number("obs_dim", ck["obs_dim"], integer=True, low=1, high=MAX_WIDTH)
            check_number("n_actions", ck["n_actions"], integer=True, low=1, high=MAX_WIDTH)
            cfg = DQNConfig(**{k: v for k, v in ck["config"].items() if k in names})
            check_number("config.hidden", cfg.hidden, integer=True, low=1, high=MAX_WIDTH // 2)
            check_number("config.layers", cfg.layers, integer=True, low=1, high=MAX_LAYERS)
            agent = cls(int(ck["obs_dim"]), int(ck["n_actions"]), cfg,
                        meta=ck["meta"] if isinstance(ck.get("meta"), dict) else {})
            agent.q.load_state_dict(ck["state_dict"])
            agent.q_target.load_state_dict(ck["state_dict"])
        except (InputError, TypeError, ValueError, RuntimeError, KeyError) as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise CheckpointError(f"{what} does not fit its network ({first[:160]})") from None
        return agent


class DQNPolicy:
    """A trained agent as a :class:`~gpuscope.mdrl.baselines.Policy` (greedy, ε = 0)."""

    def __init__(self, agent: DQNAgent) -> None:
        self.agent = agent

    def begin(self, env: Any) -> None:
        pass

    def act(self, env: Any) -> int:
        return self.agent.act(env._obs(), env.action_masks(), 0.0)
