"""Synthetic prediction and ground-truth tables, for tests and benchmarks only.

They follow the predictor contract (``job_id, device, TARGETS…, oom_prob``) and the labels
contract (``exec_time_s, status``) so the allocator can be developed and timed without trained
checkpoints. Numbers come from a toy speed model (work ∝ steps × model cost; device speed
factors) with seeded noise; they are labelled ``synthetic`` and never reported as results.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from gpuscope.jobs import JobSpec
from gpuscope.resources import RESOURCES, TARGETS

#: Toy relative speeds and memory (GB) for synthetic tables; not the device catalog.
TOY_DEVICES: dict[str, tuple[float, float]] = {
    "gtx1080": (1.0, 8), "rtx2070": (1.3, 8), "titanx": (1.5, 12), "t4": (1.2, 16),
    "v100": (2.5, 32), "a100": (4.0, 80), "h100": (6.0, 80),
}
_MODEL_COST = {"trivial": 0.2, "alexnet": 1.0, "resnet32": 1.5, "gan": 0.6}


def _toy(device: str) -> tuple[float, float]:
    if device in TOY_DEVICES:
        return TOY_DEVICES[device]
    h = sum(map(ord, device))  # deterministic stand-in for unknown names
    return 0.8 + (h % 50) / 10.0, float(8 + 8 * (h % 10))


def synthetic_tables(
    jobs: Sequence[JobSpec],
    devices: Sequence[str],
    seed: int = 0,
    pred_noise: float = 0.2,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(predictions, truth)`` long frames for ``jobs`` × ``devices``.

    ``truth`` has ``job_id, device, exec_time_s, status`` (``oom`` when the toy memory need
    exceeds the device); ``predictions`` has every target plus ``oom_prob``, execution times
    off by log-normal noise of sigma ``pred_noise``.
    """
    rng = np.random.default_rng(seed)
    n, m = len(jobs), len(devices)
    steps = np.array([j.total_steps for j in jobs], dtype=float)
    cost = np.array([_MODEL_COST.get(j.model, 1.0) * (1 + 2.0 / j.batch_size) for j in jobs])
    mem_need = np.array([0.5 + _MODEL_COST.get(j.model, 1.0) * j.batch_size / 8.0
                         * (1.3 if j.optimizer == "adam" else 1.0) for j in jobs])
    speed = np.array([_toy(d)[0] for d in devices])
    mem = np.array([_toy(d)[1] for d in devices])
    t_true = (steps * cost * 0.01)[:, None] / speed[None, :]
    t_true = t_true * rng.lognormal(0.0, 0.05, (n, m))
    fits = mem_need[:, None] <= mem[None, :]
    t_pred = t_true * rng.lognormal(0.0, pred_noise, (n, m))
    base = {"job_id": np.repeat([j.job_id for j in jobs], m), "device": np.tile(list(devices), n)}
    truth = pd.DataFrame({**base, "exec_time_s": t_true.ravel(),
                          "status": np.where(fits.ravel(), "ok", "oom")})
    pred = pd.DataFrame(base)
    for r in RESOURCES:
        pred[f"{r}_burst_s"] = rng.uniform(0.2, 5.0, n * m)
        pred[f"{r}_idle_s"] = rng.uniform(0.0, 2.0, n * m)
        cap = (mem[None, :] * 1024 * np.ones((n, 1))).ravel() if r == "gpu_mem" else 100.0
        pred[f"{r}_peak"] = rng.uniform(0.9, 1.0, n * m) * cap
    pred["exec_time_s"] = t_pred.ravel()
    pred["oom_prob"] = np.clip(
        1.0 / (1.0 + np.exp(-4 * (mem_need[:, None] / mem[None, :] - 1.0))), 0, 1
    ).ravel()
    assert list(pred.columns[2:-1]) == list(TARGETS)
    return pred, truth
