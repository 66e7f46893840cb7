"""Seed 001's allocation experiments (§4.5–4.6, Tables 8–20), as reusable functions.

* :func:`table8_jobs` — Table 8's six jobs, one minute apart.
* :func:`seed_workload` — Table 4's workload. Its matrix (trivial, alexnet, resnet32 on
  ImageNet and Cifar10; gan on MNIST; 2 optimizers × 4 batch sizes × 2 epochs) holds 112
  jobs, yet Tables 11, 13, 16, 18 and 20 distribute 128 (e.g. 32 + 54 + 42). 128 = 4 models ×
  32 settings, i.e. gan's 16 MNIST settings counted twice; ``n_jobs=128`` reproduces that by
  submitting gan's 16 jobs a second time (ids ``…b``). All jobs are queued at t = 0 (Alg. 1–2
  load the whole queue, then allocate).
* :func:`compare_policies` — every policy × order, the rows of Tables 10/12/15 plus
  oracle, random, round-robin and ``ect``.
* :func:`ablation` — Tables 17–20: comp-eff on each resource alone and on all but one.
* :func:`score_table` — Table 9 / Table 14: per-job scores per GPU, allocation and JCT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuscope.allocator.allocate import AllocationResult, allocate
from gpuscope.allocator.efficiency import SEED_NAMES
from gpuscope.allocator.metrics import Metrics
from gpuscope.allocator.table import JobDeviceTable, queue_ids
from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.targets import RESOURCES
from gpuscope.jobs.spec import JobSpec, table_jobs

SEED_CLUSTER = "gtx1080:1,rtx2070:1,titanx:1"
MODERN_CLUSTER = "v100:1,t4:1,a100:1,h100:1"
LABELS: dict[str, str] = {
    "oracle": "Oracle (true exec time)", "exec-time": "Proposed Model, exec time",
    "comp-eff": "Proposed Model, comp-eff", "driple": "Driple, comp-eff",
    "random": "Random", "round-robin": "Round-robin", "ect": "gpuscope ECT",
    "oracle-ect": "Oracle ECT (true exec time)",
}


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
    """Table 4's workload, 112 or 128 jobs (see the module docstring); ``steps_per_epoch``
    shortens every epoch as the ground-truth campaign did (None: full epochs)."""
    if n_jobs not in (112, 128):
        raise ValueError("Table 4's workload has 112 jobs (128 with gan counted twice)")
    jobs = table_jobs(4, steps_per_epoch=steps_per_epoch)
    if n_jobs == 128:
        jobs = jobs + [j.with_(job_id=f"{j.job_id}b") for j in jobs if j.model == "gan"]
    return [j.with_(arrival_s=arrival_gap_s * i) for i, j in enumerate(jobs)]


@dataclass
class ExperimentInputs:
    """One queue on one cluster, with every table the policies read.

    Attributes:
        pred: full-target predictions; ``driple``: Driple-target predictions (or None);
        truth: ground truth (``source`` = measured / emulated); mem_total_mb: for Eq. 2;
        notes: warnings a command prints (``predict.domain_warning``).
    """

    jobs: list[JobSpec]
    cluster: ClusterSpec
    pred: JobDeviceTable | None
    driple: JobDeviceTable | None
    truth: JobDeviceTable | None
    mem_total_mb: Mapping[str, float]
    #: one-line warnings about the inputs (predictions outside their checkpoints' domain)
    notes: tuple[str, ...] = ()

    @property
    def arrivals(self) -> np.ndarray:
        return np.array([j.arrival_s for j in self.jobs], dtype=float)


def build_inputs(
    jobs: Sequence[JobSpec],
    cluster: ClusterSpec,
    pred: pd.DataFrame | None,
    driple: pd.DataFrame | None,
    truth: pd.DataFrame | None,
    mem_total_mb: Mapping[str, float] | None = None,
) -> ExperimentInputs:
    """Pivot long prediction / truth frames once for every policy run."""
    ids = queue_ids(jobs)
    dev = cluster.devices
    if mem_total_mb is None:
        from gpuscope.cluster.devices import load_catalog

        cat = load_catalog()
        mem_total_mb = {d: cat[d].mem_mb for d in dev if d in cat}
    t = None
    if truth is not None:
        prov = "+".join(sorted(set(truth.get("provenance", pd.Series(["unknown"])).astype(str))))
        t = JobDeviceTable.from_frame(truth, ids, dev, source=prov, fits_column="status")
    return ExperimentInputs(
        list(jobs), cluster,
        None if pred is None else JobDeviceTable.from_frame(pred, ids, dev),
        None if driple is None else JobDeviceTable.from_frame(driple, ids, dev),
        t, dict(mem_total_mb),
    )


def run(inp: ExperimentInputs, policy: str, order: str,
        resources: Sequence[str] = RESOURCES, seed: int = 0) -> AllocationResult:
    return allocate(policy, order, inp.cluster, inp.arrivals, pred=inp.pred, driple=inp.driple,
                    truth=inp.truth, resources=resources, mem_total_mb=inp.mem_total_mb,
                    seed=seed)


def available_policies(inp: ExperimentInputs) -> list[str]:
    out = []
    if inp.truth is not None:
        out.append("oracle")
    if inp.pred is not None:
        out += ["exec-time", "comp-eff"]
    if inp.driple is not None:
        out.append("driple")
    out += ["random", "round-robin"]
    if inp.pred is not None:
        out.append("ect")
    if inp.truth is not None:
        out.append("oracle-ect")
    return out


def compare_policies(
    inp: ExperimentInputs, policies: Sequence[str] | None = None,
    orders: Sequence[str] = ("fifo", "sjf"), seed: int = 0,
) -> list[tuple[str, AllocationResult]]:
    """Every policy × order on one queue: ``[("Label (FIFO)", result), …]``; comp-eff also
    with Alg. 2's literal order (``SJF-EFF``: comp-eff ascending) when SJF is asked."""
    rows = []
    for p in policies or available_policies(inp):
        for o in orders:
            rows.append((f"{LABELS.get(p, p)} ({o.upper()})", run(inp, p, o, seed=seed)))
        if p == "comp-eff" and "sjf" in orders:
            rows.append((f"{LABELS[p]} (SJF-EFF)", run(inp, p, "sjf-eff", seed=seed)))
    return rows


