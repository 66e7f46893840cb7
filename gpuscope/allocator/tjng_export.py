"""t_jng tables for the cost-based schedulers (seeds 000, 002; design.md "t_jng tables").

For each job j, node type n of the cluster and g = 1 … G_n GPUs (G_n = the cluster's count of
that type): the execution time t_jng and the price per hour. The one-GPU time is the
predictor's (or the measured one where a measured dataset has the job on that device); g > 1
scales it with the emulator's fitted data-parallel model
(:func:`gpuscope.emulator.multigpu.multi_gpu_time`: start-up paid once, training part divided
by the all-reduce-limited speed-up). Price = g × the catalog's ``price_per_h`` of the type.

Due dates and tardiness weights come from the queue (``due_s``, ``weight``) or, for jobs
without a due date, are drawn as seed 002 §4.1 does: ``d_j = submission + U(min t, 3·min t)``
with ``min t = min_{n,g} t_jng``, ``ω_j ~ U(0.003, 0.015)``, seeded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from gpuscope.allocator.table import queue_ids
from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.errors import InputError
from gpuscope.core.tjng import Instance, tjng_to_instance, validate_tjng, write_instance, write_tjng
from gpuscope.jobs.spec import JobSpec

#: (job, device, g, one-GPU time) -> time on g GPUs
Scaler = Callable[[JobSpec, str, int, float], float]
#: seed 002 §4.1: tardiness weights are drawn from U(0.003, 0.015).
WEIGHT_RANGE: tuple[float, float] = (0.003, 0.015)


def emulator_scaler() -> Scaler:
    """Multi-GPU scaling by the emulator's fitted model; graphs are exported once per
    ``graph_key`` (cached on disk by :class:`gpuscope.graphs.GraphCache`) and reduced to the emulator's device-independent ``GraphCost``."""
    from gpuscope.cluster.devices import get_device
    from gpuscope.emulator.multigpu import multi_gpu_time
    from gpuscope.emulator.perf import GraphCost
    from gpuscope.graphs import GraphCache, export_graph

    costs: dict[str, GraphCost] = {}
    cache = GraphCache()  # exported graphs persist on disk across runs

    def scale(job: JobSpec, device: str, g: int, t1: float) -> float:
        if g == 1:
            return t1
        if job.graph_key not in costs:
            graph = export_graph(job) if job.graph else cache.get_or_export(job)
            costs[job.graph_key] = GraphCost.from_graph(graph, job.batch_size)
        return float(multi_gpu_time(t1, job, costs[job.graph_key], get_device(device), g))

    return scale


def one_gpu_times(
    jobs: Sequence[JobSpec],
    cluster: ClusterSpec,
    pred: pd.DataFrame,
    truth: pd.DataFrame | None = None,
    pred_source: str = "predicted",
) -> pd.DataFrame:
    """``job_id, device, exec_time_s, fits, source``: measured one-GPU time where a measured
    ground-truth row exists (status ok), else the prediction (fits = ``oom_prob <= 0.5``)."""
    ids = [j.job_id for j in jobs]
    p = pred[pred["device"].isin(cluster.devices) & pred["job_id"].isin(ids)]
    out = pd.DataFrame({
        "job_id": p["job_id"].to_numpy(), "device": p["device"].to_numpy(),
        "exec_time_s": p["exec_time_s"].to_numpy(dtype=float),
        "fits": ~(p.get("oom_prob", pd.Series(0.0, index=p.index)).to_numpy(dtype=float) > 0.5),
        "source": pred_source,
    })
    if truth is not None and "provenance" in truth.columns:
        m = truth[(truth["provenance"] == "measured")]
        key = out["job_id"] + "@" + out["device"]
        mk = m["job_id"] + "@" + m["device"]
        meas = pd.Series(m["exec_time_s"].to_numpy(), index=mk)
        ok = pd.Series((m["status"] == "ok").to_numpy(), index=mk)
        hit = key.isin(mk).to_numpy()
        out.loc[hit, "exec_time_s"] = meas.loc[key[hit]].to_numpy()
        out.loc[hit, "fits"] = ok.loc[key[hit]].to_numpy()
        out.loc[hit, "source"] = "measured"
    return out


