"""From a queue file and a cluster spec to experiment inputs: jobs, predictions, ground truth.

Shared by the CLI, the demo, the benchmarks and the notebook, so each of them runs the same
batched prediction (:mod:`gpuscope.allocator.predict`) and the same truth matching
(:mod:`gpuscope.allocator.truth`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from gpuscope.allocator.experiments import (
    ExperimentInputs,
    build_inputs,
    seed_workload,
    table8_jobs,
)
from gpuscope.allocator.predict import check_checkpoints, domain_warning, predict_queue
from gpuscope.allocator.truth import load_truth
from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.data import bundled
from gpuscope.core.errors import InputError
from gpuscope.jobs.queue import read_queue
from gpuscope.jobs.spec import JobSpec

#: Queue names accepted instead of a file: seed 001's workloads.
NAMED_QUEUES: dict[str, str] = {
    "table4": "seed 001 Table 4 workload, 128 jobs (gan counted twice), all queued at t=0",
    "table4-112": "seed 001 Table 4 workload as its matrix reads, 112 jobs, queued at t=0",
    "table8": "seed 001 Table 8: six jobs one minute apart",
}


def load_jobs(spec: str, steps_per_epoch: int | None = None) -> list[JobSpec]:
    """A queue file (``.csv``/``.json``) or one of :data:`NAMED_QUEUES` (whose epochs are
    shortened to ``steps_per_epoch`` when given)."""
    if spec == "table4":
        return seed_workload(128, steps_per_epoch=steps_per_epoch)
    if spec == "table4-112":
        return seed_workload(112, steps_per_epoch=steps_per_epoch)
    if spec == "table8":
        return table8_jobs(steps_per_epoch)
    if not Path(spec).exists():
        raise InputError(
            f"job queue {spec} not found (give a .csv/.json file or one of "
            f"{', '.join(NAMED_QUEUES)})"
        )
    return read_queue(spec)


def check_devices(cluster: ClusterSpec) -> None:
    """Every device type of the cluster must be in the device catalog."""
    from gpuscope.cluster.devices import get_device

    for d in cluster.devices:
        get_device(d)


BUNDLED_DATASETS = bundled("emulated")


def graph_source(truth_dir: str | Path | None) -> Path | None:
    """Where encoded graphs ship with a dataset (reused by the predictor only when the op
    vocabulary is the checkpoint's): the truth folder, else the bundled emulated datasets."""
    if truth_dir is None:
        return BUNDLED_DATASETS if BUNDLED_DATASETS.is_dir() else None
    d = Path(truth_dir)
    return d if d.name in ("emulated", "measured") else d / "emulated"


def prepare(
    jobs: Sequence[JobSpec],
    cluster: ClusterSpec,
    model_dir: str | Path,
    truth_dir: str | Path | None,
    policies: Sequence[str],
) -> ExperimentInputs:
    """Predict (full targets, plus Driple targets when ``driple`` is asked) and load truth."""
    need_pred = any(not p.startswith("oracle") for p in policies)
    need_driple = "driple" in policies
    if need_pred:
        check_checkpoints(model_dir, cluster.devices)
    if need_driple:
        check_checkpoints(model_dir, cluster.devices, driple=True)
    oracles = [p for p in policies if p.startswith("oracle")]
    if oracles and truth_dir is None:
        raise InputError(f"policy {oracles[0]} needs ground truth: give --truth DIR")
    truth: pd.DataFrame | None = None
    if truth_dir is not None:
        truth = load_truth(jobs, cluster.devices, truth_dir)
    ds = graph_source(truth_dir)
    pred = predict_queue(jobs, cluster.devices, model_dir, datasets=ds) if need_pred else None
    driple = (predict_queue(jobs, cluster.devices, model_dir, driple=True, datasets=ds)
              if need_driple else None)
    note = domain_warning(pred) if pred is not None else None
    return replace(build_inputs(jobs, cluster, pred, driple, truth), notes=(note,) if note else ())
