"""Synthetic predictor datasets with a known generating function (tests, development).

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
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from torch_geometric.data import Data

from gpuscope.jobs import JobSpec, table_jobs
from gpuscope.predictor.data import PredictorData, contexts_for
from gpuscope.resources import TARGETS


def _graph(rng: np.random.Generator, max_nodes: int) -> Data:
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