def build_tjng(
    jobs: Sequence[JobSpec],
    cluster: ClusterSpec,
    one_gpu: pd.DataFrame,
    price_per_h: Mapping[str, float],
    scaler: Scaler,
) -> tuple[pd.DataFrame, list[str]]:
    """The t_jng table, and the ids of jobs dropped because they fit no node type."""
    by_id = {j.job_id: j for j in jobs}
    rows = []
    usable = one_gpu[one_gpu["fits"] & (one_gpu["exec_time_s"] > 0)]
    for r in tqdm(usable.itertuples(index=False), total=len(usable), desc="t_jng",
                  disable=len(usable) < 200):
        job = by_id[r.job_id]
        for g in range(1, cluster.counts[cluster.index(r.device)] + 1):
            t = scaler(job, r.device, g, float(r.exec_time_s))
            if np.isfinite(t) and t > 0:
                src = r.source if g == 1 else f"{r.source}+emulator-scaled"
                price = round(g * float(price_per_h[r.device]), 6)  # no 12.299999999999999
                rows.append((r.job_id, r.device, g, t, price, src))
    df = pd.DataFrame(rows, columns=["job_id", "node_type", "n_gpus", "exec_time_s",
                                     "cost_per_h", "source"])
    placed = set(df["job_id"])
    dropped = [i for i in queue_ids(jobs) if i not in placed]
    if df.empty:
        raise InputError("no job fits any node type of the cluster: empty t_jng table")
    return validate_tjng(df), dropped


def jobs_meta(jobs: Sequence[JobSpec], tjng: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Submission, due date and weight per job (from the queue, else seed 002 §4.1)."""
    min_t = tjng.groupby("job_id")["exec_time_s"].min()
    jobs = [j for j in jobs if j.job_id in min_t.index]
    rng = np.random.default_rng(seed)
    u = rng.uniform(1.0, 3.0, len(jobs))  # one draw per job, in queue order, for every job
    w = rng.uniform(*WEIGHT_RANGE, len(jobs))
    rows = []
    for j, ui, wi in zip(jobs, u, w):
        if j.due_s is not None:
            due, weight = j.due_s, j.weight
        else:
            due, weight = j.arrival_s + ui * float(min_t[j.job_id]), wi
        rows.append({"job_id": j.job_id, "submission_s": j.arrival_s, "due_s": due,
                     "weight": weight, "application": f"{j.model}_{j.dataset}",
                     "images": j.dataset_spec.train_size, "epochs": j.epochs,
                     "batch_size": j.batch_size, "job_class": j.graph_key})
    return pd.DataFrame(rows)


def export_tjng(
    jobs: Sequence[JobSpec],
    cluster: ClusterSpec,
    one_gpu: pd.DataFrame,
    out_dir: str | Path,
    *,
    price_per_h: Mapping[str, float] | None = None,
    scaler: Scaler | None = None,
    n_nodes: int | None = None,
    seed: int = 0,
) -> tuple[pd.DataFrame, Instance, list[str]]:
    """Write ``tjng.csv`` and the reference instance folder ``instance/`` under ``out_dir``."""
    if price_per_h is None:
        from gpuscope.cluster.devices import get_device

        price_per_h = {d: get_device(d).price_per_h for d in cluster.devices}
    tj, dropped = build_tjng(jobs, cluster, one_gpu, price_per_h, scaler or emulator_scaler())
    meta = jobs_meta(jobs, tj, seed)
    inst = tjng_to_instance(tj, meta, n_nodes=n_nodes or len(cluster.devices))
    out = Path(out_dir)
    write_tjng(tj, out / "tjng.csv")
    write_instance(inst, out / "instance")
    return tj, inst, dropped
