"""From a queue (or trace) and a cluster to allocation inputs: jobs, predictions, ground truth.

Shared by the CLI, the API, the demo, the benchmarks and the notebook, so each of them runs
the same batched prediction (:mod:`gpuscope.allocator.predict`) and the same truth matching
(:mod:`gpuscope.allocator.truth`, :mod:`gpuscope.allocator.truth_table`).

* :func:`prepare` — a gpuscope queue: predictions from the checkpoints, truth from a datasets
  folder or a truth table.
* :func:`prepare_trace` — a job trace with arrival times (Gavel's format): truth from a
  table (Gavel's throughputs, or CSV/parquet); the policies plan with ``--estimates`` (a
  table of the same format) or, without one, with the truth itself, as Gavel's simulator
  does with its oracle throughputs.
* :func:`run` — one (policy, order) of prepared inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.allocator.allocate import AllocationResult, allocate
from gpuscope.allocator.names import NAMED_QUEUES
from gpuscope.allocator.predict import (
    ModelSet,
    check_checkpoints,
    domain_warning,
    model_set,
    predict_queue,
)
from gpuscope.allocator.table import JobDeviceTable, queue_ids
from gpuscope.allocator.truth import load_truth
from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.data import bundled
from gpuscope.core.errors import InputError
from gpuscope.core.targets import RESOURCES
from gpuscope.jobs.columns import JobColumns
from gpuscope.jobs.queue import read_queue, read_queue_columns
from gpuscope.jobs.spec import JobSpec, table_jobs

#: Queue names accepted instead of a file: seed 001's workloads.
BUNDLED_DATASETS = bundled("emulated")


def table8_jobs(steps_per_epoch: int | None = None) -> list[JobSpec]:
    """Seed 001 Table 8: six Table 3 jobs arriving one minute apart."""
    spec = [("resnet20", "cifar10", "adam", 8, 20), ("densenet40_k12", "cifar10", "sgd", 64, 10),
            ("inception3", "imagenet", "adam", 16, 20), ("vgg11", "imagenet", "sgd", 32, 10),
            ("dcgan", "mnist", "adam", 32, 20), ("googlenet", "imagenet", "sgd", 64, 10)]
    return [JobSpec(m, d, o, b, e, steps_per_epoch=steps_per_epoch, arrival_s=60.0 * i,
                    job_id=f"{m}_{d}")
            for i, (m, d, o, b, e) in enumerate(spec)]


def seed_workload(
    n_jobs: int = 128, arrival_gap_s: float = 0.0, steps_per_epoch: int | None = None
) -> list[JobSpec]:
    """Table 4's workload. Its matrix (trivial, alexnet, resnet32 on ImageNet and Cifar10; gan
    on MNIST; 2 optimizers × 4 batch sizes × 2 epochs) holds 112 jobs, yet seed 001's Tables
    11–20 distribute 128: gan's 16 MNIST settings counted twice, reproduced by submitting
    them a second time (ids ``…b``). ``steps_per_epoch`` shortens every epoch as the
    ground-truth campaign did (None: full epochs); all jobs queue at t = 0 by default."""
    if n_jobs not in (112, 128):
        raise ValueError("Table 4's workload has 112 jobs (128 with gan counted twice)")
    jobs = table_jobs(4, steps_per_epoch=steps_per_epoch)
    if n_jobs == 128:
        jobs = jobs + [j.with_(job_id=f"{j.job_id}b") for j in jobs if j.model == "gan"]
    return [j.with_(arrival_s=arrival_gap_s * i) for i, j in enumerate(jobs)]


@dataclass
class AllocationInputs:
    """One queue on one cluster, with every table the policies read.

    Attributes:
        jobs: the queue's jobs (empty for a trace: see ``arrival`` and ``kinds``).
        pred: the times the policies plan with (predictions; for a trace, ``--estimates`` or
            the truth); ``driple``: Driple-target predictions (or None);
        truth: ground truth (``source`` = measured / emulated); mem_total_mb: for Eq. 2;
        notes: warnings a command prints (``predict.domain_warning``);
        arrival: arrival times when ``jobs`` is empty; kinds: job type per job (figures);
        restart_s: checkpoint-restart cost per (job, type) for ``--preempt``;
        planned_on: what ``pred`` is, in words (every table says it).
        columns: the queue as distinct jobs and per-row arrays, when it was read that way
            (``jobs`` is then empty: see ``arrivals`` and ``job_kinds``).
    """

    jobs: list[JobSpec]
    cluster: ClusterSpec
    pred: JobDeviceTable | None
    driple: JobDeviceTable | None
    truth: JobDeviceTable | None
    mem_total_mb: Mapping[str, float]
    notes: tuple[str, ...] = ()
    arrival: np.ndarray | None = None
    kinds: list[str] = field(default_factory=list)
    restart_s: np.ndarray | None = None
    planned_on: str = "predicted"
    columns: JobColumns | None = None

    @property
    def arrivals(self) -> np.ndarray:
        if self.arrival is not None:
            return np.asarray(self.arrival, dtype=float)
        if self.columns is not None:
            return self.columns.arrival_s
        return np.array([j.arrival_s for j in self.jobs], dtype=float)

    @property
    def n_jobs(self) -> int:
        return len(self.arrivals)

    @property
    def job_kinds(self) -> list[str]:
        if self.kinds:
            return list(self.kinds)
        if self.columns is not None:
            return [str(m) for m in self.columns.column("model")]
        return [j.model for j in self.jobs]


def load_jobs(spec: str, steps_per_epoch: int | None = None) -> list[JobSpec]:
    """A queue file (``.csv``/``.json``) or one of :data:`NAMED_QUEUES` (whose epochs are
    shortened to ``steps_per_epoch`` when given)."""
    if spec == "table4":
        return seed_workload(128, steps_per_epoch=steps_per_epoch)
    if spec == "table4-112":
        return seed_workload(112, steps_per_epoch=steps_per_epoch)
    if spec == "table8":
        return table8_jobs(steps_per_epoch)
    return read_queue(_queue_path(spec))


def load_job_columns(spec: str, steps_per_epoch: int | None = None) -> JobColumns:
    """:func:`load_jobs` as columns (a queue file is never expanded to one object a row)."""
    if spec in NAMED_QUEUES:
        return JobColumns.from_jobs(load_jobs(spec, steps_per_epoch))
    return read_queue_columns(_queue_path(spec))


def _queue_path(spec: str) -> str:
    if not Path(spec).exists():
        raise InputError(
            f"job queue {spec} not found (give a .csv/.json queue, a .trace file, or one of "
            f"{', '.join(NAMED_QUEUES)})"
        )
    return spec


def check_devices(cluster: ClusterSpec) -> None:
    """Every device type of the cluster must be in the device catalog."""
    from gpuscope.cluster.devices import get_device

    for d in cluster.devices:
        get_device(d)


def graph_source(truth_dir: str | Path | None) -> Path | None:
    """Where encoded graphs ship with a dataset (reused by the predictor only when the op
    vocabulary is the checkpoint's): the truth folder, else the bundled emulated datasets."""
    if truth_dir is None or not Path(truth_dir).is_dir():
        return BUNDLED_DATASETS if BUNDLED_DATASETS.is_dir() else None
    d = Path(truth_dir)
    return d if d.name in ("emulated", "measured") else d / "emulated"


def build_inputs(
    jobs: Sequence[JobSpec],
    cluster: ClusterSpec,
    pred: pd.DataFrame | None,
    driple: pd.DataFrame | None,
    truth: pd.DataFrame | None,
    mem_total_mb: Mapping[str, float] | None = None,
) -> AllocationInputs:
    """Pivot long prediction / truth frames once for every policy run."""
    ids = queue_ids(jobs)
    dev = cluster.devices
    if mem_total_mb is None:
        from gpuscope.cluster.devices import load_catalog

        cat = load_catalog()
        mem_total_mb = {d: cat[d].mem_mb for d in dev if d in cat}
    return AllocationInputs(
        list(jobs), cluster,
        None if pred is None else JobDeviceTable.from_frame(pred, ids, dev),
        None if driple is None else JobDeviceTable.from_frame(driple, ids, dev),
        _truth_table(truth, ids, dev), dict(mem_total_mb),
    )


def _truth_table(truth: pd.DataFrame | None, ids: Sequence[str],
                 devices: tuple[str, ...]) -> JobDeviceTable | None:
    if truth is None:
        return None
    prov = "+".join(sorted(set(truth.get("provenance", pd.Series(["unknown"])).astype(str))))
    return JobDeviceTable.from_frame(truth, ids, devices, source=prov, fits_column="status")


def _queue_truth(jobs: Sequence[JobSpec], cluster: ClusterSpec,
                 truth: str | Path) -> pd.DataFrame:
    """Truth of a gpuscope queue from a datasets folder or a truth table (``job_type`` rows
    match a job's model name)."""
    from gpuscope.allocator.truth_table import is_truth_table, read_truth_table, truth_rows

    if Path(truth).is_dir() or not is_truth_table(truth):
        return load_truth(jobs, cluster.devices, truth)
    tab = read_truth_table(truth)
    return truth_rows(tab, queue_ids(jobs), [j.model for j in jobs],
                      np.array([j.total_steps for j in jobs], dtype=float), cluster.devices,
                      truth)


def prepare(
    jobs: Sequence[JobSpec] | JobColumns,
    cluster: ClusterSpec,
    model_dir: str | Path | ModelSet,
    truth_dir: str | Path | None,
    policies: Sequence[str],
) -> AllocationInputs:
    """Predict (full targets, plus Driple targets when ``driple`` is asked) and load truth
    (a datasets folder or a truth table); ``notes``: the GPU types the multi-device checkpoint
    predicts, out-of-domain rows. Each distinct job is predicted once and its row of each
    table repeated for the rows that share it (a prediction depends on the job, not on its
    id, arrival, due date or weight)."""
    need_pred = any(not p.startswith("oracle") for p in policies)
    need_driple = "driple" in policies
    if need_pred:
        check_checkpoints(model_dir, cluster.devices)
    if need_driple:
        check_checkpoints(model_dir, cluster.devices, driple=True)
    oracles = [p for p in policies if p.startswith("oracle")]
    if oracles and truth_dir is None:
        raise InputError(f"policy {oracles[0]} needs ground truth: give --truth")
    rows = list(jobs) if not isinstance(jobs, JobColumns) else None
    cols = jobs if isinstance(jobs, JobColumns) else JobColumns.from_jobs(_with_ids(rows or []))
    truth = None
    if truth_dir is not None:
        truth = _queue_truth(rows if rows is not None else cols.rows(), cluster, truth_dir)
    ds = graph_source(truth_dir)
    pred = (predict_queue(cols.distinct, cluster.devices, model_dir, datasets=ds)
            if need_pred else None)
    driple = (predict_queue(cols.distinct, cluster.devices, model_dir, driple=True, datasets=ds)
              if need_driple else None)
    notes = [model_set(model_dir).fallback_note(cluster.devices) if need_pred else None,
             None if pred is None else domain_warning(pred, _row_counts(cols, pred))]
    first = build_inputs(cols.distinct, cluster, pred, driple, None)
    inp = AllocationInputs(
        rows or [], cluster,
        None if first.pred is None else first.pred.take(cols.code, cols.job_id),
        None if first.driple is None else first.driple.take(cols.code, cols.job_id),
        _truth_table(truth, cols.job_id, cluster.devices), first.mem_total_mb,
        notes=tuple(n for n in notes if n), columns=None if rows is not None else cols)
    return inp


def _row_counts(cols: JobColumns, pred: pd.DataFrame) -> np.ndarray:
    """How many queue rows each row of a prediction frame of the distinct jobs stands for."""
    at = pd.Index([j.job_id for j in cols.distinct]).get_indexer(pred["job_id"])
    return np.where(at >= 0, cols.counts[at], 0)


def _with_ids(jobs: Sequence[JobSpec]) -> list[JobSpec]:
    queue_ids(jobs)  # a job without an id: the one-line error of the per-row path
    return list(jobs)


def prepare_trace(
    trace: pd.DataFrame,
    cluster: ClusterSpec,
    truth: str | Path,
    estimates: str | Path | None = None,
) -> AllocationInputs:
    """Inputs of a job trace (:func:`gpuscope.allocator.trace.read_trace`) scored on the truth
    table ``truth``; the policies plan with ``estimates`` or, without it, with the truth."""
    from gpuscope.allocator.restart import params_of
    from gpuscope.allocator.truth_table import read_truth_table, truth_rows

    ids = trace["job_id"].astype(str).tolist()
    types = trace["job_type"].astype(str).tolist()
    steps = trace["total_steps"].to_numpy(dtype=float)
    t_tab = read_truth_table(truth)
    t_rows = truth_rows(t_tab, ids, types, steps, cluster.devices, truth)
    truth_t = _truth_table(t_rows, ids, cluster.devices)
    if estimates is None:
        pred, planned = truth_t, f"the truth ({truth_t.source if truth_t else ''}) itself"
    else:
        e_rows = truth_rows(read_truth_table(estimates), ids, types, steps, cluster.devices,
                            estimates)
        pred = JobDeviceTable.from_frame(e_rows.drop(columns=["provenance"]), ids,
                                         cluster.devices, fits_column="status")
        planned = f"estimates {Path(estimates).name}"
    params = (t_tab.set_index("job_type")["model_params"].groupby(level=0).first()
              .reindex(types).fillna(0).to_numpy(dtype=float)
              if "model_params" in t_tab.columns and "job_type" in t_tab.columns
              else params_of(types))
    from gpuscope.allocator.restart import restart_seconds

    return AllocationInputs([], cluster, pred, None, truth_t, {},
                            arrival=trace["arrival_s"].to_numpy(dtype=float), kinds=types,
                            restart_s=restart_seconds(params, cluster), planned_on=planned)


def run(inp: AllocationInputs, policy: str, order: str,
        resources: Sequence[str] = RESOURCES, seed: int = 0,
        weights: Mapping[str, float] | None = None, preempt: bool = False
        ) -> AllocationResult:
    """One (policy, order) of prepared inputs."""
    return allocate(policy, order, inp.cluster, inp.arrivals, pred=inp.pred, driple=inp.driple,
                    truth=inp.truth, resources=resources, mem_total_mb=inp.mem_total_mb,
                    seed=seed, weights=weights, preempt=preempt, restart_s=inp.restart_s)