def ablation(
    inp: ExperimentInputs, orders: Sequence[str] = ("fifo", "sjf")
) -> tuple[list[tuple[str, AllocationResult]], list[tuple[str, AllocationResult]]]:
    """Tables 17–18 (each resource alone) and Tables 19–20 (all but one), comp-eff policy."""
    alone, without = [], []
    for r in ("gpu_mem_util", "gpu_util", "cpu_util", "gpu_mem"):
        for o in orders:
            alone.append((f"{SEED_NAMES[r]} ({o.upper()})", run(inp, "comp-eff", o, (r,))))
    for r in ("gpu_mem_util", "gpu_util", "cpu_util", "gpu_mem"):
        rest = tuple(x for x in RESOURCES if x != r)
        for o in orders:
            without.append((f"w/o {SEED_NAMES[r]} ({o.upper()})", run(inp, "comp-eff", o, rest)))
    return alone, without


def metrics_rows(rows: Sequence[tuple[str, AllocationResult]]) -> list[tuple[str, Metrics]]:
    return [(label, r.metrics) for label, r in rows]


def score_table(result: AllocationResult, digits: int = 2) -> pd.DataFrame:
    """Table 9 (comp-eff) / Table 14 (exec time): each job's score on every GPU, the GPU it was
    allocated to and its JCT."""
    sched = result.schedule
    cols = list(result.metrics.per_device["device"])  # cluster order
    df = pd.DataFrame(np.round(result.placement.score, digits), columns=cols,
                      index=sched["job_id"].to_numpy())
    df["Allocation"] = sched["device"].to_numpy()
    df["JCT (s)"] = np.round(sched["jct_s"].to_numpy(), digits)
    df.index.name = ""
    return df
