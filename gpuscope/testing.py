"""Synthetic data with a known generating function, for tests and benchmarks only (as
``torch_geometric.testing``): never reported as results, labelled ``emulated``/``synthetic``.

**Predictor datasets** (:func:`synthetic_dataset`). Synthetic predictor datasets with a known generating function (tests, development).

Jobs are seed 001 Table 3 jobs (plus Table 4 jobs as ``unseen`` rows); each distinct
graph key gets a random graph (20–``max_nodes`` groups, ``driple`` features: summed tensor
size, op count, op frequency) whose "cost" c = log1p(Σ tensor size) drives the labels:

    step_s      = 1e-3 · c · batch_size^0.7 · (1.15 if adam)
    exec_time_s = total_steps · step_s + 5
    gpu_util_peak = 60 + 4 · c,   gpu_mem_peak = 200 + 30 · c · log2(batch_size)
    burst/idle times and the CPU targets: smooth functions of c and the context

with seeded multiplicative noise (``noise``). ``gpu=False`` makes the GPU targets NaN (a
CPU-only dataset). Jobs whose memory exceeds ``mem_limit_mb`` get status ``oom``.
Provenance is ``emulated`` — these are not measurements.

**Allocator tables** (:func:`synthetic_tables`). Synthetic prediction and ground-truth tables, for tests and benchmarks only.

They follow the predictor contract (``gpuscope.predictor.PREDICTION_COLUMNS``) and the labels
contract (``exec_time_s, status``) so the allocator can be developed and timed without trained
checkpoints. Numbers come from a toy speed model (work ∝ steps × model cost; device speed
factors) with seeded noise; they are labelled ``synthetic`` and never reported as results.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuscope.core.targets import RESOURCES, TARGETS
from gpuscope.jobs.spec import JobSpec, table_jobs

if TYPE_CHECKING:
    from torch_geometric.data import Data

    from gpuscope.predictor.gnn.data import PredictorData


def _graph(rng: np.random.Generator, max_nodes: int) -> Data:
    import torch
    from torch_geometric.data import Data

    n = int(rng.integers(min(20, max_nodes), max_nodes + 1))
    scale = 10 ** rng.uniform(4, 7)
    x = np.stack([rng.lognormal(0, 1, n) * scale, rng.integers(1, 20, n),
                  rng.uniform(0, 0.2, n)], axis=1)
    src = np.arange(n - 1)
    extra = rng.integers(0, n, size=(2, n // 3))
    ei = np.concatenate([np.stack([src, src + 1]), extra], axis=1)
    ei = ei[:, ei[0] != ei[1]]
    ei = np.unique(np.concatenate([ei, ei[::-1]], axis=1), axis=1)
    return Data(x=torch.tensor(x, dtype=torch.float32), edge_index=torch.tensor(ei),
                num_nodes=n)


def synthetic_dataset(n_jobs: int | None = 96, seed: int = 0, device: str = "synthgpu",
                      gpu: bool = True, noise: float = 0.02, max_nodes: int = 40,
                      mem_limit_mb: float = float("inf"), unseen: int = 16,
                      speed: float = 1.0, graph_seed: int = 1000) -> PredictorData:
    """A :class:`PredictorData` of ``n_jobs`` Table 3 jobs (all when None) + ``unseen``
    Table 4 jobs; ``speed`` divides step times (a "faster device"); ``graph_seed`` draws the
    graphs, so two "devices" with different ``seed`` share them."""
    from gpuscope.predictor.gnn.data import PredictorData, contexts_for

    rng = np.random.default_rng(seed)
    jobs3 = table_jobs(3)
    if n_jobs is not None and n_jobs < len(jobs3):
        jobs3 = [jobs3[i] for i in sorted(rng.choice(len(jobs3), n_jobs, replace=False))]
    jobs4 = table_jobs(4)[:: max(1, len(table_jobs(4)) // max(unseen, 1))][:unseen]
    graphs: dict[str, Data] = {}
    rows = []
    grng = np.random.default_rng(graph_seed)  # graphs depend on the job, not the device
    for split, jobs in (("train", jobs3), ("unseen", jobs4)):
        for job in jobs:
            if job.graph_key not in graphs:
                graphs[job.graph_key] = _graph(grng, max_nodes)
            rows.append(_row(job, graphs[job.graph_key], split, device, gpu, rng, noise,
                             mem_limit_mb, speed))
    labels = pd.DataFrame(rows)
    return PredictorData(labels, graphs, contexts_for(labels), device, "emulated")


def _row(job: JobSpec, g: Data, split: str, device: str, gpu: bool, rng: np.random.Generator,
         noise: float, mem_limit_mb: float, speed: float) -> dict:
    c = math.log1p(float(g.x[:, 0].sum()))
    lb = math.log2(job.batch_size)
    step = 1e-3 * c * job.batch_size ** 0.7 * (1.15 if job.optimizer == "adam" else 1.0) / speed
    mem = 200 + 30 * c * lb * (1.3 if job.optimizer == "adam" else 1.0)
    vals = {
        "gpu_util_burst_s": 2 + 0.2 * c, "gpu_util_idle_s": 0.5 + 0.3 * lb,
        "gpu_util_peak": 60 + 2 * c, "gpu_mem_util_burst_s": 1 + 0.1 * c * lb / 6,
        "gpu_mem_util_idle_s": 0.4 + 0.05 * c, "gpu_mem_util_peak": 20 + c,
        "gpu_mem_burst_s": 3 + 0.3 * c, "gpu_mem_idle_s": 0.2 + 0.1 * lb,
        "gpu_mem_peak": mem, "cpu_util_burst_s": 1 + 0.2 * lb,
        "cpu_util_idle_s": 0.3 + 0.02 * c * lb, "cpu_util_peak": 30 + 5 * lb,
        "exec_time_s": job.total_steps * step + 5.0,
    }
    row = {"run_id": job.key, "device": device, "provenance": "emulated", "model": job.model,
           "dataset": job.dataset, "optimizer": job.optimizer, "batch_size": job.batch_size,
           "epochs": job.epochs, "steps_per_epoch": job.steps_per_epoch,
           "graph_key": job.graph_key, "split": split}
    status = "oom" if mem > mem_limit_mb else "ok"
    for t in TARGETS:
        v = vals[t] * float(np.exp(rng.normal(0, noise)))
        if (not gpu and t.startswith("gpu_")) or (status != "ok" and t != "exec_time_s"):
            v = float("nan")
        row[t] = v
    row["status"] = status
    return row

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
    exceeds the device); ``predictions`` has the columns of
    ``gpuscope.predictor.PREDICTION_COLUMNS`` (every row in domain), execution times off by
    log-normal noise of sigma ``pred_noise``.
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
    pred["step_s"] = (t_pred / steps[:, None]).ravel()
    pred["oom_prob"] = np.clip(
        1.0 / (1.0 + np.exp(-4 * (mem_need[:, None] / mem[None, :] - 1.0))), 0, 1
    ).ravel()
    pred["oom"] = pred["oom_prob"] > 0.5
    pred["in_domain"] = True
    pred["domain_reason"] = ""
    assert list(pred.columns[2:2 + len(TARGETS)]) == list(TARGETS)
    return pred, truth
